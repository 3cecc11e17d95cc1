'use strict';
// The smoke script that .ci/run runs under Bun and Deno (scripts/smoke-runtimes.js), run
// here under Node: every check passes, and its closing line counts them.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

test('__test__/smoke/runtime-smoke.cjs passes under Node', () => {
  const res = spawnSync(process.execPath, [path.join(__dirname, 'smoke', 'runtime-smoke.cjs')], { encoding: 'utf8' });
  assert.equal(res.status, 0, res.stdout + res.stderr);
  const lines = res.stdout.trim().split('\n');
  assert.equal(lines.at(-1), '7 passed, 0 failed');
  const checks = lines.filter((l) => l.startsWith('ok - '));
  assert.equal(checks.length, 7);
  for (const what of [
    'core API',
    'transactions',
    'errors',
    'encryption',
    'user functions',
    'iterators',
    'better-sqlite3 13',
  ]) {
    assert.ok(
      checks.some((l) => l.includes(`: ${what}`)),
      what,
    );
  }
});
