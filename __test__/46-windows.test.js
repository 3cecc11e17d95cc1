'use strict';
// What differs on Windows (docs/packaging.md "Windows", docs/design.md §4.5 and §4.6): run by
// scripts/test-windows.js under Wine (and natively by CI's windows-latest job); skipped
// elsewhere. It also runs once more with `--no-node-snapshot`, as Electron's main process
// starts Node.
const { describe, it, after } = require('node:test');
const assert = require('node:assert');
const { spawnSync } = require('node:child_process');
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const Database = require('..');
const { tempDir, removeDir, listDir } = require('./_helpers');

const skip = process.platform !== 'win32' && 'Windows only (node scripts/test-windows.js)';
const key = Buffer.alloc(32, 0x11);
const otherKey = Buffer.alloc(32, 0x22);
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe('46 Windows', { skip }, () => {
  let dir;
  const file = (name) => path.join(dir, name);
  after(() => removeDir(dir));

  it('the addon loaded is the win32 one', () => {
    dir = tempDir('win');
    assert.match(path.basename(Database.__nativePath), /win32-(x64|arm64)/);
  });

  it('paths: backslashes, forward slashes, a drive letter, non-ASCII names', () => {
    const names = [file('a.db'), file('a.db').replace(/\\/g, '/'), file('ünïcödé-データ.db')];
    for (const name of names) {
      const db = new Database(name, { key });
      db.exec('CREATE TABLE IF NOT EXISTS t(x); INSERT INTO t VALUES (1)');
      db.close();
    }
    assert.ok(/^[A-Za-z]:\\/.test(dir), `a drive-letter path: ${dir}`);
    const db = new Database(file('a.db'), { key, readonly: true });
    assert.equal(db.prepare('SELECT count(*) AS n FROM t').get().n, 2, 'both spellings name one file');
    db.close();
    assert.ok(listDir(dir).includes('ünïcödé-データ.db'), listDir(dir).join(', '));
  });

  // docs/design.md §4.6, "Windows": the wal-index is SQLite's shared memory on a shadow file
  // in %LOCALAPPDATA%\cipherlite\wal-index; the real -shm is a fence holding no wal-index.
  const walIndexDir = () => path.join(process.env.LOCALAPPDATA, 'cipherlite', 'wal-index');
  const isZeros = (name) => !fs.existsSync(name) || fs.readFileSync(name).every((b) => b === 0);

  it('an encrypted WAL: readers beside a writer, the wal-index in the private directory, none in the -shm', () => {
    const db = new Database(file('wal.db'), { key });
    assert.equal(db.pragma('journal_mode = WAL', { simple: true }), 'wal');
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    const reader = new Database(file('wal.db'), { key });
    reader.exec('BEGIN');
    assert.equal(reader.prepare('SELECT count(*) AS n FROM t').get().n, 1);
    db.exec('INSERT INTO t VALUES (2)');
    assert.equal(reader.prepare('SELECT count(*) AS n FROM t').get().n, 1, 'the reader keeps its snapshot');
    reader.exec('COMMIT');
    assert.equal(reader.prepare('SELECT count(*) AS n FROM t').get().n, 2);
    assert.ok(fs.statSync(file('wal.db-wal')).size > 0);
    assert.ok(isZeros(file('wal.db-shm')), 'the -shm beside the database holds no wal-index');
    const shadows = fs.readdirSync(walIndexDir()).filter((n) => n.endsWith('.db-shm'));
    assert.ok(shadows.length > 0, `a shadow wal-index in ${walIndexDir()}`);
    reader.close();
    db.close();
    assert.ok(!fs.existsSync(file('wal.db-wal')), 'the last close checkpoints and removes the WAL');
    const again = new Database(file('wal.db'), { key });
    assert.equal(again.pragma('journal_mode', { simple: true }), 'wal');
    assert.deepEqual(again.prepare('SELECT x FROM t').pluck().all(), [1, 2]);
    again.close();
  });

  // A child process of Windows Node on the same database; `code` runs with `db` open.
  const inChild = (name, code) => {
    const source = `
      const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
      const db = new Database(${JSON.stringify(file(name))}, { key: Buffer.alloc(32, 0x11) });
      ${code}
    `;
    return spawnSync(process.execPath, ['-e', source], { encoding: 'utf8', timeout: 60000 });
  };

  it('two processes share an encrypted WAL: each sees the other’s commits, a reader keeps its snapshot meanwhile', () => {
    const db = new Database(file('shared.db'), { key });
    assert.equal(db.pragma('journal_mode = WAL', { simple: true }), 'wal');
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    db.exec('BEGIN');
    assert.equal(db.prepare('SELECT count(*) AS n FROM t').get().n, 1);
    const child = inChild(
      'shared.db',
      `const n = db.prepare('SELECT count(*) AS n FROM t').get().n;
       db.exec('INSERT INTO t VALUES (2)');
       db.pragma('wal_checkpoint(PASSIVE)');
       process.stdout.write(JSON.stringify({ n, mode: db.pragma('journal_mode', { simple: true }) }));
       db.close();`,
    );
    assert.equal(child.status, 0, child.stderr);
    assert.deepEqual(JSON.parse(child.stdout), { n: 1, mode: 'wal' }, 'the child saw the parent’s commit');
    assert.equal(
      db.prepare('SELECT count(*) AS n FROM t').get().n,
      1,
      'the parent’s read transaction keeps its snapshot',
    );
    db.exec('COMMIT');
    assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1, 2], 'and then sees the child’s commit');
    assert.ok(fs.existsSync(file('shared.db-wal')), 'the parent still has the WAL open');
    db.exec('INSERT INTO t VALUES (3)');
    db.close();
    const again = new Database(file('shared.db'), { key });
    assert.deepEqual(again.prepare('SELECT x FROM t').pluck().all(), [1, 2, 3]);
    again.close();
  });

  it('a WAL left by a killed process is recovered by the next encrypted connection', () => {
    const child = inChild(
      'crashed.db',
      `db.pragma('journal_mode = WAL');
       db.exec('CREATE TABLE t(x)');
       for (let i = 0; i < 50; i++) db.prepare('INSERT INTO t VALUES (?)').run(i);
       process.kill(process.pid, 'SIGKILL');`,
    );
    assert.notEqual(child.status, 0, 'the child was killed');
    assert.ok(fs.statSync(file('crashed.db-wal')).size > 0, 'a WAL was left beside the database');
    const db = new Database(file('crashed.db'), { key });
    assert.equal(db.prepare('SELECT count(*) AS n FROM t').get().n, 50, 'every committed row is recovered');
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    db.close();
    assert.ok(!fs.existsSync(file('crashed.db-wal')));
  });

  // Another engine on the same -shm: a stock SQLite (the win32 VFS of a plaintext
  // connection) on a database whose -shm is made, before anything opens it, a second name
  // of the encrypted database's -shm file.
  const shareShm = (encrypted, stock) => {
    const enc = new Database(file(encrypted), { key });
    enc.pragma('journal_mode = WAL');
    enc.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    enc.close();
    const plain = new Database(file(stock));
    plain.pragma('journal_mode = WAL');
    plain.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    plain.close();
    fs.writeFileSync(file(`${encrypted}-shm`), '');
    fs.linkSync(file(`${encrypted}-shm`), file(`${stock}-shm`));
  };

  it('a -shm held by another SQLite with a wal-index in it: refused with SQLITE_BUSY_RECOVERY and the reason', () => {
    shareShm('fenced.db', 'other-engine.db');
    const plain = new Database(file('other-engine.db'));
    plain.exec('INSERT INTO t VALUES (2)');
    const before = fs.readFileSync(file('fenced.db'));
    const db = new Database(file('fenced.db'), { key, timeout: 0 });
    assert.throws(
      () => db.prepare('SELECT count(*) FROM t').get(),
      (err) => err.code === 'SQLITE_BUSY_RECOVERY' && /open in WAL mode in another SQLite library/.test(err.message),
    );
    db.close();
    assert.deepEqual(fs.readFileSync(file('fenced.db')), before, 'no byte of the database changed');
    plain.close();
    fs.rmSync(file('fenced.db-shm'), { force: true });
    const after = new Database(file('fenced.db'), { key });
    assert.equal(after.prepare('SELECT count(*) AS n FROM t').get().n, 1);
    after.close();
  });

  it('the -shm fence: while an encrypted connection has the WAL open, a stock SQLite on that -shm neither recovers nor writes', () => {
    shareShm('guarded.db', 'stock.db');
    const db = new Database(file('guarded.db'), { key });
    db.exec('INSERT INTO t VALUES (2)');
    const stock = new Database(file('stock.db'), { timeout: 0 });
    assert.throws(
      () => stock.exec('INSERT INTO t VALUES (2)'),
      (err) => /^SQLITE_(BUSY|PROTOCOL)/.test(err.code),
    );
    assert.ok(
      fs
        .readFileSync(file('guarded.db-shm'))
        .subarray(0, 16)
        .every((b) => b === 0),
      'no wal-index was built in it',
    );
    db.exec('INSERT INTO t VALUES (3)');
    db.close();
    stock.close();
    const again = new Database(file('guarded.db'), { key });
    assert.deepEqual(again.prepare('SELECT x FROM t').pluck().all(), [1, 2, 3]);
    again.close();
  });

  it('a wal-index directory others may open is refused: SQLITE_CANTOPEN, saying why, and no wal-index is made there', () => {
    // Both candidates made without the private access list, then opened to Everyone
    // (icacls on Windows; under Wine the access list is made up from the Unix mode, which
    // already lets everyone in).
    const local = file('open-local');
    const temp = file('open-temp');
    const dirs = [path.join(local, 'cipherlite', 'wal-index'), path.join(temp, 'cipherlite-wal-index')];
    for (const d of dirs) {
      fs.mkdirSync(d, { recursive: true });
      spawnSync('icacls', [d, '/grant', '*S-1-1-0:(OI)(CI)F'], { stdio: 'ignore' });
    }
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !/^(localappdata|temp|tmp)$/i.test(name)),
    );
    const walIn = (localAppData, tempDir, name) => {
      const source = `
        const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
        const db = new Database(${JSON.stringify(file(name))}, { key: Buffer.alloc(32, 0x11) });
        let outcome;
        try {
          db.pragma('journal_mode = WAL');
          db.exec('CREATE TABLE t(x)');
          outcome = { ok: true };
        } catch (err) {
          outcome = { code: err.code, message: err.message };
        }
        process.stdout.write(JSON.stringify(outcome));
      `;
      const child = spawnSync(process.execPath, ['-e', source], {
        encoding: 'utf8',
        timeout: 60000,
        env: { ...env, LOCALAPPDATA: localAppData, TEMP: tempDir, TMP: tempDir },
      });
      assert.equal(child.status, 0, child.stderr);
      return JSON.parse(child.stdout);
    };
    // Where the directory does not exist yet, it is made with the private access list.
    assert.deepEqual(walIn(file('fresh-local'), file('fresh-temp'), 'made.db'), { ok: true });
    const outcome = walIn(local, temp, 'refused.db');
    assert.equal(outcome.code, 'SQLITE_CANTOPEN', JSON.stringify(outcome));
    assert.match(outcome.message, /no private directory for an encrypted database's wal-index/);
    for (const d of dirs) assert.deepEqual(fs.readdirSync(d), [], `nothing made in ${d}`);
  });

  it('a plaintext connection keeps WAL (SQLite win32 VFS, unchanged)', () => {
    const db = new Database(file('plain.db'));
    assert.equal(db.pragma('journal_mode = WAL', { simple: true }), 'wal');
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    const reader = new Database(file('plain.db'), { readonly: true });
    assert.equal(reader.prepare('SELECT count(*) AS n FROM t').get().n, 1);
    reader.close();
    db.close();
  });

  it('new Database(fd) is a TypeError', () => {
    assert.throws(
      () => new Database(3, { journalFd: 4 }),
      (err) => err instanceof TypeError && /not supported on this platform \(Windows\)/.test(err.message),
    );
  });

  it('results are buffers V8 owns (no external ArrayBuffer, as Electron requires)', () => {
    const db = new Database(file('blobs.db'), { key });
    const row = db.prepare('SELECT randomblob(64) AS b, zeroblob(1000) AS z').get();
    assert.ok(Buffer.isBuffer(row.b) && row.b.length === 64);
    assert.equal(row.z.length, 1000);
    db.close();
  });

  it('rekey releases the file, replaces it and reopens: settings, functions and statements carry over', () => {
    const db = new Database(file('rekey.db'), { key });
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (42)');
    db.pragma('cache_size = -4000');
    db.function('twice', (x) => x * 2);
    const stmt = db.prepare('SELECT twice(x) AS y FROM t WHERE x = ?').bind(42);
    db.rekey(otherKey);
    assert.equal(stmt.get().y, 84, 'the statement, its binding and the function carried over');
    assert.equal(db.pragma('cache_size', { simple: true }), -4000);
    db.exec('INSERT INTO t VALUES (43)');
    assert.equal(db.verify().ok, true);
    db.close();
    assert.throws(() => new Database(file('rekey.db'), { key }).prepare('SELECT 1 FROM t'), /not a database|NOTADB/i);
    const again = new Database(file('rekey.db'), { key: otherKey });
    assert.equal(again.prepare('SELECT count(*) AS n FROM t').get().n, 2);
    again.close();
    assert.deepEqual(
      listDir(dir).filter((n) => /^rekey\.db./.test(n)),
      [],
      'no copy or journal left beside the file',
    );
  });

  it('encrypt replaces a plaintext file; a file opened elsewhere is refused, unchanged', () => {
    const plain = new Database(file('plain-to-encrypt.db'));
    plain.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    plain.close();
    Database.encrypt(file('plain-to-encrypt.db'), key);
    const db = new Database(file('plain-to-encrypt.db'), { key });
    assert.equal(db.prepare('SELECT x FROM t').get().x, 1);
    // Another connection of this process, idle, holds the file open: Windows refuses the
    // rename, the connection is opened again with the old key.
    const peer = new Database(file('plain-to-encrypt.db'), { key });
    assert.equal(peer.prepare('SELECT x FROM t').get().x, 1);
    const stmt = db.prepare('SELECT x + ? AS y FROM t').bind(10);
    assert.throws(
      () => db.rekey(otherKey),
      (e) => e.code === 'SQLITE_BUSY' && /is open elsewhere.*is unchanged/.test(e.message),
    );
    assert.equal(stmt.get().y, 11, 'the connection works on, under the old key');
    assert.equal(peer.prepare('SELECT x FROM t').get().x, 1);
    peer.close();
    db.rekey(otherKey);
    assert.equal(stmt.get().y, 11);
    db.close();
    assert.deepEqual(
      listDir(dir).filter((n) => /^plain-to-encrypt\.db./.test(n)),
      [],
      'no copy left beside the file',
    );
  });

  it('another process holding the file open: rekey refused, the connection works on, the file intact', () => {
    const name = file('peer.db');
    const ready = file('peer.ready');
    const db = new Database(name, { key });
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (5)');
    const child = spawn(
      process.execPath,
      [
        '-e',
        `const D = require(${JSON.stringify(path.resolve(__dirname, '..'))});
         const d = new D(${JSON.stringify(name)}, { key: Buffer.alloc(32, 0x11) });
         d.prepare('SELECT x FROM t').get();
         require('fs').writeFileSync(${JSON.stringify(ready)}, 'ready');
         setInterval(() => {}, 1000);`,
      ],
      { stdio: 'ignore' },
    );
    try {
      const until = Date.now() + 60000;
      while (!fs.existsSync(ready) && Date.now() < until) sleep(50);
      assert.ok(fs.existsSync(ready), 'the peer opened the file');
      assert.throws(
        () => db.rekey(otherKey),
        (e) => e.code === 'SQLITE_BUSY' && /is open elsewhere/.test(e.message),
      );
      assert.equal(db.prepare('SELECT x FROM t').get().x, 5, 'still open under the old key');
    } finally {
      child.kill();
    }
    const until = Date.now() + 30000;
    let done = false;
    while (!done && Date.now() < until) {
      try {
        db.rekey(otherKey);
        done = true;
      } catch (e) {
        if (e.code !== 'SQLITE_BUSY') throw e;
        sleep(100);
      }
    }
    assert.ok(done, 'rekeyed once the peer has gone');
    assert.equal(db.prepare('SELECT x FROM t').get().x, 5);
    db.close();
  });

  it('path spellings (the verbatim prefix, another case) name one file and rekey it; messages show the path as given', () => {
    const db = new Database(file('acl.db'), { key });
    db.exec('CREATE TABLE t(x)');
    db.close();
    const verbatim = `\\\\?\\${file('acl.db')}`;
    const v = new Database(verbatim, { key });
    v.rekey(otherKey);
    v.close();
    const upper = new Database(file('ACL.DB'), { key: otherKey });
    assert.equal(upper.prepare('SELECT count(*) AS n FROM t').get().n, 0, 'one file, whatever the case');
    upper.rekey(key);
    upper.close();
    const err = (() => {
      try {
        Database.encrypt(file('acl.db'), key);
      } catch (e) {
        return e;
      }
    })();
    assert.ok(err, 'an encrypted file is refused');
    assert.ok(!err.message.includes('\\\\?\\'), err.message);
    assert.ok(err.message.includes(file('acl.db')), err.message);
  });

  it('reserved device names are refused, saying why', () => {
    for (const name of ['NUL', 'con', 'NUL.db', 'COM1.sqlite', 'lpt9']) {
      assert.throws(
        () => new Database(file(name), { key }),
        (e) => /reserved|device/i.test(e.message),
        name,
      );
    }
  });

  it('decrypt (a copy under a new name) and verify work', () => {
    const db = new Database(file('dec.db'), { key });
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (7)');
    assert.equal(db.verify().ok, true);
    db.close();
    Database.decrypt(file('dec.db'), key, file('dec-plain.db'));
    const plain = new Database(file('dec-plain.db'), { readonly: true });
    assert.equal(plain.prepare('SELECT x FROM t').get().x, 7);
    plain.close();
  });
});
