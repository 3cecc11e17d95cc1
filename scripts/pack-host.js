'use strict';
// Packs the root package and the host target's package (with a fresh release build of the
// host target) into DIR, for testing an install that needs no network and no compiler:
//   npm run pack:host -- DIR
//   mkdir app && cd app && npm init -y && npm install --offline DIR/*.tgz
//   node -e "console.log(new (require('cipherlite'))(':memory:').prepare('select sqlite_version() v').get())"
// Options: --no-build  pack the npm/<target>/ build as it is (fails if there is none).

const fs = require('fs');
const path = require('path');
const {
  ROOT,
  hostTarget,
  buildTarget,
  installFile,
  packagedBinary,
  packageDir,
  output,
  log,
} = require('./lib/targets');
const { stageRootPackage } = require('./lib/root-package');

function main(argv) {
  const positional = argv.filter((a) => !a.startsWith('--'));
  if (argv.includes('--help') || positional.length !== 1) {
    console.log('usage: node scripts/pack-host.js [--no-build] DIR');
    return argv.includes('--help') ? 0 : 2;
  }
  const dest = path.resolve(positional[0]);
  fs.mkdirSync(dest, { recursive: true });
  const target = hostTarget();
  const binary = packagedBinary(target);
  if (!argv.includes('--no-build')) installFile(buildTarget(target), binary);
  if (!fs.existsSync(binary)) {
    throw new Error(`${path.relative(ROOT, binary)} is missing: run npm run build:targets -- --targets host`);
  }
  // --ignore-scripts: nothing of ours runs at pack time either (there are no scripts to run).
  const staged = stageRootPackage(path.join(ROOT, 'target', 'staged-root'));
  const json = output(
    'npm',
    ['pack', '--json', '--ignore-scripts', '--pack-destination', dest, staged, packageDir(target)],
    { cwd: ROOT, maxBuffer: 64 << 20 },
  );
  const packed = JSON.parse(json);
  for (const p of packed) {
    log(`${p.filename}: ${p.entryCount} files, ${p.size} B`);
    console.log(path.join(dest, p.filename));
  }
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (err) {
  console.error(`pack-host: ${err.message}`);
  process.exitCode = 1;
}
