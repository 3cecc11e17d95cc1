'use strict';
// What the packaging scripts share: the eight release targets, the pinned build tools
// (ziglang + cargo-zigbuild from PyPI in .venv-build/), and how one target is built so
// that the same source at any path gives the same bytes (docs/build-targets.md).

const { spawnSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.join(__dirname, '..', '..');

const ZIGLANG_VERSION = '0.17.1';
const CARGO_ZIGBUILD_VERSION = '0.24.1';
/** Oldest glibc the Linux gnu builds may need (zig links against this version's symbols). */
const GLIBC_FLOOR = '2.17';
/** MACOSX_DEPLOYMENT_TARGET of the macOS builds (zig's default would be 15.0). */
const MACOS_MIN = '11.0';

/**
 * The release targets. `name` is the suffix of the npm package and of the `.node` file,
 * `triple` the Rust target, `cargoTarget` what `cargo zigbuild --target` is given.
 */
const TARGETS = [
  {
    name: 'linux-x64-gnu',
    triple: 'x86_64-unknown-linux-gnu',
    cargoTarget: `x86_64-unknown-linux-gnu.${GLIBC_FLOOR}`,
    os: 'linux',
    cpu: 'x64',
    libc: 'glibc',
  },
  {
    name: 'linux-arm64-gnu',
    triple: 'aarch64-unknown-linux-gnu',
    cargoTarget: `aarch64-unknown-linux-gnu.${GLIBC_FLOOR}`,
    os: 'linux',
    cpu: 'arm64',
    libc: 'glibc',
  },
  {
    name: 'linux-x64-musl',
    triple: 'x86_64-unknown-linux-musl',
    cargoTarget: 'x86_64-unknown-linux-musl',
    os: 'linux',
    cpu: 'x64',
    libc: 'musl',
  },
  {
    name: 'linux-arm64-musl',
    triple: 'aarch64-unknown-linux-musl',
    cargoTarget: 'aarch64-unknown-linux-musl',
    os: 'linux',
    cpu: 'arm64',
    libc: 'musl',
  },
  {
    name: 'darwin-x64',
    triple: 'x86_64-apple-darwin',
    cargoTarget: 'x86_64-apple-darwin',
    os: 'darwin',
    cpu: 'x64',
    libc: null,
  },
  {
    name: 'darwin-arm64',
    triple: 'aarch64-apple-darwin',
    cargoTarget: 'aarch64-apple-darwin',
    os: 'darwin',
    cpu: 'arm64',
    libc: null,
  },
  {
    // The GNU ABI (MinGW-w64 through zig): Node-API is a C ABI, so this DLL loads into the
    // MSVC-built node.exe (docs/build-targets.md §3).
    name: 'win32-x64',
    triple: 'x86_64-pc-windows-gnu',
    cargoTarget: 'x86_64-pc-windows-gnu',
    os: 'win32',
    cpu: 'x64',
    libc: null,
  },
  {
    // arm64 has no `-gnu` Rust target; `gnullvm` is the GNU ABI with LLVM's runtime
    // (libunwind), which zig provides. Built and inspected, not run here.
    name: 'win32-arm64',
    triple: 'aarch64-pc-windows-gnullvm',
    cargoTarget: 'aarch64-pc-windows-gnullvm',
    os: 'win32',
    cpu: 'arm64',
    libc: null,
  },
];

function findTarget(name) {
  const target = TARGETS.find((t) => t.name === name);
  if (!target) {
    throw new Error(`unknown target ${JSON.stringify(name)}; the targets are ${TARGETS.map((t) => t.name).join(', ')}`);
  }
  return target;
}

/** The target of the running Node (what lib/native-binding.js would load). */
function hostTarget() {
  return findTarget(require('../../lib/native-binding').targetName());
}

/**
 * The targets named by `--targets a,b` (or `--targets=a,b`) in argv: `all` for all eight,
 * `host` for the running platform's. Without the option: `fallback`.
 */
function targetsFromArgs(argv, fallback) {
  let value = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--targets') value = argv[++i];
    else if (argv[i].startsWith('--targets=')) value = argv[i].slice('--targets='.length);
  }
  if (value == null) value = fallback;
  if (value == null || value === '') throw new Error('--targets needs a comma-separated list of targets');
  const names = [];
  for (const name of value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (name === 'all') names.push(...TARGETS.map((t) => t.name));
    else if (name === 'host') names.push(hostTarget().name);
    else names.push(findTarget(name).name);
  }
  return TARGETS.filter((t) => names.includes(t.name));
}

/** `cipherlite.<target>.node`: the file name in the package and in a development checkout. */
function nodeFileName(target) {
  return `cipherlite.${target.name}.node`;
}

/** The folder of a target's npm package. */
function packageDir(target, root = ROOT) {
  return path.join(root, 'npm', target.name);
}

