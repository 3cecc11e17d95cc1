#!/usr/bin/env node
'use strict';
// Installs the benchmark's peer drivers that are not devDependencies — better-sqlite3 13
// (the baseline on Node 22, 24 and 26) and better-sqlite3-multiple-ciphers (the encrypted
// peer) — into `.cache/peers/` (git-ignored), with npm itself, for one Node binary:
//
//   node benchmark/get-peers.js                       # for the Node running this
//   node benchmark/get-peers.js --node "$(node benchmark/get-node.js 24)"
//
// Why not devDependencies: better-sqlite3 13 and multiple-ciphers 13 need Node >= 22, and
// multiple-ciphers 12 (for Node 20) is a classic addon built from source for one ABI; here
// each Node gets the versions it can run, and `npm ci` stays as it was. What is installed
// for which Node:
//
//   Node >= 22: better-sqlite3@13.2.0 (as better-sqlite3-13) and
//               better-sqlite3-multiple-ciphers@13.0.3 — Node-API addons whose npm
//               tarballs carry prebuilt binaries (prebuilds/<platform>-<arch>.node), so
//               nothing is compiled and one copy serves 22, 24 and 26:
//               .cache/peers/napi/node_modules/
//   Node 20:    better-sqlite3-multiple-ciphers@12.11.1, a classic addon built for that
//               Node's ABI: .cache/peers/node-v<ABI>/node_modules/
//   Both:       @tursodatabase/database@0.7.2 (Turso, its AEGIS-256 encryption; the
//               binary is an optional dependency per platform, here
//               @tursodatabase/database-linux-x64-gnu) and @signalapp/sqlcipher@4.1.0
//               (Signal's SQLCipher binding; prebuilds/<platform>-<arch>/ in its tarball):
//               Node-API, prebuilt, ES modules that Node 20.19+ loads with require(). They
//               are installed by a second npm run with --ignore-scripts — nothing of theirs
//               is built (Signal's install script would compile it under
//               npm_config_build_from_source) — so a failure there leaves the others in place.
//
// The install runs npm (the copy bundled with that Node when it has one — a wheel has,
// Node 26's npm package has not, and then it is the npm on PATH) with that Node first on
// PATH and `npm_config_nodedir` at its headers (both carry include/node), and `npm_config_build_from_source` so that prebuild-install
// doesn't wait on GitHub. A failed install is reported on stderr and exits 1; the
// benchmark then lists those stacks as skipped, with this command in the reason.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const PEERS = path.join(ROOT, '.cache', 'peers');

// Versions, pinned: the report names them.
const NAPI_PACKAGES = {
  'better-sqlite3-13': 'npm:better-sqlite3@13.2.0',
  'better-sqlite3-multiple-ciphers': '13.0.3',
};
const NODE20_PACKAGES = {
  'better-sqlite3-multiple-ciphers': '12.11.1',
};
// Prebuilt Node-API peers for every Node, installed without install scripts; the addon each
// must have after the install, relative to its package directory.
const PREBUILT_PACKAGES = {
  '@tursodatabase/database': '0.7.2',
  '@signalapp/sqlcipher': '4.1.0',
};
const PREBUILT_ADDONS = {
  '@tursodatabase/database': () => {
    const libc =
      process.platform === 'linux' ? (process.report?.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl') : '';
    const abi = process.platform === 'win32' ? '-msvc' : libc;
    const triple = `${process.platform}-${process.arch}${abi}`;
    return path.join('..', `database-${triple}`, `turso.${triple}.node`);
  },
  '@signalapp/sqlcipher': () =>
    path.join('prebuilds', `${process.platform}-${process.arch}`, '@signalapp+sqlcipher.node'),
};

function log(...args) {
  console.error('[get-peers]', ...args);
}

/** Where the peers for a Node with this major version and ABI live, and what goes there. */
function peerPlan(major, abi) {
  if (major >= 22) return { dir: path.join(PEERS, 'napi'), packages: NAPI_PACKAGES, prebuilt: PREBUILT_PACKAGES };
  return { dir: path.join(PEERS, `node-v${abi}`), packages: NODE20_PACKAGES, prebuilt: PREBUILT_PACKAGES };
}

/** The peers directory for the Node running this process (used by lib/stacks.js). */
function peerDirForThisNode() {
  return peerPlan(Number(process.versions.node.split('.')[0]), process.versions.modules).dir;
}

function installed(dir, name, spec) {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8'));
    const want = spec.startsWith('npm:') ? spec.slice(spec.lastIndexOf('@') + 1) : spec;
    if (pkg.version !== want) return false;
    // An install whose build failed leaves the package without its addon.
    const pkgDir = path.join(dir, 'node_modules', name);
    if (PREBUILT_ADDONS[name]) return fs.existsSync(path.join(pkgDir, PREBUILT_ADDONS[name]()));
    const prebuilt = path.join(pkgDir, 'prebuilds', `${process.platform}-${process.arch}.node`);
    return fs.existsSync(prebuilt) || fs.existsSync(path.join(pkgDir, 'build', 'Release', 'better_sqlite3.node'));
  } catch {
    return false;
  }
}

