'use strict';
// The key lifecycle and the files around a database, as another local user sees them:
// the replacement file keeps the original's mode, owner and group; every file that can
// hold plaintext is created exclusively and no wider than its source; no journal of the
// old content or key survives; a file with other names (hard links) is refused.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const {
  Database,
  SQLITE_MAGIC,
  newKey,
  tempDir,
  removeDir,
  throwsSqlite,
  betterSqlite3OrPlain,
} = require('./_helpers-encryption');

const { Plain } = betterSqlite3OrPlain();
const ROOT = typeof process.getuid === 'function' && process.getuid() === 0;
const NOBODY = 65534;
const NOT_ROOT = 'needs root to give a file another owner';
// On Windows (scripts/test-windows.js) the checks of POSIX modes, owners, sticky
// directories and other users are skipped, each saying what Windows does instead
// (docs/key-lifecycle.md §6); every other check runs there too.
const WINDOWS = process.platform === 'win32';
const NO_MODES =
  WINDOWS &&
  "POSIX mode bits: Windows has none; the new file gets the original's owner, group and DACL (docs/key-lifecycle.md §6)";
const NO_USERS = WINDOWS && 'runs a child as another POSIX user (uid 65534)';

let root;
let n = 0;
const fresh = (name = 'app.db') => {
  const d = path.join(root, `f${++n}`);
  fs.mkdirSync(d);
  return path.join(d, name);
};
before(() => {
  root = tempDir('keyfiles');
});
after(() => {
  removeDir(root);
});

const MARKER = 'plaintext marker 7f3a';
const CONTENT = `CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);
  WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 300)
  INSERT INTO t SELECT x, '${MARKER} ' || x FROM s;`;

function plainFile(file, journalMode = 'delete') {
  const db = new Plain(file);
  db.pragma(`journal_mode = ${journalMode}`);
  db.exec(CONTENT);
  db.close();
}

function encryptedFile(file, key, journalMode = 'delete') {
  const db = new Database(file, { key });
  db.pragma(`journal_mode = ${journalMode}`);
  db.exec(CONTENT);
  db.close();
}

const modeOf = (file) => fs.statSync(file).mode & 0o7777;
const count = (file, key) => {
  const db = new Database(file, key ? { key } : {});
  try {
    return db.prepare('SELECT count(*) FROM t').pluck().get();
  } finally {
    db.close();
  }
};

describe('86.1 the replacement keeps mode, owner and group', () => {
  for (const mode of [0o600, 0o640, 0o604]) {
    it(`86.1.1 encrypt and rekey keep mode ${mode.toString(8)}`, { skip: NO_MODES }, () => {
      const f = fresh();
      plainFile(f);
      fs.chmodSync(f, mode);
      const key = newKey();
      Database.encrypt(f, key);
      assert.equal(modeOf(f).toString(8), mode.toString(8), 'after encrypt');
      const db = new Database(f, { key });
      const k2 = newKey();
      db.rekey(k2);
      db.close();
      assert.equal(modeOf(f).toString(8), mode.toString(8), 'after rekey');
      assert.equal(count(f, k2), 300);
    });
  }

  it(
    '86.1.2 a file of another user keeps its owner and group through encrypt and rekey',
    { skip: NO_MODES || (!ROOT && NOT_ROOT) },
    () => {
      const f = fresh();
      plainFile(f);
      fs.chownSync(f, NOBODY, NOBODY);
      fs.chmodSync(f, 0o600);
      const key = newKey();
      Database.encrypt(f, key);
      let st = fs.statSync(f);
      assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [NOBODY, NOBODY, 0o600], 'after encrypt');
      const db = new Database(f, { key });
      const k2 = newKey();
      db.rekey(k2);
      db.close();
      st = fs.statSync(f);
      assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [NOBODY, NOBODY, 0o600], 'after rekey');
      assert.equal(count(f, k2), 300);
    },
  );

  it('86.1.3 decrypt writes its copy no wider than the source (0600 source: 0600 copy)', { skip: NO_MODES }, () => {
    const f = fresh();
    const key = newKey();
    encryptedFile(f, key);
    fs.chmodSync(f, 0o600);
    const out = path.join(path.dirname(f), 'plain.db');
    Database.decrypt(f, key, out);
    assert.equal(modeOf(out).toString(8), '600');
    assert.equal(count(out), 300);
    fs.chmodSync(f, 0o640);
    const out2 = path.join(path.dirname(f), 'plain2.db');
    Database.decrypt(f, key, out2);
    assert.equal(modeOf(out2).toString(8), '640');
  });

  it("86.1.4 decrypt's temporary copy is 0600 while it is written", { skip: NO_MODES }, async () => {
    const f = fresh();
    const key = newKey();
    encryptedFile(f, key);
    fs.chmodSync(f, 0o644);
    const out = path.join(path.dirname(f), 'plain.db');
    const temps = await pausedChild(
      { op: 'decrypt', file: f, key: key.toString('hex'), destination: out },
      'copied',
      () =>
        fs
          .readdirSync(path.dirname(f))
          .filter((x) => x.startsWith('plain.db.cipherlite-'))
          .map((x) => [x, modeOf(path.join(path.dirname(f), x))]),
    );
    assert.equal(temps.length, 1, JSON.stringify(temps));
    assert.equal(temps[0][1].toString(8), '600');
  });
});

