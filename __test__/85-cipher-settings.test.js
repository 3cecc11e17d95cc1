'use strict';
// The SQLCipher settings beyond a raw key and 4096-byte pages: `pageSize` (512..65536),
// `passphrase` (SQLCipher 4's PBKDF2-HMAC-SHA512 key derivation, 256,000 iterations by
// default) and `kdfIterations`. Validation, round trips in rollback and WAL mode, the
// error that names `pageSize` when it doesn't match, and interop both ways with the real
// engines (SQLCipher 4.12.0, SQLite3MC 2.6.1 via __test__/interop/engines.py), their hot
// journals and WALs included. The fixtures under testdata/sqlcipher4/passphrase-* were
// written by the engines (testdata/sqlcipher4/README.md).
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
  testdataDir,
} = require('./_helpers-encryption');

const FAST = 4000; // kdfIterations for most tests (SQLCipher's default costs ~1 s in a debug build)
const PASS = "correct horse 'battery' staple";
let dir;
before(() => {
  dir = tempDir('settings');
});
after(() => removeDir(dir));
const p = (name) => path.join(dir, name);

const ROWS_SQL = [
  'CREATE TABLE t(a INTEGER, b TEXT)',
  "INSERT INTO t SELECT value, printf('row-%d-%0500d', value, value) FROM (WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < 60) SELECT value FROM s)",
];
const ROWS = `${ROWS_SQL.join(';\n')};`;
const content = (db) => db.prepare('SELECT count(*) AS n, sum(a) AS s, min(length(b)) AS l FROM t').get();
const EXPECTED = { n: 60, s: 1830, l: 506 };

// Windows (scripts/test-windows.js): the interop engines are Linux Python wheels.
const LINUX_ENGINES = process.platform === 'win32' && 'SQLCipher and SQLite3 Multiple Ciphers from Linux Python wheels';

describe('pageSize, passphrase and kdfIterations', () => {
  it('are validated before any file is touched', () => {
    const file = p('invalid.db');
    throwsType(
      () => new Database(file, { key: newKey(), passphrase: 'x' }),
      /"key" and "passphrase" options cannot be used together/,
    );
    for (const pageSize of [0, 256, 512, 1000, 3000, 131072, 4096.5, '4096', null]) {
      throwsType(
        () => new Database(file, { key: newKey(), pageSize }),
        /"pageSize" option to be a power of two from 1024 to 65536/,
      );
    }
    // 512 is SQLite's smallest page, but not an encrypted one's: the message says why.
    throwsType(
      () => new Database(file, { key: newKey(), pageSize: 512 }),
      /512-byte pages leave 432 usable bytes after the 80 reserved ones; SQLite needs 480/,
    );
    throwsType(() => Database.encrypt(file, newKey(), { pageSize: 512 }), /SQLite needs 480/);
    assert.equal(fs.existsSync(file), false, 'a refused pageSize made a file');
    throwsType(
      () => new Database(file, { pageSize: 8192 }),
      /"pageSize" option requires the "key" or "passphrase" option/,
    );
    throwsType(
      () => new Database(file, { key: newKey(), kdfIterations: 1000 }),
      /"kdfIterations" option requires the "passphrase" option/,
    );
    for (const kdfIterations of [0, -1, 1.5, '1000', 2 ** 31]) {
      throwsType(
        () => new Database(file, { passphrase: 'x', kdfIterations }),
        /"kdfIterations" option to be a positive 32-bit integer/,
      );
    }
    for (const passphrase of ['', Buffer.alloc(0), 42, {}, new Proxy(Buffer.from('x'), {})]) {
      throwsType(
        () => new Database(file, { passphrase }),
        /"passphrase" option to be a non-empty string, Buffer or Uint8Array/,
      );
    }
    throwsType(() => new Database(':memory:', { passphrase: 'x' }), /cannot be used with in-memory/);
    assert.equal(fs.existsSync(file), false);
  });

  for (const pageSize of [1024, 8192, 65536]) {
    for (const mode of ['delete', 'wal']) {
      it(`a passphrase and ${pageSize}-byte pages round-trip (${mode}); a wrong pageSize names the option and changes nothing`, () => {
        const file = p(`rt-${pageSize}-${mode}.db`);
        const options = { passphrase: PASS, kdfIterations: FAST, pageSize };
        const db = new Database(file, options);
        db.pragma(`journal_mode = ${mode}`);
        db.exec(ROWS);
        assert.equal(db.pragma('page_size', { simple: true }), pageSize);
        throwsSqlite(
          () => db.pragma('page_size = 4096'),
          'SQLITE_AUTH',
          /PRAGMA page_size cannot change an encrypted database's page size: give it as new Database\(path, \{ key, pageSize \}\)/,
        );
        db.close();
        assert.equal(fs.statSync(file).size % pageSize, 0);
        assert.ok(!fs.readFileSync(file).includes('row-1-'), 'no plaintext');
        const before = snapshotDir(dir);
        const other = pageSize === 8192 ? 4096 : 8192;
        throwsSqlite(
          () => new Database(file, { ...options, pageSize: other }),
          'SQLITE_NOTADB',
          new RegExp(
            `with ${other}-byte pages: the key opens it with ${pageSize}-byte pages \\(pass the "pageSize" option: ${pageSize}\\)`,
          ),
        );
        throwsSqlite(
          () => new Database(file, { ...options, passphrase: 'wrong' }),
          'SQLITE_NOTADB',
          'file is not a database',
        );
        throwsSqlite(
          () => new Database(file, { ...options, kdfIterations: FAST + 1 }),
          'SQLITE_NOTADB',
          'file is not a database',
        );
        assert.deepEqual(snapshotDir(dir), before, 'refused opens change no byte');
        const again = new Database(file, options);
        assert.deepEqual(content(again), EXPECTED);
        assert.equal(integrity(again), 'ok');
        again.close();
      });
    }
  }

  it('a passphrase as bytes equals the same passphrase as a string (UTF-8)', () => {
    const file = p('bytes.db');
    const db = new Database(file, { passphrase: 'pässwörd', kdfIterations: FAST });
    db.exec(ROWS);
    db.close();
    const again = new Database(file, { passphrase: Buffer.from('pässwörd', 'utf8'), kdfIterations: FAST });
    assert.deepEqual(content(again), EXPECTED);
    again.close();
  });

  it("SQLCipher's default derivation (256,000 iterations) is used when kdfIterations is not given", () => {
    const file = p('default-kdf.db');
    const db = new Database(file, { passphrase: PASS });
    db.exec(ROWS);
    db.close();
    throwsSqlite(() => new Database(file, { passphrase: PASS, kdfIterations: FAST }), 'SQLITE_NOTADB');
    const again = new Database(file, { passphrase: PASS, kdfIterations: 256000 });
    assert.deepEqual(content(again), EXPECTED);
    again.close();
  });
});