/** Where a target's built `.node` is put for packing. */
function packagedBinary(target, root = ROOT) {
  return path.join(packageDir(target, root), nodeFileName(target));
}

/** Release builds go to their own target dir, so that the debug builds in target/debug stay warm. */
function defaultTargetDir(root = ROOT) {
  return path.join(root, 'target', 'targets');
}

function cargoHome() {
  return process.env.CARGO_HOME || path.join(os.homedir(), '.cargo');
}

function sha256(file) {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Runs a command with inherited output; throws if it fails. */
function run(cmd, args, options = {}) {
  const res = spawnSync(cmd, args, { stdio: 'inherit', ...options });
  if (res.error) throw new Error(`${cmd} could not be started: ${res.error.message}`);
  if (res.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${res.signal ? `signal ${res.signal}` : `exit ${res.status}`})`);
  }
  return res;
}

/** Runs a command and returns its stdout (trimmed); throws if it fails. */
function output(cmd, args, options = {}) {
  const res = spawnSync(cmd, args, { encoding: 'utf8', ...options });
  if (res.error) throw new Error(`${cmd} could not be started: ${res.error.message}`);
  if (res.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (exit ${res.status}): ${(res.stderr || '').trim()}`);
  }
  return res.stdout.trim();
}

function log(message) {
  process.stderr.write(`[packaging] ${message}\n`);
}

function venvDir() {
  return path.join(ROOT, '.venv-build');
}

/**
 * Makes sure .venv-build/ holds the pinned ziglang and cargo-zigbuild (PyPI wheels),
 * creating the venv with `python3 -m venv` if needed. Returns the venv's bin dir.
 */
function ensureBuildTools() {
  const venv = venvDir();
  const bin = path.join(venv, 'bin');
  const python = path.join(bin, 'python');
  const installed = () => {
    try {
      const zb = output(path.join(bin, 'cargo-zigbuild'), ['--version']);
      const zig = output(python, ['-m', 'ziglang', 'version']);
      return zb === `cargo-zigbuild ${CARGO_ZIGBUILD_VERSION}` && zig === ZIGLANG_VERSION;
    } catch {
      return false;
    }
  };
  if (installed()) return bin;
  if (!fs.existsSync(python)) {
    log(`creating ${path.relative(ROOT, venv)}/ (python3 -m venv)`);
    run('python3', ['-m', 'venv', venv]);
  }
  log(
    `installing ziglang==${ZIGLANG_VERSION} cargo-zigbuild==${CARGO_ZIGBUILD_VERSION} into ${path.relative(ROOT, venv)}/`,
  );
  run(python, [
    '-m',
    'pip',
    'install',
    '--quiet',
    '--disable-pip-version-check',
    `ziglang==${ZIGLANG_VERSION}`,
    `cargo-zigbuild==${CARGO_ZIGBUILD_VERSION}`,
  ]);
  if (!installed()) throw new Error('the pinned ziglang / cargo-zigbuild did not install into .venv-build/');
  return bin;
}

/** Adds the rustup targets (of the toolchain pinned by rust-toolchain.toml) that are missing. */
function ensureRustTargets(targets) {
  const installed = output('rustup', ['target', 'list', '--installed'], { cwd: ROOT }).split('\n');
  const missing = [...new Set(targets.map((t) => t.triple))].filter((t) => !installed.includes(t));
  if (missing.length) {
    log(`rustup target add ${missing.join(' ')}`);
    run('rustup', ['target', 'add', ...missing], { cwd: ROOT });
  }
}

/**
 * The environment of a reproducible build of `target` from the tree at `root`. RUSTFLAGS
 * replaces the per-target rustflags of .cargo/config.toml, so musl's -crt-static is
 * repeated here.
 */
