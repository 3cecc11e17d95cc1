'use strict';
// Packaging (docs/design.md §7, docs/build-targets.md): the per-target packages
// under npm/, the loader's choice and its error, the release builds that
// `npm run build:targets` puts in npm/<target>/ (a target not built here is skipped, saying
// so), and the tarballs `npm pack` makes: no install script anywhere, the right os/cpu/libc.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { tempDir } = require('./_helpers');
const {
  ROOT,
  TARGETS,
  GLIBC_FLOOR,
  MACOS_MIN,
  packageDir,
  packagedBinary,
  nodeFileName,
} = require('../scripts/lib/targets');
const { inspectBinary, compareVersions } = require('../scripts/lib/inspect-binary');

const rootPkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const readPkg = (target) => JSON.parse(fs.readFileSync(path.join(packageDir(target), 'package.json'), 'utf8'));
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall'];
// napi-rs registers the module through this one symbol; nothing else may be exported.
const NAPI_EXPORTS = ['napi_register_module_v1'];
// Except on macOS, where zig's Mach-O linker takes no export list (cargo-zigbuild drops the
// -exported_symbols_list rustc passes): there a dylib also exports what the linker makes
// (__mh_dylib_header, ___dso_handle) and two symbols of Rust's std that stay global after
// LTO. Any other export (sqlite3_* without -fvisibility=hidden, every Rust symbol without
// LTO) fails the test.
const MACHO_TOLERATED = [
  /^__mh_dylib_header$/,
  /^___dso_handle$/,
  /^_rust_eh_personality$/,
  /^__RNvNtCs[0-9A-Za-z]+_3std9panicking11EMPTY_PANIC$/,
];

describe('40 packaging: the per-target packages', () => {
  for (const target of TARGETS) {
    it(`npm/${target.name}/package.json: name, version, main, files, os/cpu/libc, no scripts`, () => {
      const pkg = readPkg(target);
      assert.equal(pkg.name, `cipherlite-${target.name}`);
      assert.equal(pkg.version, rootPkg.version, 'the same version as the root package');
      assert.equal(pkg.main, nodeFileName(target));
      assert.deepEqual(pkg.files, [nodeFileName(target)]);
      assert.deepEqual(pkg.os, [target.os]);
      assert.deepEqual(pkg.cpu, [target.cpu]);
      if (target.libc) assert.deepEqual(pkg.libc, [target.libc]);
      else assert.equal(pkg.libc, undefined);
      assert.equal(pkg.scripts, undefined);
      assert.equal(pkg.license, rootPkg.license);
      assert.ok(fs.statSync(path.join(packageDir(target), 'README.md')).size > 0, 'has a README');
    });
  }

  it('there is a package for each target and no other', () => {
    const dirs = fs
      .readdirSync(path.join(ROOT, 'npm'))
      .filter((d) => fs.statSync(path.join(ROOT, 'npm', d)).isDirectory());
    assert.deepEqual(dirs.sort(), TARGETS.map((t) => t.name).sort());
    assert.deepEqual(require('../lib/native-binding').TARGETS.slice().sort(), TARGETS.map((t) => t.name).sort());
  });

  it('the published root package lists every target package as an optional dependency at its exact version', () => {
    // The repository's package.json doesn't (npm ci can't lock unpublished packages);
    // the manifest that is packed and published does.
    const expected = Object.fromEntries(TARGETS.map((t) => [`cipherlite-${t.name}`, rootPkg.version]));
    assert.equal(rootPkg.optionalDependencies, undefined);
    assert.deepEqual(
      require('../scripts/lib/root-package').publishableManifest(rootPkg).optionalDependencies,
      expected,
    );
  });

  it('the root package has no install script and ships no binary', () => {
    for (const name of INSTALL_SCRIPTS) assert.equal((rootPkg.scripts || {})[name], undefined, `scripts.${name}`);
    assert.equal(rootPkg.gypfile, undefined);
    assert.ok(!fs.existsSync(path.join(ROOT, 'binding.gyp')), 'a binding.gyp makes npm run node-gyp at install');
    assert.ok(!(rootPkg.files || []).some((f) => f.endsWith('.node') || f.startsWith('npm')), 'files');
  });

  it('built .node files are git-ignored', (t) => {
    const files = TARGETS.map((target) => path.relative(ROOT, packagedBinary(target)));
    const res = spawnSync('git', ['check-ignore', '--no-index', ...files], { cwd: ROOT, encoding: 'utf8' });
    if (res.error || res.status === 128)
      return t.skip(`git is not usable here: ${res.error ? res.error.message : res.stderr.trim()}`);
    assert.deepEqual(res.stdout.trim().split('\n').sort(), files.sort());
  });
});

