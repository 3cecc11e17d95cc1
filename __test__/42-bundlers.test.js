'use strict';
// Bundled apps (docs/packaging.md's recipes): esbuild with cipherlite external, with the
// addon copied next to the bundle (--loader:.node=copy) or emitted as a file
// (--loader:.node=file), with a static platform entrypoint; and webpack with node-loader.
// Each bundle is built from an installed layout and run where no node_modules is.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { tempDir, removeDir } = require('./_helpers');
const { installInto, hostTarget, hostEntrypoint, runNode } = require('./_helpers-install');

// The app: core API, encryption, a user function, an iterator. Prints what it saw.
const APP = (specifier) => `
const path = require('path');
const Database = require(${JSON.stringify(specifier)});
const file = path.join(process.argv[2], 'app.db');
const key = Buffer.alloc(32, 9);
const db = new Database(file, { key });
db.function('twice', (x) => x * 2);
db.exec('CREATE TABLE t(x)');
const insert = db.prepare('INSERT INTO t VALUES (twice(?))');
db.transaction(() => { for (let i = 1; i <= 3; ++i) insert.run(i); })();
const seen = [];
for (const row of db.prepare('SELECT x FROM t ORDER BY x').iterate()) seen.push(row.x);
db.close();
const again = new Database(file, { key });
const count = again.prepare('SELECT count(*) AS n FROM t').get().n;
again.close();
let wrongKey;
try { new Database(file, { key: Buffer.alloc(32, 1) }).prepare('SELECT 1 FROM t').get(); } catch (e) { wrongKey = e.code; }
const header = require('fs').readFileSync(file).subarray(0, 16).toString('latin1');
console.log(JSON.stringify({ seen, count, wrongKey, plaintextHeader: header.startsWith('SQLite format 3') }));
`;

const EXPECTED = { seen: [2, 4, 6], count: 3, wrongKey: 'SQLITE_NOTADB', plaintextHeader: false };

let esbuildBin;
try {
  esbuildBin = require.resolve('esbuild/bin/esbuild');
} catch {
  esbuildBin = null;
}

function run(cwd, command, args) {
  const res = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(res.status, 0, `${path.basename(command)} ${args.join(' ')}:\n${res.stderr}${res.stdout}`);
  return res.stdout + res.stderr;
}

/** Moves `from` (a bundle's output folder) into a fresh folder with no node_modules
 * anywhere above it that has cipherlite, runs its `main` there and returns the output. */
function runAlone(from, main, t) {
  const alone = tempDir();
  t.after(() => removeDir(alone));
  const to = path.join(alone, 'dist');
  fs.cpSync(from, to, { recursive: true });
  return JSON.parse(runNode(to, [path.join(to, main), alone]));
}

