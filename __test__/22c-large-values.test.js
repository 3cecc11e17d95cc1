'use strict';
// Large values (issue 10 items 8 and 9):
// - a row whose TEXT values together exceed V8's maximum string length (2^29 - 24
//   characters) comes back in get(), raw().all() and iterate(), as in better-sqlite3:
//   large values travel as JS strings of their own, not inside one batch string;
// - after a large read, the buffer results are written into goes back to its initial
//   size instead of keeping the peak for the connection's lifetime.
// The first tests need about 1.1 GB of memory for a few seconds each (as much as
// better-sqlite3 needs for them); the tests of this file run one after the other.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const v8 = require('node:v8');
const vm = require('node:vm');
const { Database, isCipherlite } = require('./_module');

const V8_MAX_STRING_LENGTH = 2 ** 29 - 24;

/** A garbage collection, for the memory probes. */
function collectGarbage() {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  gc();
  gc();
}

describe('a row with more TEXT than one JS string can hold', () => {
  // Three values of about 179 million characters (NULs: SQLite allocates each value
  // once, at its size): 537,000,003 in all. Each read runs in a child process of its
  // own, so that the memory of one (about 1.1 GB at its peak, as with better-sqlite3)
  // is given back before the next.
  const LENGTHS = [179_000_000, 179_000_001, 179_000_002];
  const SQL = `SELECT ${LENGTHS.map((n, i) => `CAST(zeroblob(${n}) AS TEXT) AS ${'abc'[i]}`).join(', ')}`;
  const READS = {
    'get()': 'const r = db.prepare(SQL).get(); return [[r.a, r.b, r.c]];',
    'raw().all()': 'return db.prepare(SQL).raw().all();',
    'iterate()': 'return Array.from(db.prepare(SQL).iterate(), (r) => [r.a, r.b, r.c]);',
  };

  /** What the child reports per row and value: its type, length, and whether every
   * character checked (one every ten million, and the last) is NUL. */
  function readInChild(read) {
    const script = `
			const Database = require(process.argv[1]);
			const SQL = process.argv[2];
			const db = new Database(':memory:');
			let rows;
			try {
				rows = (() => { ${read} })();
			} catch (e) {
				process.stdout.write(JSON.stringify({ error: \`\${e.constructor.name}: \${e.message}\` }));
				process.exit(0);
			}
			const report = rows.map((values) => values.map((v) => {
				let nul = true;
				for (let k = 0; k < v.length; k += 9_999_991) nul = nul && v.charCodeAt(k) === 0;
				return { type: typeof v, length: v.length, nul: nul && v.charCodeAt(v.length - 1) === 0 };
			}));
			process.stdout.write(JSON.stringify({ rows: report }));
		`;
    const moduleUnderTest = process.env.CIPHERLITE_TEST_AGAINST || path.join(__dirname, '..');
    const child = spawnSync(process.execPath, ['-e', script, moduleUnderTest, SQL], {
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    });
    assert.equal(child.status, 0, child.stderr);
    return JSON.parse(child.stdout);
  }

  for (const [name, read] of Object.entries(READS)) {
    it(`comes back from ${name}`, () => {
      const result = readInChild(read);
      assert.deepEqual(result, { rows: [LENGTHS.map((length) => ({ type: 'string', length, nul: true }))] });
      assert.ok(
        LENGTHS[0] + LENGTHS[1] + LENGTHS[2] > V8_MAX_STRING_LENGTH,
        'the row is larger than the largest JS string',
      );
    });
  }
});

describe('large TEXT values next to small ones', () => {
  // Above the size from which a value travels as its own string (256 KiB), mixed with
  // small values, NULLs, numbers and BLOBs, in every row shape.
  const big = (n, fill) => fill.repeat(Math.ceil(n / fill.length)).slice(0, n);
  const VALUES = [
    [1, 'small', big(300_000, 'a'), null, Buffer.from([1, 2, 3])],
    [2, big(262_144, 'é😀x'), 'tiny', big(1_000_000, 'z'), Buffer.alloc(0)],
    [3, '', big(262_143, 'b'), 'not big', null],
    [4, big(500_000, '日本'), big(400_000, 'ü'), big(300_001, 'q'), Buffer.alloc(70_000, 7)],
  ];

  function withTable(fn) {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE t(id INTEGER, a TEXT, b TEXT, c TEXT, d BLOB)');
      const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?)');
      for (const v of VALUES) insert.run(...v);
      fn(db);
    } finally {
      db.close();
    }
  }

  const asObject = ([id, a, b, c, d]) => ({ id, a, b, c, d });

  it('all(), raw().all(), pluck().all(), expand().all(), get() and iterate() return every value', () =>
    withTable((db) => {
      const sql = 'SELECT id, a, b, c, d FROM t ORDER BY id';
      assert.deepEqual(db.prepare(sql).all(), VALUES.map(asObject));
      assert.deepEqual(db.prepare(sql).raw().all(), VALUES);
      assert.deepEqual(
        db.prepare('SELECT c FROM t ORDER BY id').pluck().all(),
        VALUES.map((v) => v[3]),
      );
      assert.deepEqual(
        db.prepare(sql).expand().all(),
        VALUES.map((v) => ({ t: asObject(v) })),
      );
      assert.deepEqual(Array.from(db.prepare(sql).iterate()), VALUES.map(asObject));
      for (const v of VALUES) {
        assert.deepEqual(db.prepare('SELECT id, a, b, c, d FROM t WHERE id = ?').get(v[0]), asObject(v));
      }
      // Many rows around large ones: batches end and resume correctly.
      const many = db
        .prepare(
          `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
			SELECT i, CASE WHEN i % 500 = 0 THEN (SELECT b FROM t WHERE id = 4) ELSE 'r' || i END AS s FROM n`,
        )
        .raw()
        .all();
      assert.equal(many.length, 2000);
      many.forEach(([i, s]) => assert.equal(s, i % 500 === 0 ? VALUES[3][2] : `r${i}`));
    }));
});

describe('the result buffer after a large read', { skip: !isCipherlite }, () => {
  const BLOB = 64 * 1024 * 1024;
  const scratchSize = (db) => db[Object.getOwnPropertySymbols(db)[0]].scratch().byteLength;

  for (const [name, read] of [
    ['get()', (s) => s.get().b],
    ['all()', (s) => s.all()[0].b],
    ['iterate()', (s) => Array.from(s.iterate())[0].b],
    ['pluck().all()', (s) => s.pluck().all()[0]],
  ]) {
    it(`${name} of a 64 MiB BLOB leaves no 64 MiB buffer behind`, () => {
      const db = new Database(':memory:');
      try {
        db.exec(`CREATE TABLE t(b BLOB); INSERT INTO t VALUES (zeroblob(${BLOB}))`);
        const initial = scratchSize(db);
        collectGarbage();
        const before = process.memoryUsage().arrayBuffers;
        let blob = read(db.prepare('SELECT b FROM t'));
        assert.equal(blob.length, BLOB);
        assert.equal(blob[BLOB - 1], 0);
        blob = null;
        assert.equal(scratchSize(db), initial, 'back to the initial size');
        collectGarbage();
        const grown = process.memoryUsage().arrayBuffers - before;
        assert.ok(grown < 8 * 1024 * 1024, `array buffers grew by ${grown} bytes`);
        // And it still works, growing again when needed.
        assert.equal(db.prepare('SELECT length(b) AS n FROM t').get().n, BLOB);
        assert.equal(db.prepare('SELECT b FROM t').get().b.length, BLOB);
      } finally {
        db.close();
      }
    });
  }
});
