'use strict';
// Builds the release `.node` of each target with cargo-zigbuild and puts it into its
// package folder, npm/<target>/cipherlite.<target>.node (git-ignored, packed by npm).
//   npm run build:targets                         all eight targets, one after the other
//   npm run build:targets -- --targets linux-x64-gnu,darwin-arm64
//   npm run build:targets -- --targets host       the running platform's target only
// Needs python3 (for the pinned ziglang and cargo-zigbuild in .venv-build/) and rustup.
// Builds go to target/targets/ so that the debug build in target/debug stays warm.

const fs = require('fs');
const path = require('path');
const {
  ROOT,
  targetsFromArgs,
  ensureBuildTools,
  ensureRustTargets,
  buildTarget,
  installFile,
  packagedBinary,
  sha256,
  log,
} = require('./lib/targets');

function main(argv) {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log('usage: node scripts/build-targets.js [--targets all|host|a,b,...]');
    return;
  }
  const targets = targetsFromArgs(argv, 'all');
  const toolsBin = ensureBuildTools();
  ensureRustTargets(targets);
  const rows = [];
  for (const target of targets) {
    const started = Date.now();
    const built = buildTarget(target, { toolsBin, skipRustTargets: true });
    const dest = packagedBinary(target);
    installFile(built, dest);
    rows.push({
      target: target.name,
      file: path.relative(ROOT, dest),
      bytes: fs.statSync(dest).size,
      seconds: Math.round((Date.now() - started) / 1000),
      sha256: sha256(dest),
    });
  }
  log('done');
  for (const r of rows) {
    console.log(
      `${r.target.padEnd(17)} ${String(r.bytes).padStart(9)} B ${String(r.seconds).padStart(4)} s  ${r.sha256}  ${r.file}`,
    );
  }
}

try {
  main(process.argv.slice(2));
} catch (err) {
  console.error(`build-targets: ${err.message}`);
  process.exitCode = 1;
}
