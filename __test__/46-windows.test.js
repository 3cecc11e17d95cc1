'use strict';
// What differs on Windows (docs/packaging.md "Windows", docs/design.md §4.5 and §4.6): run by
// scripts/test-windows.js under Wine (and natively by CI's windows-latest job); skipped
// elsewhere. It also runs once more with `--no-node-snapshot`, as Electron's main process
// starts Node.
const { describe, it, after } = require('node:test');
const assert = require('node:assert');
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

  it('an encrypted connection refuses WAL, saying why; the file stays in rollback mode', () => {
    const db = new Database(file('wal.db'), { key });
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    assert.throws(() => db.pragma('journal_mode = WAL'), /cannot use WAL mode on Windows/);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'delete');
    db.exec('INSERT INTO t VALUES (2)');
    db.close();
    assert.ok(!fs.existsSync(file('wal.db-wal')));
    assert.ok(!fs.existsSync(file('wal.db-shm')));
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
