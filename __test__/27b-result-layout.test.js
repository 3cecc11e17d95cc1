'use strict';
// The result buffer's layout is defined once, in crates/node/src/results.rs, and exported as
// the addon's `layout`; lib/results.js reads it from there (docs/design.md §5.2). These
// tests check that the two sides agree: the names JS needs are exactly the ones the addon
// exports, and real batches and run() results sit where the exported offsets say, with the
// exported tags, flags and modes. cipherlite-only: they look inside the addon and its buffer.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const { Database, isCipherlite } = require('./_module');
const { throwsExactly } = require('./_helpers');

const skip = !isCipherlite;
const addon = skip ? null : require(Database.__nativePath);
const results = skip ? null : require('../lib/results');
const { kNative, kReader, kState } = require('../lib/util');

/** The scratch buffer of `db`, as the views JS reads it through. */
function views(db) {
  const R = db[kNative][kReader];
  return { u8: R.u8, u32: R.u32, f64: R.f64, i64: R.i64 };
}

describe('27b the result buffer layout', { skip }, () => {
  const db = skip ? null : new Database(':memory:');
  after(() => db && db.close());

  it('27b.1 the addon exports exactly the names lib/results.js reads, frozen, as integers', () => {
    const { layout } = addon;
    assert.ok(Object.isFrozen(layout));
    assert.deepEqual(Object.keys(layout).sort(), [...results.LAYOUT_NAMES].sort());
    for (const name of results.LAYOUT_NAMES) assert.ok(Number.isInteger(layout[name]), name);
    assert.ok(Object.isFrozen(results.L), 'JS froze its copy once it read it');
    for (const name of results.LAYOUT_NAMES) {
      if (name in results.L) assert.equal(results.L[name], layout[name], name);
    }
    const tags = ['TAG_NULL', 'TAG_NUMBER', 'TAG_BIGINT', 'TAG_TEXT', 'TAG_BLOB', 'TAG_BIG_TEXT'];
    assert.equal(new Set(tags.map((t) => layout[t])).size, tags.length, 'tags are distinct');
    const flags = ['FLAG_DONE', 'FLAG_COLUMNS_CHANGED', 'FLAG_SCRATCH_REPLACED', 'FLAG_SAFE_INTEGERS'];
    assert.equal(
      flags.reduce((a, f) => a | layout[f], 0),
      flags.reduce((a, f) => a + layout[f], 0),
      'flags are distinct bits',
    );
  });

  it('27b.2 a batch: row and column counts, flags, tags and slots at the exported offsets', () => {
    const L = addon.layout;
    const stmt = db.prepare(
      "SELECT NULL AS n, 2.5 AS r, 'héllo' AS t, x'00ff10' AS b, 7 AS i FROM (SELECT 1 UNION ALL SELECT 2)",
    );
    const rows = stmt.all();
    assert.deepEqual(rows[1], { n: null, r: 2.5, t: 'héllo', b: Buffer.from([0, 0xff, 0x10]), i: 7 });
    const { u8, u32, f64 } = views(db);
    const nRows = u32[L.ROWS_AT / 4];
    const nColumns = u32[L.COLUMNS_AT / 4];
    assert.deepEqual([nRows, nColumns], [2, 5]);
    const flags = u32[L.FLAGS_AT / 4];
    assert.equal(flags & L.FLAG_DONE, L.FLAG_DONE, 'the statement ran to its end');
    assert.equal(flags & L.FLAG_COLUMNS_CHANGED, L.FLAG_COLUMNS_CHANGED, 'first batch: new column names');
    assert.equal(flags & L.FLAG_SAFE_INTEGERS, 0);
    const cells = nRows * nColumns;
    const tagsAt = L.HEADER_BYTES + L.SLOT_BYTES * cells;
    // Column-major: cell = column * rows + row.
    const tagOf = (column, row) => u8[tagsAt + column * nRows + row];
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((c) => tagOf(c, 1)),
      [L.TAG_NULL, L.TAG_NUMBER, L.TAG_TEXT, L.TAG_BLOB, L.TAG_INT32],
    );
    assert.equal(
      u32[(L.HEADER_BYTES + L.SLOT_BYTES * (4 * nRows + 1)) / 4] | 0,
      7,
      'an INTEGER in i32 range is an int32',
    );
    const slot = (cell) => (L.HEADER_BYTES + L.SLOT_BYTES * cell) / 4; // index into u32
    assert.equal(f64[(L.HEADER_BYTES + L.SLOT_BYTES * (1 * nRows + 1)) / 8], 2.5);
    const [textStart, textEnd] = [u32[slot(2 * nRows + 1)], u32[slot(2 * nRows + 1) + 1]];
    assert.equal(textEnd - textStart, 'héllo'.length, 'a TEXT slot holds UTF-16 start and end');
    const blobRegion = u32[L.BLOB_REGION_AT / 4];
    assert.equal(blobRegion, tagsAt + cells, 'the blob region follows the tags');
    const [blobStart, blobLength] = [u32[slot(3 * nRows + 1)], u32[slot(3 * nRows + 1) + 1]];
    assert.deepEqual([...u8.subarray(blobRegion + blobStart, blobRegion + blobStart + blobLength)], [0, 0xff, 0x10]);
  });

  it('27b.3 safeIntegers: the flag and BigInt tags; a large TEXT value travels alone', () => {
    const L = addon.layout;
    const big = 'x'.repeat(300 * 1024);
    const row = db.prepare('SELECT 9007199254740993 AS i, ? AS big').safeIntegers().get(big);
    assert.deepEqual(row, { i: 9007199254740993n, big });
    const { u8, u32, i64 } = views(db);
    assert.equal(u32[L.FLAGS_AT / 4] & L.FLAG_SAFE_INTEGERS, L.FLAG_SAFE_INTEGERS);
    const tagsAt = L.HEADER_BYTES + L.SLOT_BYTES * 2;
    assert.deepEqual([u8[tagsAt], u8[tagsAt + 1]], [L.TAG_BIGINT, L.TAG_BIG_TEXT]);
    assert.equal(i64[L.HEADER_BYTES / 8], 9007199254740993n);
    assert.equal(u32[(L.HEADER_BYTES + L.SLOT_BYTES) / 4], 1, 'index 1 of the result array');
  });

  it('27b.3b TEXT past U+00FF: tagged wide, sliced from the last string of the result', () => {
    const L = addon.layout;
    const row = db.prepare("SELECT 'plain' AS a, 'wide → ✓' AS w, 2 AS n").get();
    assert.deepEqual(row, { a: 'plain', w: 'wide → ✓', n: 2 });
    const { u8 } = views(db);
    const tagsAt = L.HEADER_BYTES + L.SLOT_BYTES * 3;
    assert.deepEqual([u8[tagsAt], u8[tagsAt + 1], u8[tagsAt + 2]], [L.TAG_TEXT, L.TAG_WIDE_TEXT, L.TAG_INT32]);
    assert.notEqual(L.TAG_WIDE_TEXT, L.TAG_TEXT);
  });

  it('27b.4 run(): changes and lastInsertRowid at the exported offsets', () => {
    const L = addon.layout;
    db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3)');
    assert.deepEqual(db.prepare('UPDATE t SET x = x + 1').run(), { changes: 3, lastInsertRowid: 3 });
    let v = views(db);
    assert.equal(v.u32[L.CHANGES_AT / 4], 3);
    assert.equal(v.f64[L.LAST_INSERT_ROWID_AT / 8], 3);
    assert.equal(v.u32[L.FLAGS_AT / 4] & L.FLAG_SAFE_INTEGERS, 0);
    assert.deepEqual(db.prepare('INSERT INTO t VALUES (9)').safeIntegers().run(), { changes: 1, lastInsertRowid: 4n });
    v = views(db);
    assert.equal(v.i64[L.LAST_INSERT_ROWID_AT / 8], 4n);
    assert.equal(v.u32[L.FLAGS_AT / 4] & L.FLAG_SAFE_INTEGERS, L.FLAG_SAFE_INTEGERS);
  });

  it('27b.5 the row modes JS sets are the exported ones, and the native side answers in them', () => {
    const L = addon.layout;
    const stmt = db.prepare('SELECT 1 AS a');
    assert.equal(stmt[kState].mode, L.MODE_FLAT);
    for (const [method, mode, row] of [
      ['pluck', L.MODE_PLUCK, 1],
      ['expand', L.MODE_EXPAND, { $: { a: 1 } }],
      ['raw', L.MODE_RAW, [1]],
    ]) {
      stmt[method]();
      assert.equal(stmt[kState].mode, mode, method);
      assert.equal(addon.fast.setMode(stmt[kState].id, mode, true), mode, `native ${method}`);
      assert.deepEqual(stmt.get(), row, method);
    }
    stmt.raw(false);
    assert.equal(stmt[kState].mode, L.MODE_FLAT);
  });

  it('27b.6 an addon whose layout is missing or differs is refused with a TypeError', () => {
    throwsExactly(
      () => results.useLayout(undefined),
      TypeError,
      'cipherlite: the native addon exports no result layout (an addon of another version?)',
    );
    throwsExactly(
      () => results.useLayout({ ...addon.layout, TAG_TEXT: undefined }),
      TypeError,
      "cipherlite: the native addon's result layout has no valid TAG_TEXT",
    );
    throwsExactly(
      () => results.useLayout({ ...addon.layout, FLAGS_AT: 40 }),
      TypeError,
      "cipherlite: this native addon's result layout differs from the one in use (FLAGS_AT)",
    );
    results.useLayout({ ...addon.layout }); // an equal copy (another instance of the addon) is fine
    assert.deepEqual(db.prepare('SELECT 1 AS a').get(), { a: 1 });
  });
});

