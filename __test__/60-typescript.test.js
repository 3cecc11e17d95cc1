'use strict';
// index.d.ts is checked by the TypeScript compiler: a typical program must compile under
// --strict, and misuse (a string key, an unknown layout) must not.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { execFileSync } = require('child_process');

test('index.d.ts compiles a typical program under --strict and rejects misuse', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const usage = path.join(__dirname, 'types', 'usage.ts');
  let output = '';
  try {
    output = execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2020', '--module', 'commonjs',
      '--moduleResolution', 'node', '--types', 'node', usage], { encoding: 'utf8', cwd: path.join(__dirname, '..') });
  } catch (err) {
    assert.fail(`tsc reported errors:\n${err.stdout}${err.stderr}`);
  }
  assert.equal(output.trim(), '');
});
