'use strict';
// The root package as npm publishes it. In the repository, package.json does not list the
// per-target packages: they are unpublished while developing, and `npm ci` fails on
// dependencies its lockfile can't hold. The published manifest adds them as
// optionalDependencies at the root's exact version (as napi-rs's `napi prepublish` does).

const fs = require('fs');
const path = require('path');
const { TARGETS, ROOT } = require('./targets');

/** The published package.json for the repository's `pkg`. */
function publishableManifest(pkg) {
  return {
    ...pkg,
    optionalDependencies: Object.fromEntries(TARGETS.map((t) => [`cipherlite-${t.name}`, pkg.version])),
  };
}

/** Copies what the root package publishes into `dest` with the publishable manifest;
 * returns `dest`. */
function stageRootPackage(dest) {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(dest, { recursive: true });
  const entries = [...pkg.files, 'README.md', 'LICENSE'];
  for (const entry of entries) {
    const from = path.join(ROOT, entry);
    if (fs.existsSync(from)) fs.cpSync(from, path.join(dest, entry), { recursive: true });
  }
  fs.writeFileSync(path.join(dest, 'package.json'), `${JSON.stringify(publishableManifest(pkg), null, 2)}\n`);
  return dest;
}

module.exports = { publishableManifest, stageRootPackage };
