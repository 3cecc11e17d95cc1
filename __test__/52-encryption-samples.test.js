'use strict';
// Every sample in testdata/sqlcipher4 (written by SQLCipher 4.9.0 / 4.12.0 and
// SQLite3 Multiple Ciphers 2.6.1) opens with the raw key from KEY.hex and shows exactly the
// content its README describes: BASE, BASE after rolling back a hot journal, or the WAL
// content. Location: env CIPHERLITE_TESTDATA, else the repository's copy testdata/sqlcipher4.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  Database,
  PAGE,
  MC_CLEAR_HEADER,
  MC_CLEAR_HEADER_WAL,
  BASE_CONTENT,
  tempDir,
  removeDir,
  integrity,
  testdataDir,
  sampleKey,
  copySample,
  pageHmacOk,
  newKey,
  throwsSqlite,
} = require('./_helpers-encryption');

let root;
let n = 0;
before(() => {
  root = tempDir('samples');
});
after(() => {
  removeDir(root);
});

function freshCopy(name) {
  const d = path.join(root, `c${++n}`);
  fs.mkdirSync(d);
  return copySample(name, d);
}

/** Every row of t, and w if present, for exact comparison. */
function rowsOf(db) {
  const hasW = db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'w'").pluck().get() === 1;
  return {
    t: db.prepare('SELECT a, b FROM t ORDER BY rowid').raw().all(),
    w: hasW ? db.prepare('SELECT x FROM w').pluck().all() : undefined,
    tables: db.prepare("SELECT type || ':' || name FROM sqlite_master ORDER BY name").pluck().all(),
  };
}

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const BASE_ROWS = { t: range(1, 100).map((a) => [a, `row-${a}`]), w: undefined, tables: ['table:t'] };
const WAL_ROWS = {
  t: range(1, 110).map((a) => [a, a <= 10 ? `wal-${a}` : `row-${a}`]),
  w: ['hello-wal'],
  tables: ['table:t', 'table:w'],
};

const SAMPLES = [
  // name, sqlcipher page 1?, kind
  ['sqlcipher-4.9.0-cli.sqlite', true, 'base'],
  ['sqlite3mc-2.6.1-legacy4.sqlite', true, 'base'],
  ['sqlite3mc-2.6.1-legacy0.sqlite', false, 'base'],
  ['hot-sqlcipher-4.12.0.sqlite', true, 'hot'],
  ['hot-sqlite3mc-2.6.1-legacy4.sqlite', true, 'hot'],
  ['hot-sqlite3mc-2.6.1-legacy0.sqlite', false, 'hot'],
  ['wal-sqlcipher-4.12.0.sqlite', true, 'wal'],
  ['wal-sqlite3mc-2.6.1-legacy0.sqlite', false, 'wal'],
];

