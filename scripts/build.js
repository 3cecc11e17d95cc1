'use strict';
// Builds the addon for this machine with cargo and copies it to
// ./cipherlite.<target>.node, where lib/native-binding.js looks first.
//   node scripts/build.js            debug build (tests)
//   node scripts/build.js --release  release build (benchmarks)

const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { targetName } = require('../lib/native-binding');

const root = path.join(__dirname, '..');
const release = process.argv.includes('--release');
// Release builds go through `cargo rustc --crate-type cdylib`: cargo skips LTO for a
// library that is also built as an rlib (the tests and benches use the rlib).
const args = release
  ? ['rustc', '--lib', '--release', '--crate-type', 'cdylib', '--message-format=short']
  : ['build', '--lib', '--message-format=short'];
execFileSync('cargo', args, { cwd: root, stdio: 'inherit' });

const profileDir = path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), release ? 'release' : 'debug');
const libName =
  process.platform === 'win32'
    ? 'cipherlite.dll'
    : process.platform === 'darwin'
      ? 'libcipherlite.dylib'
      : 'libcipherlite.so';
const built = path.join(profileDir, libName);
const dest = path.join(root, `cipherlite.${targetName()}.node`);
// Copy to a temporary name and rename: a process that has the old file loaded keeps it.
fs.copyFileSync(built, `${dest}.tmp`);
fs.renameSync(`${dest}.tmp`, dest);
console.log(`built ${path.relative(root, dest)} (${release ? 'release' : 'debug'})`);
