'use strict';
// `cipher: 'aegis'`: SQLite3 Multiple Ciphers' AEGIS scheme (PRAGMA cipher='aegis', algorithm
// aegis-256; docs/aegis-format.md), checked against SQLite3MC 2.6.1 itself (PyPI apsw-sqlite3mc
// 3.54.0.0, run by __test__/interop/engines.py with the Python of .venv-interop/, made by
// `bash scripts/setup-interop.sh`). As in 55, without it this file FAILS: CI installs it.
//
// Two Python runs: 1. SQLite3MC writes files (rollback journal, passphrase, a WAL and a hot
// rollback journal left by an exit without closing); cipherlite reads and recovers them,
// writes its own (raw key and passphrase, rollback journal and WAL, a WAL copied while still
// open), and is refused what it must refuse; 2. SQLite3MC reads and modifies cipherlite's
// files; cipherlite reads what it modified.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  Database,
  newKey,
  tempDir,
  removeDir,
  snapshotDir,
  throwsSqlite,
  throwsType,
  integrity,
  runInteropEngines,
  sampleKey,
  copySample,
} = require('./_helpers-encryption');

const key = newKey();
const PASSPHRASE = 'correct horse battery staple';
const PAGE = 4096;
const AEGIS_RESERVE = 64; // 32-byte tag + 32-byte nonce (docs/aegis-format.md §2)
let dir;
before(() => {
  dir = tempDir('aegis');
});
after(() => {
  removeDir(dir);
});
const p = (name) => path.join(dir, name);

const BASE = [
  'CREATE TABLE t(a INTEGER, b TEXT)',
  "INSERT INTO t(a, b) WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 100) SELECT x, 'row-' || x FROM s",
  'CREATE TABLE big(x BLOB)',
  'INSERT INTO big SELECT randomblob(2000) FROM t LIMIT 12',
];
const MODIFY = (who) => [`INSERT INTO t VALUES (1000, 'by-${who}')`, 'DELETE FROM t WHERE a BETWEEN 50 AND 59'];
const QUERIES = {
  t: "SELECT count(*), sum(a), max(b = 'row-' || a) FROM t WHERE a < 1000",
  who: 'SELECT b FROM t WHERE a = 1000',
  big: 'SELECT count(*), sum(length(x)) FROM big',
  integrity: 'PRAGMA integrity_check',
  mode: 'PRAGMA journal_mode',
};
const BASE_ROWS = { t: [[100, 5050, 1]], who: [], big: [[12, 24000]], integrity: [['ok']] };
const MODIFIED_ROWS = (who) => ({
  t: [[90, 5050 - 545, 1]],
  who: [[`by-${who}`]],
  big: [[12, 24000]],
  integrity: [['ok']],
});

const runEngines = (jobs, exitWithoutClosing = false) => runInteropEngines(key, jobs, exitWithoutClosing);
const job = (id, file, extra = {}) => ({ id, engine: 'aegis', file, queries: QUERIES, ...extra });

/** The QUERIES as cipherlite answers them (engines.py's shape: rows of lists). */
function readWithCipherlite(file, options) {
  const db = new Database(file, { cipher: 'aegis', fileMustExist: true, ...options });
  try {
    const out = {};
    for (const [name, sql] of Object.entries(QUERIES)) {
      out[name] = name === 'integrity' ? [[integrity(db)]] : db.prepare(sql).raw().all();
    }
    return out;
  } finally {
    db.close();
  }
}
const withoutMode = ({ mode, ...rest }) => rest;

function writeWithCipherlite(file, options, journalMode) {
  const db = new Database(file, { cipher: 'aegis', ...options });
  db.pragma(`journal_mode = ${journalMode}`);
  for (const sql of BASE) db.exec(sql);
  return db;
}

const headerOf = (file) => fs.readFileSync(file).subarray(0, 24);