describe('SQLCipher 4 / SQLite3MC sample files', () => {
  it('the testdata directory has exactly the samples this file knows', () => {
    // The passphrase-* files are 85-cipher-settings' (another key, other page sizes), the
    // aegis* files 88-aegis' and 88b-aegis-algorithms' (another format).
    const names = fs
      .readdirSync(testdataDir())
      .filter((f) => /\.sqlite$/.test(f) && !f.startsWith('passphrase-') && !f.startsWith('aegis'))
      .sort();
    assert.deepEqual(names, SAMPLES.map(([name]) => name).sort());
    assert.equal(sampleKey().length, 32);
  });

  for (const [name, sqlcipherPage1, kind] of SAMPLES) {
    it(`${name} (${kind})`, () => {
      const f = freshCopy(name);
      const key = sampleKey();
      const original = fs.readFileSync(f);
      // Check our reading of the layout against the file itself.
      assert.ok(pageHmacOk(original, 1, key, sqlcipherPage1 ? 16 : 24), 'page-1 layout as documented');
      if (!sqlcipherPage1)
        assert.deepEqual(original.subarray(16, 24), kind === 'wal' ? MC_CLEAR_HEADER_WAL : MC_CLEAR_HEADER);
      if (kind === 'hot') assert.equal(original.length, 7 * PAGE);

      // SQLite3MC checksums its journals over the plaintext: rolled back only with the
      // owner's explicit option (57 shows the refusal without it).
      const mcJournal = kind === 'hot' && name.startsWith('hot-sqlite3mc');
      const db = new Database(f, mcJournal ? { key, acceptPlaintextJournalChecksums: true } : { key });
      assert.deepEqual(rowsOf(db), kind === 'wal' ? WAL_ROWS : BASE_ROWS);
      assert.equal(integrity(db), 'ok');
      assert.equal(db.pragma('page_size', { simple: true }), 4096);
      assert.equal(db.pragma('journal_mode', { simple: true }), kind === 'wal' ? 'wal' : 'delete');
      if (kind === 'wal') {
        assert.equal(db.prepare('SELECT sum(a) FROM t').pluck().get(), 6105);
        assert.equal(db.pragma('page_count', { simple: true }), 3);
      } else {
        assert.equal(db.pragma('page_count', { simple: true }), 2);
      }
      if (kind === 'hot') {
        // Rolled back: journal deleted, file truncated to the original 2 pages.
        assert.ok(!fs.existsSync(`${f}-journal`), 'the hot journal is deleted');
        assert.equal(fs.statSync(f).size, 2 * PAGE);
      }
      // Writes keep the file's own layout and salt.
      db.exec("CREATE TABLE added(v); INSERT INTO added VALUES ('by-cipherlite')");
      db.close();
      assert.ok(!fs.existsSync(`${f}-journal`));
      assert.ok(!fs.existsSync(`${f}-wal`), 'the WAL is checkpointed and removed on close');
      const after = fs.readFileSync(f);
      assert.deepEqual(after.subarray(0, 16), original.subarray(0, 16), 'same salt');
      assert.ok(pageHmacOk(after, 1, key, sqlcipherPage1 ? 16 : 24), 'same page-1 layout');
      if (!sqlcipherPage1)
        assert.deepEqual(after.subarray(16, 24), kind === 'wal' ? MC_CLEAR_HEADER_WAL : MC_CLEAR_HEADER);

      const again = new Database(f, { key, readonly: true });
      const expected = kind === 'wal' ? WAL_ROWS : BASE_ROWS;
      assert.deepEqual(rowsOf(again), { ...expected, tables: [...expected.tables, 'table:added'].sort() });
      assert.equal(again.prepare('SELECT v FROM added').pluck().get(), 'by-cipherlite');
      assert.equal(integrity(again), 'ok');
      again.close();
    });
  }

  it('the hot journals roll back to BASE whatever engine wrote them (no leaked CHANGED- rows)', () => {
    for (const name of [
      'hot-sqlcipher-4.12.0.sqlite',
      'hot-sqlite3mc-2.6.1-legacy4.sqlite',
      'hot-sqlite3mc-2.6.1-legacy0.sqlite',
    ]) {
      const acceptPlaintextJournalChecksums = name.startsWith('hot-sqlite3mc');
      const db = new Database(freshCopy(name), { key: sampleKey(), acceptPlaintextJournalChecksums });
      assert.equal(db.prepare("SELECT count(*) FROM t WHERE b LIKE 'CHANGED-%'").pluck().get(), 0, name);
      assert.deepEqual(
        db.prepare('SELECT count(*) AS n, sum(a) AS s FROM t').get(),
        { n: BASE_CONTENT.count, s: BASE_CONTENT.sum },
        name,
      );
      db.close();
    }
  });

  it('a sample opened with another key is refused and left untouched', () => {
    const f = freshCopy('sqlcipher-4.9.0-cli.sqlite');
    const before = fs.readFileSync(f);
    throwsSqlite(() => new Database(f, { key: newKey() }), 'SQLITE_NOTADB');
    assert.deepEqual(fs.readFileSync(f), before);
  });
});