describe('42 esbuild', { skip: !esbuildBin && 'esbuild is not installed (npm ci)' }, () => {
  let dir;
  before(() => {
    dir = installInto(tempDir());
    fs.writeFileSync(path.join(dir, 'app.js'), APP('cipherlite'));
    fs.writeFileSync(path.join(dir, 'static.js'), APP(`cipherlite/${hostEntrypoint()}`));
  });
  after(() => removeDir(dir));

  // The CLI as docs/packaging.md writes it. bin/esbuild is a JS launcher, or the native
  // binary itself once esbuild's install script has run.
  const launcher = esbuildBin && fs.readFileSync(esbuildBin).subarray(0, 2).toString() === '#!';
  const build = (entry, out, ...flags) => {
    const args = [entry, '--bundle', '--platform=node', `--outdir=${out}`, ...flags];
    return launcher ? run(dir, process.execPath, [esbuildBin, ...args]) : run(dir, esbuildBin, args);
  };

  it('--external:cipherlite: the bundle requires the installed package at run time', (t) => {
    build('app.js', 'dist-external', '--external:cipherlite');
    const bundle = fs.readFileSync(path.join(dir, 'dist-external', 'app.js'), 'utf8');
    assert.ok(bundle.includes('require("cipherlite")'), 'cipherlite stays a require');
    assert.ok(!bundle.includes('createDatabase'), 'no cipherlite code in the bundle');
    assert.deepEqual(fs.readdirSync(path.join(dir, 'dist-external')), ['app.js']);
    // run in place: node_modules is above it
    const tmp = tempDir();
    t.after(() => removeDir(tmp));
    assert.deepEqual(JSON.parse(runNode(dir, ['dist-external/app.js', tmp])), EXPECTED);
  });

  for (const loader of ['copy', 'file']) {
    it(`--loader:.node=${loader}: cipherlite and its addon in the output folder, run anywhere`, (t) => {
      const out = `dist-${loader}`;
      build('app.js', out, `--loader:.node=${loader}`);
      const files = fs.readdirSync(path.join(dir, out)).sort();
      assert.equal(files.length, 2, files.join(', '));
      assert.equal(files[0], 'app.js');
      assert.match(files[1], new RegExp(`^cipherlite\\.${hostTarget().target}-[A-Z0-9]+\\.node$`));
      assert.deepEqual(runAlone(path.join(dir, out), 'app.js', t), EXPECTED);
    });
  }

  it('ES module output (--format=esm) with the createRequire banner of docs/packaging.md', (t) => {
    fs.writeFileSync(
      path.join(dir, 'esm-app.mjs'),
      `import { createRequire as appRequire } from 'node:module';\n${APP('cipherlite').replace('const Database = require("cipherlite");', "import Database from 'cipherlite';").replace("const path = require('path');", "import path from 'node:path';").replace("require('fs')", "appRequire(import.meta.url)('fs')")}`,
    );
    const source = fs.readFileSync(path.join(dir, 'esm-app.mjs'), 'utf8');
    assert.ok(
      source.includes("import Database from 'cipherlite';") && !/\brequire\(/.test(source.replace(/appRequire\(/g, '')),
      'an ES module app',
    );
    const banner =
      "import { createRequire } from 'node:module'; import { fileURLToPath } from 'node:url'; import { dirname } from 'node:path'; " +
      'const require = createRequire(import.meta.url); const __filename = fileURLToPath(import.meta.url); const __dirname = dirname(__filename);';
    build(
      'esm-app.mjs',
      'dist-esm',
      '--format=esm',
      '--out-extension:.js=.mjs',
      '--loader:.node=copy',
      `--banner:js=${banner}`,
    );
    const files = fs.readdirSync(path.join(dir, 'dist-esm')).sort();
    assert.equal(files[1], 'esm-app.mjs', files.join(', '));
    assert.deepEqual(runAlone(path.join(dir, 'dist-esm'), 'esm-app.mjs', t), EXPECTED);
  });

  it('the static platform entrypoint bundles no platform detection', (t) => {
    build('static.js', 'dist-static', '--loader:.node=copy');
    const bundle = fs.readFileSync(path.join(dir, 'dist-static', 'static.js'), 'utf8');
    for (const absent of ['process.report', '/proc/self/maps', 'cipherlite-linux-arm64-musl', 'loadNativeBinding']) {
      assert.ok(!bundle.includes(absent), `bundle has no ${absent}`);
    }
    assert.deepEqual(runAlone(path.join(dir, 'dist-static'), 'static.js', t), EXPECTED);
  });
});

let webpack;
try {
  webpack = { cli: require.resolve('webpack-cli/bin/cli.js'), loader: require.resolve('node-loader') };
} catch {
  webpack = null;
}

describe('42 webpack with node-loader', { skip: !webpack && 'webpack is not installed (npm ci)' }, () => {
  let dir;
  before(() => {
    dir = installInto(tempDir());
    fs.writeFileSync(path.join(dir, 'app.js'), APP('cipherlite'));
    fs.writeFileSync(path.join(dir, 'static.js'), APP(`cipherlite/${hostEntrypoint()}`));
    fs.writeFileSync(
      path.join(dir, 'webpack.config.js'),
      `
			const path = require('path');
			module.exports = {
				mode: 'production',
				target: 'node',
				entry: { app: './app.js', static: './static.js' },
				output: { path: path.join(__dirname, 'dist'), filename: '[name].js' },
				module: { rules: [{ test: /\\.node$/, loader: ${JSON.stringify(webpack.loader)}, options: { name: '[name].[ext]' } }] },
				resolveLoader: { modules: [${JSON.stringify(path.join(__dirname, '..', 'node_modules'))}] },
				optimization: { minimize: false },
				ignoreWarnings: [{ module: /native-binding\\.js|lib[\\\\/]index\\.js|lib[\\\\/]addon\\.js/ }],
			};
		`,
    );
  });
  after(() => removeDir(dir));

  it('builds the app and the static-entrypoint app; both run with no node_modules', (t) => {
    const log = run(dir, process.execPath, [webpack.cli, '--config', 'webpack.config.js']);
    assert.doesNotMatch(log, /ERROR/, log);
    const files = fs.readdirSync(path.join(dir, 'dist')).sort();
    assert.ok(files.includes(`cipherlite.${hostTarget().target}.node`), files.join(', '));
    assert.deepEqual(runAlone(path.join(dir, 'dist'), 'app.js', t), EXPECTED);
    assert.deepEqual(runAlone(path.join(dir, 'dist'), 'static.js', t), EXPECTED);
    const bundle = fs.readFileSync(path.join(dir, 'dist', 'static.js'), 'utf8');
    assert.ok(!bundle.includes('process.report'), 'the static entrypoint bundles no platform detection');
  });
});
