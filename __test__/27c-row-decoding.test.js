'use strict';
// Rows as users see them, through every path of the row decoder: wide rows, a column whose
// type changes from row to row, BigInts, the four row shapes, reads that span several
// native batches (cipherlite cuts them by text and by encoded size), statements of different
// widths one after the other, a query run from inside another one's stepping, and calls
// with many parameters. Runs against better-sqlite3 too (CIPHERLITE_TEST_AGAINST): every
// expectation is computed here, not read back from the driver.
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { memdb } = require('./_helpers-stmt');

/** The value SQLite gives for cell (row r, column c) of the `mixed` table below. */
function mixedValue(r, c) {
  switch ((r + c) % 7) {
    case 0:
      return r * 1000 + c; // INTEGER
    case 1:
      return r + c / 8; // REAL
    case 2:
      return `t${r}-${c}`; // ASCII TEXT
    case 3:
      return null;
    case 4:
      return Buffer.from([r & 0xff, c & 0xff, 0]); // BLOB
    case 5:
      return `é${r}😀${c}`; // non-ASCII TEXT (a surrogate pair inside)
    default:
      return ''; // empty TEXT
  }
}

describe('row decoding', () => {
  let db;
  beforeEach(() => {
    db = memdb();
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  /** Creates `mixed(c0 … c{width-1})` with `rows` rows of mixedValue cells. */
  function mixedTable(width, rows) {
    const columns = Array.from({ length: width }, (_, c) => `c${c}`);
    db.exec(`CREATE TABLE mixed (${columns.join(', ')})`);
    const insert = db.prepare(`INSERT INTO mixed VALUES (${columns.map(() => '?').join(', ')})`);
    db.transaction(() => {
      // INTEGER cells are bound as BigInts: a JS number binds as a REAL.
      for (let r = 0; r < rows; r++)
        insert.run(columns.map((_, c) => ((r + c) % 7 === 0 ? BigInt(mixedValue(r, c)) : mixedValue(r, c))));
    })();
    return columns;
  }

  function expectedRow(columns, r) {
    const row = {};
    columns.forEach((name, c) => {
      row[name] = mixedValue(r, c);
    });
    return row;
  }

  it('a wide row of every type, with types changing from row to row in each column', () => {
    const columns = mixedTable(120, 30);
    const expected = Array.from({ length: 30 }, (_, r) => expectedRow(columns, r));
    const all = db.prepare('SELECT * FROM mixed ORDER BY rowid');
    assert.deepStrictEqual(all.all(), expected);
    assert.deepStrictEqual([...all.iterate()], expected);
    const one = db.prepare('SELECT * FROM mixed WHERE rowid = ?');
    for (let r = 0; r < 30; r++) assert.deepStrictEqual(one.get(r + 1), expected[r]);
    assert.deepStrictEqual(
      all.raw().all(),
      expected.map((row) => Object.values(row)),
    );
    assert.deepStrictEqual(one.raw().get(5), Object.values(expected[4]));
    assert.deepStrictEqual(
      all.pluck().all(),
      expected.map((row) => row.c0),
    );
    assert.deepStrictEqual(one.pluck().get(3), expected[2].c0);
    assert.deepStrictEqual(
      all.expand().all(),
      expected.map((row) => ({ mixed: row })),
    );
    assert.deepStrictEqual(one.expand().get(7), { mixed: expected[6] });
    // BLOBs are Buffers each with their own memory.
    const blobs = db.prepare('SELECT c4 FROM mixed WHERE rowid = 1').pluck();
    assert.equal(blobs.get().buffer === blobs.get().buffer, false);
  });

  it('safeIntegers: every INTEGER a BigInt, in every shape, the other types unchanged', () => {
    const columns = mixedTable(9, 20);
    const expected = Array.from({ length: 20 }, (_, r) => {
      const row = {};
      columns.forEach((name, c) => {
        const v = mixedValue(r, c);
        // The INTEGER cells ((r + c) % 7 === 0); a REAL that happens to be whole stays a number.
        row[name] = (r + c) % 7 === 0 ? BigInt(v) : v;
      });
      return row;
    });
    const stmt = db.prepare('SELECT * FROM mixed ORDER BY rowid').safeIntegers();
    assert.deepStrictEqual(stmt.all(), expected);
    assert.deepStrictEqual([...stmt.iterate()], expected);
    assert.deepStrictEqual(
      stmt.raw().all(),
      expected.map((row) => Object.values(row)),
    );
    assert.deepStrictEqual(db.prepare('SELECT * FROM mixed WHERE rowid = 8').safeIntegers().get(), expected[7]);
    // Around the int32 range (cipherlite sends INTEGERs that fit as int32s) and past it.
    const edges = db.prepare(
      'SELECT 2147483647 AS a, 2147483648 AS b, -2147483648 AS c, -2147483649 AS d, 0 AS e, -1 AS f',
    );
    assert.deepStrictEqual(edges.get(), { a: 2147483647, b: 2147483648, c: -2147483648, d: -2147483649, e: 0, f: -1 });
    assert.deepStrictEqual(edges.raw().all(), [[2147483647, 2147483648, -2147483648, -2147483649, 0, -1]]);
    assert.deepStrictEqual(edges.raw(false).safeIntegers().get(), {
      a: 2147483647n,
      b: 2147483648n,
      c: -2147483648n,
      d: -2147483649n,
      e: 0n,
      f: -1n,
    });
    assert.ok(Object.is(db.prepare('SELECT -0.0 AS z').pluck().get(), -0), 'a REAL -0 stays -0');
    // Past 2^53: exact as a BigInt, rounded as a number.
    const huge = db.prepare('SELECT 9007199254740993 AS v, -9223372036854775808 AS w');
    assert.deepStrictEqual(huge.safeIntegers().get(), { v: 9007199254740993n, w: -9223372036854775808n });
    assert.deepStrictEqual(huge.safeIntegers(false).get(), { v: 9007199254740992, w: -9223372036854775808 });
  });

  it('reads larger than one batch: every row, in order, by text and by number of cells', () => {
    // ~1.3 MB of text in 6,000 rows (cipherlite cuts batches at 48 KiB of text), then
    // 60,000 rows of four numbers (cut at 512 KiB encoded); now and then a non-ASCII value,
    // Latin-1 or with characters past U+00FF (which cipherlite sends in a second string).
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, x REAL)');
    const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
    const text = (i) => {
      if (i % 997 === 0) return `ü${i}`.padEnd(220, 'ß'); // Latin-1, not ASCII
      if (i % 991 === 0) return `Łódź ${i} 😀`.padEnd(220, 'ą'); // past U+00FF
      return `${i}`.padEnd(220, 'abcdefgh');
    };
    db.transaction(() => {
      for (let i = 1; i <= 6000; i++) insert.run(i, text(i), i / 4);
    })();
    const expected = Array.from({ length: 6000 }, (_, k) => ({ id: k + 1, s: text(k + 1), x: (k + 1) / 4 }));
    const stmt = db.prepare('SELECT id, s, x FROM t ORDER BY id');
    const rows = stmt.all();
    assert.equal(rows.length, 6000);
    assert.deepStrictEqual(rows, expected);
    assert.deepStrictEqual([...stmt.iterate()], expected);
    assert.deepStrictEqual(
      stmt.raw().all(),
      expected.map((r) => [r.id, r.s, r.x]),
    );

    const numbers = db.prepare(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 60000)
			SELECT i, i * 2 AS d, i / 3.0 AS q, -i AS n FROM c`);
    const got = numbers.all();
    assert.equal(got.length, 60000);
    for (let k = 0; k < 60000; k += 1) {
      const i = k + 1;
      const row = got[k];
      if (row.i !== i || row.d !== i * 2 || row.q !== i / 3 || row.n !== -i) {
        assert.fail(`row ${k}: ${JSON.stringify(row)}`);
      }
    }
    let count = 0;
    let sum = 0n;
    for (const row of numbers.safeIntegers().iterate()) {
      count++;
      sum += row.i;
    }
    assert.equal(count, 60000);
    assert.equal(sum, (60000n * 60001n) / 2n);
  });

  it('ASCII, Latin-1, wider TEXT and values too large to share a string, in one row and across rows', () => {
    const big = 'B'.repeat(300 * 1024);
    const bigWide = `${'ę'.repeat(150 * 1024)}😀`;
    const row = { a: 'plain', b: 'Zoë Müller ÿ', c: 'Søren Łukasz 😀', d: big, e: '', f: 'ñ', g: bigWide, h: '\u0100' };
    const sql = 'SELECT ? AS a, ? AS b, ? AS c, ? AS d, ? AS e, ? AS f, ? AS g, ? AS h';
    const stmt = db.prepare(sql);
    const values = Object.values(row);
    assert.deepStrictEqual(stmt.get(values), row);
    assert.deepStrictEqual(stmt.all(values), [row]);
    assert.deepStrictEqual(stmt.raw().get(values), values);
    // Wide text only in later rows, Latin-1 only in earlier ones, both between.
    const rows = db
      .prepare(
        `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 500)
			SELECT i, CASE WHEN i > 300 THEN 'ź' || i ELSE 'é' || i END AS s, 'x' || i AS t FROM c`,
      )
      .all();
    assert.deepStrictEqual(
      rows,
      Array.from({ length: 500 }, (_, k) => ({ i: k + 1, s: `${k + 1 > 300 ? 'ź' : 'é'}${k + 1}`, t: `x${k + 1}` })),
    );
    const iterated = [...db.prepare("SELECT 'ā' AS w, 'b' AS n UNION ALL SELECT 'c', 'ḋ'").iterate()];
    assert.deepStrictEqual(iterated, [
      { w: 'ā', n: 'b' },
      { w: 'c', n: 'ḋ' },
    ]);
  });

  it('statements of different widths and shapes one after the other', () => {
    mixedTable(12, 10);
    const wide = db.prepare('SELECT * FROM mixed ORDER BY rowid');
    const narrow = db.prepare('SELECT c2 FROM mixed ORDER BY rowid');
    const pluck = db.prepare('SELECT c5, c6, c7 FROM mixed ORDER BY rowid').pluck();
    const columns = Array.from({ length: 12 }, (_, c) => `c${c}`);
    for (let round = 0; round < 3; round++) {
      assert.deepStrictEqual(
        wide.all(),
        Array.from({ length: 10 }, (_, r) => expectedRow(columns, r)),
      );
      assert.deepStrictEqual(
        narrow.all(),
        Array.from({ length: 10 }, (_, r) => ({ c2: mixedValue(r, 2) })),
      );
      assert.deepStrictEqual(
        pluck.all(),
        Array.from({ length: 10 }, (_, r) => mixedValue(r, 5)),
      );
      assert.deepStrictEqual(narrow.get(), { c2: mixedValue(0, 2) });
      assert.deepStrictEqual(
        wide.raw(round === 1).get(),
        round === 1 ? Object.values(expectedRow(columns, 0)) : expectedRow(columns, 0),
      );
      wide.raw(false);
    }
  });

  it('a query run on another connection while this one steps (from a user function)', () => {
    const other = memdb();
    try {
      other.exec(
        "CREATE TABLE o (k INTEGER PRIMARY KEY, v TEXT); INSERT INTO o VALUES (1, 'één'), (2, 'two'), (3, 'drei')",
      );
      const lookup = other.prepare('SELECT v, k * 10 AS k10 FROM o WHERE k = ?');
      const all = other.prepare('SELECT * FROM o ORDER BY k');
      db.function('other_v', (k) => {
        const row = lookup.get(k);
        return `${row.v}:${row.k10}:${all.all().length}`;
      });
      const rows = db
        .prepare(
          `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300)
				SELECT i, 'outer-' || i AS s, other_v(1 + i % 3) AS o FROM c`,
        )
        .all();
      const names = ['één', 'two', 'drei'];
      assert.deepStrictEqual(
        rows,
        Array.from({ length: 300 }, (_, k) => {
          const i = k + 1;
          const key = 1 + (i % 3);
          return { i, s: `outer-${i}`, o: `${names[key - 1]}:${key * 10}:3` };
        }),
      );
    } finally {
      other.close();
    }
  });

  it('many parameters, positional and named, bound in one call', () => {
    const n = 40;
    const positional = db.prepare(`SELECT ${Array.from({ length: n }, (_, i) => `? AS p${i}`).join(', ')}`);
    const values = Array.from(
      { length: n },
      (_, i) => [i, i + 0.5, `s${i}`, null, Buffer.from([i]), BigInt(i) * 3n][i % 6],
    );
    const expected = {};
    values.forEach((v, i) => {
      expected[`p${i}`] = typeof v === 'bigint' ? Number(v) : v;
    });
    assert.deepStrictEqual(positional.get(...values), expected);
    assert.deepStrictEqual(positional.get(values), expected);
    assert.deepStrictEqual(positional.get(...values.slice(0, 17), values.slice(17)), expected);
    assert.deepStrictEqual(positional.all(...values), [expected]);
    const named = db.prepare(`SELECT ${Array.from({ length: n }, (_, i) => `@n${i} AS p${i}`).join(', ')}`);
    const object = {};
    values.forEach((v, i) => {
      object[`n${i}`] = v;
    });
    assert.deepStrictEqual(named.get(object), expected);
    assert.throws(() => positional.get(...values.slice(1)), {
      name: 'RangeError',
      message: 'Too few parameter values were provided',
    });
    assert.throws(() => positional.get(...values, 1), {
      name: 'RangeError',
      message: 'Too many parameter values were provided',
    });
  });
});
