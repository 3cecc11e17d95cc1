#!/usr/bin/env node
'use strict';
// Runs __test__/smoke/runtime-smoke.cjs (core API, encryption, user functions, iterators)
// under Bun and Deno. Their binaries come from the npm registry as ordinary packages
// (`@oven/bun-linux-x64`, `@deno/linux-x64-glibc`): `npm pack`ed and unpacked into
// .cache/runtimes/ (git-ignored), no install script run. Needs the addon built
// (node scripts/build.js). Exits non-zero if any runtime fails; the last line sums up.
//   node scripts/smoke-runtimes.js [bun|deno ...]

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const CACHE = path.join(ROOT, '.cache', 'runtimes');
const SMOKE = path.join(ROOT, '__test__', 'smoke', 'runtime-smoke.cjs');

// The releases this was tried with (issue 14: Bun 1.4.5, Deno 2.9.6), per Linux arch.
const RUNTIMES = {
  bun: {
    version: '1.4.5',
    packages: { x64: '@oven/bun-linux-x64', arm64: '@oven/bun-linux-aarch64' },
    binary: 'bin/bun',
    args: (script) => [script],
  },
  deno: {
    version: '2.9.6',
    packages: { x64: '@deno/linux-x64-glibc', arm64: '@deno/linux-arm64-glibc' },
    binary: 'deno',
    // -A: files, env and FFI (Node-API addons); no lockfile or cache next to the script.
    args: (script) => ['run', '-A', '--no-lock', '--no-config', script],
  },
};

function log(...args) {
  console.error('[smoke-runtimes]', ...args);
}

/** The runtime's binary, fetched and unpacked once. */
function fetchRuntime(name) {
  const rt = RUNTIMES[name];
  const pkg = rt.packages[process.arch];
  if (process.platform !== 'linux' || !pkg)
    throw new Error(`no ${name} package known for ${process.platform}-${process.arch}`);
  const dest = path.join(CACHE, `${name}-${rt.version}-${process.arch}`);
  const binary = path.join(dest, 'package', rt.binary);
  if (fs.existsSync(binary)) return binary;
  fs.mkdirSync(dest, { recursive: true });
  log(`npm pack ${pkg}@${rt.version}`);
  const packed = spawnSync(
    'npm',
    ['pack', `${pkg}@${rt.version}`, '--json', '--ignore-scripts', '--pack-destination', dest],
    { cwd: dest, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  if (packed.status !== 0) throw new Error(`npm pack ${pkg}@${rt.version} failed`);
  const [{ filename }] = JSON.parse(packed.stdout);
  const tarball = path.join(dest, filename);
  const untar = spawnSync('tar', ['-xzf', tarball, '-C', dest], { stdio: 'inherit' });
  if (untar.status !== 0) throw new Error(`could not unpack ${tarball}`);
  fs.rmSync(tarball);
  fs.chmodSync(binary, 0o755);
  return binary;
}

function main(argv) {
  const names = argv.length ? argv : Object.keys(RUNTIMES);
  let passed = 0;
  let failed = 0;
  for (const name of names) {
    if (!RUNTIMES[name]) throw new Error(`unknown runtime ${name}: ${Object.keys(RUNTIMES).join(', ')}`);
    const binary = fetchRuntime(name);
    const res = spawnSync(binary, RUNTIMES[name].args(SMOKE), {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    });
    const out = `${res.stdout}${res.stderr}`;
    process.stdout.write(
      out
        .split('\n')
        .filter((l) => !/^\d+ passed, \d+ failed$/.test(l))
        .join('\n'),
    );
    const summary = /^(\d+) passed, (\d+) failed$/m.exec(res.stdout);
    if (res.status === 0 && summary && summary[2] === '0') {
      passed += Number(summary[1]);
    } else {
      failed += summary ? Number(summary[2]) || 1 : 1;
      passed += summary ? Number(summary[1]) : 0;
      log(`${name} exited ${res.status}${res.signal ? ` (${res.signal})` : ''}`);
    }
  }
  console.log(`smoke: ${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
