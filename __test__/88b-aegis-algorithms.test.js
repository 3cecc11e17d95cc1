'use strict';
// `cipher: 'aegis'` with SQLite3 Multiple Ciphers' other AEGIS algorithms (the `algorithm`
// option: its PRAGMA algorithm 'aegis-128l', 'aegis-128x2', 'aegis-128x4', 'aegis-256x2',
// 'aegis-256x4'; docs/aegis-format.md §1) and a passphrase's Argon2id costs (the `tcost`,
// `mcost` and `pcost` options: its PRAGMAs; §4), checked against SQLite3MC 2.6.1 itself
// (PyPI apsw-sqlite3mc 3.54.0.0, through __test__/interop/engines.py, as in 88; without it
// this file FAILS: CI installs it). Both directions for every algorithm: raw key, passphrase
// (non-default costs), rollback journal and WAL. A file of one algorithm opened with
// another's options is SQLITE_NOTADB naming the option, and changes no byte. The sample
// files SQLite3MC wrote (testdata/sqlcipher4/aegis128l-* …, read by the codec's
// `sqlite3mc_aegis_variant_sample_files_decrypt` too) open here without Python.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
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

const ALGORITHMS = ['aegis-128l', 'aegis-128x2', 'aegis-128x4', 'aegis-256x2', 'aegis-256x4'];
const is128 = (algorithm) => algorithm.startsWith('aegis-128');
const RESERVE = (algorithm) => (is128(algorithm) ? 48 : 64); // 32-byte tag + the nonce
const key32 = newKey();
const key16 = crypto.randomBytes(16);
const keyFor = (algorithm) => (is128(algorithm) ? key16 : key32);
const PASSPHRASE = 'correct horse battery staple';
// Non-default Argon2id costs, cheap enough for a test: 2 lanes, 4 MiB, 1 pass.
const COSTS = { tcost: 1, mcost: 4096, pcost: 2 };