function buildEnv(target, { root, targetDir, home, toolsBin }) {
  const rustflags = [];
  if (target.libc === 'musl') rustflags.push('-C', 'target-feature=-crt-static');
  // Paths in panic locations and debug strings: the same whatever the checkout or cargo home.
  rustflags.push(`--remap-path-prefix=${home}=/cargo`, `--remap-path-prefix=${root}=/build`);
  const cflags = [`-ffile-prefix-map=${home}=/cargo`, `-ffile-prefix-map=${root}=/build`];
  if (!targetDir.startsWith(root + path.sep)) {
    rustflags.push(`--remap-path-prefix=${targetDir}=/target`);
    cflags.push(`-ffile-prefix-map=${targetDir}=/target`);
  }
  const env = { ...process.env };
  if (target.os === 'darwin') {
    // Without -Wl,-S the linker's STABS make LC_UUID (and the ad-hoc signature) path-dependent;
    // without hidden visibility every sqlite3_* symbol would be exported.
    rustflags.push('-C', 'link-arg=-Wl,-S');
    cflags.push('-fvisibility=hidden');
    env.MACOSX_DEPLOYMENT_TARGET = MACOS_MIN;
  } else {
    delete env.MACOSX_DEPLOYMENT_TARGET;
  }
  if (target.os === 'win32') {
    // The PE header's timestamp is a hash of the contents (-Brepro), not the build time, so two
    // builds give the same bytes; and the stub `libnode` napi's build script insists on.
    rustflags.push('-C', 'link-arg=-Wl,-Brepro');
    env.LIBNODE_PATH = windowsLinkStub(targetDir);
  } else {
    delete env.LIBNODE_PATH;
  }
  for (const name of Object.keys(env)) {
    // Anything that would change the flags behind our back.
    if (
      /^(CARGO_ENCODED_RUSTFLAGS|RUSTFLAGS|CFLAGS|CXXFLAGS|CARGO_BUILD_RUSTFLAGS)$/.test(name) ||
      /^CARGO_TARGET_.*_RUSTFLAGS$/.test(name) ||
      /^(CFLAGS|CXXFLAGS)_/.test(name) ||
      /^(TARGET|HOST)_CFLAGS$/.test(name)
    )
      delete env[name];
  }
  Object.assign(env, {
    PATH: `${toolsBin}${path.delimiter}${env.PATH}`,
    CARGO_HOME: home,
    CARGO_TARGET_DIR: targetDir,
    RUSTFLAGS: rustflags.join(' '),
    CFLAGS: cflags.join(' '),
    CARGO_TERM_COLOR: env.CARGO_TERM_COLOR || 'never',
  });
  return env;
}

/**
 * napi's build script, for a Windows GNU target, wants a `libnode.dll` in `LIBNODE_PATH` and
 * links `-lnode`. The addon imports nothing from Node (napi's `dyn-symbols` looks Node-API
 * up at load time in the process's own module, so the DLL loads into node.exe and into
 * Electron alike): an empty placeholder `libnode.dll` and an empty import library
 * `libnode.a` (an `ar` archive with no members; zig looks for `node.dll`, `node.lib`, `libnode.a`)
 * satisfy both. Returns their folder.
 */
function windowsLinkStub(targetDir) {
  const dir = path.join(targetDir, 'libnode-stub');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'libnode.dll'), '');
  fs.writeFileSync(path.join(dir, 'libnode.a'), '!<arch>\n');
  return dir;
}

/** The file cargo writes for `target` under `targetDir`. */
function cargoOutput(target, targetDir) {
  const file =
    target.os === 'darwin' ? 'libcipherlite.dylib' : target.os === 'win32' ? 'cipherlite.dll' : 'libcipherlite.so';
  return path.join(targetDir, target.triple, 'release', file);
}

/**
 * Builds `target` in release mode from the tree at `root` (default: this checkout) and
 * returns the path of the built library. Call ensureBuildTools/ensureRustTargets first
 * (or let this do it).
 */
function buildTarget(target, options = {}) {
  const root = path.resolve(options.root || ROOT);
  const targetDir = path.resolve(options.targetDir || defaultTargetDir(root));
  const home = path.resolve(options.cargoHome || cargoHome());
  const toolsBin = options.toolsBin || ensureBuildTools();
  if (!options.skipRustTargets) ensureRustTargets([target]);
  const env = buildEnv(target, { root, targetDir, home, toolsBin });
  // The addon is the `cipherlite-node` crate, a cdylib only, so `cargo build` runs the
  // release profile's LTO on it (with LTO the macOS builds also export only a handful of
  // symbols: zig's Mach-O linker has no -exported_symbols_list).
  const args = ['build', '--release', '--locked', '-p', 'cipherlite-node', '--lib', '--target', target.cargoTarget];
  log(`building ${target.name}: cargo-zigbuild ${args.join(' ')} (in ${root})`);
  const started = Date.now();
  run(path.join(toolsBin, 'cargo-zigbuild'), args, { cwd: root, env, stdio: options.stdio || 'inherit' });
  const built = cargoOutput(target, targetDir);
  if (!fs.existsSync(built)) throw new Error(`cargo finished but ${built} is missing`);
  log(`built ${target.name} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return built;
}

/** Copies a file by writing a temporary name and renaming, so a process that has it loaded keeps its copy. */
function installFile(src, dest) {
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.copyFileSync(src, `${dest}.tmp`);
  fs.renameSync(`${dest}.tmp`, dest);
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

module.exports = {
  ROOT,
  TARGETS,
  ZIGLANG_VERSION,
  CARGO_ZIGBUILD_VERSION,
  GLIBC_FLOOR,
  MACOS_MIN,
  findTarget,
  hostTarget,
  targetsFromArgs,
  nodeFileName,
  packageDir,
  packagedBinary,
  defaultTargetDir,
  cargoHome,
  sha256,
  run,
  output,
  log,
  ensureBuildTools,
  ensureRustTargets,
  buildEnv,
  windowsLinkStub,
  cargoOutput,
  buildTarget,
  installFile,
  readJson,
};
