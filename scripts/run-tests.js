'use strict';
// Runs the JS test suite (every __test__/*.test.js) with `node --test`, on this Node or the
// one given with --node PATH. The files are listed explicitly: Node 20 takes a folder,
// Node 22+ want files or globs.
//   node scripts/run-tests.js [--node PATH] [file filters...]

const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const args = process.argv.slice(2);
let node = process.execPath;
const filters = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--node') node = args[++i];
  else filters.push(args[i]);
}
const dir = path.join(__dirname, '..', '__test__');
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.test.js'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort()
  .map((f) => path.join('__test__', f));
// The interop tests need the real engines (SQLCipher, SQLite3MC) in .venv-interop: install
// them from PyPI on first use (quick when already there).
if (files.some((f) => f.includes('-interop'))) {
  const setup = spawnSync('bash', [path.join(__dirname, 'setup-interop.sh')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (setup.status !== 0) console.error('scripts/setup-interop.sh failed: the interop tests will say why');
}

// Evolu's own relay server (74) comes from its own pinned lockfile: install it on first use.
if (files.some((f) => f.includes('evolu-start-relay'))) {
  if (!require('./setup-evolu-relay').setupEvoluRelay())
    console.error('scripts/setup-evolu-relay.js failed: the Evolu relay test will say why');
}

// The loadExtension() tests need a loadable extension built with this machine's compiler.
const env = { ...process.env };
if (!env.CIPHERLITE_TEST_EXTENSION)
  env.CIPHERLITE_TEST_EXTENSION = require('./build-test-extension').buildTestExtension();
const result = spawnSync(node, ['--test', '--test-concurrency=2', ...files], {
  cwd: path.join(__dirname, '..'),
  stdio: 'inherit',
  env,
});
process.exitCode = result.status === null ? 1 : result.status;