const CHILD = path.join(__dirname, '_key-lifecycle-crash-child.js');

/** Runs the crash child with `config` paused at `step`, returns what `look()` gives then,
 * and kills it. */
function pausedChild(config, step, look) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        CIPHERLITE_KEYS_CRASH_CONFIG: JSON.stringify(config),
        CIPHERLITE_CRASH_TEST_PAUSE: `${step}:${config.op}`,
      },
    });
    let stderr = '';
    let seen;
    child.stderr.on('data', (d) => {
      stderr += d;
      if (seen === undefined && stderr.includes(`CIPHERLITE_PAUSED ${step}`)) {
        try {
          seen = look();
        } catch (err) {
          seen = err;
        }
        child.kill('SIGKILL');
      }
    });
    child.on('error', reject);
    child.on('exit', () => {
      if (seen === undefined) reject(new Error(`the child did not pause at ${step}: ${stderr}`));
      else if (seen instanceof Error) reject(seen);
      else resolve(seen);
    });
  });
}

describe('86.2 backup(dest, { key }) of a plaintext database', () => {
  it('86.2.1 writes no plaintext to any new file: a name another user made beforehand receives nothing', async () => {
    const f = fresh('src.db');
    plainFile(f);
    fs.chmodSync(f, 0o600);
    const dir = path.dirname(f);
    const dest = path.join(dir, 'enc.db');
    // Every name the backup could pick from the time and the process id, made first by
    // "another user" who keeps it open.
    const now = Date.now();
    const planted = [];
    for (let t = now; t < now + 50; t++) planted.push(`${dest}.cipherlite-backup-${process.pid}-${t}`);
    const fds = planted.map((p) => {
      fs.writeFileSync(p, '');
      fs.chmodSync(p, 0o666);
      return fs.openSync(p, 'r');
    });
    const realNow = Date.now;
    let tick = now;
    Date.now = () => Math.min(tick++, now + 49);
    const db = new Database(f);
    try {
      await db.backup(dest, { key: newKey() });
    } finally {
      Date.now = realNow;
      db.close();
    }
    for (const [i, fd] of fds.entries()) {
      const got = fs.readFileSync(fd);
      fs.closeSync(fd);
      assert.ok(!got.includes(Buffer.from(MARKER)), `plaintext written into ${planted[i]}`);
    }
    const bytes = fs.readFileSync(dest);
    assert.ok(!bytes.subarray(0, 16).equals(SQLITE_MAGIC) && !bytes.includes(Buffer.from(MARKER)));
    // The planted files are the other user's: left where they were.
    for (const p of planted) assert.ok(fs.existsSync(p), p);
  });

  it('86.2.2 its copy is no wider than the source (0600 source: 0600 copy)', { skip: NO_MODES }, async () => {
    const f = fresh('src.db');
    plainFile(f);
    fs.chmodSync(f, 0o600);
    const dest = path.join(path.dirname(f), 'enc.db');
    const db = new Database(f);
    try {
      await db.backup(dest, { key: newKey() });
    } finally {
      db.close();
    }
    assert.equal(modeOf(dest).toString(8), '600');
  });
});

