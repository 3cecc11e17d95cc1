'use strict';
// Builds __test__/fixtures/test-extension.c into target/test-extension.<so|dylib> with the
// system C compiler, against the SQLite headers of the libsqlite3-sys crate the addon is
// built from; prints the path. scripts/run-tests.js sets CIPHERLITE_TEST_EXTENSION to it.

const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const ROOT = path.join(__dirname, '..');

function sqliteIncludeDir() {
  const metadata = JSON.parse(
    execFileSync('cargo', ['metadata', '--format-version', '1'], {
      cwd: ROOT,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    }),
  );
  const pkg = metadata.packages.find((p) => p.name === 'libsqlite3-sys');
  if (!pkg) throw new Error('libsqlite3-sys not found in cargo metadata');
  return path.join(path.dirname(pkg.manifest_path), 'sqlite3');
}

function buildTestExtension() {
  const source = path.join(ROOT, '__test__', 'fixtures', 'test-extension.c');
  const ext = process.platform === 'darwin' ? 'dylib' : 'so';
  const out = path.join(process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target'), `test-extension.${ext}`);
  if (fs.existsSync(out) && fs.statSync(out).mtimeMs >= fs.statSync(source).mtimeMs) return out;
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const cc = process.env.CC || 'cc';
  const shared = process.platform === 'darwin' ? ['-dynamiclib'] : ['-shared'];
  execFileSync(cc, [...shared, '-fPIC', '-O2', '-I', sqliteIncludeDir(), '-o', out, source], { stdio: 'inherit' });
  return out;
}

module.exports = { buildTestExtension };

if (require.main === module) console.log(buildTestExtension());
