'use strict';
// Encryption failures: a wrong key, a plaintext file opened with a key and an encrypted file
// opened without one fail with SQLITE_NOTADB and change no byte on disk (hot journal and WAL
// included); tampered files give SQLITE_CORRUPT (or NOTADB for page 1), never rows.
//
// Where the error appears (asserted exactly):
//  - wrong key, or a plaintext file opened with a key: the constructor throws;
//  - encrypted file opened without a key: the constructor succeeds and the first query
//    throws, as with SQLite — unless a journal or WAL is present, then the constructor
//    throws (SQLite would otherwise try to recover it with no key).
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  Database,
  PAGE,
  BASE_SQL,
  BASE_CONTENT,
  newKey,
  tempDir,
  removeDir,
  snapshotDir,
  throwsSqlite,
  contentOf,
  integrity,
  sampleKey,
  copySample,
  crashChild,
} = require('./_helpers-encryption');

const LAYOUTS = ['sqlite3mc', 'sqlcipher'];

let root;
let n = 0;
/** A fresh directory for one scenario (so a snapshot covers exactly its files). */
const scenarioDir = () => {
  const d = path.join(root, `s${++n}`);
  fs.mkdirSync(d);
  return d;
};

before(() => {
  root = tempDir('failures');
});
after(() => {
  removeDir(root);
});

/** Runs `attempt`, then checks that no file in `dir` was changed, added or removed. */
function unchanged(dir, attempt) {
  const before = snapshotDir(dir);
  attempt();
  assert.deepEqual(snapshotDir(dir), before, 'no byte on disk may change');
}

const wrongKey = (f) => () =>
  throwsSqlite(() => new Database(f, { key: newKey() }), 'SQLITE_NOTADB', 'file is not a database');
const wrongKeyLayout = (f) => () =>
  throwsSqlite(() => new Database(f, { key: newKey(), cipherLayout: 'sqlcipher' }), 'SQLITE_NOTADB');
const noKeyAtCtor = (f) => () => throwsSqlite(() => new Database(f), 'SQLITE_NOTADB');
const readonlyWrongKey = (f) => () =>
  throwsSqlite(() => new Database(f, { key: newKey(), readonly: true }), 'SQLITE_NOTADB');
function noKeyAtQuery(f) {
  return () => {
    const db = new Database(f);
    try {
      throwsSqlite(() => db.prepare('SELECT * FROM t').all(), 'SQLITE_NOTADB', 'file is not a database');
      throwsSqlite(() => db.exec('CREATE TABLE x(y)'), 'SQLITE_NOTADB');
      throwsSqlite(() => db.pragma('journal_mode = wal'), 'SQLITE_NOTADB');
    } finally {
      db.close();
    }
  };
}

describe('wrong key, no key, plaintext file with a key (clean files)', () => {
  for (const layout of LAYOUTS) {
    it(`${layout}: wrong key → constructor NOTADB; no key → first query NOTADB; no byte changes`, () => {
      const dir = scenarioDir();
      const f = path.join(dir, 'enc.db');
      const key = newKey();
      new Database(f, { key, cipherLayout: layout }).exec(BASE_SQL).close();
      unchanged(dir, wrongKey(f));
      unchanged(dir, wrongKeyLayout(f));
      unchanged(dir, readonlyWrongKey(f));
      unchanged(dir, noKeyAtQuery(f));
      // A key that differs in one bit is just as wrong.
      const nearly = Buffer.from(key);
      nearly[31] ^= 1;
      unchanged(dir, () => throwsSqlite(() => new Database(f, { key: nearly }), 'SQLITE_NOTADB'));
      const db = new Database(f, { key });
      assert.deepEqual(contentOf(db), BASE_CONTENT);
      db.close();
    });
  }

  it('a plaintext database opened with a key → constructor NOTADB, no byte changes', () => {
    const dir = scenarioDir();
    const f = path.join(dir, 'plain.db');
    new Database(f).exec(BASE_SQL).close();
    unchanged(dir, wrongKey(f));
    unchanged(dir, readonlyWrongKey(f));
    assert.deepEqual(contentOf(new Database(f)), BASE_CONTENT);
  });

  it('a non-database file (short, or random bytes) opened with a key → NOTADB, no byte changes', () => {
    const dir = scenarioDir();
    const short = path.join(dir, 'short.db');
    fs.writeFileSync(short, 'not a database at all');
    const random = path.join(dir, 'random.db');
    fs.writeFileSync(random, require('node:crypto').randomBytes(3 * PAGE));
    unchanged(dir, wrongKey(short));
    unchanged(dir, wrongKey(random));
  });
});

