'use strict';
// Finds the compiled addon for the running platform. In order:
//  1. development checkout: the `.node` that `npm run build` puts at the package root
//     (cipherlite.<target>.node), so a fresh local build wins over anything installed;
//  2. the per-platform package cipherlite-<target>, which npm installs from cipherlite's
//     optionalDependencies (only the one whose os/cpu/libc match);
//  3. development checkout: npm/<target>/cipherlite.<target>.node (npm run build:targets).
// Nothing is downloaded or compiled at install or load time. When nothing loads, one error
// says what was looked for, on what platform, why each attempt failed (as `cause`) and
// what to do. The `nativeBinding` option of `new Database()` bypasses all of this.

const fs = require('fs');
const path = require('path');

const { addonFromModule } = require('./addon');

const ROOT = path.join(__dirname, '..');

/** The targets that have a package (npm/<target>/ in the repository). */
const TARGETS = Object.freeze([
  'linux-x64-gnu',
  'linux-arm64-gnu',
  'linux-x64-musl',
  'linux-arm64-musl',
  'darwin-x64',
  'darwin-arm64',
  'win32-x64',
  'win32-arm64',
]);

let muslDetected;

/**
 * Whether the running Node uses musl libc (Alpine). Asks the process itself, so that it
 * stays right where the file system would mislead (a musl Node started through musl's
 * loader on a glibc system, or the reverse):
 *  1. which libc loader is mapped into the process (/proc/self/maps), as better-sqlite3
 *     13.2 does: a quick file read;
 *  2. failing that, Node's diagnostic report, which names the glibc it runs on
 *     (`header.glibcVersionRuntime`) and has no such field under musl (slower);
 *  3. failing that too, the system's ldd.
 */
function isMusl() {
  if (process.platform !== 'linux') return false;
  if (muslDetected === undefined) muslDetected = detectMusl();
  return muslDetected;
}

/** What /proc/self/maps says (`maps`: its text): true for musl, false for glibc, null
 * when it names neither loader. */
function muslFromMaps(maps) {
  if (/\/ld-musl-[^/\s]*\.so/.test(maps)) return true;
  if (/\/(?:ld-linux[^/\s]*|libc)\.so\.\d/.test(maps)) return false;
  return null;
}

function detectMusl() {
  try {
    const fromMaps = muslFromMaps(fs.readFileSync('/proc/self/maps', 'latin1'));
    if (fromMaps !== null) return fromMaps;
  } catch {
    // no procfs (a sandbox): ask Node instead
  }
  const header = reportHeader();
  if (header) return !header.glibcVersionRuntime;
  // No diagnostic report (a Node built without it): guess from the system's ldd.
  try {
    return fs.readFileSync('/usr/bin/ldd', 'latin1').includes('musl');
  } catch {
    return false;
  }
}

function reportHeader() {
  const report = process.report;
  if (!report || typeof report.getReport !== 'function') return null;
  const excludeNetwork = report.excludeNetwork;
  try {
    // Collecting the network part of the report can take seconds (name look-ups); skip it.
    report.excludeNetwork = true;
    const value = report.getReport();
    const parsed = typeof value === 'string' ? JSON.parse(value) : value;
    return (parsed && parsed.header) || null;
  } catch {
    return null;
  } finally {
    try {
      report.excludeNetwork = excludeNetwork;
    } catch {
      /* read-only on some versions */
    }
  }
}

/** The target of the running platform: `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`, `win32-x64`, ... */
function targetName() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  return `${platform}-${arch}`;
}

function packageName(target) {
  return `cipherlite-${target}`;
}

/**
 * Loads the per-platform package. One static `require` per package, inside `try`: bundlers
 * see every name (to keep external), and treat one that is not installed as optional.
 * Returns `{ binding }` or `{ error }`.
 */
function requirePackage(target) {
  try {
    switch (target) {
      case 'linux-x64-gnu':
        return { binding: require('cipherlite-linux-x64-gnu') };
      case 'linux-arm64-gnu':
        return { binding: require('cipherlite-linux-arm64-gnu') };
      case 'linux-x64-musl':
        return { binding: require('cipherlite-linux-x64-musl') };
      case 'linux-arm64-musl':
        return { binding: require('cipherlite-linux-arm64-musl') };
      case 'darwin-x64':
        return { binding: require('cipherlite-darwin-x64') };
      case 'darwin-arm64':
        return { binding: require('cipherlite-darwin-arm64') };
      case 'win32-x64':
        return { binding: require('cipherlite-win32-x64') };
      case 'win32-arm64':
        return { binding: require('cipherlite-win32-arm64') };
      default:
        return { error: new Error(`there is no package ${packageName(target)}`) };
    }
  } catch (error) {
    return { error };
  }
}