describe('86.3 no journal of the old content or key survives', () => {
  it('86.3.1 encrypt of a PERSIST database leaves no plaintext journal', () => {
    const f = fresh();
    plainFile(f, 'persist');
    const plain = new Plain(f);
    plain.pragma('journal_mode = persist');
    plain.exec(`UPDATE t SET v = v || ' changed'`);
    plain.close();
    assert.ok(fs.readFileSync(`${f}-journal`).includes(Buffer.from(MARKER)), 'the journal holds page images');
    const key = newKey();
    Database.encrypt(f, key);
    assert.ok(!fs.existsSync(`${f}-journal`), 'the plaintext journal is gone');
    assert.deepEqual(fs.readdirSync(path.dirname(f)), ['app.db']);
    assert.equal(count(f, key), 300);
  });

  it('86.3.2 rekey of a PERSIST database leaves no journal written under the old key', () => {
    const f = fresh();
    const key = newKey();
    const db = new Database(f, { key });
    db.pragma('journal_mode = persist');
    db.exec(CONTENT);
    db.exec(`UPDATE t SET v = v || ' changed'`);
    assert.ok(fs.statSync(`${f}-journal`).size > 0, 'a persisted journal');
    const k2 = newKey();
    db.rekey(k2);
    assert.ok(!fs.existsSync(`${f}-journal`), 'the old-key journal is gone');
    assert.equal(db.pragma('journal_mode', { simple: true }), 'persist', 'the journal mode is kept');
    db.exec("INSERT INTO t(v) VALUES ('after')");
    db.close();
    assert.equal(count(f, k2), 301);
  });
});

describe('86.4 hard-linked databases are refused', () => {
  it('86.4.1 encrypt: refused, both names unchanged', () => {
    const f = fresh();
    plainFile(f);
    const other = path.join(path.dirname(f), 'other-name.db');
    fs.linkSync(f, other);
    const before = fs.readFileSync(f);
    throwsSqlite(
      () => Database.encrypt(f, newKey()),
      'SQLITE_CANTOPEN',
      `cannot encrypt ${f}: the file has 2 names (hard links), and the others would keep the old content; remove the other names first`,
    );
    assert.deepEqual(fs.readFileSync(f), before);
    assert.equal(fs.statSync(f).ino, fs.statSync(other).ino);
    assert.deepEqual(fs.readdirSync(path.dirname(f)).sort(), ['app.db', 'other-name.db']);
  });

  it('86.4.2 rekey: refused, the connection keeps working under the old key', () => {
    const f = fresh();
    const key = newKey();
    encryptedFile(f, key);
    const other = path.join(path.dirname(f), 'other-name.db');
    fs.linkSync(f, other);
    const db = new Database(f, { key });
    throwsSqlite(
      () => db.rekey(newKey()),
      'SQLITE_CANTOPEN',
      `cannot rekey ${f}: the file has 2 names (hard links), and the others would keep the old content; remove the other names first`,
    );
    db.exec("INSERT INTO t(v) VALUES ('after')");
    db.close();
    assert.equal(count(other, key), 301);
    assert.equal(fs.statSync(f).ino, fs.statSync(other).ino);
  });
});

const PEER = path.join(__dirname, '_key-lifecycle-peer-child.js');
const { real: realBetterSqlite3 } = betterSqlite3OrPlain();