describe('fixtures written by SQLCipher and SQLite3MC with passphrases', () => {
  for (const [name, options] of [
    ['passphrase-sqlcipher-4.12.0-8192.sqlite', { passphrase: 'testkey', pageSize: 8192 }],
    ['passphrase-sqlite3mc-2.6.1-legacy0-1024.sqlite', { passphrase: 'testkey', pageSize: 1024 }],
  ]) {
    it(`${name} opens with ${JSON.stringify(options)}`, () => {
      const file = p(name);
      fs.copyFileSync(path.join(testdataDir(), name), file);
      const db = new Database(file, options);
      assert.deepEqual(content(db), EXPECTED);
      assert.equal(integrity(db), 'ok');
      db.close();
    });
  }
});

// SQLCipher opens the 'sqlcipher' layout (so does SQLite3MC with legacy=4); SQLite3MC
// legacy=0 opens the 'sqlite3mc' layout.
const ENGINE_FOR = { sqlcipher: ['sqlcipher', 'mc4'], sqlite3mc: ['mc0'] };
const QUERIES = {
  n: 'SELECT count(*), sum(a), min(length(b)) FROM t',
  integrity: 'PRAGMA integrity_check',
};

describe('interop with the real engines: passphrases and page sizes', () => {
  const key = newKey(); // unused by passphrase jobs (engines.py takes a key for raw-key jobs)

  it(
    'the engines write files with passphrases and 1024/8192/65536-byte pages (rollback, WAL, WAL left behind, hot journal); cipherlite reads them',
    { skip: LINUX_ENGINES },
    () => {
      const jobs = [];
      const files = [];
      for (const engine of ['sqlcipher', 'mc4', 'mc0']) {
        for (const pageSize of [1024, 8192, 65536]) {
          for (const kind of ['delete', 'wal', 'walleft', 'hot']) {
            const file = p(`en-${engine}-${pageSize}-${kind}.db`);
            const setup = [
              `PRAGMA journal_mode = ${kind === 'delete' || kind === 'hot' ? 'delete' : 'wal'}`,
              ...ROWS_SQL,
            ];
            if (kind === 'walleft' || kind === 'wal') setup.unshift('PRAGMA wal_autocheckpoint = 0');
            if (kind === 'hot')
              setup.push(
                'PRAGMA cache_size = 2',
                'BEGIN',
                "UPDATE t SET b = 'CHANGED' || b",
                'INSERT INTO t SELECT a + 100, b FROM t',
              );
            jobs.push({
              id: `${engine}-${pageSize}-${kind}`,
              engine,
              file,
              passphrase: PASS,
              kdf_iter: FAST,
              page_size: pageSize,
              exec: setup,
              keep_open: kind === 'walleft' || kind === 'hot',
            });
            files.push({ file, engine, pageSize, kind });
          }
        }
      }
      const { results } = runInteropEngines(key, jobs, true);
      for (const job of jobs) assert.ok(results[job.id].ok, `${job.id}: ${results[job.id].error}`);
      for (const f of files) {
        if (f.kind === 'walleft') assert.ok(fs.statSync(`${f.file}-wal`).size > 0, `${f.file}: WAL left`);
        if (f.kind === 'hot') assert.ok(fs.existsSync(`${f.file}-journal`), `${f.file}: hot journal`);
        // SQLite3MC checksums journal records over the plaintext, SQLCipher over the
        // ciphertext: cipherlite rolls both back to the committed rows, SQLite3MC's only with
        // the owner's explicit option (without it, a refusal naming it: 57).
        const mcHot = f.kind === 'hot' && f.engine !== 'sqlcipher';
        const db = new Database(f.file, {
          passphrase: PASS,
          kdfIterations: FAST,
          pageSize: f.pageSize,
          acceptPlaintextJournalChecksums: mcHot,
        });
        assert.deepEqual(content(db), EXPECTED, `${f.engine} ${f.pageSize} ${f.kind}`);
        assert.equal(db.prepare("SELECT count(*) FROM t WHERE b LIKE 'CHANGED%'").pluck().get(), 0);
        assert.equal(integrity(db), 'ok');
        db.close();
      }
    },
  );

  it(
    'the engines read what cipherlite writes with passphrases and 1024/8192/65536-byte pages, and its crash leftovers',
    { skip: LINUX_ENGINES },
    () => {
      const jobs = [];
      for (const layout of ['sqlcipher', 'sqlite3mc']) {
        for (const pageSize of [1024, 8192, 65536]) {
          for (const mode of ['delete', 'wal']) {
            const file = p(`cl-${layout}-${pageSize}-${mode}.db`);
            const db = new Database(file, { passphrase: PASS, kdfIterations: FAST, pageSize, cipherLayout: layout });
            db.pragma(`journal_mode = ${mode}`);
            db.pragma('wal_autocheckpoint = 0');
            db.exec(ROWS);
            if (mode === 'wal') {
              // Left in the WAL: the engines recover it.
              db.exec('INSERT INTO t SELECT a + 100, b FROM t; DELETE FROM t WHERE a > 60');
            }
            db.close();
            for (const engine of ENGINE_FOR[layout]) {
              jobs.push({
                id: `${engine}-${layout}-${pageSize}-${mode}`,
                engine,
                file,
                passphrase: PASS,
                kdf_iter: FAST,
                page_size: pageSize,
                queries: QUERIES,
              });
            }
          }
        }
      }
      const { results } = runInteropEngines(key, jobs);
      for (const job of jobs) {
        const r = results[job.id];
        assert.ok(r.ok, `${job.id}: ${r.error}`);
        assert.deepEqual(r.rows.n, [[60, 1830, 506]], job.id);
        assert.deepEqual(r.rows.integrity, [['ok']], job.id);
      }
    },
  );
});

