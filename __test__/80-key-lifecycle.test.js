'use strict';
// The key lifecycle through the API: Database.encrypt() of a better-sqlite3 file,
// db.rekey(), Database.decrypt(), db.verify(), db.backup(dest, { key }) — what a user
// sees (content, digests, bytes on disk, errors) and that every refusal changes nothing.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const {
  Database,
  PAGE,
  SQLITE_MAGIC,
  newKey,
  tempDir,
  removeDir,
  snapshotDir,
  throwsSqlite,
  throwsType,
  pageHmacOk,
  runInReadOnlyDir,
  betterSqlite3OrPlain,
} = require('./_helpers-encryption');

// better-sqlite3 itself where its build loads on this Node (see the helper).
const { Plain: BetterSqlite3, modulePath: betterSqlite3Path } = betterSqlite3OrPlain();

// Windows (scripts/test-windows.js): chmod'ed directories are POSIX.
const POSIX_ONLY = process.platform === 'win32' && 'directory modes (chmod) are POSIX-only';

let root;
let n = 0;
/** A fresh directory per case; returns a path for `name` in it. */
const fresh = (name = 'app.db') => {
  const d = path.join(root, `c${++n}`);
  fs.mkdirSync(d);
  return path.join(d, name);
};
before(() => {
  root = tempDir('keys');
});
after(() => {
  removeDir(root);
});

const CONTENT_SQL = `
	PRAGMA user_version = 42;
	CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body BLOB, score REAL);
	CREATE TABLE tags(name TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID;
	CREATE TABLE log(line TEXT);
	CREATE INDEX notes_title ON notes(title);
	CREATE VIEW v AS SELECT title FROM notes;
	WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 2500)
		INSERT INTO notes SELECT x, 'note ' || x, randomblob(x % 500), x / 3.0 FROM s;
	INSERT INTO tags SELECT 'tag' || id, id FROM notes WHERE id % 7 = 0;
	INSERT INTO log SELECT 'line ' || id FROM notes WHERE id % 2 = 0;
	DELETE FROM log WHERE rowid % 3 = 0;
`;

/** A plaintext database made by better-sqlite3 itself. */
function makeBetterSqlite3File(file, journalMode = 'delete') {
  const db = new BetterSqlite3(file);
  db.pragma(`journal_mode = ${journalMode}`);
  db.exec(CONTENT_SQL);
  db.close();
}

function digestOf(file, key) {
  const db = new Database(file, key ? { key } : {});
  try {
    const r = db.verify();
    assert.equal(r.ok, true, JSON.stringify(r));
    return r.contentDigest;
  } finally {
    db.close();
  }
}

const rows = (db) => db.prepare('SELECT count(*) AS n, sum(id) AS s, sum(length(body)) AS b FROM notes').get();
const EXPECTED_ROWS = { n: 2500, s: (2500 * 2501) / 2, b: null };

