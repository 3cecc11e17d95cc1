'use strict';
// The benchmark's workloads (benchmark/lib/workloads) compute what they claim: wa-sqlite's
// 16 tests through one db.exec() per test leave the same tables as the prepared-statement
// variant, plain and encrypted alike; Forward Email's configurations apply their PRAGMAs;
// and the report's targets are per-round paired ratios. No timing is asserted: times
// are only what the workloads return, never compared with a bound here.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { loadStack } = require('../benchmark/lib/stacks');
const exec = require('../benchmark/lib/workloads/exec');
const speedtest = require('../benchmark/lib/workloads/speedtest');
const configs = require('../benchmark/lib/workloads/configs');
const bigdb = require('../benchmark/lib/workloads/bigdb');
const { targets, analyze, wantsLtsPass } = require('../benchmark/run');
const { DEFAULT_STACKS } = require('../benchmark/lib/stacks');
const { LTS, RELEASES } = require('../benchmark/get-node');
const { tempDir, removeDir } = require('./_helpers');

function context(stackName, dir, extra) {
  return { stack: loadStack(stackName), dir, quick: true, seed: 7, gc: () => {}, ...extra };
}

describe('benchmark workloads', () => {
  let dir;
  before(() => {
    dir = tempDir();
  });
  after(() => removeDir(dir));

  it('exec runs each test as one script and ends every test in the same state as the prepared variant', () => {
    const viaExec = exec.run(context('cipherlite', fs.mkdtempSync(`${dir}/e-`)));
    const viaPrepared = speedtest.run(context('cipherlite', fs.mkdtempSync(`${dir}/p-`)));
    const keys = Object.keys(viaPrepared.checks);
    assert.equal(keys.length, 16);
    for (const key of keys) assert.deepEqual(viaExec.checks[key].state, viaPrepared.checks[key].state, key);
    // Test 2's table after the script: every one of the quick size's 2,500 rows is there.
    assert.match(viaExec.checks.test2.state.t2, /^2500:/);
    assert.deepEqual(viaExec.checks.test16.state, {});
    assert.ok(viaExec.checks.scriptBytes > 100_000, `scripts of ${viaExec.checks.scriptBytes} bytes`);
    assert.deepEqual(Object.keys(viaExec.metrics), [...keys, 'total']);
  });

  it('exec leaves the same tables encrypted as plain, in a file without plaintext', () => {
    const plain = exec.run(context('cipherlite', fs.mkdtempSync(`${dir}/a-`)));
    const encrypted = exec.run(context('cipherlite-encrypted', fs.mkdtempSync(`${dir}/b-`)));
    for (const key of Object.keys(plain.checks)) assert.deepEqual(encrypted.checks[key], plain.checks[key], key);
    const bytes = fs.readFileSync(encrypted.files[0]);
    assert.equal(bytes.includes(Buffer.from('SQLite format 3')), false);
    assert.equal(bytes.includes(Buffer.from('thousand')), false);
  });

  it('configs applies each configuration and stores the same rows with and without a key', () => {
    const prod = configs.run(context('cipherlite', fs.mkdtempSync(`${dir}/c-`), { config: 'production' }));
    assert.equal(prod.pragmas.journal_mode, 'wal');
    assert.equal(prod.pragmas.cache_size, -16000);
    assert.equal(prod.pragmas.analysis_limit, 400);
    assert.equal(prod.pragmas.busy_timeout, 30000);
    assert.equal(prod.checks.setup.rows, 200);
    assert.equal(prod.checks.insert.rows, 220);
    assert.equal(prod.checks.select.rows, 50);
    assert.equal(prod.checks.deleted, 120);
    assert.equal(prod.checks.delete.rows, 100);
    const mmap = configs.run(context('cipherlite-encrypted', fs.mkdtempSync(`${dir}/d-`), { config: 'cache + mmap' }));
    assert.equal(mmap.pragmas.cache_size, -64000);
    assert.equal(mmap.pragmas.mmap_size, 268435456);
    for (const key of ['setup', 'insert', 'select', 'update', 'delete'])
      assert.deepEqual(mmap.checks[key], prod.checks[key], key);
    assert.throws(() => configs.run(context('cipherlite', dir, { config: 'nope' })), /unknown configuration nope/);
  });

  it('bigdb reads the same rows plain and encrypted as the table grows past the cache', () => {
    const plain = bigdb.run(context('cipherlite', fs.mkdtempSync(`${dir}/g-`)));
    const encrypted = bigdb.run(context('cipherlite-encrypted', fs.mkdtempSync(`${dir}/h-`)));
    assert.deepEqual(encrypted.checks, plain.checks);
    // Grown to 20,000 rows, then 20 batches of 25 inserts (and 75 reads) at that size.
    assert.equal(plain.checks.mix20k.rows, 20_500);
    assert.equal(plain.pragmas.cache_size, -64);
    assert.deepEqual(Object.keys(plain.metrics), ['scan', 'point', 'mix5k', 'mix10k', 'mix20k']);
  });

  it('targets are medians of per-round paired ratios, met when at or under the bound', () => {
    const metric = (key, values) => ({
      key,
      label: key,
      unit: 'µs',
      stacks: Object.fromEntries(Object.entries(values).map(([s, v]) => [s, { values: v }])),
    });
    const workloads = {
      driver: {
        failures: {},
        metrics: [
          metric('insert', { cipherlite: [5, 6, 30], 'better-sqlite3-13': [10, 10, 40] }),
          metric('get', { cipherlite: [9, 9, 9], 'better-sqlite3-13': [10, 10, 10] }),
        ],
      },
      write: {
        failures: { 'mc-sqlcipher': [{ rounds: ['1'], message: 'x' }] },
        metrics: [metric('insert', { 'cipherlite-encrypted': [1, 1, 1], 'mc-sqlcipher': [2, 2, 2] })],
      },
    };
    const out = targets('better-sqlite3-13', workloads);
    const insert = out.find((t) => t.workload === 'driver' && t.metric === 'insert');
    assert.deepEqual(insert.ratio, { median: 0.6, min: 0.5, max: 0.75, n: 3 });
    assert.equal(insert.den, 'better-sqlite3-13');
    assert.equal(insert.met, true);
    const get = out.find((t) => t.workload === 'driver' && t.metric === 'get');
    assert.equal(get.met, false);
    // A stack that failed a workload gives no ratio there.
    assert.equal(
      out.some((t) => t.workload === 'write'),
      false,
    );
  });

  it("issue 46's AEGIS targets: AEGIS ÷ plain with their bounds, and every metric against Turso's AEGIS-256", () => {
    const metric = (key, values) => ({
      key,
      label: key,
      unit: 'µs',
      stacks: Object.fromEntries(Object.entries(values).map(([s, v]) => [s, { values: v }])),
    });
    const workloads = {
      bigdb: {
        failures: {},
        metrics: [
          metric('scan', { cipherlite: [10, 10, 10], 'cipherlite-aegis': [11, 12, 11], 'turso-aegis': [20, 20, 20] }),
          metric('point', { cipherlite: [10, 10, 10], 'cipherlite-aegis': [14, 14, 14], 'turso-aegis': [13, 13, 13] }),
        ],
      },
    };
    const out = targets('cipherlite', workloads);
    const plain = (m) => out.find((t) => t.group === 'AEGIS ÷ plain' && t.metric === m);
    assert.equal(plain('scan').max, 1.15);
    assert.equal(plain('scan').met, true);
    assert.equal(plain('point').max, 1.3);
    assert.equal(plain('point').met, false);
    const turso = out.filter((t) => t.group === 'vs Turso AEGIS-256');
    assert.deepEqual(
      turso.map((t) => [t.workload, t.metric, t.den, t.met]),
      [
        ['bigdb', 'scan', 'turso-aegis', true],
        ['bigdb', 'point', 'turso-aegis', false],
      ],
    );
  });

  it("what a stack's API can't do is not measured, and settings its engine doesn't take are notes, not failures", () => {
    const pragmas = { journal_mode: 'delete', page_size: 4096, mmap_size: 0 };
    const result = (metrics, extra) => ({
      ok: true,
      metrics: Object.fromEntries(Object.entries(metrics).map(([k, v]) => [k, { label: k, unit: 'ms', value: v }])),
      checks: Object.fromEntries(Object.keys(metrics).map((k) => [k, { rows: 1 }])),
      pragmas,
      ...extra,
    });
    const results = {
      driver: {
        cipherlite: [result({ all: 1, iterate: 2 })],
        // @signalapp/sqlcipher: no .iterate(); SQLCipher reads page_size back as text.
        'signal-sqlcipher': [
          result({ all: 2 }, { notMeasured: { iterate: 'no .iterate()' }, pragmas: { ...pragmas, page_size: '4096' } }),
        ],
        // Turso: WAL only, a note; an mmap_size it was not excused for, a failure.
        'turso-aegis': [
          result(
            { all: 3, iterate: 3 },
            {
              pragmas: { ...pragmas, journal_mode: 'wal', mmap_size: null },
              enginePragmas: { journal_mode: 'WAL only' },
            },
          ),
        ],
      },
    };
    const a = analyze(
      { baseline: 'cipherlite', workloads: ['driver'], warmup: 0 },
      ['cipherlite', 'signal-sqlcipher', 'turso-aegis'],
      results,
    );
    const w = a.workloads.driver;
    assert.deepEqual(w.notMeasured, { 'signal-sqlcipher': { iterate: 'no .iterate()' } });
    assert.equal(w.failures['signal-sqlcipher'], undefined);
    assert.equal(w.metrics.find((m) => m.key === 'iterate').stacks['signal-sqlcipher'], undefined);
    assert.deepEqual(w.engineNotes, { 'turso-aegis': { journal_mode: 'wal (asked: delete): WAL only' } });
    assert.match(w.failures['turso-aegis'][0].message, /PRAGMAs differ from cipherlite's: mmap_size=null vs 0$/);
  });

  it('a full run on Node 20 without --node runs again on the current LTS; --quick, --node, --no-lts or Node 22+ do not', () => {
    assert.equal(wantsLtsPass({}, DEFAULT_STACKS, 20), true);
    assert.equal(wantsLtsPass({}, ['cipherlite', 'node:sqlite'], 20), true);
    assert.equal(wantsLtsPass({}, ['cipherlite', 'better-sqlite3'], 20), false, 'nothing skipped on 20');
    assert.equal(wantsLtsPass({ quick: true }, DEFAULT_STACKS, 20), false);
    assert.equal(wantsLtsPass({ node: '/some/node' }, DEFAULT_STACKS, 20), false);
    assert.equal(wantsLtsPass({ 'no-lts': true }, DEFAULT_STACKS, 20), false);
    for (const major of [22, 24, 26]) assert.equal(wantsLtsPass({}, DEFAULT_STACKS, major), false);
    assert.ok(RELEASES[LTS], `the LTS, Node ${LTS}, is a release get-node.js fetches`);
  });
});