describe('with a hot journal', () => {
  for (const sample of [
    'hot-sqlcipher-4.12.0.sqlite',
    'hot-sqlite3mc-2.6.1-legacy4.sqlite',
    'hot-sqlite3mc-2.6.1-legacy0.sqlite',
  ]) {
    it(`sample ${sample}: wrong key and no key → constructor NOTADB, database and journal unchanged`, () => {
      const dir = scenarioDir();
      const f = copySample(sample, dir);
      assert.ok(fs.existsSync(`${f}-journal`));
      unchanged(dir, wrongKey(f));
      unchanged(dir, wrongKeyLayout(f));
      unchanged(dir, noKeyAtCtor(f));
      // The journal is still good: the right key rolls it back (SQLite3MC's, whose
      // checksums are over the plaintext, only with the owner's explicit option).
      const acceptPlaintextJournalChecksums = sample.startsWith('hot-sqlite3mc');
      const db = new Database(f, { key: sampleKey(), acceptPlaintextJournalChecksums });
      assert.deepEqual(contentOf(db), BASE_CONTENT);
      db.close();
      assert.ok(!fs.existsSync(`${f}-journal`));
    });
  }

  for (const layout of LAYOUTS) {
    it(`our own crash leftovers (${layout}): wrong key and no key change nothing, then the key rolls back`, async () => {
      const dir = scenarioDir();
      const f = path.join(dir, 'crashed.db');
      const key = newKey();
      const { info } = await crashChild({
        file: f,
        key,
        layout,
        journalMode: 'delete',
        committed: [BASE_SQL],
        uncommitted: [
          "UPDATE t SET b = 'CHANGED-' || a",
          'DELETE FROM t WHERE a > 50',
          'CREATE TABLE t2(x BLOB)',
          'INSERT INTO t2 SELECT randomblob(1500) FROM t LIMIT 12',
        ],
      });
      assert.ok(info.journal > 0 && fs.statSync(`${f}-journal`).size > 0, 'a hot journal was left');
      assert.ok(info.db > 2 * PAGE, 'pages spilled into the database file');
      unchanged(dir, wrongKey(f));
      unchanged(dir, noKeyAtCtor(f));
      unchanged(dir, readonlyWrongKey(f));
      const db = new Database(f, { key });
      assert.deepEqual(contentOf(db), BASE_CONTENT);
      assert.equal(integrity(db), 'ok');
      db.close();
      assert.ok(!fs.existsSync(`${f}-journal`));
    });
  }

  it('a plaintext database with a hot journal opened with a key → NOTADB, nothing changes, then rolls back without key', async () => {
    const dir = scenarioDir();
    const f = path.join(dir, 'plaincrash.db');
    await crashChild({
      file: f,
      key: null,
      journalMode: 'delete',
      committed: [BASE_SQL],
      uncommitted: [
        "UPDATE t SET b = 'CHANGED-' || a",
        'CREATE TABLE t2(x BLOB)',
        'INSERT INTO t2 SELECT randomblob(1500) FROM t LIMIT 12',
      ],
    });
    assert.ok(fs.statSync(`${f}-journal`).size > 0);
    unchanged(dir, wrongKey(f));
    unchanged(dir, wrongKeyLayout(f));
    const db = new Database(f);
    assert.deepEqual(contentOf(db), BASE_CONTENT);
    db.close();
  });
});

