'use strict';
// Interop with the real engines: SQLCipher 4.12.0 (PyPI sqlcipher3-binary 0.6.0) and SQLite3
// Multiple Ciphers 2.6.1 (PyPI apsw-sqlite3mc 3.54.0.0), run by __test__/interop/engines.py
// with the Python of .venv-interop/ (made by `bash scripts/setup-interop.sh`; override with
// env CIPHERLITE_INTEROP_PYTHON). Without it this file FAILS: CI installs it.
//
// Two Python runs in all (each interpreter start costs):
//   1. the engines write files (rollback journal, WAL closed cleanly, WAL left behind by an
//      exit without closing);
//   cipherlite reads them, writes its own files (both layouts, both journal modes) and
//      modifies copies of the engines' files;
//   2. the engines read cipherlite's files, modify copies of them, and read the copies
//      cipherlite modified;
//   cipherlite reads what the engines modified.
// Who opens what (docs/sqlcipher4-format.md §4d): SQLCipher page 1 ('sqlcipher' layout) → SQLCipher and
// SQLite3MC legacy=4; SQLite3MC page 1 ('sqlite3mc', legacy=0) → SQLite3MC legacy=0 only:
// SQLCipher and legacy=4 refuse it (and legacy=0 refuses the SQLCipher layout).
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  Database,
  PAGE,
  MC_CLEAR_HEADER,
  MC_CLEAR_HEADER_WAL,
  newKey,
  tempDir,
  removeDir,
  integrity,
  pageHmacOk,
  runInteropEngines,
} = require('./_helpers-encryption');

const key = newKey();
let dir;
before(() => {
  dir = tempDir('interop');
});
after(() => {
  removeDir(dir);
});
const p = (name) => path.join(dir, name);

/** Runs engines.py with these jobs; returns { engines, results }. */
const runEngines = (jobs, exitWithoutClosing = false) => runInteropEngines(key, jobs, exitWithoutClosing);

// ---- content ------------------------------------------------------------------------------

const BASE = [
  'CREATE TABLE t(a INTEGER, b TEXT)',
  "INSERT INTO t(a, b) WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 100) SELECT x, 'row-' || x FROM s",
  'CREATE TABLE big(x BLOB)',
  'INSERT INTO big SELECT randomblob(2000) FROM t LIMIT 12',
];
const meta = (label) => ['CREATE TABLE meta(v TEXT)', `INSERT INTO meta VALUES ('${label}')`];
const MODIFY = (who) => [
  `INSERT INTO t VALUES (1000, 'by-${who}')`,
  `UPDATE t SET b = 'upd-${who}-' || a WHERE a <= 3`,
  'DELETE FROM t WHERE a BETWEEN 50 AND 59',
  'CREATE TABLE added(x BLOB)',
  'INSERT INTO added SELECT randomblob(3000) FROM t LIMIT 5',
];
const QUERIES = {
  t: 'SELECT a, b FROM t ORDER BY a',
  tables: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
  meta: 'SELECT v FROM meta',
  big: 'SELECT count(*), sum(length(x)) FROM big',
  integrity: 'PRAGMA integrity_check',
  mode: 'PRAGMA journal_mode',
};

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const baseRows = (mapB = (a) => `row-${a}`) => range(1, 100).map((a) => [a, mapB(a)]);
const modifiedRows = (who, mapB = (a) => `row-${a}`) => [
  ...range(1, 100)
    .filter((a) => a < 50 || a > 59)
    .map((a) => [a, a <= 3 ? `upd-${who}-${a}` : mapB(a)]),
  [1000, `by-${who}`],
];

/** What `QUERIES` gives for a file (as engines.py returns it: rows of lists). */
function expected({ label, rows, mode, added = false }) {
  return {
    t: rows,
    tables: (added ? ['added', 'big', 'meta', 't'] : ['big', 'meta', 't']).map((name) => [name]),
    meta: [[label]],
    big: [[12, 24000]],
    integrity: [['ok']],
    mode: [[mode]],
  };
}

/** The same queries run by cipherlite. */
function readWithCipherlite(file) {
  const db = new Database(file, { key, fileMustExist: true });
  try {
    const raw = (sql) => db.prepare(sql).raw().all();
    const out = {};
    for (const [name, sql] of Object.entries(QUERIES)) out[name] = name === 'integrity' ? [[integrity(db)]] : raw(sql);
    return out;
  } finally {
    db.close();
  }
}

function modifyWithCipherlite(file) {
  const db = new Database(file, { key, fileMustExist: true });
  for (const sql of MODIFY('cipherlite')) db.exec(sql);
  db.close();
}