describe('88 cipher "aegis": SQLite3 Multiple Ciphers AEGIS-256 files', () => {
  let phase1;

  it('88.1 SQLite3MC (cipher aegis) writes files: raw key and passphrase, a WAL and a hot journal left behind', () => {
    const hot = [
      ...BASE,
      // A transaction left open with a tiny cache: pages spill into the file, the journal is hot.
      'BEGIN',
      "UPDATE t SET b = 'changed-' || a",
      'INSERT INTO big SELECT randomblob(3000) FROM t LIMIT 40',
    ];
    phase1 = runEngines(
      [
        job('raw', p('mc-raw.db'), { exec: BASE }),
        job('pass', p('mc-pass.db'), { exec: BASE, passphrase: PASSPHRASE }),
        job('walleft', p('mc-walleft.db'), {
          exec: ['PRAGMA journal_mode = WAL', ...BASE, ...MODIFY('sqlite3mc')],
          keep_open: true,
        }),
        { id: 'hot', engine: 'aegis', file: p('mc-hot.db'), exec: hot, cache_size: 2, keep_open: true },
      ],
      true,
    );
    assert.match(phase1.engines.sqlite3mc, /Multiple Ciphers 2\./);
    for (const id of ['raw', 'pass', 'walleft', 'hot']) assert.equal(phase1.results[id].ok, true, id);
    assert.deepEqual(withoutMode(phase1.results.raw.rows), BASE_ROWS);
    assert.ok(fs.statSync(p('mc-walleft.db-wal')).size > 0, 'the WAL was left behind');
    assert.ok(fs.statSync(p('mc-hot.db-journal')).size > 0, 'the journal was left behind');
    // SQLite3MC's AEGIS page 1: salt, then the header's bytes 16..24 in clear with 64 reserved.
    const header = headerOf(p('mc-raw.db'));
    assert.equal(header.readUInt16BE(16), PAGE);
    assert.equal(header[20], AEGIS_RESERVE);
  });

  it("88.2 cipherlite reads SQLite3MC's files with the raw key and with the passphrase", () => {
    assert.deepEqual(withoutMode(readWithCipherlite(p('mc-raw.db'), { key })), BASE_ROWS);
    assert.deepEqual(withoutMode(readWithCipherlite(p('mc-pass.db'), { passphrase: PASSPHRASE })), BASE_ROWS);
  });

  it('88.3 cipherlite recovers the WAL SQLite3MC left behind', () => {
    const rows = readWithCipherlite(p('mc-walleft.db'), { key });
    assert.deepEqual(withoutMode(rows), MODIFIED_ROWS('sqlite3mc'));
    assert.deepEqual(rows.mode, [['wal']]);
  });

  it('88.4 cipherlite rolls back the hot journal SQLite3MC left (its checksums are over the plaintext)', () => {
    const file = p('mc-hot.db');
    // Without the owner's consent the journal is refused, and nothing changes.
    const before = snapshotDir(dir);
    assert.throws(
      () => readWithCipherlite(file, { key }),
      (e) => e.code.startsWith('SQLITE_'),
    );
    assert.deepEqual(snapshotDir(dir), before);
    const rows = readWithCipherlite(file, { key, acceptPlaintextJournalChecksums: true });
    assert.deepEqual(withoutMode(rows), BASE_ROWS);
    assert.equal(fs.existsSync(`${file}-journal`) && fs.statSync(`${file}-journal`).size > 0, false);
  });

  it('88.5 a wrong cipher or key is SQLITE_NOTADB naming the "cipher" option, and changes no byte', () => {
    const file = p('mc-raw.db');
    const sqlcipherFile = p('cl-sqlcipher.db');
    const plain = new Database(sqlcipherFile, { key });
    plain.exec(BASE.join(';'));
    plain.close();
    const before = snapshotDir(dir);
    const open = (f, options) => () => new Database(f, { fileMustExist: true, ...options }).prepare('SELECT 1').get();
    throwsSqlite(
      open(file, { key }),
      'SQLITE_NOTADB',
      'file is not a database in the sqlcipher format: the key opens it in the aegis format (pass the "cipher" option: \'aegis\')',
    );
    throwsSqlite(
      open(p('mc-pass.db'), { passphrase: PASSPHRASE }),
      'SQLITE_NOTADB',
      /pass the "cipher" option: 'aegis'/,
    );
    throwsSqlite(
      open(sqlcipherFile, { key, cipher: 'aegis' }),
      'SQLITE_NOTADB',
      'file is not a database in the aegis format: the key opens it in the sqlcipher format (pass the "cipher" option: \'sqlcipher\')',
    );
    // A wrong key: page 1's header in clear says which algorithms the file can be in.
    throwsSqlite(
      open(file, { key: newKey(), cipher: 'aegis' }),
      'SQLITE_NOTADB',
      "file is not a database: the key, the cipher or the algorithm is wrong (its page 1 says the aegis format with 64 reserved bytes a page: the AEGIS-256 algorithms 'aegis-256', 'aegis-256x2' or 'aegis-256x4')",
    );
    throwsSqlite(
      open(p('mc-pass.db'), { passphrase: 'wrong', cipher: 'aegis' }),
      'SQLITE_NOTADB',
      /^file is not a database: the passphrase \(or its Argon2 costs: the "tcost", "mcost" and "pcost" options\), the cipher or the algorithm is wrong/,
    );
    assert.deepEqual(snapshotDir(dir), before);
  });

  it("88.5b the sample files SQLite3MC 2.6.1 wrote (testdata/sqlcipher4/aegis256-*) open, and only as 'aegis'", () => {
    for (const [name, options] of [
      ['aegis256-sqlite3mc-2.6.1.sqlite', { key: sampleKey() }],
      ['aegis256-passphrase-sqlite3mc-2.6.1.sqlite', { passphrase: 'secret' }],
    ]) {
      const file = copySample(name, dir);
      const db = new Database(file, { ...options, cipher: 'aegis', readonly: true });
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 1, name);
      assert.equal(integrity(db), 'ok', name);
      db.close();
      throwsSqlite(() => new Database(file, options), 'SQLITE_NOTADB', /pass the "cipher" option: 'aegis'/);
    }
  });

  it('88.6 the "cipher" option is checked', () => {
    const f = p('never.db');
    throwsType(
      () => new Database(f, { key, cipher: 'aes' }),
      'Expected the "cipher" option to be "sqlcipher" or "aegis"',
    );
    throwsType(
      () => new Database(f, { cipher: 'aegis' }),
      'The "cipher" option requires the "key" or "passphrase" option',
    );
    throwsType(
      () => new Database(f, { passphrase: PASSPHRASE, kdfIterations: 2, cipher: 'aegis' }),
      'The "kdfIterations" option is SQLCipher\'s: "aegis" derives keys with Argon2id',
    );
    assert.equal(fs.existsSync(f), false);
  });

  let phase2Files;

  it('88.7 cipherlite writes AEGIS files: raw key and passphrase, rollback journal and WAL', () => {
    for (const [name, options, mode] of [
      ['cl-raw.db', { key }, 'delete'],
      ['cl-pass.db', { passphrase: PASSPHRASE }, 'delete'],
      ['cl-wal.db', { key }, 'wal'],
    ]) {
      writeWithCipherlite(p(name), options, mode).close();
      const header = headerOf(p(name));
      assert.equal(header[20], AEGIS_RESERVE, name);
      assert.notDeepEqual(header.subarray(0, 16), Buffer.from('SQLite format 3\0'), name);
    }
    // A WAL with committed frames, copied while its connection is open (nothing checkpointed).
    const db = writeWithCipherlite(p('cl-walopen.db'), { key }, 'wal');
    db.pragma('wal_autocheckpoint = 0');
    for (const sql of MODIFY('cipherlite')) db.exec(sql);
    fs.copyFileSync(p('cl-walopen.db'), p('cl-walcopy.db'));
    fs.copyFileSync(p('cl-walopen.db-wal'), p('cl-walcopy.db-wal'));
    db.close();
    assert.ok(fs.statSync(p('cl-walcopy.db-wal')).size > PAGE, 'the copy has frames');
    phase2Files = ['cl-raw.db', 'cl-pass.db', 'cl-wal.db', 'cl-walcopy.db'];
  });

  it('88.8 the attack basics are refused: a flipped ciphertext byte, a page swapped with another', () => {
    const source = fs.readFileSync(p('cl-raw.db'));
    assert.ok(source.length >= 4 * PAGE);
    const attempt = (name, mutate) => {
      const bytes = Buffer.from(source);
      mutate(bytes);
      fs.writeFileSync(p(name), bytes);
      const db = new Database(p(name), { key, cipher: 'aegis', fileMustExist: true });
      try {
        // Every page: t's and big's, overflow pages included.
        return db.prepare('SELECT (SELECT count(*) FROM t), (SELECT sum(length(x)) FROM big)').raw().all();
      } finally {
        db.close();
      }
    };
    const page = (n) => source.subarray((n - 1) * PAGE, n * PAGE);
    throwsSqlite(() => attempt('flip2.db', (b) => (b[PAGE + 100] ^= 1)), /^SQLITE_(CORRUPT|NOTADB)/, /./);
    throwsSqlite(() => attempt('flip-tag.db', (b) => (b[2 * PAGE - 40] ^= 1)), /^SQLITE_(CORRUPT|NOTADB)/, /./);
    throwsSqlite(() => attempt('flip-nonce.db', (b) => (b[2 * PAGE - 1] ^= 1)), /^SQLITE_(CORRUPT|NOTADB)/, /./);
    throwsSqlite(() => attempt('flip1.db', (b) => (b[500] ^= 1)), 'SQLITE_NOTADB', /./);
    throwsSqlite(
      () =>
        attempt('swap.db', (b) => {
          page(3).copy(b, 3 * PAGE);
          page(4).copy(b, 2 * PAGE);
        }),
      /^SQLITE_(CORRUPT|NOTADB)/,
      /./,
    );
    // The untouched file still reads.
    assert.deepEqual(
      attempt('intact.db', () => {}),
      [[100, 24000]],
    );
  });

  it("88.9 SQLite3MC reads and modifies cipherlite's files; cipherlite reads what it modified", () => {
    const jobs = [];
    for (const name of phase2Files) {
      const passphrase = name === 'cl-pass.db' ? PASSPHRASE : undefined;
      jobs.push(job(`read-${name}`, p(name), { passphrase }));
      if (name !== 'cl-walcopy.db')
        jobs.push(job(`modify-${name}`, p(name), { passphrase, exec: MODIFY('sqlite3mc') }));
    }
    // SQLite3MC's SQLCipher scheme does not open an AEGIS file.
    jobs.push({ id: 'wrong-cipher', engine: 'mc0', file: p('cl-raw.db'), queries: QUERIES });
    const { results } = runEngines(jobs);
    for (const name of phase2Files) {
      const read = results[`read-${name}`];
      assert.equal(read.ok, true, `${name}: ${read.error}`);
      const expected = name === 'cl-walcopy.db' ? MODIFIED_ROWS('cipherlite') : BASE_ROWS;
      assert.deepEqual(withoutMode(read.rows), expected, name);
      if (name !== 'cl-walcopy.db') assert.equal(results[`modify-${name}`].ok, true, name);
    }
    assert.equal(results['wrong-cipher'].ok, false);
    for (const name of ['cl-raw.db', 'cl-pass.db', 'cl-wal.db']) {
      const options = name === 'cl-pass.db' ? { passphrase: PASSPHRASE } : { key };
      assert.deepEqual(withoutMode(readWithCipherlite(p(name), options)), MODIFIED_ROWS('sqlite3mc'), name);
    }
  });

  describe('the key lifecycle on AEGIS files', () => {
    const makePlain = (name) => {
      const db = new Database(p(name));
      for (const sql of BASE) db.exec(sql);
      db.close();
    };
    const makeAegis = (name, journalMode = 'delete') => {
      const db = new Database(p(name), { key, cipher: 'aegis' });
      db.pragma(`journal_mode = ${journalMode}`);
      for (const sql of BASE) db.exec(sql);
      db.close();
    };
    const header = (name) => fs.readFileSync(p(name)).subarray(0, 16).toString('latin1');

    it('88.10 verify() authenticates every page in the AEGIS format and finds a damaged one', () => {
      makeAegis('kl-verify.db');
      let db = new Database(p('kl-verify.db'), { key, cipher: 'aegis' });
      const report = db.verify();
      assert.equal(report.ok, true, JSON.stringify(report));
      assert.equal(report.encrypted, true);
      assert.equal(report.firstBadPage, null);
      const pages = report.pages;
      db.close();
      const bytes = fs.readFileSync(p('kl-verify.db'));
      bytes[3 * PAGE - 100] ^= 1; // page 3's ciphertext
      fs.writeFileSync(p('kl-verify.db'), bytes);
      db = new Database(p('kl-verify.db'), { key, cipher: 'aegis' });
      const damaged = db.verify();
      assert.equal(damaged.ok, false);
      assert.equal(damaged.firstBadPage, 3);
      assert.equal(damaged.pages, pages);
      db.close();
    });

    it('88.11 rekey() keeps the AEGIS format by default, and moves a database to SQLCipher 4 and back', () => {
      makeAegis('kl-rekey.db', 'wal');
      const db = new Database(p('kl-rekey.db'), { key, cipher: 'aegis' });
      const count = db.prepare('SELECT count(*) FROM t');
      const key2 = newKey();
      const key3 = newKey();
      db.rekey(key2);
      assert.equal(count.pluck().get(), 100, 'a statement carries over');
      assert.equal(db.verify().ok, true);
      db.rekey(key3, { cipher: 'sqlcipher' });
      assert.equal(count.get(), 100);
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(db.verify().ok, true);
      db.rekey(key, { cipher: 'aegis' });
      assert.equal(count.get(), 100);
      db.exec("INSERT INTO t VALUES (1000, 'after')");
      db.close();
      assert.deepEqual(withoutMode(readWithCipherlite(p('kl-rekey.db'), { key })).integrity, [['ok']]);
      throwsSqlite(
        () => new Database(p('kl-rekey.db'), { key, fileMustExist: true }).prepare('SELECT 1 FROM t'),
        'SQLITE_NOTADB',
      );
      throwsSqlite(
        () => new Database(p('kl-rekey.db'), { key: key3, fileMustExist: true }).prepare('SELECT 1 FROM t'),
        'SQLITE_NOTADB',
      );
      // SQLite3MC opens the file cipherlite moved back to AEGIS.
      const { results } = runEngines([job('rekeyed', p('kl-rekey.db'))]);
      assert.equal(results.rekeyed.ok, true, results.rekeyed.error);
      assert.deepEqual(results.rekeyed.rows.who, [['after']]);
    });

    it('88.12 Database.encrypt and Database.decrypt take the "cipher" option', () => {
      makePlain('kl-plain.db');
      Database.encrypt(p('kl-plain.db'), key, { cipher: 'aegis' });
      assert.notEqual(header('kl-plain.db'), 'SQLite format 3\0');
      assert.deepEqual(withoutMode(readWithCipherlite(p('kl-plain.db'), { key })), BASE_ROWS);
      const { results } = runEngines([job('encrypted', p('kl-plain.db'))]);
      assert.equal(results.encrypted.ok, true, results.encrypted.error);
      assert.deepEqual(withoutMode(results.encrypted.rows), BASE_ROWS);

      // Without the option decrypt reads SQLCipher 4's format: refused, nothing written.
      const before = snapshotDir(dir);
      throwsSqlite(() => Database.decrypt(p('kl-plain.db'), key, p('kl-out.db')), 'SQLITE_NOTADB');
      assert.deepEqual(snapshotDir(dir), before);
      Database.decrypt(p('kl-plain.db'), key, p('kl-out.db'), { cipher: 'aegis' });
      assert.equal(header('kl-out.db'), 'SQLite format 3\0');
      const plain = new Database(p('kl-out.db'), { fileMustExist: true });
      assert.equal(plain.prepare('SELECT count(*) FROM t').pluck().get(), 100);
      plain.close();
      throwsType(() => Database.encrypt(p('kl-out.db'), key, { cipher: 'chacha' }), /"cipher" option/);
      throwsType(
        () => Database.encrypt(p('kl-out.db'), key, { cipher: 'aegis', cipherLayout: 'sqlcipher' }),
        /"cipherLayout" option/,
      );
    });

    it('88.13 backup() writes the format "cipher" names: plaintext or SQLCipher 4 into AEGIS and back, refusing bad values', async () => {
      const key2 = newKey();
      const reserveOf = (name) => fs.readFileSync(p(name))[20];
      makePlain('bk-plain.db');
      const plainDb = new Database(p('bk-plain.db'));
      await plainDb.backup(p('bk-plain-aegis.db'), { key, cipher: 'aegis' });
      await assert.rejects(plainDb.backup(p('bk-never.db'), { cipher: 'aegis' }), {
        name: 'TypeError',
        message:
          'The "cipher" option of backup() needs the "key" option to write a copy in another format than the database\'s (plaintext)',
      });
      assert.equal(fs.existsSync(p('bk-never.db')), false);
      plainDb.close();
      const sqlcipherDb = new Database(p('bk-sqlcipher.db'), { key: key2 });
      sqlcipherDb.pragma('journal_mode = wal');
      for (const sql of BASE) sqlcipherDb.exec(sql);
      await sqlcipherDb.backup(p('bk-sqlcipher-aegis.db'), { key, cipher: 'aegis' });
      assert.equal(sqlcipherDb.cipher, undefined, 'no public "cipher" property');
      sqlcipherDb.close();
      for (const name of ['bk-plain-aegis.db', 'bk-sqlcipher-aegis.db']) {
        assert.equal(reserveOf(name), AEGIS_RESERVE, name);
        assert.deepEqual(withoutMode(readWithCipherlite(p(name), { key })), BASE_ROWS, name);
      }

      makeAegis('bk-aegis.db');
      const aegisDb = new Database(p('bk-aegis.db'), { key, cipher: 'aegis' });
      await aegisDb.backup(p('bk-aegis-sqlcipher.db'), { key: key2, cipher: 'sqlcipher' });
      await aegisDb.backup(p('bk-aegis-own-key.db'), { key: key2 }); // keeps the format
      await aegisDb.backup(p('bk-aegis-same.db'), { cipher: 'aegis' }); // the source's key and format
      assert.equal(reserveOf('bk-aegis-sqlcipher.db'), 80);
      const sq = new Database(p('bk-aegis-sqlcipher.db'), { key: key2, fileMustExist: true });
      assert.equal(sq.prepare('SELECT count(*) FROM t').pluck().get(), 100);
      assert.equal(integrity(sq), 'ok');
      sq.close();
      assert.deepEqual(withoutMode(readWithCipherlite(p('bk-aegis-own-key.db'), { key: key2 })), BASE_ROWS);
      assert.deepEqual(withoutMode(readWithCipherlite(p('bk-aegis-same.db'), { key })), BASE_ROWS);

      // Refused before anything is written, naming the option.
      const before = snapshotDir(dir);
      const dest = p('bk-never.db');
      await assert.rejects(aegisDb.backup(dest, { key, cipher: 'aes' }), {
        name: 'TypeError',
        message: 'Expected the "cipher" option of backup() to be "sqlcipher" or "aegis"',
      });
      await assert.rejects(aegisDb.backup(dest, { key: null, cipher: 'aegis' }), {
        name: 'TypeError',
        message: 'The "cipher" option of backup() cannot be used with "key: null" (a plaintext copy)',
      });
      await assert.rejects(aegisDb.backup(dest, { cipher: 'sqlcipher' }), {
        name: 'TypeError',
        message:
          'The "cipher" option of backup() needs the "key" option to write a copy in another format than the database\'s (aegis)',
      });
      aegisDb.close();
      assert.deepEqual(snapshotDir(dir), before);

      // SQLite3 Multiple Ciphers opens the AEGIS backups.
      const { results } = runEngines([
        job('from-plain', p('bk-plain-aegis.db')),
        job('from-sqlcipher', p('bk-sqlcipher-aegis.db')),
      ]);
      for (const id of ['from-plain', 'from-sqlcipher']) {
        assert.equal(results[id].ok, true, results[id].error);
        assert.deepEqual(withoutMode(results[id].rows), BASE_ROWS, id);
      }
    });

    it('88.14 a copy into the other format reports progress: backup() counts down the source pages, rekey() counts up to the total', async () => {
      const key2 = newKey();
      const db = new Database(p('pr-sqlcipher.db'), { key: key2 });
      db.pragma('journal_mode = wal');
      for (const sql of BASE) db.exec(sql);
      // Bigger than the copy's page cache (2 MiB), so that the copy grows while it is made.
      db.exec(
        'CREATE TABLE bulk(b BLOB); WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 20000) INSERT INTO bulk SELECT randomblob(300) FROM s',
      );
      const sourcePages = db.pragma('page_count', { simple: true });
      const calls = [];
      const result = await db.backup(p('pr-aegis.db'), {
        key,
        cipher: 'aegis',
        progress: (info) => {
          calls.push(info);
          return 10;
        },
      });
      assert.deepEqual(result, { totalPages: sourcePages, remainingPages: 0 });
      assert.deepEqual(calls[0], { totalPages: sourcePages, remainingPages: sourcePages });
      assert.ok(calls.length > 2, `${calls.length} calls`);
      for (let i = 1; i < calls.length; i++) {
        assert.ok(calls[i - 1].remainingPages - calls[i].remainingPages >= 10, JSON.stringify(calls));
        assert.ok(calls[i].remainingPages > 0);
      }
      const copy = new Database(p('pr-aegis.db'), { key, cipher: 'aegis', fileMustExist: true });
      assert.equal(copy.verify().contentDigest, db.verify().contentDigest);
      copy.close();

      const reports = [];
      db.rekey(key, { cipher: 'aegis', progress: (done, total) => reports.push([done, total]) });
      const total = reports[0][1];
      assert.ok(total >= sourcePages - 1, `${total} of ${sourcePages}`);
      assert.deepEqual(reports[0], [0, total]);
      assert.deepEqual(reports.at(-1), [total, total]);
      assert.ok(reports.length > 3, JSON.stringify(reports));
      for (let i = 1; i < reports.length; i++) assert.ok(reports[i][0] >= reports[i - 1][0]);
      assert.equal(db.verify().ok, true);
      db.close();
    });
  });
});