/** Starts a peer (see _key-lifecycle-peer-child.js); resolves once it is READY to
 * { result: Promise<{ committed, error }>, stop() }. */
function startPeer(config) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PEER], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CIPHERLITE_PEER_CONFIG: JSON.stringify(config) },
    });
    let stdout = '';
    let stderr = '';
    let ready = false;
    let settle;
    const result = new Promise((res, rej) => {
      settle = { res, rej };
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.stdout.on('data', (d) => {
      stdout += d;
      if (!ready && stdout.includes('READY\n')) {
        ready = true;
        resolve({ result, stop: () => fs.writeFileSync(config.stopFile, '') });
      }
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (!line) {
        const err = new Error(`peer exited (${code}, ${signal}) without a result: ${stderr}`);
        if (!ready) reject(err);
        settle.rej(err);
      } else settle.res(JSON.parse(line));
    });
  });
}

/** Runs `op` until it is not refused as busy (a looping peer holds the lock briefly). */
function retryBusy(op) {
  for (let i = 0; ; i++) {
    try {
      return op();
    } catch (err) {
      if (err.code !== 'SQLITE_BUSY' || i > 5000) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    }
  }
}

describe('86.5 other connections cannot write into the file that encrypt/rekey replaced', () => {
  const drivers = realBetterSqlite3 ? ['better-sqlite3', 'cipherlite'] : ['cipherlite'];
  const cases = [];
  for (const driver of drivers) {
    for (const journalMode of ['delete', 'truncate', 'persist', 'memory', 'off']) {
      if (journalMode === 'off' && driver === 'cipherlite') continue;
      for (const behaviour of ['idle', 'loop']) cases.push({ op: 'encrypt', driver, journalMode, behaviour });
    }
  }
  for (const journalMode of ['delete', 'truncate', 'persist', 'memory']) {
    for (const behaviour of ['idle', 'loop']) cases.push({ op: 'rekey', driver: 'cipherlite', journalMode, behaviour });
  }
  for (const c of cases) {
    it(
      `86.5.1 ${c.op}, a ${c.driver} peer in ${c.journalMode} mode, ${c.behaviour}: its next statement fails; every row it saw commit is in the new file`,
      {
        skip:
          WINDOWS &&
          'Windows refuses the rename while the peer has the file open: SQLITE_BUSY, the file unchanged (46-windows, "another process holding the file open")',
      },
      async () => {
        const f = fresh();
        const key = newKey();
        const k2 = newKey();
        if (c.op === 'encrypt') plainFile(f);
        else encryptedFile(f, key);
        const stopFile = path.join(path.dirname(f), 'stop');
        const peer = await startPeer({
          driver: c.driver,
          file: f,
          key: c.op === 'rekey' ? key.toString('hex') : null,
          journalMode: c.journalMode,
          behaviour: c.behaviour,
          stopFile,
        });
        let finalKey;
        if (c.op === 'encrypt') {
          retryBusy(() => Database.encrypt(f, k2));
          finalKey = k2;
        } else {
          const db = new Database(f, { key });
          retryBusy(() => db.rekey(k2));
          db.close();
          finalKey = k2;
        }
        await new Promise((r) => setTimeout(r, 100));
        peer.stop();
        const { committed, error } = await peer.result;
        assert.ok(error !== null, `the peer went on without an error (${committed} rows it saw commit)`);
        // A plaintext peer finds no SQLite header; an encrypted one a page 1 that does not
        // authenticate.
        assert.equal(error.code, c.op === 'encrypt' ? 'SQLITE_NOTADB' : 'SQLITE_CORRUPT', JSON.stringify(error));
        if (c.behaviour === 'loop') assert.ok(committed >= 20);
        assert.equal(count(f, finalKey), 300 + committed, 'every row the peer saw commit');
      },
    );
  }

  it('86.5.2 a peer in WAL mode, idle: encrypt and rekey are refused, nothing changes', async () => {
    for (const op of ['encrypt', 'rekey']) {
      const f = fresh();
      const key = newKey();
      if (op === 'encrypt') plainFile(f, 'wal');
      else encryptedFile(f, key, 'wal');
      const stopFile = path.join(path.dirname(f), 'stop');
      const peer = await startPeer({
        driver: op === 'encrypt' && realBetterSqlite3 ? 'better-sqlite3' : 'cipherlite',
        file: f,
        key: op === 'rekey' ? key.toString('hex') : null,
        journalMode: 'wal',
        behaviour: 'idle',
        stopFile,
      });
      if (op === 'encrypt') {
        throwsSqlite(() => Database.encrypt(f, newKey()), 'SQLITE_BUSY', /another connection has the database open/);
      } else {
        const db = new Database(f, { key, timeout: 0 });
        throwsSqlite(() => db.rekey(newKey()), 'SQLITE_BUSY', /another connection has the database open/);
        db.close();
      }
      peer.stop();
      const { committed, error } = await peer.result;
      assert.deepEqual([committed, error], [1, null], op);
      assert.equal(count(f, op === 'rekey' ? key : undefined), 301);
    }
  });
});

