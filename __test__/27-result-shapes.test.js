'use strict';
// Result-shape edge cases (docs/better-sqlite3-behaviour.md §6 flat rows, §10.7, §10.8, §5.16 re-preparation)
// that an implementation building rows from a column buffer could get wrong.
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { isCipherlite } = require('./_module');
const { memdb, throwsSqliteError } = require('./_helpers-stmt');

// better-sqlite3 builds flat rows with v8::Object::New(proto, names, values) when compiled for
// Node >= 22 (NODE_MODULE_VERSION >= 127): a "__proto__" column becomes an own data property.
// Built for older Node it assigned with Object::Set, which runs the __proto__ setter instead.
// cipherlite must always give the own-property behaviour.
const LEGACY_PROTO_SETTER = !isCipherlite && Number(process.versions.modules) < 127;

describe('Result shapes', () => {
  let db;
  beforeEach(() => {
    db = memdb();
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  // ---- column names -------------------------------------------------------------------------

  it('6 duplicate column names: the last value wins, at the position of the first occurrence', () => {
    const sql = 'SELECT 1 AS a, 2 AS b, 3 AS a';
    for (const row of [db.prepare(sql).get(), db.prepare(sql).all()[0], [...db.prepare(sql).iterate()][0]]) {
      assert.deepStrictEqual(row, { a: 3, b: 2 });
      assert.deepEqual(Object.keys(row), ['a', 'b']);
    }
    db.exec(
      "CREATE TABLE t (id, v); CREATE TABLE u (id, w); INSERT INTO t VALUES (1, 'tv'); INSERT INTO u VALUES (2, 'uw')",
    );
    assert.deepStrictEqual(db.prepare('SELECT t.id, u.id, t.v FROM t, u').get(), { id: 2, v: 'tv' });
    assert.deepStrictEqual(db.prepare('SELECT * FROM t, u').get(), { id: 2, v: 'tv', w: 'uw' });
    assert.deepStrictEqual(db.prepare('SELECT t.id, u.id, t.v FROM t, u').raw().get(), [1, 2, 'tv']);
  });

  it('6 duplicate names with different value types: the last one wins whatever its type', () => {
    const rows = db.prepare("SELECT x'01' AS a, NULL AS a UNION ALL SELECT 'text', 5").all();
    assert.deepStrictEqual(rows, [{ a: null }, { a: 5 }]);
  });

  it("6 a column named __proto__ becomes an own property and never changes the row's prototype", () => {
    const sqls = [
      'SELECT 1 AS __proto__, 2 AS b',
      "SELECT x'01' AS __proto__, 2 AS b",
      'SELECT NULL AS __proto__, 2 AS b',
    ];
    const values = [1, Buffer.from([1]), null];
    for (let k = 0; k < sqls.length; k++) {
      const rows = [db.prepare(sqls[k]).get(), db.prepare(sqls[k]).all()[0], [...db.prepare(sqls[k]).iterate()][0]];
      for (const row of rows) {
        if (LEGACY_PROTO_SETTER) {
          // better-sqlite3 built for Node < 22: the setter ran (documented, not wanted)
          assert.ok(!Object.prototype.hasOwnProperty.call(row, '__proto__'));
          assert.deepEqual(Object.keys(row), ['b']);
          continue;
        }
        assert.equal(Object.getPrototypeOf(row), Object.prototype);
        assert.ok(Object.prototype.hasOwnProperty.call(row, '__proto__'));
        assert.deepEqual(Object.keys(row), ['__proto__', 'b']);
        assert.deepStrictEqual(Object.getOwnPropertyDescriptor(row, '__proto__'), {
          value: values[k],
          writable: true,
          enumerable: true,
          configurable: true,
        });
        assert.equal(row.b, 2);
      }
    }
    // raw mode is unaffected either way
    assert.deepStrictEqual(db.prepare("SELECT x'01' AS __proto__, 2 AS b").raw().get(), [Buffer.from([1]), 2]);
  });

  it('6 column names that are awkward as JS source or object keys are kept verbatim', () => {
    const sql = `SELECT 1 AS "a'b", 2 AS "c""d", 3 AS "e\\f", 4 AS "g
h", 5 AS "\${x}", 6 AS "constructor", 7 AS "hasOwnProperty", 8 AS "toString", 9 AS "-1", 10 AS "1.5",
		11 AS " ", 12 AS "ünï😀", 13 AS "length", 14 AS "4294967295", 15 AS "4294967294", 16 AS "007", 17 AS "", 18 AS "a\u2028b", 19 AS "});throw 1;({"`;
    const expected = {
      4294967294: 15,
      "a'b": 1,
      'c"d': 2,
      'e\\f': 3,
      'g\nh': 4,
      '${x}': 5,
      constructor: 6,
      hasOwnProperty: 7,
      toString: 8,
      '-1': 9,
      1.5: 10,
      ' ': 11,
      'ünï😀': 12,
      length: 13,
      4294967295: 14,
      '007': 16,
      '': 17,
      'a\u2028b': 18,
      '});throw 1;({': 19,
    };
    for (const row of [db.prepare(sql).get(), db.prepare(sql).all()[0], [...db.prepare(sql).iterate()][0]]) {
      assert.deepStrictEqual(row, expected);
      assert.deepEqual(Object.keys(row), Object.keys(expected));
      assert.equal(Object.getPrototypeOf(row), Object.prototype);
    }
  });

  it('6 integer-like column names are ordered as JS orders integer keys', () => {
    const row = db.prepare('SELECT 1 AS b, 2 AS "1", 3 AS "0", 4 AS a').get();
    assert.deepEqual(Object.keys(row), ['0', '1', 'b', 'a']);
    assert.deepStrictEqual(row, { 0: 3, 1: 2, b: 1, a: 4 });
  });

  it('6 unnamed expression columns are keyed by their SQL text', () => {
    assert.deepStrictEqual(db.prepare("SELECT 1+1, 'a' || 'b', x'00'").get(), {
      '1+1': 2,
      "'a' || 'b'": 'ab',
      "x'00'": Buffer.from([0]),
    });
  });

  it('6 a 500-column row', () => {
    const cols = Array.from({ length: 500 }, (_, i) => `${i} AS c${i}`).join(', ');
    const row = db.prepare(`SELECT ${cols}`).get();
    assert.equal(Object.keys(row).length, 500);
    for (let i = 0; i < 500; i++) assert.equal(row[`c${i}`], i);
    assert.equal(db.prepare(`SELECT ${cols}`).raw().get().length, 500);
  });

  it('6 rows are distinct plain objects', () => {
    const rows = db.prepare('SELECT 1 AS a UNION ALL SELECT 1').all();
    assert.notEqual(rows[0], rows[1]);
    rows[0].a = 5;
    assert.equal(rows[1].a, 1);
    assert.equal(Object.getPrototypeOf(rows[1]), Object.prototype);
    assert.ok(Object.isExtensible(rows[1]));
    const d = Object.getOwnPropertyDescriptor(rows[1], 'a');
    assert.deepStrictEqual(d, { value: 1, writable: true, enumerable: true, configurable: true });
  });

  // ---- empties ---------------------------------------------------------------------------------

  it('10.7 empty strings, NULL, empty BLOBs and zeroblob(0) stay distinct', () => {
    const sql = "SELECT '' AS e, NULL AS n, x'' AS b, zeroblob(0) AS z, zeroblob(3) AS z3, CAST('' AS BLOB) AS cb";
    const expected = {
      e: '',
      n: null,
      b: Buffer.alloc(0),
      z: Buffer.alloc(0),
      z3: Buffer.alloc(3),
      cb: Buffer.alloc(0),
    };
    assert.deepStrictEqual(db.prepare(sql).get(), expected);
    assert.deepStrictEqual(db.prepare(sql).all(), [expected]);
    assert.deepStrictEqual(db.prepare(sql).raw().get(), Object.values(expected));
    const row = db.prepare(sql).get();
    assert.ok(Buffer.isBuffer(row.b) && Buffer.isBuffer(row.z) && Buffer.isBuffer(row.cb));
    assert.equal(typeof row.e, 'string');
  });

  it('10.7 empty and NULL values interleaved over many rows', () => {
    db.exec('CREATE TABLE e (s, b)');
    const ins = db.prepare('INSERT INTO e VALUES (?, ?)');
    for (let i = 0; i < 50; i++)
      ins.run(i % 3 === 0 ? '' : i % 3 === 1 ? null : `s${i}`, i % 2 ? Buffer.alloc(0) : null);
    const rows = db.prepare('SELECT s, b FROM e ORDER BY rowid').all();
    for (let i = 0; i < 50; i++) {
      assert.deepStrictEqual(rows[i], {
        s: i % 3 === 0 ? '' : i % 3 === 1 ? null : `s${i}`,
        b: i % 2 ? Buffer.alloc(0) : null,
      });
    }
  });

  // ---- BLOBs --------------------------------------------------------------------------------------

  it('10.8 each BLOB is a fresh Buffer: get() twice, rows of one all(), and mutation isolation', () => {
    db.exec("CREATE TABLE b (v); INSERT INTO b VALUES (x'010203'), (x'010203')");
    const stmt = db.prepare('SELECT v FROM b ORDER BY rowid').pluck();
    const g1 = stmt.get();
    const g2 = stmt.get();
    assert.notEqual(g1, g2);
    g1[0] = 0xff;
    assert.deepStrictEqual(g2, Buffer.from([1, 2, 3]));
    const all = stmt.all();
    assert.notEqual(all[0], all[1]);
    all[0].fill(0);
    assert.deepStrictEqual(all[1], Buffer.from([1, 2, 3]));
    assert.deepStrictEqual(stmt.all(), [Buffer.from([1, 2, 3]), Buffer.from([1, 2, 3])], 'stored data untouched');
  });

  it('10.8 a BLOB Buffer owns exactly its bytes: it is not a window onto a larger shared memory block', () => {
    const rows = db.prepare("SELECT x'0102' AS b, 'text' AS t, x'' AS e UNION ALL SELECT x'0304', 'more', x''").all();
    for (const r of rows) {
      assert.equal(r.b.byteOffset, 0);
      assert.equal(r.b.buffer.byteLength, 2);
      assert.deepStrictEqual(new Uint8Array(r.b.buffer), new Uint8Array(r.b));
      assert.equal(r.e.length, 0);
      assert.equal(r.e.buffer.byteLength, 0);
    }
    assert.notEqual(rows[0].b.buffer, rows[1].b.buffer);
  });

  it("10.8 transferring one BLOB's ArrayBuffer leaves the other rows' BLOBs intact", () => {
    const rows = db.prepare("SELECT x'010203' AS b UNION ALL SELECT x'040506'").all();
    const ab = rows[0].b.buffer;
    const moved = structuredClone(ab, { transfer: [ab] });
    assert.deepStrictEqual([...new Uint8Array(moved)], [1, 2, 3]);
    assert.equal(rows[0].b.length, 0, 'the transferred one is detached');
    assert.deepStrictEqual([...rows[1].b], [4, 5, 6]);
  });

  it('10.8 a returned BLOB is never the bound Buffer, and neither affects the other', () => {
    db.exec('CREATE TABLE b (v)');
    const input = Buffer.from('abc');
    db.prepare('INSERT INTO b VALUES (?)').run(input);
    input.write('xyz');
    const out = db.prepare('SELECT v FROM b').pluck().get();
    assert.deepStrictEqual(out, Buffer.from('abc'));
    assert.notEqual(out, input);
    const echoed = db.prepare('SELECT ?').pluck().get(input);
    assert.notEqual(echoed, input);
    echoed.fill(0);
    assert.equal(input.toString(), 'xyz');
  });

  it('10.8 a 1 MB BLOB round-trips', () => {
    const big = Buffer.alloc(1 << 20);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
    const out = db.prepare('SELECT ? AS b, length(?) AS n').get(big, big);
    assert.equal(out.n, 1 << 20);
    assert.ok(out.b.equals(big));
  });

  // ---- TEXT -------------------------------------------------------------------------------------

  it('10.8 unicode text: astral characters and combining marks round-trip exactly', () => {
    const samples = [
      '😀𝄞𠜎',
      'e\u0301 (decomposed é)',
      'é (precomposed)',
      '👩🏽‍💻 ZWJ',
      'ü\u0308\u0308',
      'مرحبا עולם',
      '\uFEFFbom',
      '\u{10FFFF}',
    ];
    const stmt = db.prepare('SELECT ? AS s, length(?) AS chars, octet_length(?) AS bytes');
    for (const s of samples) {
      const row = stmt.get(s, s, s);
      assert.equal(row.s, s);
      assert.equal(row.bytes, Buffer.byteLength(s, 'utf8'));
      assert.equal(row.chars, [...s].length);
    }
    assert.deepStrictEqual(db.prepare("SELECT '😀' AS a, 'e\u0301' AS b").get(), { a: '😀', b: 'e\u0301' });
  });

  it('10.8 NUL characters inside TEXT are kept (the value is not cut at the NUL)', () => {
    const s = 'a\u0000b\u0000';
    const row = db.prepare('SELECT ? AS s, length(?) AS l, octet_length(?) AS o, typeof(?) AS t').get(s, s, s, s);
    assert.deepStrictEqual(row, { s, l: 1, o: 4, t: 'text' });
    assert.equal(row.s.length, 4);
    db.exec('CREATE TABLE z (s)');
    db.prepare('INSERT INTO z VALUES (?)').run('\u0000');
    assert.deepStrictEqual(db.prepare('SELECT s FROM z').get(), { s: '\u0000' });
    assert.deepStrictEqual(db.prepare("SELECT CAST(x'610062' AS TEXT) AS s").get(), { s: 'a\u0000b' });
  });

  it('10.8 invalid UTF-8 in TEXT is decoded with U+FFFD per maximal invalid subsequence', () => {
    const cases = {
      ff: '\uFFFD',
      ff41: '\uFFFDA',
      c3: '\uFFFD',
      c341: '\uFFFDA',
      e282: '\uFFFD',
      e28241: '\uFFFDA',
      eda080: '\uFFFD\uFFFD\uFFFD',
      f0908080: '\u{10000}',
      c0af: '\uFFFD\uFFFD',
      f4908080: '\uFFFD\uFFFD\uFFFD\uFFFD',
      f09f98: '\uFFFD',
    };
    for (const [hex, expected] of Object.entries(cases)) {
      assert.equal(db.prepare(`SELECT CAST(x'${hex}' AS TEXT)`).pluck().get(), expected, hex);
    }
  });

  it('10.5 a lone surrogate in a bound string: better-sqlite3 stores its 3-byte (CESU-8) form, cipherlite U+FFFD', () => {
    // better-sqlite3 encodes with V8's String::Utf8Value, which does not replace lone
    // surrogates (the stored TEXT is invalid UTF-8). cipherlite stores valid UTF-8: a lone
    // surrogate becomes U+FFFD (a documented difference, README "Differences").
    if (isCipherlite) {
      assert.deepStrictEqual(
        db.prepare('SELECT hex(?), hex(?), hex(?)').raw().get('a\uD800b', '\uDC00', '\uD83D\uDE00'),
        ['61EFBFBD62', 'EFBFBD', 'F09F9880'],
      );
      assert.equal(db.prepare('SELECT ?').pluck().get('a\uD800b'), 'a\uFFFDb');
    } else {
      assert.deepStrictEqual(
        db.prepare('SELECT hex(?), hex(?), hex(?)').raw().get('a\uD800b', '\uDC00', '\uD83D\uDE00'),
        ['61EDA08062', 'EDB080', 'F09F9880'],
      );
      assert.equal(db.prepare('SELECT ?').pluck().get('a\uD800b'), 'a\uFFFD\uFFFD\uFFFDb');
    }
  });

  it('10.8 many rows of text with multi-byte characters, empties, NULLs and BLOBs keep every value intact', () => {
    const pieces = ['', 'a', 'é', '😀', 'e\u0301', '中文字', '\u0000', 'ascii only', 'Ω≈ç√', '𝄞x'];
    db.exec('CREATE TABLE m (s, b, n)');
    const ins = db.prepare('INSERT INTO m VALUES (?, ?, ?)');
    const expected = [];
    for (let i = 0; i < 1000; i++) {
      const s = i % 11 === 0 ? null : pieces[i % pieces.length].repeat(i % 7);
      const b = i % 5 === 0 ? null : Buffer.from(Array.from({ length: i % 9 }, (_, k) => (i + k) & 0xff));
      const n = i % 4 === 0 ? null : i % 4 === 1 ? i : i % 4 === 2 ? i + 0.5 : `${i}`;
      ins.run(s, b, n);
      expected.push({ s, b, n });
    }
    assert.deepStrictEqual(db.prepare('SELECT s, b, n FROM m ORDER BY rowid').all(), expected);
    assert.deepStrictEqual([...db.prepare('SELECT s, b, n FROM m ORDER BY rowid').iterate()], expected);
    assert.deepStrictEqual(
      db.prepare('SELECT s, b, n FROM m ORDER BY rowid').raw().all(),
      expected.map((r) => [r.s, r.b, r.n]),
    );
  });

  it('10.8 very long text: 1 MB ASCII and 1 MB of 2-byte characters', () => {
    const ascii = 'x'.repeat(1 << 20);
    const r1 = db.prepare('SELECT ? AS s, length(?) AS n').get(ascii, ascii);
    assert.equal(r1.n, 1 << 20);
    assert.equal(r1.s, ascii);
    const wide = 'é'.repeat(1 << 19);
    const r2 = db.prepare('SELECT ? AS s, length(?) AS l, octet_length(?) AS o').get(wide, wide, wide);
    assert.deepStrictEqual([r2.s === wide, r2.l, r2.o], [true, 1 << 19, 1 << 20]);
    db.exec('CREATE TABLE big (s)');
    db.prepare('INSERT INTO big VALUES (?), (?)').run(ascii, wide);
    const rows = db.prepare('SELECT s FROM big ORDER BY rowid').pluck().all();
    assert.equal(rows[0], ascii);
    assert.equal(rows[1], wide);
  });

  // ---- numbers -------------------------------------------------------------------------------------

  it('10.8 INTEGER above 2^53: a rounded number by default, the exact BigInt with safeIntegers', () => {
    const sql =
      'SELECT 9007199254740993 AS a, 9223372036854775807 AS max, -9223372036854775808 AS min, 9007199254740992 AS exact';
    assert.deepStrictEqual(db.prepare(sql).get(), { a: 2 ** 53, max: 2 ** 63, min: -(2 ** 63), exact: 2 ** 53 });
    assert.deepStrictEqual(db.prepare(sql).safeIntegers().get(), {
      a: 9007199254740993n,
      max: 9223372036854775807n,
      min: -9223372036854775808n,
      exact: 9007199254740992n,
    });
    assert.deepStrictEqual(db.prepare(sql).safeIntegers().raw().all(), [
      [9007199254740993n, 9223372036854775807n, -9223372036854775808n, 9007199254740992n],
    ]);
  });

  it('10.8 small integers keep their sign and zero is +0', () => {
    const row = db.prepare('SELECT 0 AS z, -1 AS m, 2147483648 AS b31, -2147483649 AS nb31').get();
    assert.deepStrictEqual(row, { z: 0, m: -1, b31: 2147483648, nb31: -2147483649 });
    assert.ok(Object.is(row.z, 0));
  });

  it('10.8 REAL edge values: -0, 1e308, -1e-308, 5e-324, MAX_VALUE, ±Infinity, 0.1+0.2', () => {
    const row = db
      .prepare(
        'SELECT -0.0 AS nz, 1e308 AS big, -1e-308 AS tiny, 5e-324 AS sub, 1.7976931348623157e308 AS max, 1e999 AS inf, -1e999 AS ninf, 0.1 + 0.2 AS sum',
      )
      .get();
    assert.ok(Object.is(row.nz, -0), '-0.0 stays negative zero');
    assert.equal(row.big, 1e308);
    assert.equal(row.tiny, -1e-308);
    assert.equal(row.sub, 5e-324);
    assert.equal(row.max, Number.MAX_VALUE);
    assert.equal(row.inf, Infinity);
    assert.equal(row.ninf, -Infinity);
    assert.equal(row.sum, 0.1 + 0.2);
    // bound doubles come back bit-exact
    const values = [-0, 1e308, -1e-308, 5e-324, Number.MAX_VALUE, Number.MIN_VALUE, Math.PI, -1 / 3, 2 ** 53 + 2];
    const back = db
      .prepare(`SELECT ${values.map(() => '?').join(', ')}`)
      .raw()
      .get(values);
    for (let i = 0; i < values.length; i++) assert.ok(Object.is(back[i], values[i]), String(values[i]));
  });

  it('10.8 an integer-valued REAL stays a number under safeIntegers', () => {
    assert.deepStrictEqual(db.prepare('SELECT 2.0 AS r, -0.0 AS z, 1e20 AS e').safeIntegers().get(), {
      r: 2,
      z: -0,
      e: 1e20,
    });
    assert.ok(Object.is(db.prepare('SELECT -0.0').pluck().safeIntegers().get(), -0));
  });

  // ---- statements re-prepared after a schema change ---------------------------------------------

  it('5.16 after ALTER TABLE ADD COLUMN a prepared SELECT * returns the new column in all(), get(), iterate(), raw()', () => {
    db.exec('CREATE TABLE s (a, b); INSERT INTO s VALUES (1, 2)');
    const stmt = db.prepare('SELECT * FROM s');
    assert.deepStrictEqual(stmt.all(), [{ a: 1, b: 2 }]);
    db.exec('ALTER TABLE s ADD COLUMN c DEFAULT 7');
    assert.deepStrictEqual(stmt.all(), [{ a: 1, b: 2, c: 7 }]);
    assert.deepStrictEqual(stmt.get(), { a: 1, b: 2, c: 7 });
    assert.deepStrictEqual([...stmt.iterate()], [{ a: 1, b: 2, c: 7 }]);
    assert.deepStrictEqual(stmt.raw().get(), [1, 2, 7]);
    assert.deepStrictEqual(
      stmt.columns().map((c) => c.name),
      ['a', 'b', 'c'],
    );
  });

  it('5.16 after DROP + CREATE with other columns the same statement returns the new names', () => {
    db.exec('CREATE TABLE s (a, b); INSERT INTO s VALUES (1, 2)');
    const stmt = db.prepare('SELECT * FROM s');
    const getter = db.prepare('SELECT * FROM s');
    assert.deepStrictEqual(stmt.all(), [{ a: 1, b: 2 }]);
    assert.deepStrictEqual(getter.get(), { a: 1, b: 2 });
    db.exec("DROP TABLE s; CREATE TABLE s (p TEXT, q INT, r); INSERT INTO s VALUES ('x', 9, NULL)");
    assert.deepStrictEqual(stmt.all(), [{ p: 'x', q: 9, r: null }]);
    assert.deepStrictEqual(getter.get(), { p: 'x', q: 9, r: null });
    assert.deepStrictEqual(
      stmt.columns().map((c) => [c.name, c.type]),
      [
        ['p', 'TEXT'],
        ['q', 'INT'],
        ['r', null],
      ],
    );
  });

  it('5.16 a schema change that keeps the column count but changes names is picked up', () => {
    db.exec('CREATE TABLE s (a, b); INSERT INTO s VALUES (1, 2)');
    const stmt = db.prepare('SELECT * FROM s');
    assert.deepStrictEqual(stmt.get(), { a: 1, b: 2 });
    db.exec('ALTER TABLE s RENAME COLUMN a TO z');
    assert.deepStrictEqual(stmt.get(), { z: 1, b: 2 });
    assert.deepStrictEqual(stmt.all(), [{ z: 1, b: 2 }]);
    db.exec('DROP TABLE s; CREATE TABLE s (m, n); INSERT INTO s VALUES (3, 4)');
    assert.deepStrictEqual(stmt.all(), [{ m: 3, n: 4 }]);
    assert.deepStrictEqual([...stmt.iterate()], [{ m: 3, n: 4 }]);
  });

  it('5.16 ALTER TABLE DROP COLUMN shrinks the rows of a prepared SELECT *', () => {
    db.exec('CREATE TABLE s (a, b, c); INSERT INTO s VALUES (1, 2, 3)');
    const stmt = db.prepare('SELECT * FROM s');
    assert.deepStrictEqual(stmt.get(), { a: 1, b: 2, c: 3 });
    db.exec('ALTER TABLE s DROP COLUMN b');
    assert.deepStrictEqual(stmt.get(), { a: 1, c: 3 });
    assert.deepStrictEqual(stmt.all(), [{ a: 1, c: 3 }]);
    assert.deepStrictEqual(stmt.pluck().all(), [1]);
  });

  it('5.16 a prepared SELECT * whose table was dropped fails with SqliteError and works again once it exists', () => {
    db.exec('CREATE TABLE s (a); INSERT INTO s VALUES (1)');
    const stmt = db.prepare('SELECT * FROM s');
    stmt.all();
    db.exec('DROP TABLE s');
    throwsSqliteError(() => stmt.all(), 'SQLITE_ERROR', 'no such table: s');
    db.exec("CREATE TABLE s (k, l); INSERT INTO s VALUES ('k', 'l')");
    assert.deepStrictEqual(stmt.all(), [{ k: 'k', l: 'l' }]);
  });
});
