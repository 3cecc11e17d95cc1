'use strict';
// No plaintext on disk. An encrypted database in its own directory gets canary strings,
// then everything that makes SQLite write auxiliary data: big sorts, temp tables and
// indexes, GROUP BY / DISTINCT temp b-trees, statement journals, VACUUM, WAL, a crash in
// the middle of a transaction. Every file in the directory — and every file created in
// os.tmpdir() meanwhile — is then scanned for the canary bytes. While a big sort is open,
// the process must not have any temporary file open either (SQLITE_TEMP_STORE=3).
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Database, newKey, tempDir, removeDir, integrity, crashChild } = require('./_helpers-encryption');

const CANARY = `CnRy${crypto.randomBytes(6).toString('hex')}`; // unique per run
const ROWS = 3000;

let dir;
let tmpBefore;
const key = newKey();

/** Every regular file under `p` (recursively, skipping what vanishes meanwhile). */
function filesUnder(p, out = []) {
  let st;
  try {
    st = fs.lstatSync(p);
  } catch {
    return out;
  }
  if (st.isFile()) out.push(p);
  else if (st.isDirectory()) {
    let names;
    try {
      names = fs.readdirSync(p);
    } catch {
      return out;
    }
    for (const name of names) filesUnder(path.join(p, name), out);
  }
  return out;
}

/** Files in `files` whose bytes contain the canary. */
function leaks(files) {
  const needle = Buffer.from(CANARY, 'utf8');
  return files.filter((f) => {
    try {
      return fs.readFileSync(f).includes(needle);
    } catch {
      return false; // vanished or unreadable (another test's file)
    }
  });
}

/** Files the process has open that look like SQLite temporary files (Linux /proc only). */
function openTempFiles() {
  if (!fs.existsSync('/proc/self/fd')) return [];
  const found = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    let target;
    try {
      target = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (!target.startsWith('/') || target.startsWith(dir) || target.startsWith('/memfd:') || target.startsWith('/dev/'))
      continue;
    // SQLite's unix temp files are named etilqs_* and unlinked as soon as they're open.
    if (/etilqs_|\(deleted\)$/.test(target)) found.push(target);
  }
  return found;
}

before(() => {
  tmpBefore = new Set(fs.readdirSync(os.tmpdir()));
  dir = tempDir('canary');
});
after(() => {
  removeDir(dir);
});