describe('27b rows arrays', { skip }, () => {
  it('27b.7 rows arrays hold objects from the start: the first row stored changes no map', () => {
    // A map change at the first store deoptimised the row builders' optimised code at the
    // start of each result. V8's own predicate, in a child process (natives syntax).
    const { spawnSync } = require('node:child_process');
    const script = `
      const { rowArray, publicArray } = require(${JSON.stringify(require.resolve('../lib/results'))});
      const a = rowArray();
      const before = %HaveSameMap(a, rowArray());
      const kinds = [%HasObjectElements(a), %HasSmiElements(a)];
      a[0] = { x: 1 };
      const same = %HaveSameMap(a, rowArray());
      process.stdout.write(JSON.stringify({ before, kinds, same, length: publicArray(a).length }));
    `;
    const res = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', script], { encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr);
    assert.deepEqual(JSON.parse(res.stdout), { before: true, kinds: [true, false], same: true, length: 1 });
  });

  it('27b.8 a full GC keeps the row builders optimised, and results are packed arrays', () => {
    // Rows arrays leave the no-prototype state when they are returned; V8 holds a map only
    // through objects that have it, so once no result was being built a full GC freed it
    // and deoptimised the builders ("embedded weak objects cleared"). lib/results.js keeps
    // one such array (ROWS_MAP_HOLDER). V8's own predicates, in a child process.
    //
    // Which tier runs is asked with %ActiveTierIsTurbofan, not read from the bits of
    // %GetOptimizationStatus: their layout is V8's and moved (V8 14, Node 26, dropped
    // kAlwaysOptimize and every later bit moved down one, so kOptimized became 8 and 16 is
    // now kMaglevved), while the predicate means the same on V8 11.3 (Node 20) to 14.6
    // (Node 26). The control run takes the holder out of its state (gives it
    // Array.prototype) and must see the GC deoptimise the builder: the check can fail on
    // the V8 running it, and if a V8 ever stops freeing the map, the holder is no longer
    // needed and this says so. Both children compile on the main thread
    // (--no-concurrent-recompilation): a background TurboFan job for another function
    // still running at the GC holds the map alive, and on a loaded machine the control then
    // saw no deopt (Node 20: 3 runs of 48 with four at once; none of 48 with the flag).
    const { spawnSync } = require('node:child_process');
    const probe = (dropHolder) => `
      const Database = require(${JSON.stringify(require.resolve('..'))});
      const results = require(${JSON.stringify(require.resolve('../lib/results'))});
      if (${dropHolder}) Object.setPrototypeOf(results.ROWS_MAP_HOLDER, Array.prototype);
      const db = new Database(':memory:');
      db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL)");
      const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
      for (let i = 0; i < 500; i++) insert.run(i, 'name-' + i, i / 4);
      const page = db.prepare('SELECT id, name, score FROM t WHERE id >= ? ORDER BY id LIMIT 100');
      const { whole } = results.rowBuilders(results.L.MODE_FLAT, ['id', 'name', 'score'], null);
      %PrepareFunctionForOptimization(whole);
      for (let i = 0; i < 20; i++) page.all(i);
      %OptimizeFunctionOnNextCall(whole);
      const last = page.all(7);
      %FinalizeOptimization(); // installs a compile still pending, if any
      const before = %ActiveTierIsTurbofan(whole);
      globalThis.gc();
      globalThis.gc();
      const after = %ActiveTierIsTurbofan(whole);
      process.stdout.write(JSON.stringify({
        before, after,
        packed: !%HasHoleyElements(last),
        holderHasNoPrototype: Object.getPrototypeOf(results.ROWS_MAP_HOLDER) === null,
        rows: last.length, first: last[0],
      }));
    `;
    const run = (dropHolder) => {
      const res = spawnSync(
        process.execPath,
        ['--allow-natives-syntax', '--expose-gc', '--no-concurrent-recompilation', '-e', probe(dropHolder)],
        { encoding: 'utf8' },
      );
      assert.equal(res.status, 0, res.stderr);
      return JSON.parse(res.stdout);
    };
    const rows = { packed: true, rows: 100, first: { id: 7, name: 'name-7', score: 1.75 } };
    assert.deepEqual(run(false), { before: true, after: true, holderHasNoPrototype: true, ...rows });
    assert.deepEqual(
      run(true),
      { before: true, after: false, holderHasNoPrototype: false, ...rows },
      `without ROWS_MAP_HOLDER a full GC should deoptimise the builder on V8 ${process.versions.v8}`,
    );
  });

  it(
    '27b.9 raw rows have no allocation site for V8 to tenure',
    { skip: process.env.WINEPREFIX && "under Wine the child's V8 trace (C runtime stdout on a pipe) is lost" },
    () => {
      // Raw rows made by an array literal were tenured by V8 once large raw results were held
      // while the young generation was at its largest; dead old rows then kept their young
      // strings alive and later queries paid page faults (lib/results.js `rawRow`). V8's
      // own trace of its pretenuring decisions, in a child with a small young generation: an
      // array literal allocating the same rows is tenured (the trace works), raw rows never.
      const { spawnSync } = require('node:child_process');
      const script = `
      const Database = require(${JSON.stringify(require.resolve('..'))});
      const db = new Database(':memory:');
      db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL)");
      const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
      db.exec('BEGIN');
      for (let i = 0; i < 20000; i++) insert.run(i, 'name-' + i, i / 4);
      db.exec('COMMIT');
      const raw = db.prepare('SELECT id, name, score FROM t').raw();
      const literalRows = (n) => {
        const rows = new Array(n);
        for (let i = 0; i < n; i++) rows[i] = [i, 'name-' + i, i / 4];
        return rows;
      };
      let last;
      process.stdout.write('@literal\\n');
      for (let i = 0; i < 30; i++) last = literalRows(20000);
      process.stdout.write('@raw\\n');
      for (let i = 0; i < 30; i++) last = raw.all();
      process.stdout.write('@end ' + last.length + ' ' + JSON.stringify(last[7]) + '\\n');
    `;
      const res = spawnSync(
        process.execPath,
        ['--trace-pretenuring-statistics', '--max-semi-space-size=1', '-e', script],
        { encoding: 'utf8' },
      );
      assert.equal(res.status, 0, res.stderr);
      const [, literal, rawPart] = res.stdout.split(/^@(?:literal|raw)$/m);
      const tenured = (text) => text.split('\n').filter((line) => line.includes('=> tenure')).length;
      assert.match(rawPart, /^@end 20000 \[7,"name-7",1\.75\]$/m);
      assert.ok(tenured(literal) > 0, `V8 tenured no literal's site: ${literal.slice(0, 2000)}`);
      assert.equal(tenured(rawPart), 0, rawPart.slice(0, 2000));
    },
  );
});