describe('Database.encrypt()', () => {
  for (const mode of ['delete', 'wal']) {
    it(`encrypts a better-sqlite3 file (${mode} mode) in place; same content digest`, () => {
      const f = fresh();
      makeBetterSqlite3File(f, mode);
      const plainDigest = digestOf(f);
      const key = newKey();
      const calls = [];
      Database.encrypt(f, key, { progress: (done, total) => calls.push([done, total]) });
      assert.ok(calls.length >= 2 && calls.at(-1)[0] === calls.at(-1)[1], JSON.stringify(calls));

      const bytes = fs.readFileSync(f);
      assert.ok(!bytes.subarray(0, 16).equals(SQLITE_MAGIC), 'no plaintext header');
      assert.equal(bytes.length % PAGE, 0);
      assert.ok(pageHmacOk(bytes, 2, key), 'page 2 authenticates under the key');
      assert.ok(!bytes.includes(Buffer.from('note 1234')), 'no plaintext row on disk');
      assert.deepEqual(fs.readdirSync(path.dirname(f)), ['app.db'], 'nothing left beside it');

      const db = new Database(f, { key });
      assert.equal(db.pragma('journal_mode', { simple: true }), mode, 'journal mode kept');
      assert.equal(db.pragma('user_version', { simple: true }), 42);
      const r = rows(db);
      assert.equal(r.n, 2500);
      assert.equal(r.s, EXPECTED_ROWS.s);
      const report = db.verify();
      db.close();
      assert.deepEqual(Object.keys(report), [
        'pages',
        'walFrames',
        'encrypted',
        'ok',
        'firstBadPage',
        'integrity',
        'contentDigest',
      ]);
      assert.equal(report.ok, true);
      assert.equal(report.encrypted, true);
      assert.equal(report.firstBadPage, null);
      assert.equal(report.integrity, 'ok');
      assert.equal(report.pages, bytes.length / PAGE);
      assert.equal(report.contentDigest, plainDigest, 'content digest unchanged by encrypt');
      assert.match(report.contentDigest, /^[0-9a-f]{64}$/);
      // better-sqlite3 cannot read it any more.
      const plain = new BetterSqlite3(f);
      assert.throws(() => plain.prepare('SELECT * FROM notes'), { code: 'SQLITE_NOTADB' });
      plain.close();
    });
  }

  it('other page sizes and auto_vacuum are rebuilt into 4096-byte encrypted pages', () => {
    for (const [pageSize, autoVacuum] of [
      [1024, 'none'],
      [65536, 'full'],
      [8192, 'incremental'],
    ]) {
      const f = fresh();
      const db = new BetterSqlite3(f);
      db.pragma(`page_size = ${pageSize}`);
      db.pragma(`auto_vacuum = ${autoVacuum}`);
      db.exec(CONTENT_SQL);
      db.close();
      const digest = digestOf(f);
      const key = newKey();
      Database.encrypt(f, key);
      assert.equal(fs.statSync(f).size % PAGE, 0);
      const enc = new Database(f, { key });
      assert.equal(enc.pragma('page_size', { simple: true }), PAGE, `from ${pageSize}`);
      assert.equal(enc.pragma('auto_vacuum', { simple: true }), { none: 0, full: 1, incremental: 2 }[autoVacuum]);
      assert.equal(enc.verify().contentDigest, digest);
      enc.close();
    }
  });

  it('an exception thrown by progress is rethrown after the operation completed', () => {
    const f = fresh();
    makeBetterSqlite3File(f);
    const key = newKey();
    const boom = new Error('stop drawing');
    let calls = 0;
    assert.throws(
      () =>
        Database.encrypt(f, key, {
          progress: () => {
            calls++;
            throw boom;
          },
        }),
      (err) => err === boom,
    );
    assert.equal(calls, 1, 'not called again after it threw');
    const db = new Database(f, { key });
    assert.equal(rows(db).n, 2500, 'the database was encrypted all the same');
    assert.throws(
      () =>
        db.rekey(newKey(), {
          progress: () => {
            throw boom;
          },
        }),
      (err) => err === boom,
    );
    assert.equal(rows(db).n, 2500, 'rekeyed, and the connection works');
    db.close();
  });

  it('sqlcipher layout on request', () => {
    const f = fresh();
    makeBetterSqlite3File(f);
    const key = newKey();
    Database.encrypt(f, key, { cipherLayout: 'sqlcipher' });
    assert.ok(pageHmacOk(fs.readFileSync(f), 1, key, 16), 'page 1 in the SQLCipher layout');
  });

  it('refuses an encrypted file, a missing file, a file in use, and bad arguments — changing nothing', () => {
    const f = fresh();
    makeBetterSqlite3File(f, 'wal');
    const key = newKey();
    const dir = path.dirname(f);

    // In use by another connection (WAL mode: it holds the file open). A connection of
    // this library: better-sqlite3 in the same process is a second copy of SQLite, whose
    // POSIX locks the kernel does not tell apart from ours (see the next test).
    const other = new Database(f);
    other.prepare('SELECT count(*) FROM notes').get();
    const before = snapshotDir(dir);
    throwsSqlite(() => Database.encrypt(f, key), 'SQLITE_BUSY', /another connection has the database open/);
    assert.deepEqual(snapshotDir(dir), before, 'nothing changed');
    other.close();

    // In use, rollback mode, inside a read transaction.
    const f2 = fresh();
    makeBetterSqlite3File(f2, 'delete');
    const reader = new Database(f2);
    const it2 = reader.prepare('SELECT id FROM notes').iterate();
    it2.next();
    throwsSqlite(() => Database.encrypt(f2, key), 'SQLITE_BUSY', /another connection/);
    it2.return();
    reader.close();
    assert.deepEqual(fs.readFileSync(f2).subarray(0, 16), SQLITE_MAGIC, 'still plaintext');

    Database.encrypt(f, key);
    const encrypted = snapshotDir(dir);
    throwsSqlite(
      () => Database.encrypt(f, newKey()),
      'SQLITE_NOTADB',
      /is not a plaintext SQLite database \(is it encrypted already\?\)/,
    );
    throwsSqlite(() => Database.encrypt(f, key), 'SQLITE_NOTADB', /encrypted already/);
    assert.deepEqual(snapshotDir(dir), encrypted);

    throwsSqlite(
      () => Database.encrypt(path.join(dir, 'missing.db'), key),
      'SQLITE_CANTOPEN',
      /missing\.db: no such file/,
    );
    assert.ok(!fs.existsSync(path.join(dir, 'missing.db')), 'not created');
    const notDb = path.join(dir, 'notes.txt');
    fs.writeFileSync(notDb, 'hello '.repeat(200));
    throwsSqlite(() => Database.encrypt(notDb, key), 'SQLITE_NOTADB', /not a plaintext SQLite database/);

    throwsType(() => Database.encrypt(f2, Buffer.alloc(31)), /Expected the key to be a 32-byte Buffer or Uint8Array/);
    throwsType(() => Database.encrypt(f2, 'x'.repeat(32)), /32-byte Buffer/);
    // Not real typed arrays, whatever their prototype or length says.
    const fakes = [
      new Proxy(Buffer.from(key), {}),
      Object.create(Uint8Array.prototype),
      Object.create(Buffer.prototype, { length: { value: 32 } }),
      new Uint16Array(16),
    ];
    for (const fake of fakes) {
      throwsType(() => Database.encrypt(f2, fake), /Expected the key to be a 32-byte Buffer or Uint8Array/);
      throwsType(
        () => Database.decrypt(f2, fake, path.join(dir, 'never.db')),
        /Expected the key to be a 32-byte Buffer or Uint8Array/,
      );
    }
    assert.ok(!fs.existsSync(path.join(dir, 'never.db')));
    throwsType(() => Database.encrypt(f2, key, { cipherLayout: 'aes' }), /cipherLayout/);
    throwsType(() => Database.encrypt(f2, key, { progress: 1 }), /progress/);
    throwsType(() => Database.encrypt(42, key), /Expected the database path to be a string/);
    throwsType(() => Database.encrypt(':memory:', key), /name a database file/);
    assert.deepEqual(fs.readFileSync(f2).subarray(0, 16), SQLITE_MAGIC, 'still plaintext');
  });

  it('refuses while another process has the file open (better-sqlite3, WAL mode)', async () => {
    const f = fresh();
    makeBetterSqlite3File(f, 'wal');
    const child = spawn(
      process.execPath,
      [
        '-e',
        `
			const db = new (require(${JSON.stringify(betterSqlite3Path)}))(${JSON.stringify(f)});
			db.prepare('SELECT count(*) FROM notes').get();
			process.stdout.write('READY\\n');
			setInterval(() => db, 60000); // holds db: a collected Database closes`,
      ],
      { cwd: path.join(__dirname, '..'), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise((resolve, reject) => {
        child.stdout.on('data', (d) => {
          if (String(d).includes('READY')) resolve();
        });
        child.on('exit', () => reject(new Error('child exited early')));
      });
      const before = snapshotDir(path.dirname(f));
      throwsSqlite(() => Database.encrypt(f, newKey()), 'SQLITE_BUSY', /another connection has the database open/);
      assert.deepEqual(snapshotDir(path.dirname(f)), before);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a read-only directory: a clear error naming it, nothing changed', { skip: POSIX_ONLY }, () => {
    const dir = tempDir('keys-ro');
    try {
      const f = path.join(dir, 'ro.db');
      makeBetterSqlite3File(f);
      const before = snapshotDir(dir);
      const out = runInReadOnlyDir(dir, 'Database.encrypt("ro.db", Buffer.from(args.key, "hex"));', {
        key: newKey().toString('hex'),
      });
      assert.equal(out.error && out.error.name, 'SqliteError', JSON.stringify(out));
      assert.equal(out.error.code, 'SQLITE_CANTOPEN');
      assert.match(out.error.message, /^cannot write a copy in the directory .*: permission denied$/);
      assert.ok(out.error.message.includes(dir), out.error.message);
      assert.deepEqual(snapshotDir(dir), before);
    } finally {
      removeDir(dir);
    }
  });
});

describe('db.rekey()', () => {
  function encryptedDb(mode = 'wal') {
    const f = fresh();
    const key = newKey();
    const db = new Database(f, { key });
    db.pragma(`journal_mode = ${mode}`);
    db.exec(CONTENT_SQL);
    return { f, key, db };
  }

  for (const mode of ['wal', 'delete']) {
    it(`${mode}: the file is under the new key only; the Database keeps working`, () => {
      const { f, key, db } = encryptedDb(mode);
      db.function('double_it', (x) => x * 2);
      db.aggregate('total', { start: 0, step: (acc, x) => acc + x });
      const count = db.prepare('SELECT double_it(count(*)) AS n FROM notes WHERE id > ?').bind(100);
      const total = db.prepare('SELECT total(id) AS t FROM notes');
      const insert = db.prepare('INSERT INTO log VALUES (?)');
      db.pragma('cache_size = -1234');
      db.pragma('foreign_keys = OFF');
      const digest = db.verify().contentDigest;
      const newK = newKey();

      assert.equal(db.rekey(newK), db);

      // Statements prepared before, with their bound values, functions, settings.
      assert.deepEqual(count.get(), { n: 4800 });
      assert.deepEqual(total.get(), { t: EXPECTED_ROWS.s });
      insert.run('after rekey');
      assert.equal(db.pragma('cache_size', { simple: true }), -1234);
      assert.equal(db.pragma('foreign_keys', { simple: true }), 0);
      assert.equal(db.pragma('journal_mode', { simple: true }), mode);
      assert.equal(db.open, true);
      const report = db.verify();
      assert.equal(report.ok, true);
      db.close();

      const bytes = fs.readFileSync(f);
      assert.ok(pageHmacOk(bytes, 2, newK), 'page 2 under the new key');
      assert.ok(!pageHmacOk(bytes, 2, key), 'not under the old one');
      throwsSqlite(() => new Database(f, { key }), 'SQLITE_NOTADB');
      const again = new Database(f, { key: newK });
      assert.equal(again.prepare("SELECT count(*) FROM log WHERE line = 'after rekey'").pluck().get(), 1);
      again.exec("DELETE FROM log WHERE line = 'after rekey'");
      assert.equal(again.verify().contentDigest, digest, 'same content as before the rekey');
      again.close();
      assert.deepEqual(
        fs.readdirSync(path.dirname(f)).filter((x) => !x.endsWith('-wal') && !x.endsWith('-shm')),
        ['app.db'],
      );
    });
  }

  it('is refused while a backup of the connection is running; the backup finishes under the old key', async () => {
    const { f, key, db } = encryptedDb('delete');
    const digest = db.verify().contentDigest;
    const dest = path.join(path.dirname(f), 'copy.db');
    const newK = newKey();
    let refusal = null;
    const running = db.backup(dest, {
      progress: () => {
        if (refusal === null) {
          try {
            db.rekey(newK);
            refusal = 'not thrown';
          } catch (err) {
            refusal = err;
          }
        }
        return 1;
      },
    });
    await running;
    assert.ok(refusal instanceof TypeError, String(refusal));
    assert.equal(refusal.message, 'Cannot rekey a database while a backup of it is running (await the backup first)');
    // Nothing changed: the file and the finished backup are under the old key.
    assert.equal(digestOf(dest, key), digest);
    assert.equal(db.prepare('SELECT count(*) FROM notes').pluck().get(), 2500);
    // Once the backup is over, the rekey goes through.
    db.rekey(newK);
    db.close();
    assert.equal(digestOf(f, newK), digest);
  });

  it('keeps the page-1 layout unless asked to change it', () => {
    const { f, db } = encryptedDb('delete');
    const k = newKey();
    db.rekey(k, { cipherLayout: 'sqlcipher' });
    assert.ok(pageHmacOk(fs.readFileSync(f), 1, k, 16), 'sqlcipher layout');
    const k2 = newKey();
    db.rekey(k2);
    assert.ok(pageHmacOk(fs.readFileSync(f), 1, k2, 16), 'still the sqlcipher layout');
    db.rekey(newKey(), { cipherLayout: 'sqlite3mc' });
    db.close();
  });

  it('carries over virtual tables, the latest definition of a function, named bindings and unsafe mode', () => {
    const { db } = encryptedDb('wal');
    db.function('pick', () => 'old');
    db.function('pick', () => 'new');
    db.table('numbers', {
      columns: ['n'],
      *rows() {
        for (let i = 1; i <= 3; i++) yield { n: i };
      },
    });
    const named = db.prepare('SELECT title FROM notes WHERE id = @id').bind({ id: 7 });
    db.unsafeMode(true);
    db.rekey(newKey());
    assert.equal(db.prepare('SELECT pick() AS p').get().p, 'new');
    assert.deepEqual(db.prepare('SELECT sum(n) AS s FROM numbers').get(), { s: 6 });
    assert.deepEqual(named.get(), { title: 'note 7' });
    // Unsafe mode (defensive off) still allows writing sqlite_schema...
    db.pragma('writable_schema = ON');
    db.exec("UPDATE sqlite_schema SET sql = sql WHERE name = 'log'");
    // ...and leaving it restores the defensive flag on the new connection.
    db.unsafeMode(false);
    assert.throws(() => db.exec("UPDATE sqlite_schema SET sql = sql WHERE name = 'log'"), { code: 'SQLITE_ERROR' });
    db.pragma('writable_schema = OFF');
    db.close();
  });

  it('statements prepared before a rekey take TEXT and BLOB values afterwards, nothing of the old connection', () => {
    // Regression: the statements moved to the new connection kept the old one as where
    // their parameter values live (sqlite3_transfer_bindings across connections), so
    // the first TEXT bound after the rekey went into memory freed with the old
    // connection: wrong rows, verify() not ok, or `munmap_chunk(): invalid pointer`.
    for (const mode of ['delete', 'wal']) {
      const { f, db } = encryptedDb(mode);
      const insert = db.prepare('INSERT INTO log VALUES (?)');
      const kept = db
        .prepare('SELECT ? AS t, ? AS b, ? AS n')
        .bind('bound before the rekey', Buffer.from([1, 2, 3]), 7);
      const echo = db.prepare('SELECT ? AS t, ? AS b');
      const newK = newKey();
      db.rekey(newK);
      // Other connections opened and closed: what the old one freed is reused.
      for (let i = 0; i < 3; i++) new Database(f, { key: newK }).close();
      for (let i = 0; i < 200; i++) {
        const text = `after the rekey ${i} ${'x'.repeat(i * 7)}`;
        insert.run(text);
        const blob = Buffer.alloc(i * 11, i & 0xff);
        assert.deepEqual(echo.get(text, blob), { t: text, b: blob });
        assert.deepEqual(kept.get(), { t: 'bound before the rekey', b: Buffer.from([1, 2, 3]), n: 7 });
      }
      assert.equal(db.prepare("SELECT count(*) FROM log WHERE line LIKE 'after the rekey %'").pluck().get(), 200);
      const report = db.verify();
      assert.equal(report.ok, true, JSON.stringify(report));
      db.close();
    }
  });

  it('refuses inside a transaction, with other connections, on plaintext and read-only databases — changing nothing', () => {
    const { f, key, db } = encryptedDb('wal');
    const dir = path.dirname(f);
    const newK = newKey();
    db.pragma('wal_checkpoint(TRUNCATE)');

    db.exec('BEGIN');
    throwsType(() => db.rekey(newK), /^Cannot rekey a database while a transaction is open$/);
    db.exec('COMMIT');

    const before = snapshotDir(dir);
    const other = new Database(f, { key });
    other.prepare('SELECT 1 FROM notes').get();
    throwsSqlite(() => db.rekey(newK), 'SQLITE_BUSY', /another connection has the database open/);
    other.close();
    // Still the old key, still working, still WAL.
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(rows(db).n, 2500);
    db.exec("INSERT INTO log VALUES ('still works')");
    const it2 = db.prepare('SELECT id FROM notes').iterate();
    it2.next();
    throwsType(() => db.rekey(newK), /busy/);
    it2.return();
    db.exec("ATTACH ':memory:' AS side");
    throwsType(() => db.rekey(newK), /other databases are attached/);
    db.exec('DETACH side');
    db.exec('CREATE TEMP TABLE scratch(x)');
    throwsType(() => db.rekey(newK), /temporary tables/);
    db.exec('DROP TABLE scratch');
    throwsType(() => db.rekey(Buffer.alloc(16)), /Expected the new key to be a 32-byte Buffer or Uint8Array/);
    for (const fake of [new Proxy(Buffer.from(newK), {}), Object.create(Uint8Array.prototype), new Uint32Array(8)]) {
      throwsType(() => db.rekey(fake), /Expected the new key to be a 32-byte Buffer or Uint8Array/);
    }
    throwsType(() => db.rekey(newK, { cipherLayout: 'x' }), /cipherLayout/);
    db.close();
    assert.ok(pageHmacOk(fs.readFileSync(f), 2, key), 'still under the old key');
    void before;

    const ro = new Database(f, { key, readonly: true });
    throwsSqlite(() => ro.rekey(newK), 'SQLITE_READONLY', /open read-only/);
    ro.close();

    const plainFile = fresh();
    const plain = new Database(plainFile);
    plain.exec('CREATE TABLE t(x)');
    throwsType(() => plain.rekey(newK), /not encrypted \(use Database\.encrypt\(\)/);
    plain.close();
    const closed = new Database(f, { key });
    closed.close();
    throwsType(() => closed.rekey(newK), /The database connection is not open/);
  });

  it('refuses to carry a damaged page into the new file', () => {
    const { f, key, db } = encryptedDb('delete');
    db.close();
    const bytes = fs.readFileSync(f);
    const last = bytes.length / PAGE;
    bytes[(last - 1) * PAGE + 99] ^= 1; // a page the open does not read
    fs.writeFileSync(f, bytes);
    const damaged = new Database(f, { key });
    throwsSqlite(
      () => damaged.rekey(newKey()),
      'SQLITE_CORRUPT',
      new RegExp(`page ${last} of .* does not authenticate .*; .* is unchanged$`),
    );
    damaged.close();
    assert.deepEqual(fs.readFileSync(f), bytes, 'the file is as it was');
    assert.deepEqual(fs.readdirSync(path.dirname(f)), ['app.db'], 'no copy left');
  });

  it('a read-only directory: a clear error, the old key still opens it', { skip: POSIX_ONLY }, () => {
    const dir = tempDir('keys-ro');
    try {
      const f = path.join(dir, 'ro.db');
      const key = newKey();
      const db = new Database(f, { key });
      db.exec(CONTENT_SQL);
      db.close();
      const out = runInReadOnlyDir(
        dir,
        `
				const db = new Database('ro.db', { key: Buffer.from(args.key, 'hex') });
				try { db.rekey(Buffer.from(args.newKey, 'hex')); } finally { db.close(); }`,
        { key: key.toString('hex'), newKey: newKey().toString('hex') },
      );
      assert.equal(out.error && out.error.code, 'SQLITE_CANTOPEN', JSON.stringify(out));
      assert.match(out.error.message, /cannot write a copy in the directory .*: permission denied/);
      const again = new Database(f, { key });
      assert.equal(rows(again).n, 2500);
      again.close();
    } finally {
      removeDir(dir);
    }
  });
});

describe('Database.decrypt()', () => {
  it('writes a plaintext copy better-sqlite3 opens; the original stays encrypted', () => {
    const f = fresh();
    makeBetterSqlite3File(f, 'wal');
    const digest = digestOf(f);
    const key = newKey();
    Database.encrypt(f, key);
    const encrypted = fs.readFileSync(f);
    const out = path.join(path.dirname(f), 'plain.db');
    Database.decrypt(f, key, out);
    assert.deepEqual(fs.readFileSync(f), encrypted, 'the source is unchanged');
    const bytes = fs.readFileSync(out);
    assert.deepEqual(bytes.subarray(0, 16), SQLITE_MAGIC);
    assert.equal(bytes[20], 0, 'no reserved bytes: an ordinary SQLite file');
    const plain = new BetterSqlite3(out);
    assert.equal(plain.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(plain.prepare('SELECT count(*) FROM notes').pluck().get(), 2500);
    assert.equal(plain.pragma('integrity_check', { simple: true }), 'ok');
    plain.close();
    assert.equal(digestOf(out), digest, 'same content digest as the original plaintext');
  });

  it('never overwrites, refuses a wrong key or a missing file — creating nothing', () => {
    const f = fresh();
    const key = newKey();
    const db = new Database(f, { key });
    db.exec(CONTENT_SQL);
    db.close();
    const dir = path.dirname(f);
    const out = path.join(dir, 'plain.db');
    fs.writeFileSync(out, 'keep me');
    throwsSqlite(() => Database.decrypt(f, key, out), 'SQLITE_CANTOPEN', /plain\.db: it already exists/);
    assert.equal(fs.readFileSync(out, 'utf8'), 'keep me');
    fs.rmSync(out);
    throwsSqlite(() => Database.decrypt(f, key, f), 'SQLITE_MISUSE', /destination must be another file/);
    const before = snapshotDir(dir);
    throwsSqlite(() => Database.decrypt(f, newKey(), out), 'SQLITE_NOTADB');
    throwsSqlite(
      () => Database.decrypt(path.join(dir, 'nope.db'), key, out),
      'SQLITE_CANTOPEN',
      /nope\.db: no such file/,
    );
    assert.deepEqual(snapshotDir(dir), before);
    throwsType(() => Database.decrypt(f, key), /Expected the destination to be a string/);
  });
});

describe('db.verify()', () => {
  it('finds the first page that does not authenticate, in the file or in the WAL', () => {
    const f = fresh();
    const key = newKey();
    let db = new Database(f, { key });
    db.exec(CONTENT_SQL);
    db.close();
    const bytes = fs.readFileSync(f);
    bytes[PAGE * 9 + 77] ^= 0x40; // page 10
    fs.writeFileSync(f, bytes);
    db = new Database(f, { key });
    let r = db.verify();
    assert.equal(r.ok, false);
    assert.equal(r.firstBadPage, 10);
    assert.equal(r.pages, bytes.length / PAGE);
    db.close();
    bytes[PAGE * 9 + 77] ^= 0x40;
    fs.writeFileSync(f, bytes);

    db = new Database(f, { key });
    db.pragma('journal_mode = wal');
    db.pragma('wal_autocheckpoint = 0');
    db.exec("UPDATE notes SET title = 'changed' WHERE id <= 40");
    r = db.verify();
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.ok(r.walFrames > 0);
    const wal = fs.readFileSync(`${f}-wal`);
    const pgno = wal.readUInt32BE(32);
    wal[32 + 24 + 500] ^= 1;
    fs.writeFileSync(`${f}-wal`, wal);
    r = db.verify();
    assert.equal(r.ok, false);
    assert.equal(r.firstBadPage, pgno);
    db.close();
  });

  it('a plaintext database: integrity and digest, nothing to authenticate', () => {
    const f = fresh();
    makeBetterSqlite3File(f);
    const db = new Database(f);
    const r = db.verify();
    db.close();
    assert.equal(r.encrypted, false);
    assert.equal(r.ok, true);
    assert.equal(r.walFrames, 0);
    assert.equal(r.pages, fs.statSync(f).size / PAGE);
    const mem = new Database(':memory:');
    throwsSqlite(() => mem.verify(), 'SQLITE_MISUSE', /in-memory/);
    mem.close();
  });
});

describe('db.backup(dest, { key })', () => {
  function source(encrypted) {
    const f = fresh('src.db');
    const key = encrypted ? newKey() : undefined;
    const db = new Database(f, key ? { key } : {});
    db.exec(CONTENT_SQL);
    return { f, key, db, dir: path.dirname(f) };
  }

  it('an encrypted database: same key by default, another key, or plaintext only with key: null', async () => {
    const { key, db, dir } = source(true);
    const digest = db.verify().contentDigest;

    const same = path.join(dir, 'same.db');
    await db.backup(same);
    assert.equal(digestOf(same, key), digest);

    const other = path.join(dir, 'other.db');
    const k2 = newKey();
    await db.backup(other, { key: k2 });
    assert.equal(digestOf(other, k2), digest);
    throwsSqlite(() => new Database(other, { key }), 'SQLITE_NOTADB');

    const plain = path.join(dir, 'plain.db');
    await db.backup(plain, { key: null });
    assert.deepEqual(fs.readFileSync(plain).subarray(0, 16), SQLITE_MAGIC);
    assert.equal(digestOf(plain), digest);

    await assert.rejects(db.backup(path.join(dir, 'x.db'), { key: undefined }), {
      name: 'TypeError',
      message: /Expected the "key" option \(or null for a plaintext copy\) to be a 32-byte Buffer/,
    });
    await assert.rejects(db.backup(path.join(dir, 'x.db'), { key: 'secret' }), TypeError);
    assert.ok(!fs.existsSync(path.join(dir, 'x.db')));
    db.close();
  });

  it('a plaintext database backed up under a key is encrypted (pages rebuilt)', async () => {
    const { db, dir } = source(false);
    const digest = db.verify().contentDigest;
    const out = path.join(dir, 'enc.db');
    const k = newKey();
    await db.backup(out, { key: k });
    assert.ok(!fs.readFileSync(out).subarray(0, 16).equals(SQLITE_MAGIC));
    assert.equal(digestOf(out, k), digest);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['enc.db', 'src.db']);
    db.close();
  });

  it("a rebuilt backup calls progress as it goes: the source's pages counting down, the hint honoured, a throw stops it", async () => {
    const { db, dir } = source(false);
    // Bigger than the copy's page cache (2 MiB), so that the copy grows while it is made.
    db.exec(
      'CREATE TABLE bulk(b BLOB); WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 20000) INSERT INTO bulk SELECT randomblob(300) FROM s',
    );
    const sourcePages = db.pragma('page_count', { simple: true });
    const k = newKey();
    const run = async (name, hint) => {
      const calls = [];
      const result = await db.backup(path.join(dir, name), {
        key: k,
        progress(info) {
          assert.equal(this, undefined);
          calls.push(info);
          return hint;
        },
      });
      return { calls, result };
    };
    const { calls, result } = await run('each.db', 1);
    assert.deepEqual(result, { totalPages: sourcePages, remainingPages: 0 });
    assert.deepEqual(calls[0], { totalPages: sourcePages, remainingPages: sourcePages });
    assert.ok(calls.length > 2, `${calls.length} calls`);
    for (let i = 1; i < calls.length; i++) {
      assert.equal(calls[i].totalPages, sourcePages);
      assert.ok(calls[i].remainingPages < calls[i - 1].remainingPages, JSON.stringify(calls));
      assert.ok(calls[i].remainingPages > 0);
    }
    // The default (undefined) asks for 100 pages between calls; a huge hint for one call.
    const byDefault = await run('default.db', undefined);
    assert.ok(byDefault.calls.length < calls.length, `${byDefault.calls.length} < ${calls.length}`);
    for (let i = 1; i < byDefault.calls.length; i++) {
      assert.ok(byDefault.calls[i - 1].remainingPages - byDefault.calls[i].remainingPages >= 100);
    }
    assert.equal((await run('once.db', 1e9)).calls.length, 1);
    assert.equal(digestOf(path.join(dir, 'each.db'), k), db.verify().contentDigest);

    // A throw, a return that is not a number, or a statement on the busy database stops
    // the copy: the promise rejects with it and no file is left.
    const before = fs.readdirSync(dir).sort();
    const boom = new Error('stop');
    let n = 0;
    await assert.rejects(
      db.backup(path.join(dir, 'never.db'), {
        key: k,
        progress() {
          if (++n === 2) throw boom;
        },
      }),
      (e) => e === boom,
    );
    assert.equal(n, 2);
    await assert.rejects(db.backup(path.join(dir, 'never.db'), { key: k, progress: () => 'ten' }), {
      name: 'TypeError',
      message: 'Expected progress callback to return a number or undefined',
    });
    await assert.rejects(
      db.backup(path.join(dir, 'never.db'), { key: k, progress: () => db.prepare('SELECT 1').get() }),
      { name: 'TypeError', message: /busy/ },
    );
    assert.deepEqual(fs.readdirSync(dir).sort(), before);
    db.close();
  });

  it('serialize() is a plaintext image (documented): it never reaches the disk by itself', () => {
    const { db } = source(true);
    const image = db.serialize();
    assert.deepEqual(image.subarray(0, 16), SQLITE_MAGIC);
    const copy = new Database(image);
    assert.equal(rows(copy).n, 2500);
    copy.close();
    db.close();
  });
});