describe('with a WAL', () => {
  const WAL_CONTENT = { tables: ['t', 'w'], count: 110, sum: 6105, wrong: 10 };
  for (const sample of ['wal-sqlcipher-4.12.0.sqlite', 'wal-sqlite3mc-2.6.1-legacy0.sqlite']) {
    it(`sample ${sample}: wrong key and no key → constructor NOTADB, database and WAL unchanged, no -shm made`, () => {
      const dir = scenarioDir();
      const f = copySample(sample, dir);
      assert.ok(fs.existsSync(`${f}-wal`));
      unchanged(dir, wrongKey(f));
      unchanged(dir, noKeyAtCtor(f));
      unchanged(dir, readonlyWrongKey(f));
      const db = new Database(f, { key: sampleKey() });
      assert.deepEqual(contentOf(db), WAL_CONTENT);
      db.close();
    });
  }

  for (const layout of LAYOUTS) {
    it(`our own WAL crash leftovers (${layout}, -shm kept): wrong key and no key change nothing`, async () => {
      const dir = scenarioDir();
      const f = path.join(dir, 'walcrash.db');
      const key = newKey();
      await crashChild({
        file: f,
        key,
        layout,
        journalMode: 'wal',
        committed: [BASE_SQL, "UPDATE t SET b = 'committed-' || a WHERE a <= 5"],
        uncommitted: ['CREATE TABLE t2(x BLOB)', 'INSERT INTO t2 SELECT randomblob(1500) FROM t LIMIT 12'],
      });
      assert.ok(fs.statSync(`${f}-wal`).size > 32);
      assert.ok(fs.existsSync(`${f}-shm`));
      unchanged(dir, wrongKey(f));
      unchanged(dir, noKeyAtCtor(f));
      unchanged(dir, readonlyWrongKey(f));
      // (Recovery with the right key is 53-encryption-crash's subject.)
    });
  }

  it('a plaintext WAL database opened with a key → NOTADB, nothing changes', async () => {
    const dir = scenarioDir();
    const f = path.join(dir, 'plainwal.db');
    await crashChild({ file: f, key: null, journalMode: 'wal', committed: [BASE_SQL], uncommitted: ['DELETE FROM t'] });
    assert.ok(fs.statSync(`${f}-wal`).size > 32);
    unchanged(dir, wrongKey(f));
    assert.deepEqual(contentOf(new Database(f)), BASE_CONTENT);
  });
});

