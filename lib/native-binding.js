'use strict';
// Finds the compiled addon: the per-platform package (cipherlite-<target>), or in a
// development checkout the `.node` file `npm run build` puts at the package root.

const fs = require('fs');
const path = require('path');

function isMusl() {
  if (process.platform !== 'linux') return false;
  // The running process says which libc it uses; no need to spawn ldd.
  try {
    const report = process.report && process.report.getReport();
    const header = report && (typeof report === 'string' ? JSON.parse(report) : report).header;
    if (header) return !header.glibcVersionRuntime;
  } catch { /* fall through */ }
  try {
    return fs.readFileSync('/usr/bin/ldd', 'latin1').includes('musl');
  } catch {
    return false;
  }
}

function targetName() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  return `${platform}-${arch}`;
}

function requirePackage(target) {
  // Static specifiers so that bundlers can see (and be told to keep external) each package.
  switch (target) {
    case 'linux-x64-gnu': return require('cipherlite-linux-x64-gnu');
    case 'linux-arm64-gnu': return require('cipherlite-linux-arm64-gnu');
    case 'linux-x64-musl': return require('cipherlite-linux-x64-musl');
    case 'linux-arm64-musl': return require('cipherlite-linux-arm64-musl');
    case 'darwin-x64': return require('cipherlite-darwin-x64');
    case 'darwin-arm64': return require('cipherlite-darwin-arm64');
    default: throw new Error(`cipherlite has no prebuilt binary for ${target}`);
  }
}

/** The path of the locally built addon, if there is one (development checkouts). */
function localBinaryPath(target = targetName()) {
  const file = path.join(__dirname, '..', `cipherlite.${target}.node`);
  return fs.existsSync(file) ? file : null;
}

/** The file the default addon is (or would be) loaded from. */
function nativeBindingPath() {
  const local = localBinaryPath();
  if (local) return local;
  const target = targetName();
  return require.resolve(`cipherlite-${target}`);
}

function loadNativeBinding() {
  const target = targetName();
  const errors = [];
  const local = localBinaryPath(target);
  if (local) {
    try {
      return require(local);
    } catch (err) {
      errors.push(err);
    }
  }
  try {
    return requirePackage(target);
  } catch (err) {
    errors.push(err);
  }
  const error = new Error(
    `cipherlite could not load its native addon for ${target} (package cipherlite-${target}). ` +
    'If your lockfile was made on another platform, or optional dependencies were omitted ' +
    '(--omit=optional, --no-optional), reinstall cipherlite on this machine; ' +
    'or build it from source with `npm run build`.',
  );
  error.cause = errors.length === 1 ? errors[0] : new AggregateError(errors, 'load attempts');
  throw error;
}

module.exports = { loadNativeBinding, nativeBindingPath, localBinaryPath, targetName, isMusl };