/** Where the per-platform package's addon is, or `{ error }` if it is not installed. */
function resolvePackage(target) {
  try {
    switch (target) {
      case 'linux-x64-gnu':
        return { file: require.resolve('cipherlite-linux-x64-gnu') };
      case 'linux-arm64-gnu':
        return { file: require.resolve('cipherlite-linux-arm64-gnu') };
      case 'linux-x64-musl':
        return { file: require.resolve('cipherlite-linux-x64-musl') };
      case 'linux-arm64-musl':
        return { file: require.resolve('cipherlite-linux-arm64-musl') };
      case 'darwin-x64':
        return { file: require.resolve('cipherlite-darwin-x64') };
      case 'darwin-arm64':
        return { file: require.resolve('cipherlite-darwin-arm64') };
      case 'win32-x64':
        return { file: require.resolve('cipherlite-win32-x64') };
      case 'win32-arm64':
        return { file: require.resolve('cipherlite-win32-arm64') };
      default:
        return { error: new Error(`there is no package ${packageName(target)}`) };
    }
  } catch (error) {
    return { error };
  }
}

/** The path of the locally built addon, if there is one (development checkouts). */
function localBinaryPath(target = targetName()) {
  const file = path.join(ROOT, `cipherlite.${target}.node`);
  return fs.existsSync(file) ? file : null;
}

/** The release build of `npm run build:targets` in a development checkout, if there is one. */
function packageFolderBinaryPath(target) {
  const file = path.join(ROOT, 'npm', target, `cipherlite.${target}.node`);
  return fs.existsSync(file) ? file : null;
}

function version() {
  try {
    return require('../package.json').version;
  } catch {
    return null;
  }
}

function firstLine(err) {
  return String((err && err.message) || err).split('\n')[0];
}

/** The one error thrown when no addon could be found or loaded. */
function loadError(target, errors) {
  const pkg = packageName(target);
  const detected =
    `platform ${process.platform}, arch ${process.arch}` +
    (process.platform === 'linux' ? `, libc ${isMusl() ? 'musl' : 'glibc'}` : '') +
    `, Node.js ${process.versions.node}`;
  const supported = TARGETS.includes(target);
  const ver = version();
  const lines = supported
    ? [
        `cipherlite could not load its native addon: the package ${pkg} is missing or failed to load ` +
          `(detected ${detected}).`,
        ...errors.map((e) => `  - ${firstLine(e)}`),
        `npm installs only the optional dependency that matches the machine where \`npm install\` ran. ` +
          'If node_modules or the lockfile came from another platform (a container image built from ' +
          "the host's node_modules, a lockfile made on macOS), or optional dependencies were left out " +
          `(--omit=optional, --no-optional), run \`npm install\` again on this machine, or add the package: ` +
          `npm install ${pkg}${ver ? `@${ver}` : ''}. In a bundled app keep cipherlite and ${pkg} external ` +
          "(see docs/packaging.md, 'Bundlers and Electron', in cipherlite's repository).",
      ]
    : [
        `cipherlite has no prebuilt native addon for ${target} (detected ${detected}); ` +
          `prebuilt packages exist for ${TARGETS.join(', ')}.`,
        ...errors.map((e) => `  - ${firstLine(e)}`),
        'Build the addon from source (`cargo build --release` in a checkout of cipherlite) and pass ' +
          'its path as the `nativeBinding` option of `new Database()`.',
      ];
  const error = new Error(lines.join('\n'));
  error.code = 'ERR_CIPHERLITE_NATIVE_BINDING';
  error.cause = errors.length === 1 ? errors[0] : new AggregateError(errors, 'each attempt to load the addon failed');
  return error;
}

/** The file the default addon is (or would be) loaded from. Throws like loadNativeBinding if none. */
function nativeBindingPath() {
  const target = targetName();
  const local = localBinaryPath(target);
  if (local) return local;
  const resolved = resolvePackage(target);
  if (resolved.file) return resolved.file;
  const built = packageFolderBinaryPath(target);
  if (built) return built;
  throw loadError(target, [resolved.error]);
}

/** Loads the addon for the running platform (see the order at the top of this file). */
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
  const pkg = requirePackage(target);
  if (pkg.binding) {
    try {
      return addonFromModule(pkg.binding, __dirname);
    } catch (err) {
      errors.push(err);
    }
  } else {
    errors.push(pkg.error);
  }
  const built = packageFolderBinaryPath(target);
  if (built) {
    try {
      return require(built);
    } catch (err) {
      errors.push(err);
    }
  }
  throw loadError(target, errors);
}

module.exports = { loadNativeBinding, nativeBindingPath, localBinaryPath, targetName, isMusl, muslFromMaps, TARGETS };