describe('tampering', () => {
  /**
   * An encrypted database: page 2 is table t (BASE), pages 3.. hold table u; returns
   * { dir, f, key, bytes } with the clean image.
   */
  function makeVictim(layout) {
    const dir = scenarioDir();
    const f = path.join(dir, 'victim.db');
    const key = newKey();
    const db = new Database(f, { key, cipherLayout: layout });
    db.exec(BASE_SQL);
    db.exec("CREATE TABLE u(v); INSERT INTO u SELECT printf('%0500d', a) FROM t WHERE a <= 30");
    assert.equal(db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 't'").pluck().get(), 2);
    db.close();
    const bytes = fs.readFileSync(f);
    assert.ok(bytes.length >= 5 * PAGE);
    return { dir, f, key, bytes };
  }

  /** Writes `image`, then reading table t must fail with `code` (never return rows). */
  function expectFailure(v, image, code, query = 'SELECT a, b FROM t ORDER BY a') {
    fs.writeFileSync(v.f, image);
    let rows;
    const err = throwsSqlite(() => {
      const db = new Database(v.f, { key: v.key });
      try {
        rows = db.prepare(query).all();
      } finally {
        db.close();
      }
    }, code);
    assert.equal(rows, undefined);
    return err;
  }

  const flip = (bytes, at, bit = 0) => {
    const c = Buffer.from(bytes);
    c[at] ^= 1 << bit;
    return c;
  };

  for (const layout of LAYOUTS) {
    const body = layout === 'sqlite3mc' ? 24 : 16;
    it(`${layout}: a bit flipped in page 2's ciphertext, IV or HMAC → SQLITE_CORRUPT`, () => {
      const v = makeVictim(layout);
      const p2 = PAGE;
      for (const [what, at] of [
        ['first ciphertext byte', p2],
        ['ciphertext', p2 + 1234],
        ['last ciphertext byte', p2 + 4015],
        ['IV', p2 + 4016 + 7],
        ['HMAC', p2 + 4032 + 20],
        ['last HMAC byte', p2 + 4095],
      ]) {
        expectFailure(v, flip(v.bytes, at, 3), 'SQLITE_CORRUPT', `SELECT a, b FROM t ORDER BY a -- ${what}`);
      }
      // The untouched image still reads.
      fs.writeFileSync(v.f, v.bytes);
      assert.deepEqual(contentOf(new Database(v.f, { key: v.key })).count, 100);
    });

    it(`${layout}: a bit flipped anywhere in page 1 (salt, header, ciphertext, IV, HMAC) → NOTADB at the constructor`, () => {
      const v = makeVictim(layout);
      const spots = [0, 15, body, body + 100, 4015, 4016, 4031, 4032, 4095];
      // sqlite3mc: header bytes stored in clear that the codec checks (page size, reserve).
      if (layout === 'sqlite3mc') spots.push(16, 17, 20);
      for (const at of spots) {
        for (const bit of [0, 6]) {
          fs.writeFileSync(v.f, flip(v.bytes, at, bit));
          unchanged(v.dir, () =>
            throwsSqlite(() => new Database(v.f, { key: v.key }), 'SQLITE_NOTADB', undefined, `byte ${at}`),
          );
        }
      }
      if (layout === 'sqlite3mc') {
        // The payload fractions (bytes 21..23, in clear) are SQLite's to check: it
        // refuses them when it first reads the header, at the first query.
        for (const at of [21, 22, 23]) {
          fs.writeFileSync(v.f, flip(v.bytes, at, 0));
          unchanged(v.dir, () => {
            const db = new Database(v.f, { key: v.key });
            throwsSqlite(() => db.prepare('SELECT count(*) FROM t').get(), 'SQLITE_NOTADB', undefined, `byte ${at}`);
            db.close();
          });
        }
      }
    });

    if (layout === 'sqlite3mc') {
      it('sqlite3mc: the clear file-format bytes 18/19 are not authenticated (as in SQLite3MC), but never give wrong rows', () => {
        // The format leaves bytes 16..24 of page 1 outside the HMAC. Changing the file
        // format versions either is refused or reads exactly the original rows.
        const v = makeVictim(layout);
        for (const [at, value] of [
          [18, 0],
          [19, 0],
          [18, 3],
          [19, 3],
          [18, 0xff],
          [19, 0xff],
        ]) {
          const c = Buffer.from(v.bytes);
          c[at] = value;
          fs.writeFileSync(v.f, c);
          let content;
          try {
            const db = new Database(v.f, { key: v.key, readonly: true });
            try {
              content = contentOf(db);
            } finally {
              db.close();
            }
          } catch (e) {
            assert.ok(
              e instanceof Database.SqliteError && ['SQLITE_NOTADB', 'SQLITE_CORRUPT'].includes(e.code),
              `byte ${at} = ${value}: ${e.code} ${e.message}`,
            );
            continue;
          }
          assert.deepEqual(content, { ...BASE_CONTENT, tables: ['t', 'u'] }, `byte ${at} = ${value}`);
        }
      });
    }

    it(`${layout}: swapped pages → SQLITE_CORRUPT`, () => {
      const v = makeVictim(layout);
      const swap = (a, b) => {
        const c = Buffer.from(v.bytes);
        v.bytes.copy(c, (a - 1) * PAGE, (b - 1) * PAGE, b * PAGE);
        v.bytes.copy(c, (b - 1) * PAGE, (a - 1) * PAGE, a * PAGE);
        return c;
      };
      expectFailure(v, swap(2, 3), 'SQLITE_CORRUPT');
      expectFailure(v, swap(3, 4), 'SQLITE_CORRUPT', 'SELECT count(*), sum(length(v)) FROM u');
      // Page 2 of another file: with another key, or with the same key (another salt,
      // so another HMAC key) — both fail.
      const other = makeVictim(layout);
      const c = Buffer.from(v.bytes);
      fs.readFileSync(other.f).copy(c, PAGE, PAGE, 2 * PAGE);
      expectFailure(v, c, 'SQLITE_CORRUPT');
      const donor = path.join(other.dir, 'donor.db');
      new Database(donor, { key: v.key, cipherLayout: layout }).exec(BASE_SQL).close();
      const c2 = Buffer.from(v.bytes);
      fs.readFileSync(donor).copy(c2, PAGE, PAGE, 2 * PAGE);
      expectFailure(v, c2, 'SQLITE_CORRUPT');
    });

    it(`${layout}: a file truncated mid-page → SQLITE_CORRUPT (page 1: NOTADB)`, () => {
      const v = makeVictim(layout);
      const pages = v.bytes.length / PAGE;
      expectFailure(v, v.bytes.subarray(0, PAGE + 2000), 'SQLITE_CORRUPT');
      expectFailure(
        v,
        v.bytes.subarray(0, (pages - 1) * PAGE + 100),
        'SQLITE_CORRUPT',
        'SELECT count(*), sum(length(v)) FROM u',
      );
      fs.writeFileSync(v.f, v.bytes.subarray(0, 3000));
      unchanged(v.dir, () => throwsSqlite(() => new Database(v.f, { key: v.key }), 'SQLITE_NOTADB'));
    });

    it(`${layout}: a truncated last page is not read as (zero-padded) plaintext`, () => {
      // Truncate just after page 2 starts and set its one remaining byte to 0x0d (a leaf
      // table page): unauthenticated bytes must never reach SQLite, or t looks empty.
      const dir = scenarioDir();
      const f = path.join(dir, 'base.db');
      const key = newKey();
      new Database(f, { key, cipherLayout: layout }).exec(BASE_SQL).close();
      const v = { dir, f, key, bytes: fs.readFileSync(f) };
      assert.equal(v.bytes.length, 2 * PAGE, 'BASE is 2 pages: t is the last page');
      const cut = Buffer.from(v.bytes.subarray(0, PAGE + 1));
      cut[PAGE] = 0x0d;
      expectFailure(v, cut, 'SQLITE_CORRUPT', 'SELECT count(*) FROM t');
      const cut2 = Buffer.from(v.bytes.subarray(0, PAGE + 8));
      cut2.fill(0, PAGE);
      cut2[PAGE] = 0x0d;
      expectFailure(v, cut2, 'SQLITE_CORRUPT', 'SELECT count(*) FROM t');
    });

    it(`${layout}: an all-zero page → SQLITE_CORRUPT`, () => {
      const v = makeVictim(layout);
      const c = Buffer.from(v.bytes);
      c.fill(0, PAGE, 2 * PAGE);
      expectFailure(v, c, 'SQLITE_CORRUPT');
    });
  }

  it('a bit flipped in a WAL frame that the WAL index points to → SQLITE_CORRUPT for a reader', () => {
    const dir = scenarioDir();
    const f = path.join(dir, 'walvictim.db');
    const key = newKey();
    const w = new Database(f, { key });
    w.pragma('journal_mode = wal');
    w.pragma('wal_autocheckpoint = 0');
    w.exec(BASE_SQL);
    w.exec("UPDATE t SET b = 'wal-' || a WHERE a <= 10");
    // Flip a bit in the page image of the last frame (page 2, the t table).
    const wal = fs.readFileSync(`${f}-wal`);
    const frame = 24 + PAGE;
    const frames = (wal.length - 32) / frame;
    assert.ok(Number.isInteger(frames) && frames >= 2);
    const last = 32 + (frames - 1) * frame;
    assert.equal(wal.readUInt32BE(last), 2, 'the last frame is page 2');
    const fd = fs.openSync(`${f}-wal`, 'r+');
    fs.writeSync(fd, Buffer.from([wal[last + 24 + 500] ^ 0x10]), 0, 1, last + 24 + 500);
    fs.closeSync(fd);
    const r = new Database(f, { key });
    let rows;
    throwsSqlite(() => {
      rows = r.prepare('SELECT a, b FROM t ORDER BY a').all();
    }, 'SQLITE_CORRUPT');
    assert.equal(rows, undefined);
    r.close();
    w.close();
  });
});