describe(
  '86.6 a full disk: the operation fails, the journal mode is kept',
  { skip: WINDOWS && 'mounts a 2 MB tmpfs (Linux)' },
  () => {
    let mnt;
    let mountError = null;
    before(() => {
      mnt = fs.mkdtempSync(path.join(root, 'tmpfs-'));
      const { spawnSync } = require('node:child_process');
      const r =
        ROOT && !WINDOWS
          ? spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mnt], { encoding: 'utf8' })
          : null;
      if (!r || r.status !== 0) mountError = r ? `mount failed: ${r.stderr || r.error}` : 'needs root to mount a tmpfs';
    });
    after(() => {
      if (!mountError) require('node:child_process').spawnSync('umount', ['-l', mnt]);
    });

    const fillDisk = (f, key, mode) => {
      for (const name of fs.readdirSync(mnt)) fs.rmSync(path.join(mnt, name), { force: true });
      // Filled in DELETE mode (a WAL of it would not fit beside it), then switched.
      const db = key ? new Database(f, { key }) : new Plain(f);
      db.exec(`CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);
      WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 1200)
      INSERT INTO t SELECT x, randomblob(900) FROM s;`);
      db.pragma(`journal_mode = ${mode}`);
      db.close();
      assert.ok(fs.statSync(f).size > 1024 * 1024, 'more than half the disk');
    };
    for (const [op, mode] of [
      ['encrypt', 'wal'],
      ['rekey', 'wal'],
      ['encrypt', 'delete'],
      ['rekey', 'delete'],
    ]) {
      it(`86.6.1 ${op} of a ${mode} database on a full disk: SQLITE_FULL, still ${mode}, every row there`, (t) => {
        if (mountError) return t.skip(mountError);
        const f = path.join(mnt, 'full.db');
        const key = newKey();
        fillDisk(f, op === 'rekey' ? key : null, mode);
        if (op === 'encrypt') {
          throwsSqlite(() => Database.encrypt(f, newKey()), 'SQLITE_FULL');
        } else {
          const conn = new Database(f, { key });
          throwsSqlite(() => conn.rekey(newKey()), 'SQLITE_FULL');
          assert.equal(conn.pragma('journal_mode', { simple: true }), mode, 'the connection is back in its mode');
          conn.close();
        }
        const header = fs.readFileSync(f).subarray(0, 100);
        const walByte = mode === 'wal' ? 2 : 1;
        if (op === 'encrypt') assert.deepEqual([header[18], header[19]], [walByte, walByte], 'the file says so');
        const again = new Database(f, op === 'rekey' ? { key } : {});
        assert.equal(again.pragma('journal_mode', { simple: true }), mode);
        assert.equal(again.prepare('SELECT count(*) FROM t').pluck().get(), 1200);
        again.close();
        assert.deepEqual(
          fs.readdirSync(mnt).filter((x) => x.includes('cipherlite')),
          [],
          'no copy left',
        );
      });
    }

    it('86.6.2 decrypt and backup(dest, { key }) on a full disk: SQLITE_FULL, no partial file left', async (t) => {
      if (mountError) return t.skip(mountError);
      const f = path.join(mnt, 'full.db');
      const key = newKey();
      fillDisk(f, key, 'delete');
      throwsSqlite(() => Database.decrypt(f, key, path.join(mnt, 'plain.db')), 'SQLITE_FULL');
      assert.deepEqual(fs.readdirSync(mnt), ['full.db']);
      fillDisk(f, null, 'delete');
      const db = new Database(f);
      await assert.rejects(db.backup(path.join(mnt, 'enc.db'), { key }), { code: 'SQLITE_FULL' });
      db.close();
      assert.deepEqual(fs.readdirSync(mnt), ['full.db']);
    });
  },
);