function page1Layout(file) {
  const bytes = fs.readFileSync(file);
  if (pageHmacOk(bytes, 1, key, 16)) return 'sqlcipher';
  if (pageHmacOk(bytes, 1, key, 24)) return 'sqlite3mc';
  return 'none';
}

// ---- the scenario -------------------------------------------------------------------------

const ENGINES = ['sqlcipher', 'mc4', 'mc0'];
const ENGINE_LAYOUT = { sqlcipher: 'sqlcipher', mc4: 'sqlcipher', mc0: 'sqlite3mc' };
const engineFiles = []; // { file, engine, kind: delete|wal|walleft, label }
let phase1;
let phase2;

describe('interop with SQLCipher 4 and SQLite3 Multiple Ciphers', () => {
  it('the interop engines are installed (scripts/setup-interop.sh)', () => {
    const { engines } = runEngines([]);
    assert.match(engines.sqlcipher, /^4\./);
    assert.match(engines.sqlite3mc, /Multiple Ciphers 2\./);
  });

  it('SQLCipher and SQLite3MC (legacy 0 and 4) write files: rollback, WAL, WAL left behind', () => {
    const jobs = [];
    for (const engine of ENGINES) {
      for (const kind of ['delete', 'wal', 'walleft']) {
        const label = `${engine}-${kind}`;
        const file = p(`en-${label}.db`);
        const exec = [];
        if (kind !== 'delete') exec.push('PRAGMA journal_mode = WAL', 'PRAGMA wal_autocheckpoint = 0');
        exec.push(...BASE, ...meta(label));
        if (kind === 'walleft') exec.push("UPDATE t SET b = 'wal-' || a WHERE a <= 10");
        jobs.push({ id: label, engine, file, exec, keep_open: kind === 'walleft' });
        engineFiles.push({ file, engine, kind, label });
      }
    }
    phase1 = runEngines(jobs, true);
    assert.match(phase1.engines.sqlcipher, /^4\.12\.0/);
    assert.match(phase1.engines.sqlite3mc, /^SQLite3 Multiple Ciphers 2\.6\.1/);
    for (const job of jobs) assert.deepEqual(phase1.results[job.id], { ok: true, rows: {} }, job.id);
    for (const { file, engine, kind } of engineFiles) {
      assert.equal(page1Layout(file), ENGINE_LAYOUT[engine], `${engine} ${kind} page 1`);
      if (kind === 'walleft')
        assert.ok(fs.statSync(`${file}-wal`).size > 32 + 3 * (24 + PAGE), 'a WAL with the commits was left');
      else assert.ok(!fs.existsSync(`${file}-wal`));
    }
  });

  it('cipherlite reads every file they wrote: exact rows, integrity ok (WALs recovered)', () => {
    assert.ok(phase1, 'the engines did not write their files');
    for (const { file, engine, kind, label } of engineFiles) {
      // Keep a copy for cipherlite to modify (and the engines to read back).
      if (kind !== 'walleft') fs.copyFileSync(file, p(`clmod-${label}.db`));
      const rows = kind === 'walleft' ? baseRows((a) => (a <= 10 ? `wal-${a}` : `row-${a}`)) : baseRows();
      const got = readWithCipherlite(file);
      assert.deepEqual(got, expected({ label, rows, mode: kind === 'delete' ? 'delete' : 'wal' }), label);
      if (engine === 'mc0') {
        assert.deepEqual(
          fs.readFileSync(file).subarray(16, 24),
          kind === 'delete' ? MC_CLEAR_HEADER : MC_CLEAR_HEADER_WAL,
        );
      }
    }
  });

  it('cipherlite writes both layouts in both journal modes and modifies copies of their files', () => {
    assert.ok(phase1, 'the engines did not write their files');
    for (const layout of ['sqlcipher', 'sqlite3mc']) {
      for (const mode of ['delete', 'wal']) {
        const label = `cipherlite-${layout}-${mode}`;
        const f = p(`cl-${layout}-${mode}.db`);
        const db = new Database(f, { key, cipherLayout: layout });
        if (mode === 'wal') assert.equal(db.pragma('journal_mode = wal', { simple: true }), 'wal');
        for (const sql of [...BASE, ...meta(label)]) db.exec(sql);
        db.close();
        assert.ok(!fs.existsSync(`${f}-wal`), 'clean close: no WAL left');
        assert.equal(page1Layout(f), layout);
        for (const engine of ENGINES) fs.copyFileSync(f, p(`mod-${engine}-${layout}-${mode}.db`));
      }
    }
    for (const { engine, kind, label } of engineFiles) {
      if (kind === 'walleft') continue;
      const f = p(`clmod-${label}.db`);
      modifyWithCipherlite(f);
      assert.equal(page1Layout(f), ENGINE_LAYOUT[engine], "cipherlite keeps the file's page-1 layout");
    }
  });

  it("the engines read cipherlite's files and copies it modified, and modify copies of its files", () => {
    assert.ok(phase1, 'the engines did not write their files');
    const jobs = [];
    for (const layout of ['sqlcipher', 'sqlite3mc']) {
      for (const mode of ['delete', 'wal']) {
        for (const engine of ENGINES) {
          jobs.push({
            id: `read:${engine}:${layout}-${mode}`,
            engine,
            file: p(`cl-${layout}-${mode}.db`),
            queries: QUERIES,
          });
          if (ENGINE_LAYOUT[engine] === layout) {
            jobs.push({
              id: `mod:${engine}:${layout}-${mode}`,
              engine,
              file: p(`mod-${engine}-${layout}-${mode}.db`),
              exec: MODIFY(engine),
            });
          }
        }
      }
    }
    for (const { engine, kind, label } of engineFiles) {
      if (kind !== 'walleft')
        jobs.push({ id: `back:${label}`, engine, file: p(`clmod-${label}.db`), queries: QUERIES });
    }
    phase2 = runEngines(jobs);
  });

  it("SQLCipher and SQLite3MC legacy=4 read the 'sqlcipher' layout exactly; legacy=0 refuses it", () => {
    assert.ok(phase2, 'the engines did not run');
    for (const mode of ['delete', 'wal']) {
      const want = expected({ label: `cipherlite-sqlcipher-${mode}`, rows: baseRows(), mode });
      assert.deepEqual(
        phase2.results[`read:sqlcipher:sqlcipher-${mode}`],
        { ok: true, rows: want },
        `SQLCipher, ${mode}`,
      );
      assert.deepEqual(
        phase2.results[`read:mc4:sqlcipher-${mode}`],
        { ok: true, rows: want },
        `SQLite3MC legacy=4, ${mode}`,
      );
      const refused = phase2.results[`read:mc0:sqlcipher-${mode}`];
      assert.equal(refused.ok, false, 'SQLite3MC legacy=0 cannot open the SQLCipher page 1');
      assert.match(refused.error, /not a database/i);
    }
  });

  it("SQLite3MC legacy=0 reads the 'sqlite3mc' layout exactly; SQLCipher and legacy=4 refuse it", () => {
    assert.ok(phase2, 'the engines did not run');
    for (const mode of ['delete', 'wal']) {
      const want = expected({ label: `cipherlite-sqlite3mc-${mode}`, rows: baseRows(), mode });
      assert.deepEqual(
        phase2.results[`read:mc0:sqlite3mc-${mode}`],
        { ok: true, rows: want },
        `SQLite3MC legacy=0, ${mode}`,
      );
      for (const engine of ['sqlcipher', 'mc4']) {
        const refused = phase2.results[`read:${engine}:sqlite3mc-${mode}`];
        assert.equal(
          refused.ok,
          false,
          `${engine} must refuse the SQLite3MC legacy=0 page 1 (docs/sqlcipher4-format.md §4d)`,
        );
        assert.match(refused.error, /not a database/i);
      }
    }
  });

  it('the engines read their own files after cipherlite modified them', () => {
    assert.ok(phase2, 'the engines did not run');
    for (const { kind, label } of engineFiles) {
      if (kind === 'walleft') continue;
      const want = expected({ label, rows: modifiedRows('cipherlite'), mode: kind, added: true });
      assert.deepEqual(phase2.results[`back:${label}`], { ok: true, rows: want }, label);
    }
  });

  it('cipherlite reads what the engines modified in its files', () => {
    assert.ok(phase2, 'the engines did not run');
    for (const layout of ['sqlcipher', 'sqlite3mc']) {
      for (const mode of ['delete', 'wal']) {
        for (const engine of ENGINES.filter((e) => ENGINE_LAYOUT[e] === layout)) {
          assert.deepEqual(
            phase2.results[`mod:${engine}:${layout}-${mode}`],
            { ok: true, rows: {} },
            `${engine} modified`,
          );
          const f = p(`mod-${engine}-${layout}-${mode}.db`);
          assert.ok(!fs.existsSync(`${f}-wal`));
          assert.equal(page1Layout(f), layout);
          const label = `cipherlite-${layout}-${mode}`;
          assert.deepEqual(
            readWithCipherlite(f),
            expected({ label, rows: modifiedRows(engine), mode, added: true }),
            `${engine}, ${layout}, ${mode}`,
          );
        }
      }
    }
  });
});