// The key lifecycle keeps the page size: verify checks pages of the database's own size,
// rekey writes and reopens the copy with it, encrypt/decrypt take it as `pageSize`, and the
// CLI as `--page-size`.
describe('the key lifecycle with other page sizes', () => {
  const CLI = path.join(__dirname, '..', 'bin', 'cipherlite.js');
  const cli = (args, env = {}) => {
    const r = require('node:child_process').spawnSync(process.execPath, [CLI, ...args], {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const hexEnv = (key) => ({ CIPHERLITE_TEST_KEY: key.toString('hex') });

  for (const pageSize of [1024, 8192, 65536]) {
    for (const mode of ['delete', 'wal']) {
      it(`verify and rekey a database of ${pageSize}-byte pages (${mode}), opened with a passphrase or a key`, () => {
        const file = p(`life-${pageSize}-${mode}.db`);
        const db = new Database(file, { passphrase: PASS, kdfIterations: FAST, pageSize });
        db.pragma(`journal_mode = ${mode}`);
        db.exec(ROWS);
        const sound = db.verify();
        assert.equal(sound.ok, true, JSON.stringify(sound));
        assert.equal(sound.firstBadPage, null);
        if (mode === 'delete') assert.equal(sound.pages, fs.statSync(file).size / pageSize);
        const digest = sound.contentDigest;
        const key = newKey();
        db.rekey(key);
        assert.equal(db.pragma('page_size', { simple: true }), pageSize, 'the reopened connection keeps the page size');
        assert.deepEqual(content(db), EXPECTED);
        db.exec('INSERT INTO t VALUES (61, 1)');
        db.exec('DELETE FROM t WHERE a = 61');
        const after = db.verify();
        assert.equal(after.ok, true, JSON.stringify(after));
        assert.equal(after.contentDigest, digest);
        db.close();
        assert.equal(fs.statSync(file).size % pageSize, 0);
        throwsSqlite(() => new Database(file, { passphrase: PASS, kdfIterations: FAST, pageSize }), 'SQLITE_NOTADB');
        const again = new Database(file, { key, pageSize });
        assert.equal(again.pragma('journal_mode', { simple: true }), mode);
        assert.deepEqual(content(again), EXPECTED);
        again.close();

        // The CLI, given the page size.
        const verified = cli(
          ['verify', file, '--key-env', 'CIPHERLITE_TEST_KEY', '--page-size', String(pageSize), '--json'],
          hexEnv(key),
        );
        assert.equal(verified.code, 0, verified.stderr);
        assert.equal(JSON.parse(verified.stdout).contentDigest, digest);
        const wrongSize = cli(
          ['verify', file, '--key-env', 'CIPHERLITE_TEST_KEY', '--page-size', pageSize === 8192 ? '4096' : '8192'],
          hexEnv(key),
        );
        assert.equal(wrongSize.code, 3, wrongSize.stderr);
        assert.match(wrongSize.stderr, /pageSize/);
      });
    }
  }

  it('Database.encrypt and Database.decrypt take pageSize; the CLI takes --page-size', () => {
    const plainFile = p('to-encrypt.db');
    const plain = new Database(plainFile);
    plain.pragma('page_size = 2048');
    plain.exec(ROWS);
    plain.close();
    const key = newKey();
    for (const pageSize of [0, 512, 1000, '8192', 131072]) {
      throwsType(
        () => Database.encrypt(plainFile, key, { pageSize }),
        /"pageSize" option to be a power of two from 1024 to 65536/,
      );
      throwsType(
        () => Database.decrypt(plainFile, key, p('never.db'), { pageSize }),
        /"pageSize" option to be a power of two from 1024 to 65536/,
      );
    }
    Database.encrypt(plainFile, key, { pageSize: 8192, cipherLayout: 'sqlcipher' });
    assert.equal(fs.statSync(plainFile).size % 8192, 0);
    throwsSqlite(() => new Database(plainFile, { key }), 'SQLITE_NOTADB', /pass the "pageSize" option: 8192/);
    const enc = new Database(plainFile, { key, pageSize: 8192 });
    assert.deepEqual(content(enc), EXPECTED);
    assert.equal(enc.verify().ok, true);
    enc.close();
    throwsSqlite(() => Database.decrypt(plainFile, key, p('wrong-size.db')), 'SQLITE_NOTADB');
    assert.equal(fs.existsSync(p('wrong-size.db')), false);
    Database.decrypt(plainFile, key, p('copy.db'), { pageSize: 8192 });
    const copy = new Database(p('copy.db'), { readonly: true });
    assert.equal(copy.pragma('page_size', { simple: true }), 8192);
    assert.deepEqual(content(copy), EXPECTED);
    copy.close();

    const viaCli = p('cli.db');
    fs.copyFileSync(p('copy.db'), viaCli);
    const bad = cli(['encrypt', viaCli, '--key-env', 'CIPHERLITE_TEST_KEY', '--page-size', '3000'], hexEnv(key));
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--page-size must be a power of two from 1024 to 65536/);
    const done = cli(['encrypt', viaCli, '--key-env', 'CIPHERLITE_TEST_KEY', '--page-size', '1024'], hexEnv(key));
    assert.equal(done.code, 0, done.stderr);
    const byCli = new Database(viaCli, { key, pageSize: 1024 });
    assert.deepEqual(content(byCli), EXPECTED);
    byCli.close();
    const out = cli(
      ['decrypt', viaCli, '--out', p('cli-plain.db'), '--key-env', 'CIPHERLITE_TEST_KEY', '--page-size', '1024'],
      hexEnv(key),
    );
    assert.equal(out.code, 0, out.stderr);
    const plainAgain = new Database(p('cli-plain.db'), { readonly: true });
    assert.equal(plainAgain.pragma('page_size', { simple: true }), 1024);
    plainAgain.close();
    const noKey = cli(['verify', p('cli-plain.db'), '--page-size', '1024']);
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /--page-size applies to an encrypted database/);
  });
});