describe('86.7 leftovers: only what cipherlite provably made is removed', () => {
  it("86.7.1 a user's own files named like copies survive encrypt and rekey", () => {
    const f = fresh();
    plainFile(f);
    const dir = path.dirname(f);
    const mine = ['app.db.cipherlite-notes.txt', 'app.db.cipherlite-encrypt-mine', 'app.db.cipherlite-rekey-0123'];
    for (const name of mine) fs.writeFileSync(path.join(dir, name), `my own ${name}`);
    const key = newKey();
    Database.encrypt(f, key);
    const db = new Database(f, { key });
    db.rekey(newKey());
    db.close();
    assert.deepEqual(fs.readdirSync(dir).sort(), ['app.db', ...mine].sort());
    for (const name of mine) assert.equal(fs.readFileSync(path.join(dir, name), 'utf8'), `my own ${name}`);
  });

  it("86.7.2 decrypt's partial plaintext copy left by a crash is removed by the next decrypt to that destination", async () => {
    const f = fresh();
    const key = newKey();
    encryptedFile(f, key);
    const dir = path.dirname(f);
    const out = path.join(dir, 'plain.db');
    const config = { op: 'decrypt', file: f, key: key.toString('hex'), destination: out };
    await pausedChild(config, 'copied', () => null);
    const left = fs.readdirSync(dir).filter((x) => x.startsWith('plain.db.cipherlite-decrypt-'));
    assert.equal(left.length, 1, 'the killed decrypt left its copy');
    Database.decrypt(f, key, out);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['app.db', 'plain.db']);
    assert.equal(count(out), 300);
  });
});

describe('86.8 a connection whose file another connection replaced', () => {
  it(
    '86.8.1 verify() and rekey() say the file was replaced, not "wrong key" or "page 1 damaged"',
    {
      skip:
        WINDOWS &&
        'Windows refuses the rekey while the other connection has the file open, so no connection is left on a replaced file (46-windows)',
    },
    () => {
      const f = fresh();
      const key = newKey();
      encryptedFile(f, key);
      const winner = new Database(f, { key });
      const stale = new Database(f, { key });
      assert.equal(stale.prepare('SELECT count(*) FROM t').pluck().get(), 300);
      const k2 = newKey();
      winner.rekey(k2);
      const message = `the file ${f} was replaced (encrypted, rekeyed or renamed over by another connection) since this connection opened it; open it again`;
      throwsSqlite(() => stale.verify(), 'SQLITE_READONLY_DBMOVED', `cannot verify ${f}: ${message}`);
      throwsSqlite(() => stale.rekey(newKey()), 'SQLITE_READONLY_DBMOVED', `cannot rekey ${f}: ${message}`);
      stale.close();
      assert.equal(winner.verify().ok, true);
      winner.close();
      assert.equal(count(f, k2), 300);
    },
  );
});

