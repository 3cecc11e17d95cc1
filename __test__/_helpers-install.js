'use strict';
// A project that "installed" cipherlite, laid out by copying (no npm, no network): its
// node_modules holds the root package as npm publishes it (scripts/lib/root-package.js)
// and the host target's package with the locally built addon. Used by the tests of the
// package's entrypoints and of bundlers.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');

/** The host's target name and its package's name. */
function hostTarget() {
  const { targetName } = require('../lib/native-binding');
  const target = targetName();
  return { target, packageName: `cipherlite-${target}` };
}

/** The static entrypoint name of better-sqlite3 13 for the host (`linux-x64`, `linuxmusl-x64`, `darwin-arm64`). */
function hostEntrypoint() {
  const { target } = hostTarget();
  const m = /^linux-(x64|arm64)-(gnu|musl)$/.exec(target);
  return m ? `${m[2] === 'musl' ? 'linuxmusl' : 'linux'}-${m[1]}` : target;
}

/**
 * Lays out `<dir>/node_modules/{cipherlite, cipherlite-<host target>}` (and a package.json
 * for the app) and returns `dir`. Needs the locally built addon (node scripts/build.js).
 * With `as`, the root package is installed under that name instead (npm's
 * `npm install better-sqlite3@npm:cipherlite`).
 */
function installInto(dir, { as = 'cipherlite' } = {}) {
  const { target, packageName } = hostTarget();
  const addon = path.join(ROOT, `cipherlite.${target}.node`);
  if (!fs.existsSync(addon)) throw new Error(`${addon} is missing: run node scripts/build.js`);
  const modules = path.join(dir, 'node_modules');
  require('../scripts/lib/root-package').stageRootPackage(path.join(modules, as));
  const platformDir = path.join(modules, packageName);
  fs.mkdirSync(platformDir, { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'npm', target, 'package.json'), path.join(platformDir, 'package.json'));
  fs.copyFileSync(addon, path.join(platformDir, `cipherlite.${target}.node`));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
  return dir;
}

/** Runs `node <args>` in `cwd` with `node` (default: this one); returns stdout, failing
 * the test with stderr when it exits non-zero. */
function runNode(cwd, args, { node = process.execPath, env } = {}) {
  const res = spawnSync(node, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 16 << 20 });
  if (res.status !== 0) {
    throw new Error(
      `${path.basename(node)} ${args.join(' ')} exited ${res.status} ${res.signal || ''}:\n${res.stderr}${res.stdout}`,
    );
  }
  return res.stdout;
}

module.exports = { ROOT, hostTarget, hostEntrypoint, installInto, runNode };
