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
// The addon is the `cipherlite-node` crate (a cdylib only: release builds get LTO).
const args = ['build', '-p', 'cipherlite-node', '--lib', '--message-format=short', ...(release ? ['--release'] : [])];
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