describe('86.10 a directory every user may write, without the sticky bit', () => {
  it(
    '86.10.1 encrypt, rekey, decrypt and backup(dest, { key }) are refused there (another user could swap the copy by name); with the sticky bit they work',
    {
      skip:
        WINDOWS &&
        "POSIX directory modes and the sticky bit: on Windows the copy gets the original's DACL (docs/key-lifecycle.md §6)",
    },
    async () => {
      const key = newKey();
      const file = fresh('shared.db');
      const dir = path.dirname(file);
      plainFile(file);
      fs.chmodSync(dir, 0o777);
      const before = fs.readFileSync(file);
      const shared = /writable by every user and not sticky: another user could replace the temporary copy/;
      throwsSqlite(() => Database.encrypt(file, key), 'SQLITE_PERM', shared);
      assert.ok(fs.readFileSync(file).equals(before), 'encrypt changed the file');
      const source = new Database(file);
      await assert.rejects(
        source.backup(path.join(dir, 'copy.db'), { key }),
        (e) => e.code === 'SQLITE_PERM' && shared.test(e.message),
      );
      source.close();
      assert.deepEqual(fs.readdirSync(dir).sort(), ['shared.db']);
      fs.chmodSync(dir, 0o1777);
      Database.encrypt(file, key);
      const db = new Database(file, { key });
      fs.chmodSync(dir, 0o777);
      throwsSqlite(() => db.rekey(newKey()), 'SQLITE_PERM', shared);
      db.close();
      const elsewhere = fresh('private.db');
      encryptedFile(elsewhere, key);
      throwsSqlite(() => Database.decrypt(elsewhere, key, path.join(dir, 'plain.db')), 'SQLITE_PERM', shared);
      assert.equal(fs.existsSync(path.join(dir, 'plain.db')), false);
      assert.equal(count(file, key), 300);
    },
  );
});

describe('86.9 as another user', () => {
  it(
    '86.9.1 a user who may not give the new file its group is refused with SQLITE_PERM; nothing changes',
    { skip: NO_USERS },
    (t) => {
      if (!ROOT) return t.skip('needs root to run a child as user nobody');
      const { spawnSync } = require('node:child_process');
      const pkg = JSON.stringify(path.join(__dirname, '..'));
      const probe = spawnSync(process.execPath, ['-e', `require(${pkg})`], { uid: NOBODY, gid: NOBODY });
      if (probe.status !== 0) return t.skip(`user nobody cannot run ${process.execPath} with cipherlite`);
      fs.chmodSync(root, 0o755); // mkdtemp's 0700 would keep nobody out of every case
      const d = path.join(root, `f${++n}`);
      fs.mkdirSync(d);
      fs.chmodSync(d, 0o1777); // sticky: without it every user could swap the copy (86.10)
      const f = path.join(d, 'app.db');
      plainFile(f);
      // nobody's file, in root's group (nobody is not in it), writable by nobody.
      fs.chownSync(f, NOBODY, 0);
      fs.chmodSync(f, 0o640);
      const before = fs.readFileSync(f);
      const script = `const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
      try { Database.encrypt(process.argv[1], Buffer.alloc(32, 7)); console.log(JSON.stringify({ done: true })); }
      catch (err) { console.log(JSON.stringify({ code: err.code, message: err.message })); }`;
      const r = spawnSync(process.execPath, ['-e', script, f], { uid: NOBODY, gid: NOBODY, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const got = JSON.parse(r.stdout);
      assert.equal(got.code, 'SQLITE_PERM', JSON.stringify(got));
      assert.match(
        got.message,
        /the new file cannot be given the owner and group of the old one \(uid 65534, gid 0: .*\); .* is unchanged/,
      );
      assert.deepEqual(fs.readFileSync(f), before);
      const st = fs.statSync(f);
      assert.deepEqual([st.uid, st.gid, st.mode & 0o777], [NOBODY, 0, 0o640]);
      assert.deepEqual(fs.readdirSync(d), ['app.db'], 'no copy left');
    },
  );
});
