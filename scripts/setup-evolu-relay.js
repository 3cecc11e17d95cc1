'use strict';
// Installs Evolu's own relay server for __test__/74-evolu-start-relay.test.js into
// __test__/evolu-relay/node_modules (git-ignored), from its pinned package-lock.json:
// @evolu/nodejs 3.0.0-next.3 with the @evolu/common it imports from (8.0.0-next.5; the
// project's own devDependency 8.11.0 lacks `lazyVoid`). Without install scripts: the
// better-sqlite3 @evolu/nodejs depends on is never loaded (the test hands startRelay
// cipherlite's driver). Idempotent: quick when the lockfile is what was installed.
//   node scripts/setup-evolu-relay.js

const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const dir = path.join(__dirname, '..', '__test__', 'evolu-relay');

function setupEvoluRelay() {
  const lock = fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8');
  const stamp = path.join(dir, 'node_modules', '.cipherlite-installed-lock');
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === lock) return true;
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) return false;
  fs.writeFileSync(stamp, lock);
  return true;
}

module.exports = { setupEvoluRelay, evoluRelayDir: dir };

if (require.main === module) process.exitCode = setupEvoluRelay() ? 0 : 1;