let dir;
before(() => {
  dir = tempDir('aegis-alg');
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
};
const BASE_ROWS = { t: [[100, 5050, 1]], who: [], big: [[12, 24000]], integrity: [['ok']] };
const MODIFIED_ROWS = (who) => ({
  t: [[90, 5050 - 545, 1]],
  who: [[`by-${who}`]],
  big: [[12, 24000]],
  integrity: [['ok']],
});

/** The options cipherlite opens a file of `algorithm` with: its raw key, or the passphrase and `costs`. */
const clOptions = (algorithm, { passphrase, costs } = {}) => ({
  cipher: 'aegis',
  algorithm,
  ...(passphrase ? { passphrase, ...costs } : { key: keyFor(algorithm) }),
});

/** An engines.py job for SQLite3MC with `algorithm` (and the passphrase and costs, or the raw key). */
const mcJob = (id, file, algorithm, { passphrase, costs, ...extra } = {}) => ({
  id,
  engine: 'aegis',
  file,
  algorithm,
  queries: QUERIES,
  ...(passphrase ? { passphrase, ...costs } : { key: keyFor(algorithm).toString('hex') }),
  ...extra,
});

function readWithCipherlite(file, options) {
  const db = new Database(file, { fileMustExist: true, ...options });
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

function writeWithCipherlite(file, options, journalMode) {
  const db = new Database(file, options);
  db.pragma(`journal_mode = ${journalMode}`);
  for (const sql of BASE) db.exec(sql);
  return db;
}

const reserveOf = (file) => fs.readFileSync(file)[20];
const open = (file, options) => () =>
  new Database(file, { fileMustExist: true, ...options }).prepare('SELECT count(*) FROM t').get();

describe('88b cipher "aegis" with the other AEGIS algorithms and Argon2 costs, against SQLite3MC', () => {
  it('88b.1 SQLite3MC writes every algorithm (raw key, passphrase with non-default costs, a WAL left behind); cipherlite reads them', () => {
    const jobs = [];
    for (const a of ALGORITHMS) {
      jobs.push(mcJob(`raw-${a}`, p(`mc-raw-${a}.db`), a, { exec: BASE }));
      jobs.push(mcJob(`pass-${a}`, p(`mc-pass-${a}.db`), a, { exec: BASE, passphrase: PASSPHRASE, costs: COSTS }));
      jobs.push(
        mcJob(`wal-${a}`, p(`mc-wal-${a}.db`), a, {
          exec: ['PRAGMA journal_mode = WAL', ...BASE, ...MODIFY('sqlite3mc')],
          keep_open: true,
        }),
      );
    }
    const { engines, results } = runInteropEngines(key32, jobs, true);
    assert.match(engines.sqlite3mc, /Multiple Ciphers 2\./);
    for (const [id, r] of Object.entries(results)) assert.equal(r.ok, true, `${id}: ${r.error}`);
    for (const a of ALGORITHMS) {
      assert.equal(reserveOf(p(`mc-raw-${a}.db`)), RESERVE(a), a);
      assert.ok(fs.statSync(p(`mc-wal-${a}.db-wal`)).size > 0, `${a}: the WAL was left behind`);
      assert.deepEqual(readWithCipherlite(p(`mc-raw-${a}.db`), clOptions(a)), BASE_ROWS, a);
      assert.deepEqual(
        readWithCipherlite(p(`mc-pass-${a}.db`), clOptions(a, { passphrase: PASSPHRASE, costs: COSTS })),
        BASE_ROWS,
        `${a} passphrase`,
      );
      assert.deepEqual(readWithCipherlite(p(`mc-wal-${a}.db`), clOptions(a)), MODIFIED_ROWS('sqlite3mc'), `${a} WAL`);
    }
  });

  it('88b.2 the sample files SQLite3MC wrote (testdata/sqlcipher4/aegis128l-* …) open with their algorithm', () => {
    const raw = sampleKey();
    for (const [name, options, row] of [
      ['aegis128l-sqlite3mc-2.6.1.sqlite', { key: raw.subarray(0, 16), algorithm: 'aegis-128l' }, 'hello aegis-128l'],
      [
        'aegis128x2-sqlite3mc-2.6.1-1024.sqlite',
        { key: raw.subarray(0, 16), algorithm: 'aegis-128x2', pageSize: 1024 },
        'hello aegis-128x2',
      ],
      [
        'aegis128x4-sqlite3mc-2.6.1.sqlite',
        { key: raw.subarray(0, 16), algorithm: 'aegis-128x4' },
        'hello aegis-128x4',
      ],
      ['aegis256x2-sqlite3mc-2.6.1.sqlite', { key: raw, algorithm: 'aegis-256x2' }, 'hello aegis-256x2'],
      ['aegis256x4-sqlite3mc-2.6.1.sqlite', { key: raw, algorithm: 'aegis-256x4' }, 'hello aegis-256x4'],
      [
        'aegis128l-passphrase-t3-m8192-p2-sqlite3mc-2.6.1.sqlite',
        { passphrase: 'secret', algorithm: 'aegis-128l', tcost: 3, mcost: 8192, pcost: 2 },
        'pass aegis-128l',
      ],
      [
        'aegis256x4-passphrase-sqlite3mc-2.6.1.sqlite',
        { passphrase: 'secret', algorithm: 'aegis-256x4' },
        'pass aegis-256x4',
      ],
    ]) {
      const file = copySample(name, dir);
      const db = new Database(file, { ...options, cipher: 'aegis', readonly: true });
      assert.equal(db.prepare('SELECT b FROM t').pluck().get(), row, name);
      assert.equal(integrity(db), 'ok', name);
      db.close();
    }
    // The costs are part of the key: SQLite3MC's defaults don't open the file made with others.
    const file = copySample('aegis128l-passphrase-t3-m8192-p2-sqlite3mc-2.6.1.sqlite', dir);
    const before = snapshotDir(dir);
    throwsSqlite(
      open(file, { passphrase: 'secret', cipher: 'aegis', algorithm: 'aegis-128l', tcost: 3, mcost: 8192 }),
      'SQLITE_NOTADB',
      /the passphrase \(or its Argon2 costs: the "tcost", "mcost" and "pcost" options\), the cipher or the algorithm is wrong/,
    );
    assert.deepEqual(snapshotDir(dir), before);
  });

  let written;

  it('88b.3 cipherlite writes every algorithm: raw key and passphrase (costs), rollback journal and WAL', () => {
    written = [];
    for (const a of ALGORITHMS) {
      for (const [name, options, mode] of [
        [`cl-raw-${a}.db`, clOptions(a), 'delete'],
        [`cl-pass-${a}.db`, clOptions(a, { passphrase: PASSPHRASE, costs: COSTS }), 'delete'],
        [`cl-wal-${a}.db`, clOptions(a), 'wal'],
      ]) {
        writeWithCipherlite(p(name), options, mode).close();
        assert.equal(reserveOf(p(name)), RESERVE(a), name);
        written.push({ name, a, options });
      }
      // A WAL with committed frames, copied while its connection is open (nothing checkpointed).
      const db = writeWithCipherlite(p(`cl-walopen-${a}.db`), clOptions(a), 'wal');
      db.pragma('wal_autocheckpoint = 0');
      for (const sql of MODIFY('cipherlite')) db.exec(sql);
      fs.copyFileSync(p(`cl-walopen-${a}.db`), p(`cl-walcopy-${a}.db`));
      fs.copyFileSync(p(`cl-walopen-${a}.db-wal`), p(`cl-walcopy-${a}.db-wal`));
      db.close();
      assert.ok(fs.statSync(p(`cl-walcopy-${a}.db-wal`)).size > 4096, 'the copy has frames');
      written.push({ name: `cl-walcopy-${a}.db`, a, options: clOptions(a), copy: true });
    }
  });

  it("88b.4 SQLite3MC reads and modifies cipherlite's files of every algorithm; cipherlite reads what it modified", () => {
    const jobs = [];
    for (const { name, a, options, copy } of written) {
      const extra = options.passphrase ? { passphrase: PASSPHRASE, costs: COSTS } : {};
      jobs.push(mcJob(`read-${name}`, p(name), a, extra));
      if (!copy) jobs.push(mcJob(`modify-${name}`, p(name), a, { ...extra, exec: MODIFY('sqlite3mc') }));
    }
    // SQLite3MC with another algorithm of the same reserve does not open them.
    jobs.push(mcJob('wrong-algorithm', p('cl-raw-aegis-128l.db'), 'aegis-128x2'));
    jobs.push(mcJob('default-costs', p('cl-pass-aegis-256x2.db'), 'aegis-256x2', { passphrase: PASSPHRASE }));
    const { results } = runInteropEngines(key32, jobs);
    for (const { name, copy } of written) {
      const read = results[`read-${name}`];
      assert.equal(read.ok, true, `${name}: ${read.error}`);
      assert.deepEqual(read.rows, copy ? MODIFIED_ROWS('cipherlite') : BASE_ROWS, name);
      if (!copy) assert.equal(results[`modify-${name}`].ok, true, `${name}: ${results[`modify-${name}`].error}`);
    }
    assert.equal(results['wrong-algorithm'].ok, false);
    assert.equal(results['default-costs'].ok, false);
    for (const { name, options, copy } of written) {
      if (!copy) assert.deepEqual(readWithCipherlite(p(name), options), MODIFIED_ROWS('sqlite3mc'), name);
    }
  });

  it('88b.5 another algorithm named is SQLITE_NOTADB naming the "algorithm" option (and the reserve), changing no byte', () => {
    const before = snapshotDir(dir);
    // 48 vs 64 reserved bytes: told by page 1's header in clear, whatever the key.
    throwsSqlite(
      open(p('cl-raw-aegis-128l.db'), { key: key32, cipher: 'aegis' }),
      'SQLITE_NOTADB',
      "file is not a database with the AEGIS algorithm 'aegis-256' (64 reserved bytes a page): its page 1 says 48 reserved bytes, as the AEGIS-128 algorithms have (pass the \"algorithm\" option: 'aegis-128l', 'aegis-128x2' or 'aegis-128x4', with a 16-byte key)",
    );
    throwsSqlite(
      open(p('cl-raw-aegis-256x4.db'), { key: key16, cipher: 'aegis', algorithm: 'aegis-128l' }),
      'SQLITE_NOTADB',
      /^file is not a database with the AEGIS algorithm 'aegis-128l' \(48 reserved bytes a page\): its page 1 says 64 reserved bytes, as the AEGIS-256 algorithms have \(pass the "algorithm" option: 'aegis-256', 'aegis-256x2' or 'aegis-256x4', with a 32-byte key\)$/,
    );
    // The same reserve: the key is tried with the other algorithms of the family.
    throwsSqlite(
      open(p('cl-raw-aegis-128x4.db'), { key: key16, cipher: 'aegis', algorithm: 'aegis-128x2' }),
      'SQLITE_NOTADB',
      "file is not a database with the AEGIS algorithm 'aegis-128x2' (48 reserved bytes a page): the key opens it with 'aegis-128x4' (48 reserved bytes; pass the \"algorithm\" option: 'aegis-128x4')",
    );
    throwsSqlite(
      open(p('cl-raw-aegis-256x2.db'), { key: key32, cipher: 'aegis' }),
      'SQLITE_NOTADB',
      /the key opens it with 'aegis-256x2' .*pass the "algorithm" option: 'aegis-256x2'/,
    );
    // A passphrase's key is derived for the other family too.
    throwsSqlite(
      open(p('cl-pass-aegis-128x2.db'), {
        passphrase: PASSPHRASE,
        ...COSTS,
        cipher: 'aegis',
        algorithm: 'aegis-256x4',
      }),
      'SQLITE_NOTADB',
      /the key opens it with 'aegis-128x2' \(48 reserved bytes; pass the "algorithm" option: 'aegis-128x2'\)/,
    );
    // Without the cipher: both options named.
    throwsSqlite(
      open(p('cl-raw-aegis-256x4.db'), { key: key32 }),
      'SQLITE_NOTADB',
      "file is not a database in the sqlcipher format: the key opens it in the aegis format with algorithm 'aegis-256x4' (pass the \"cipher\" option: 'aegis' and the \"algorithm\" option: 'aegis-256x4')",
    );
    // A wrong key: nothing opens it; the reserve says which algorithms it can be.
    throwsSqlite(
      open(p('cl-raw-aegis-256x2.db'), { key: newKey(), cipher: 'aegis', algorithm: 'aegis-256x2' }),
      'SQLITE_NOTADB',
      "file is not a database: the key, the cipher or the algorithm is wrong (its page 1 says the aegis format with 64 reserved bytes a page: the AEGIS-256 algorithms 'aegis-256', 'aegis-256x2' or 'aegis-256x4')",
    );
    throwsSqlite(
      open(p('cl-wal-aegis-128l.db'), { key: crypto.randomBytes(16), cipher: 'aegis', algorithm: 'aegis-128l' }),
      'SQLITE_NOTADB',
      /^file is not a database: the key, the cipher or the algorithm is wrong/,
    );
    assert.deepEqual(snapshotDir(dir), before);
  });

  it('88b.6 the "algorithm", "tcost", "mcost" and "pcost" options are checked, naming the option', () => {
    const f = p('never.db');
    throwsType(
      () => new Database(f, { key: key32, cipher: 'aegis', algorithm: 'aegis-512' }),
      'Expected the "algorithm" option to be "aegis-128l", "aegis-128x2", "aegis-128x4", "aegis-256", "aegis-256x2" or "aegis-256x4"',
    );
    throwsType(
      () => new Database(f, { key: key32, algorithm: 'aegis-256x2' }),
      'The "algorithm" option requires the "cipher" option \'aegis\'',
    );
    throwsType(
      () => new Database(f, { key: key32, cipher: 'sqlcipher', algorithm: 'aegis-256' }),
      'The "algorithm" option requires the "cipher" option \'aegis\'',
    );
    throwsType(
      () => new Database(f, { key: key32, cipher: 'aegis', algorithm: 'aegis-128l' }),
      'Expected the "key" option to be a 16-byte Buffer or Uint8Array (the AEGIS algorithm "aegis-128l" takes 128-bit keys)',
    );
    throwsType(
      () => new Database(f, { key: key16, cipher: 'aegis' }),
      'Expected the "key" option to be a 32-byte Buffer or Uint8Array',
    );
    for (const cost of ['tcost', 'mcost', 'pcost']) {
      for (const bad of [0, -1, 1.5, '2', 2 ** 31]) {
        throwsType(
          () => new Database(f, { passphrase: PASSPHRASE, cipher: 'aegis', [cost]: bad }),
          new RegExp(`^Expected the "${cost}" option to be an integer from 1 to `),
        );
      }
      throwsType(
        () => new Database(f, { key: key32, cipher: 'aegis', [cost]: 8 }),
        `The "${cost}" option requires the "passphrase" option (a raw key has no key derivation)`,
      );
      throwsType(
        () => new Database(f, { passphrase: PASSPHRASE, [cost]: 8 }),
        `The "${cost}" option is an Argon2id cost of the "cipher" option 'aegis' (SQLCipher's key derivation takes "kdfIterations")`,
      );
    }
    throwsType(
      () => new Database(f, { passphrase: PASSPHRASE, cipher: 'aegis', pcost: 2 ** 24 }),
      'Expected the "pcost" option to be an integer from 1 to 16777215',
    );
    throwsType(
      () => new Database(f, { passphrase: PASSPHRASE, cipher: 'aegis', mcost: 15, pcost: 2 }),
      'Expected the "mcost" option to be at least 8 × "pcost" (16 KiB): Argon2 needs 8 KiB of memory per lane',
    );
    assert.equal(fs.existsSync(f), false);
    // The costs and the algorithm are kept for the file's journal and WAL: a passphrase
    // database with costs reopens, WAL and all.
    const db = writeWithCipherlite(p('costs.db'), clOptions('aegis-128x4', { passphrase: 'pw', costs: COSTS }), 'wal');
    db.pragma('wal_autocheckpoint = 0');
    db.exec("INSERT INTO t VALUES (2000, 'wal')");
    const again = new Database(p('costs.db'), clOptions('aegis-128x4', { passphrase: 'pw', costs: COSTS }));
    assert.equal(again.prepare('SELECT b FROM t WHERE a = 2000').pluck().get(), 'wal');
    again.close();
    db.close();
  });

  describe('the key lifecycle with an algorithm', () => {
    const makePlain = (name) => {
      const db = new Database(p(name));
      for (const sql of BASE) db.exec(sql);
      db.close();
    };

    it('88b.7 rekey() moves a database between algorithms (its key length with it); verify() checks it', () => {
      writeWithCipherlite(p('kl-rekey.db'), clOptions('aegis-256'), 'wal').close();
      const db = new Database(p('kl-rekey.db'), clOptions('aegis-256'));
      const count = db.prepare('SELECT count(*) FROM t').pluck();
      throwsType(
        () => db.rekey(key32, { cipher: 'aegis', algorithm: 'aegis-128l' }),
        'Expected the new key to be a 16-byte Buffer or Uint8Array (the AEGIS algorithm "aegis-128l" takes 128-bit keys)',
      );
      throwsType(
        () => db.rekey(key16, { algorithm: 'aegis-128l' }),
        'The "algorithm" option requires the "cipher" option \'aegis\'',
      );
      db.rekey(key16, { cipher: 'aegis', algorithm: 'aegis-128l' });
      assert.equal(count.get(), 100);
      assert.equal(reserveOf(p('kl-rekey.db')), 48);
      assert.equal(db.verify().ok, true);
      const key2 = crypto.randomBytes(16);
      db.rekey(key2); // keeps aegis-128l: a 16-byte key
      assert.equal(db.verify().ok, true);
      db.rekey(key32, { cipher: 'aegis', algorithm: 'aegis-256x4' });
      assert.equal(count.get(), 100);
      assert.equal(reserveOf(p('kl-rekey.db')), 64);
      db.exec("INSERT INTO t VALUES (1000, 'after')");
      assert.equal(db.verify().ok, true);
      db.close();
      throwsSqlite(open(p('kl-rekey.db'), clOptions('aegis-256x2')), 'SQLITE_NOTADB', /'aegis-256x4'/);
      const { results } = runInteropEngines(key32, [mcJob('rekeyed', p('kl-rekey.db'), 'aegis-256x4')]);
      assert.equal(results.rekeyed.ok, true, results.rekeyed.error);
      assert.deepEqual(results.rekeyed.rows.who, [['after']]);
    });

    it('88b.8 Database.encrypt and Database.decrypt take the "algorithm" option', () => {
      makePlain('kl-plain.db');
      throwsType(
        () => Database.encrypt(p('kl-plain.db'), key32, { cipher: 'aegis', algorithm: 'aegis-128x2' }),
        'Expected the key to be a 16-byte Buffer or Uint8Array (the AEGIS algorithm "aegis-128x2" takes 128-bit keys)',
      );
      Database.encrypt(p('kl-plain.db'), key16, { cipher: 'aegis', algorithm: 'aegis-128x2' });
      assert.equal(reserveOf(p('kl-plain.db')), 48);
      assert.deepEqual(readWithCipherlite(p('kl-plain.db'), clOptions('aegis-128x2')), BASE_ROWS);
      const { results } = runInteropEngines(key32, [mcJob('encrypted', p('kl-plain.db'), 'aegis-128x2')]);
      assert.equal(results.encrypted.ok, true, results.encrypted.error);
      assert.deepEqual(results.encrypted.rows, BASE_ROWS);
      const before = snapshotDir(dir);
      throwsSqlite(
        () => Database.decrypt(p('kl-plain.db'), key16, p('kl-out.db'), { cipher: 'aegis', algorithm: 'aegis-128l' }),
        'SQLITE_NOTADB',
      );
      assert.deepEqual(snapshotDir(dir), before);
      Database.decrypt(p('kl-plain.db'), key16, p('kl-out.db'), { cipher: 'aegis', algorithm: 'aegis-128x2' });
      const plain = new Database(p('kl-out.db'), { fileMustExist: true });
      assert.equal(plain.prepare('SELECT count(*) FROM t').pluck().get(), 100);
      plain.close();
    });

    it('88b.9 backup() writes the algorithm "algorithm" names, and keeps the source\'s without one', async () => {
      writeWithCipherlite(p('bk-src.db'), clOptions('aegis-256x2'), 'delete').close();
      const db = new Database(p('bk-src.db'), clOptions('aegis-256x2'));
      await db.backup(p('bk-same.db')); // the source's key and algorithm
      await db.backup(p('bk-own.db'), { key: key32 }); // the source's algorithm, page by page
      await db.backup(p('bk-128l.db'), { key: key16, cipher: 'aegis', algorithm: 'aegis-128l' });
      await assert.rejects(db.backup(p('bk-never.db'), { key: key32, cipher: 'aegis', algorithm: 'aegis-128l' }), {
        name: 'TypeError',
        message:
          'Expected the "key" option (or null for a plaintext copy) to be a 16-byte Buffer or Uint8Array (the AEGIS algorithm "aegis-128l" takes 128-bit keys)',
      });
      await assert.rejects(db.backup(p('bk-never.db'), { cipher: 'aegis', algorithm: 'aegis-256x4' }), {
        name: 'TypeError',
        message:
          'The "cipher" option of backup() needs the "key" option to write a copy in another format than the database\'s (aegis (aegis-256x2))',
      });
      await assert.rejects(db.backup(p('bk-never.db'), { key: key32, algorithm: 'aegis-256x4' }), {
        name: 'TypeError',
        message: 'The "algorithm" option of backup() requires the "cipher" option \'aegis\'',
      });
      db.close();
      assert.equal(fs.existsSync(p('bk-never.db')), false);
      assert.deepEqual(readWithCipherlite(p('bk-same.db'), clOptions('aegis-256x2')), BASE_ROWS);
      assert.deepEqual(readWithCipherlite(p('bk-own.db'), clOptions('aegis-256x2')), BASE_ROWS);
      assert.deepEqual(readWithCipherlite(p('bk-128l.db'), clOptions('aegis-128l')), BASE_ROWS);
      const { results } = runInteropEngines(key32, [mcJob('backup', p('bk-128l.db'), 'aegis-128l')]);
      assert.equal(results.backup.ok, true, results.backup.error);
      assert.deepEqual(results.backup.rows, BASE_ROWS);
    });

    it("88b.10 the cipherlite command takes --algorithm and --new-algorithm (keys of the algorithm's length)", () => {
      const CLI = path.join(__dirname, '..', 'bin', 'cipherlite.js');
      const cli = (args, env = {}) => {
        const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
        return { code: r.status, stdout: r.stdout, stderr: r.stderr };
      };
      const env = { K16: key16.toString('hex'), K32: key32.toString('hex') };
      makePlain('cli.db');
      const file = p('cli.db');
      let r = cli(['encrypt', file, '--key-env', 'K32', '--cipher', 'aegis', '--algorithm', 'aegis-128x4'], env);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /the environment variable K32 must hold exactly 32 hex digits \(a 16-byte key\)/);
      r = cli(['encrypt', file, '--key-env', 'K16', '--algorithm', 'aegis-128x4'], env);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /--algorithm applies to --cipher aegis/);
      r = cli(['encrypt', file, '--key-env', 'K16', '--cipher', 'aegis', '--algorithm', 'aegis-512'], env);
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        /--algorithm must be aegis-128l, aegis-128x2, aegis-128x4, aegis-256, aegis-256x2, aegis-256x4/,
      );
      r = cli(['encrypt', file, '--key-env', 'K16', '--cipher', 'aegis', '--algorithm', 'aegis-128x4'], env);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(reserveOf(file), 48);
      r = cli(['verify', file, '--key-env', 'K16', '--cipher', 'aegis', '--algorithm', 'aegis-128x4'], env);
      assert.equal(r.code, 0, r.stderr);
      r = cli(['verify', file, '--key-env', 'K16', '--cipher', 'aegis', '--algorithm', 'aegis-128l'], env);
      assert.equal(r.code, 3);
      assert.match(r.stderr, /the key opens it with 'aegis-128x4'/);
      r = cli(
        [
          'rekey',
          file,
          '--key-env',
          'K16',
          '--cipher',
          'aegis',
          '--algorithm',
          'aegis-128x4',
          '--new-key-env',
          'K32',
          '--new-cipher',
          'aegis',
          '--new-algorithm',
          'aegis-256x2',
        ],
        env,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(readWithCipherlite(file, clOptions('aegis-256x2')), BASE_ROWS);
      r = cli(
        [
          'decrypt',
          file,
          '--out',
          p('cli-plain.db'),
          '--key-env',
          'K32',
          '--cipher',
          'aegis',
          '--algorithm',
          'aegis-256x2',
        ],
        env,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.equal(fs.readFileSync(p('cli-plain.db')).subarray(0, 15).toString('latin1'), 'SQLite format 3');
    });
  });
});