describe('no plaintext on disk', () => {
  const f = () => path.join(dir, 'canary.db');

  it('writes canary rows and runs sorts, temp b-trees, statement journals and VACUUM', () => {
    const db = new Database(f(), { key });
    db.pragma('cache_size = 20'); // small thresholds: everything that can spill, spills
    db.pragma('temp_store = FILE'); // ignored: temp files never reach the disk
    db.exec('CREATE TABLE big(id INTEGER PRIMARY KEY, v TEXT, g INTEGER, u TEXT UNIQUE)');
    const ins = db.prepare('INSERT INTO big(v, g, u) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let i = 0; i < ROWS; i++) {
        ins.run(`${CANARY}-v-${crypto.randomBytes(8).toString('hex')}-${'p'.repeat(120)}`, i % 97, `${CANARY}-u-${i}`);
      }
    })();

    // Big sort on a non-indexed column, checked while it is open: no temp file.
    const it = db.prepare('SELECT v FROM big ORDER BY v DESC').pluck().iterate();
    const first = it.next().value;
    assert.ok(first.startsWith(CANARY));
    assert.deepEqual(openTempFiles(), [], 'no temporary file open during a big sort');
    let count = 1;
    let prev = first;
    for (const v of it) {
      assert.ok(v <= prev);
      prev = v;
      count++;
    }
    assert.equal(count, ROWS);

    // GROUP BY / DISTINCT / ORDER BY with expressions: temp b-trees.
    assert.equal(db.prepare('SELECT count(*) FROM (SELECT g, group_concat(v) FROM big GROUP BY g)').pluck().get(), 97);
    assert.equal(db.prepare('SELECT count(DISTINCT substr(v, 1, 30)) FROM big').pluck().get(), ROWS);
    assert.equal(db.prepare('SELECT count(*) FROM (SELECT DISTINCT v || u FROM big)').pluck().get(), ROWS);

    // Temp tables and indexes.
    db.exec(`CREATE TEMP TABLE tt AS SELECT v, u FROM big; CREATE INDEX temp.tt_v ON tt(v)`);
    assert.equal(db.prepare('SELECT count(*) FROM tt WHERE v > ?').pluck().get(CANARY), ROWS);
    db.exec('CREATE INDEX big_v ON big(v)'); // index build: sorter
    db.exec('DROP INDEX big_v');

    // Statement journal: a multi-row UPDATE that fails on a UNIQUE constraint halfway,
    // inside a transaction, is rolled back alone.
    db.exec('BEGIN');
    db.exec(`UPDATE big SET v = '${CANARY}-txn-' || id WHERE id <= 10`);
    assert.throws(
      () => db.exec(`UPDATE big SET u = '${CANARY}-dup' WHERE id > 100`),
      (e) => e.code === 'SQLITE_CONSTRAINT_UNIQUE',
    );
    assert.equal(db.inTransaction, true);
    db.exec('COMMIT');
    assert.equal(db.prepare(`SELECT count(*) FROM big WHERE u = '${CANARY}-dup'`).pluck().get(), 0);
    assert.equal(db.prepare(`SELECT count(*) FROM big WHERE v LIKE '${CANARY}-txn-%'`).pluck().get(), 10);

    db.exec('DELETE FROM big WHERE id % 2 = 0');
    db.exec('VACUUM');
    assert.equal(db.prepare('SELECT count(*) FROM big').pluck().get(), ROWS / 2);
    assert.equal(integrity(db), 'ok');
    db.close();
    assert.deepEqual(leaks(filesUnder(dir)), []);
  });

  it('WAL mode: the WAL and the -shm hold no plaintext', () => {
    const db = new Database(f(), { key });
    assert.equal(db.pragma('journal_mode = wal', { simple: true }), 'wal');
    db.pragma('wal_autocheckpoint = 0');
    db.exec(`UPDATE big SET v = '${CANARY}-wal-' || id WHERE id % 5 = 1`);
    db.exec(`CREATE TEMP TABLE sorted AS SELECT v FROM big ORDER BY v`);
    assert.ok(fs.statSync(`${f()}-wal`).size > 4096);
    assert.deepEqual(leaks(filesUnder(dir)), [], 'while the WAL is live');
    db.pragma('journal_mode = delete');
    db.close();
    assert.deepEqual(leaks(filesUnder(dir)), []);
  });

  it('a crash in the middle of a transaction leaves no plaintext (hot journal, spilled pages)', async () => {
    const crashed = path.join(dir, 'crashed.db');
    await crashChild({
      file: crashed,
      key,
      layout: 'sqlcipher',
      journalMode: 'delete',
      committed: [
        `CREATE TABLE c(v); INSERT INTO c SELECT '${CANARY}-committed-' || hex(randomblob(200)) FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3)`,
        'INSERT INTO c SELECT v || v FROM c',
        'INSERT INTO c SELECT v || v FROM c',
        'INSERT INTO c SELECT v FROM c',
      ],
      uncommitted: [`UPDATE c SET v = '${CANARY}-uncommitted-' || v`, `INSERT INTO c SELECT v || '${CANARY}' FROM c`],
    });
    assert.ok(fs.statSync(`${crashed}-journal`).size > 0, 'the crash left a hot journal');
    assert.deepEqual(leaks(filesUnder(dir)), [], 'before recovery');
    const db = new Database(crashed, { key });
    assert.equal(db.prepare(`SELECT count(*) FROM c WHERE v LIKE '${CANARY}-committed-%'`).pluck().get(), 24);
    assert.equal(db.prepare("SELECT count(*) FROM c WHERE v LIKE '%uncommitted%'").pluck().get(), 0);
    db.close();
    assert.deepEqual(leaks(filesUnder(dir)), [], 'after recovery');
  });

  it('the canary check itself works: a plaintext database in the directory is caught', () => {
    const plain = path.join(dir, 'plain-control.db');
    const db = new Database(plain);
    db.prepare('CREATE TABLE x(v)').run();
    db.prepare('INSERT INTO x VALUES (?)').run(`${CANARY}-control`);
    db.close();
    assert.deepEqual(leaks(filesUnder(dir)), [plain]);
    fs.rmSync(plain);
  });

  it('no file created in os.tmpdir() during these tests holds the canary', () => {
    const created = fs
      .readdirSync(os.tmpdir())
      .filter((name) => !tmpBefore.has(name))
      .map((name) => path.join(os.tmpdir(), name))
      .filter((p) => p !== dir);
    const files = created
      .flatMap((p) => filesUnder(p))
      .filter((p) => {
        try {
          return fs.statSync(p).size < 64 * 1024 * 1024;
        } catch {
          return false;
        }
      });
    assert.deepEqual(leaks(files), []);
  });
});