function install(nodeBin) {
  const info = spawnSync(nodeBin, ['-p', 'JSON.stringify([process.versions.node, process.versions.modules])'], {
    encoding: 'utf8',
  });
  if (info.status !== 0) throw new Error(`${nodeBin} does not run: ${info.stderr}`);
  const [version, abi] = JSON.parse(info.stdout);
  const major = Number(version.split('.')[0]);
  const { dir, packages, prebuilt } = peerPlan(major, abi);
  const missingOf = (list) => Object.entries(list).filter(([name, spec]) => !installed(dir, name, spec));
  const missing = missingOf(packages);
  if (missing.length === 0 && missingOf(prebuilt).length === 0) {
    log(`Node ${version}: peers already in ${path.relative(ROOT, dir)}`);
    return dir;
  }
  fs.mkdirSync(dir, { recursive: true });
  const pkgJson = path.join(dir, 'package.json');
  if (!fs.existsSync(pkgJson)) {
    // allowScripts: npm 11 asks before running install scripts (multiple-ciphers 12 builds in one).
    const allowScripts = Object.fromEntries(Object.keys(packages).map((name) => [name, true]));
    fs.writeFileSync(
      pkgJson,
      `${JSON.stringify({ name: 'cipherlite-bench-peers', private: true, allowScripts }, null, 2)}\n`,
    );
  }
  const binDir = path.dirname(nodeBin);
  // The wheel's layout: bin/node beside lib/node_modules/npm and include/node.
  const bundledNpm = path.join(binDir, '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
  const headers = path.join(binDir, '..', 'include', 'node');
  const env = {
    ...process.env,
    PATH: `${binDir}${path.delimiter}${process.env.PATH}`,
    npm_config_build_from_source: 'true',
  };
  if (fs.existsSync(headers)) env.npm_config_nodedir = path.resolve(binDir, '..');
  const npmInstall = (list, extra, what) => {
    const specs = list.map(([name, spec]) => `${name}@${spec}`);
    const npmArgs = [
      'install',
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      '--foreground-scripts',
      ...extra,
      ...specs,
    ];
    const [cmd, args] = fs.existsSync(bundledNpm) ? [nodeBin, [bundledNpm, ...npmArgs]] : ['npm', npmArgs];
    log(`Node ${version} (ABI ${abi}): ${what} ${specs.join(', ')} into ${path.relative(ROOT, dir)}`);
    log('$', cmd, args.join(' '));
    const r = spawnSync(cmd, args, { cwd: dir, env, stdio: ['ignore', 2, 2] });
    if (r.error) throw r.error;
    if (r.status !== 0) throw new Error(`npm install of ${specs.join(', ')} exited with ${r.status}`);
    for (const [name, spec] of list) {
      if (!installed(dir, name, spec))
        throw new Error(
          `${name}@${spec} installed without its addon (no prebuilt binary for ${process.platform}-${process.arch}, no build/Release/)`,
        );
    }
  };
  const errors = [];
  if (missing.length) {
    try {
      npmInstall(missing, [], 'building (a few minutes)');
    } catch (e) {
      errors.push(e.message);
    }
  }
  // npm prunes what neither package.json nor the command line names, so the first run may
  // have removed the prebuilt peers: what is missing is looked at after it, and the second
  // run names the first's packages too (in place already, nothing runs for them).
  const missingPrebuilt = missingOf(prebuilt);
  if (missingPrebuilt.length) {
    const keep = Object.entries(packages).filter(([name, spec]) => installed(dir, name, spec));
    try {
      npmInstall([...keep, ...missingPrebuilt], ['--ignore-scripts'], 'installing prebuilt');
    } catch (e) {
      errors.push(e.message);
    }
  }
  if (errors.length) throw new Error(errors.join('; '));
  return dir;
}

function main(argv) {
  let nodeBin = process.execPath;
  let optional = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--node' && argv[i + 1]) nodeBin = path.resolve(argv[++i]);
    else if (argv[i] === '--optional') optional = true;
    else {
      console.error(
        'usage: node benchmark/get-peers.js [--node PATH] [--optional]\n  --optional: a failed install is a warning (exit 0); the benchmark then skips those stacks',
      );
      return 2;
    }
  }
  let dir;
  try {
    dir = install(nodeBin);
  } catch (e) {
    if (!optional) throw e;
    log(`warning: ${e.message}; the benchmark will list these stacks as skipped`);
    return 0;
  }
  console.log(dir);
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

module.exports = { install, peerDirForThisNode, NAPI_PACKAGES, NODE20_PACKAGES, PREBUILT_PACKAGES };