describe('40 packaging: the loader', () => {
  const loaderSource = fs.readFileSync(path.join(ROOT, 'lib', 'native-binding.js'), 'utf8');

  it('names every package in a static require() (so bundlers see them)', () => {
    for (const target of TARGETS) {
      assert.ok(loaderSource.includes(`require('cipherlite-${target.name}')`), `require('cipherlite-${target.name}')`);
    }
  });

  it('detects the running platform, libc included, from the process', () => {
    const { targetName, isMusl } = require('../lib/native-binding');
    const header = process.report.getReport().header;
    const musl = process.platform === 'linux' && !header.glibcVersionRuntime;
    assert.equal(isMusl(), musl);
    const expected =
      process.platform === 'linux'
        ? `linux-${process.arch}-${musl ? 'musl' : 'gnu'}`
        : `${process.platform}-${process.arch}`;
    assert.equal(targetName(), expected);
  });

  it('without any addon, throws one error naming the package, the platform, each cause and the fix', () => {
    // A copy of the root package with no local build and no per-target package beside it.
    const dir = tempDir('loader');
    try {
      fs.cpSync(path.join(ROOT, 'lib'), path.join(dir, 'lib'), { recursive: true });
      fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
      const script = `
				const nb = require(${JSON.stringify(path.join(dir, 'lib', 'native-binding.js'))});
				try { nb.loadNativeBinding(); console.log('loaded'); } catch (e) {
					console.log(JSON.stringify({ message: e.message, code: e.code, target: nb.targetName(),
						cause: e.cause && e.cause.code, errors: e.cause && e.cause.errors && e.cause.errors.length }));
				}`;
      const res = spawnSync(process.execPath, ['-e', script], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, NODE_PATH: '' },
      });
      assert.equal(res.status, 0, res.stderr);
      const out = JSON.parse(res.stdout);
      assert.equal(out.code, 'ERR_CIPHERLITE_NATIVE_BINDING');
      assert.match(out.message, new RegExp(`cipherlite-${out.target}\\b`));
      assert.match(out.message, new RegExp(`platform ${process.platform}, arch ${process.arch}`));
      assert.match(out.message, /Cannot find module 'cipherlite-/, "each attempt's error");
      if (TARGETS.some((t) => t.name === out.target)) {
        assert.match(out.message, /npm install/, 'the fix');
        assert.match(
          out.message,
          new RegExp(`npm install cipherlite-${out.target}@${rootPkg.version.replace(/\./g, '\\.')}`),
        );
        assert.equal(out.cause, 'MODULE_NOT_FOUND', 'the require error is the cause');
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('40 packaging: the release builds in npm/<target>/', () => {
  for (const target of TARGETS) {
    const file = packagedBinary(target);
    const skip =
      !fs.existsSync(file) &&
      `${path.relative(ROOT, file)} is not built here (npm run build:targets -- --targets ${target.name})`;
    it(
      `${target.name}: ${target.os === 'darwin' ? `Mach-O ${target.cpu}, macOS ${MACOS_MIN}+` : target.os === 'win32' ? `PE ${target.cpu} DLL, imports only Windows' own DLLs` : target.libc === 'glibc' ? `ELF ${target.cpu}, glibc <= ${GLIBC_FLOOR}` : `ELF ${target.cpu}, musl, no glibc symbol`}, exports only the napi entry point`,
      { skip },
      () => {
        const info = inspectBinary(file);
        assert.equal(info.cpu, target.cpu);
        if (target.os === 'linux') {
          assert.equal(info.format, 'elf');
          assert.ok(info.sharedObject, 'a shared object');
          assert.deepEqual(info.exports, NAPI_EXPORTS);
          if (target.libc === 'glibc') {
            assert.ok(info.glibcFloor, 'imports versioned glibc symbols');
            assert.ok(
              compareVersions(info.glibcFloor, GLIBC_FLOOR) <= 0,
              `glibc floor ${info.glibcFloor} > ${GLIBC_FLOOR}`,
            );
            assert.ok(info.needed.includes('libc.so.6'), `NEEDED ${info.needed}`);
          } else {
            assert.deepEqual(info.glibcVersions, [], 'a musl build imports no glibc-versioned symbol');
            assert.ok(!info.needed.some((n) => /^(libc\.so\.6|ld-linux)/.test(n)), `NEEDED ${info.needed}`);
            assert.ok(
              info.needed.some((n) => /^libc(\.musl-[a-z0-9_]+)?\.so(\.1)?$/.test(n)),
              `NEEDED ${info.needed}`,
            );
          }
        } else if (target.os === 'win32') {
          assert.equal(info.format, 'pe');
          assert.ok(info.dll, 'a DLL');
          assert.deepEqual(info.exports, NAPI_EXPORTS);
          // Node-API is looked up at load time (napi's dyn-symbols): nothing is imported from
          // node.exe or libnode, so the DLL loads into any Node or Electron. The rest is
          // Windows' own: kernel32, ntdll, the Universal C Runtime's api-ms-win-crt-* sets,
          // and what Rust's std needs (ws2_32, userenv, bcryptprimitives for ProcessPrng).
          const dlls = Object.keys(info.imports).map((d) => d.toLowerCase());
          const allowed = /^(kernel32|ntdll|ws2_32|userenv|bcryptprimitives|advapi32|api-ms-win-[a-z0-9-]+)\.dll$/;
          assert.deepEqual(
            dlls.filter((d) => !allowed.test(d)),
            [],
            `unexpected imported DLLs among ${dlls.join(', ')}`,
          );
          assert.ok(!dlls.some((d) => /node|msvcrt|libgcc|libwinpthread|libunwind/.test(d)), dlls.join(', '));
          const functions = Object.values(info.imports).flat();
          assert.ok(!functions.some((f) => /^napi_/.test(f)), 'no Node-API function is imported');
        } else {
          assert.equal(info.format, 'macho');
          assert.equal(info.fileType, 'dylib');
          assert.equal(info.minOS, MACOS_MIN, 'minimum macOS');
          assert.equal(info.installName, '@rpath/cipherlite.node');
          for (const [what, names] of [
            ['export trie', info.exports],
            ['external symbols', info.externalSymbols],
          ]) {
            assert.ok(names.includes('_napi_register_module_v1'), `${what}: _napi_register_module_v1`);
            const extra = names.filter(
              (n) => n !== '_napi_register_module_v1' && !MACHO_TOLERATED.some((re) => re.test(n)),
            );
            assert.deepEqual(extra.slice(0, 10), [], `${what}: ${extra.length} unexpected exported symbols`);
          }
          assert.ok(info.uuid, 'LC_UUID');
          if (target.cpu === 'arm64')
            assert.ok(info.signed, "arm64 code must be signed (the linker's ad-hoc signature)");
        }
      },
    );
  }
});

describe('40 packaging: the tarballs npm would publish', () => {
  let dir;
  let packed;
  before(() => {
    dir = tempDir('pack');
    const staged = require('../scripts/lib/root-package').stageRootPackage(path.join(dir, 'staged-root'));
    const res = spawnSync(
      'npm',
      ['pack', '--json', '--ignore-scripts', '--pack-destination', dir, staged, ...TARGETS.map((t) => packageDir(t))],
      { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 },
    );
    assert.equal(res.status, 0, `npm pack failed: ${res.stderr}`);
    packed = JSON.parse(res.stdout);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  function packageJsonOf(tarball) {
    const res = spawnSync('tar', ['-xzOf', path.join(dir, tarball), 'package/package.json'], { encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr);
    return JSON.parse(res.stdout);
  }

  it('nine tarballs, none with an install script or a binding.gyp', () => {
    assert.deepEqual(
      packed.map((p) => p.name).sort(),
      ['cipherlite', ...TARGETS.map((t) => `cipherlite-${t.name}`)].sort(),
    );
    for (const p of packed) {
      const pkg = packageJsonOf(p.filename);
      for (const name of INSTALL_SCRIPTS)
        assert.equal((pkg.scripts || {})[name], undefined, `${p.name}: scripts.${name}`);
      assert.ok(!p.files.some((f) => /(^|\/)binding\.gyp$/.test(f.path)), `${p.name}: binding.gyp`);
      assert.equal(pkg.version, rootPkg.version, `${p.name}: version`);
    }
  });

  it('the root tarball: the JS API and no native file', () => {
    const root = packed.find((p) => p.name === 'cipherlite');
    const files = root.files.map((f) => f.path);
    for (const f of [
      'package.json',
      'index.js',
      'index.d.ts',
      'relay.js',
      'relay.d.ts',
      'evolu.js',
      'evolu.mjs',
      'evolu.d.ts',
      'lib/index.js',
      'lib/native-binding.js',
      'lib/database.js',
      'lib/relay.js',
      'lib/evolu.js',
      'lib/methods/key-lifecycle.js',
      'bin/cipherlite.js',
      'lib/cli/options.js',
      'lib/shell/index.js',
      'lib/shell/child.js',
    ]) {
      assert.ok(files.includes(f), `contains ${f}`);
    }
    assert.ok(
      !files.some(
        (f) =>
          f.endsWith('.node') ||
          f.startsWith('src/') ||
          f.startsWith('crates/') ||
          f.startsWith('npm/') ||
          f.startsWith('target/'),
      ),
      `unexpected files: ${files.filter((f) => !/^((index|relay|evolu)\.(js|mjs|d\.ts)|lib\/|bin\/|package\.json|README|LICENSE)/.test(f))}`,
    );
    assert.deepEqual(
      packageJsonOf(root.filename).optionalDependencies,
      Object.fromEntries(TARGETS.map((t) => [`cipherlite-${t.name}`, rootPkg.version])),
    );
  });

  for (const target of TARGETS) {
    it(`cipherlite-${target.name}: os/cpu/libc, and its .node only`, () => {
      const p = packed.find((x) => x.name === `cipherlite-${target.name}`);
      const pkg = packageJsonOf(p.filename);
      assert.deepEqual(pkg.os, [target.os]);
      assert.deepEqual(pkg.cpu, [target.cpu]);
      assert.deepEqual(pkg.libc, target.libc ? [target.libc] : undefined);
      const expected = ['README.md', 'package.json'];
      if (fs.existsSync(packagedBinary(target))) expected.push(nodeFileName(target));
      assert.deepEqual(p.files.map((f) => f.path).sort(), expected.sort());
    });
  }
});
