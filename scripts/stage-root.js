'use strict';
// Writes the root package as npm publishes it (see scripts/lib/root-package.js) into DIR
// and prints DIR: `npm publish "$(node scripts/stage-root.js DIR)"`.
const path = require('path');
const { stageRootPackage } = require('./lib/root-package');

const dest = process.argv[2];
if (!dest) {
  console.error('usage: node scripts/stage-root.js DIR');
  process.exitCode = 2;
} else {
  console.log(stageRootPackage(path.resolve(dest)));
}
