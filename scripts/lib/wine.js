'use strict';
// The Wine that runs Windows builds of Node.js for scripts/test-windows.js (docs/build-targets.md
// §4, "Windows x64, under Wine").
//
// Debian 13's Wine 10, unpacked into a private folder on a Debian 12 host. Debian 12's own
// Wine 8.0 starts Node 22 but not Node 24: V8 13.6 reserves its code and trusted spaces with
// `NtAllocateVirtualMemoryEx(MEM_RESERVE | MEM_RESERVE_PLACEHOLDER)`, which Wine 8 refuses
// ("wrong alloc type flags"; V8 then aborts in `SegmentedTable::InitializeTable`, "subspace
// allocation"); Wine 9 and later implement placeholder reservations. Debian 12 has no newer
// Wine (backports included), so Debian 13's packages are fetched with the private apt
// configuration of scripts/lib/debian.js and unpacked with dpkg -x, the system left alone:
// - wine64 (the loader and wineserver) and libwine (ntdll.so and the other Unix libraries,
//   the PE DLLs), with Debian 13's libc6 and libunwind8 (Wine 10 needs glibc 2.38, Debian 12
//   has 2.36). The loader and wineserver get the private ld.so as their interpreter and the
//   private library folder as their RPATH (DT_RPATH, which also governs the libraries they
//   load and dlopen), by Debian 13's patchelf run through that ld.so. Libraries the private
//   folder lacks come from the host (liblzma for libunwind, say): built for an older glibc,
//   they run on the newer one. Wine starts wineserver and every new Windows process (the
//   children Node's test runner spawns) by running these same files again, so every process
//   of the run uses the private libc; WINELOADER names the loader for them.
// - libwine's bin folder holds Debian's `wineserver` wrapper script, which runs the system's
//   /usr/lib/wine/wineserver64 by absolute path (a Wine 8 server: "version mismatch"): the
//   wrapper is replaced by the real wineserver64.
// - libz-mingw-w64's zlib1.dll, which user32.dll imports: libwine's postinst copies it into
//   Wine's DLL folder with "Wine builtin DLL" at offset 64, and so is it done here.
// Wine 10 has bcryptprimitives.dll (ProcessPrng), so its prefix needs no stand-in.

const fs = require('fs');
const path = require('path');
const { run, log } = require('./targets');
const debian = require('./debian');

const SUITE = 'trixie';

const DEBS = {
  wine64: { pkg: 'wine64' },
  libwine: { pkg: 'libwine' },
  libc6: { pkg: 'libc6' },
  libunwind8: { pkg: 'libunwind8' },
  zlib: { pkg: 'libz-mingw-w64', keep: ['usr/x86_64-w64-mingw32/lib/zlib1.dll'] },
  // patchelf (and the C++ runtime it needs), run only through the private ld.so.
  patchelf: { pkg: 'patchelf', keep: ['usr/bin/patchelf'] },
  libstdcxx: { pkg: 'libstdc++6' },
  libgcc: { pkg: 'libgcc-s1' },
};

const LIBDIR = 'usr/lib/x86_64-linux-gnu';

/** Marks a PE DLL as one of Wine's builtins, as libwine's postinst does for zlib1.dll. */
function wineBuiltin(src, dest) {
  const pe = fs.readFileSync(src);
  const tag = Buffer.alloc(32);
  tag.write('Wine builtin DLL', 'latin1');
  fs.writeFileSync(dest, Buffer.concat([pe.subarray(0, 64), tag, pe.subarray(96)]));
}

/**
 * Debian 13's Wine under `cacheDir`/wine-trixie/, downloaded and set up when missing:
 * `{ root, loader, server, env, version }`, where `env` (WINELOADER) goes to every Wine process.
 */
function trixieWine(cacheDir) {
  const sysroot = path.join(cacheDir, `wine-${SUITE}`);
  const libdir = path.join(sysroot, LIBDIR);
  const ldso = path.join(libdir, 'ld-linux-x86-64.so.2');
  const loader = path.join(sysroot, 'usr/lib/wine/wine64');
  const server = path.join(sysroot, 'usr/lib/wine/wineserver');
  const ready = path.join(sysroot, '.done', 'ready');
  const unpacked = debian.ensureDebs({
    sysroot,
    aptDir: path.join(cacheDir, 'apt'),
    suite: SUITE,
    debs: DEBS,
    keys: Object.keys(DEBS),
  });
  // The interpreter and RPATH are absolute paths: a sysroot moved elsewhere is set up again.
  const readyFor = fs.existsSync(ready) ? fs.readFileSync(ready, 'utf8') : null;
  if (unpacked.length || readyFor !== sysroot) {
    fs.rmSync(ready, { force: true });
    log(`setting up Debian ${SUITE}'s Wine in ${sysroot}/`);
    const server64 = path.join(sysroot, 'usr/lib/wine/wineserver64');
    if (fs.existsSync(server64)) fs.renameSync(server64, server);
    const patchelf = (args) =>
      run(ldso, ['--library-path', libdir, path.join(sysroot, 'usr/bin/patchelf'), ...args], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    for (const exe of [loader, server]) {
      patchelf(['--set-interpreter', ldso, '--force-rpath', '--set-rpath', libdir, exe]);
    }
    wineBuiltin(
      path.join(sysroot, 'usr/x86_64-w64-mingw32/lib/zlib1.dll'),
      path.join(libdir, 'wine/x86_64-windows/zlib1.dll'),
    );
    fs.writeFileSync(ready, sysroot);
  }
  const deb = fs.readFileSync(path.join(sysroot, '.done', 'wine64'), 'utf8').trim();
  const version = (/^wine64_([^_]+)_/.exec(deb) || [])[1] || deb;
  return { root: sysroot, loader, server, env: { WINELOADER: loader }, version: `Wine ${version}, Debian ${SUITE}` };
}

module.exports = { trixieWine };
