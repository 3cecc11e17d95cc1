'use strict';
// The package's entrypoints as an installed project reaches them (package.json "exports"):
// require/import of the root, `cipherlite/relay`, `cipherlite/evolu`, the deep paths that worked before the
// map, and the static per-platform entrypoints (better-sqlite3 13's
// `better-sqlite3/linux-x64`). Runs under whatever Node runs the suite (CI: 20, 22, 24, 26).
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { tempDir, removeDir } = require('./_helpers');
const { ROOT, hostTarget, hostEntrypoint, installInto, runNode } = require('./_helpers-install');

const pkg = require('../package.json');
const { TARGETS } = require('../lib/native-binding');

describe('41 package.json exports', () => {
  it('every target of the map is a file the package publishes', () => {
    const published = (rel) =>
      pkg.files.some((f) => rel === f || (f.endsWith('/') && rel.startsWith(f))) || rel === 'package.json';
    for (const [key, value] of Object.entries(pkg.exports)) {
      const targets = typeof value === 'string' ? [value] : Object.values(value);
      for (const target of targets) {
        if (target.includes('*')) {
          assert.ok(published(target.slice(2).replace(/\*.*$/, '')), `${key} -> ${target}`);
          continue;
        }
        assert.ok(fs.existsSync(path.join(ROOT, target)), `${key} -> ${target} exists`);
        assert.ok(published(target.slice(2)), `${key} -> ${target} is in "files"`);
      }
      if (typeof value === 'object') assert.equal(Object.keys(value)[0], 'types', `${key}: "types" comes first`);
    }
  });

  it("a static entrypoint for every target, under its own name and better-sqlite3 13's", () => {
    const aliases = {
      'linux-x64-gnu': 'linux-x64',
      'linux-arm64-gnu': 'linux-arm64',
      'linux-x64-musl': 'linuxmusl-x64',
      'linux-arm64-musl': 'linuxmusl-arm64',
    };
    for (const target of TARGETS) {
      const file = `./lib/platform/${target}.js`;
      assert.equal(pkg.exports[`./${target}`].default, file);
      if (aliases[target]) assert.equal(pkg.exports[`./${aliases[target]}`].default, file);
      // One static require of its package; no detection, no other package.
      const source = fs.readFileSync(path.join(ROOT, file), 'utf8');
      const requires = [...source.matchAll(/require\(([^)]*)\)/g)].map((m) => m[1]);
      assert.deepEqual(requires, ["'../addon'", "'../database'", `'cipherlite-${target}'`, "'../sqlite-error'"], file);
    }
    assert.deepEqual(fs.readdirSync(path.join(ROOT, 'lib', 'platform')).sort(), TARGETS.map((t) => `${t}.js`).sort());
  });
});

describe('41 entrypoints of an installed package', () => {
  let dir;
  before(() => {
    dir = installInto(tempDir());
  });
  after(() => removeDir(dir));

  const run = (file, source) => {
    fs.writeFileSync(path.join(dir, file), source);
    return JSON.parse(runNode(dir, [file]));
  };

  it('CommonJS: the root, relay, package.json and the deep paths that worked before', () => {
    const out = run(
      'cjs.cjs',
      `
			const Database = require('cipherlite');
			const db = new Database(':memory:');
			const row = db.prepare('SELECT 40 + 2 AS x').get();
			db.close();
			const relay = require('cipherlite/relay');
			const same = [
				require('cipherlite/relay.js') === relay,
				require('cipherlite/lib/relay') === relay,
				require('cipherlite/lib/relay.js') === relay,
				require('cipherlite/index.js') === Database,
				require('cipherlite/index') === Database,
				require('cipherlite/lib') === Database,
				require('cipherlite/lib/index.js') === Database,
				require('cipherlite/lib/sqlite-error') === Database.SqliteError,
			];
			const evolu = require('cipherlite/evolu');
			const evoluSame = [require('cipherlite/evolu.js') === evolu, require('cipherlite/lib/evolu') === evolu];
			let notExported;
			try { require('cipherlite/src/lib.rs'); } catch (e) { notExported = e.code; }
			console.log(JSON.stringify({
				row, same, notExported,
				relay: Object.keys(relay).sort(),
				evolu: Object.keys(evolu).sort(), evoluSame,
				version: require('cipherlite/package.json').version,
				resolved: require.resolve('cipherlite'),
			}));
		`,
    );
    assert.deepEqual(out.row, { x: 42 });
    assert.deepEqual(out.same, [true, true, true, true, true, true, true, true]);
    assert.equal(out.notExported, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
    assert.deepEqual(out.relay, ['INFINITE_UPPER_BOUND', 'createRelayStorage']);
    assert.deepEqual(out.evolu, ['createEvoluSqliteDriver', 'createEvoluStorage']);
    assert.deepEqual(out.evoluSame, [true, true]);
    assert.equal(out.version, pkg.version);
    assert.equal(out.resolved, path.join(dir, 'node_modules', 'cipherlite', 'index.js'));
  });

  it('ES modules: default and named imports of the root and of evolu, import() of relay and of the platform entrypoint', () => {
    const out = run(
      'esm.mjs',
      `
			import Database, { SqliteError } from 'cipherlite';
			import * as relayNs from 'cipherlite/relay';
			import evoluDefault, { createEvoluStorage, createEvoluSqliteDriver } from 'cipherlite/evolu';
			import { createRequire } from 'node:module';
			const require = createRequire(import.meta.url);
			const db = new Database(':memory:');
			let code;
			try { db.exec('NOT SQL'); } catch (e) { code = e instanceof SqliteError && e.code; }
			const value = db.prepare('SELECT 7 AS v').get().v;
			db.close();
			const relay = await import('cipherlite/relay');
			const relayJs = await import('cipherlite/relay.js');
			const Platform = (await import('cipherlite/${hostEntrypoint()}')).default;
			const pdb = new Platform(':memory:');
			const pvalue = pdb.prepare('SELECT 8 AS v').get().v;
			pdb.close();
			const pkgJson = (await import('cipherlite/package.json', { with: { type: 'json' } })).default;
			console.log(JSON.stringify({
				value, code, pvalue,
				sameRoot: Database === require('cipherlite'),
				relayDefault: relay.default === require('cipherlite/relay'),
				relayNamed: typeof relay.createRelayStorage === 'function' && typeof relayNs.createRelayStorage === 'function',
				relayJs: relayJs.default === relay.default,
				evolu: [
					evoluDefault === require('cipherlite/evolu'),
					createEvoluStorage === require('cipherlite/evolu').createEvoluStorage,
					createEvoluSqliteDriver === require('cipherlite/evolu').createEvoluSqliteDriver,
					(await import('cipherlite/evolu.js')).createEvoluStorage === createEvoluStorage,
				],
				version: pkgJson.version,
			}));
		`,
    );
    assert.deepEqual(out, {
      value: 7,
      code: 'SQLITE_ERROR',
      pvalue: 8,
      sameRoot: true,
      relayDefault: true,
      relayNamed: true,
      relayJs: true,
      evolu: [true, true, true, true],
      version: pkg.version,
    });
  });

  it('the static entrypoint loads its package without platform detection and refuses nativeBinding', () => {
    const { packageName } = hostTarget();
    const entry = hostEntrypoint();
    const out = run(
      'static.cjs',
      `
			const Database = require('cipherlite/${entry}');
			const db = new Database(':memory:');
			const row = db.prepare('SELECT sqlite_version() AS v').get();
			const enc = require('path').join(__dirname, 'enc.db');
			const key = Buffer.alloc(32, 7);
			const edb = new Database(enc, { key });
			edb.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
			edb.close();
			const reopened = new Database(enc, { key });
			const x = reopened.prepare('SELECT x FROM t').get().x;
			reopened.close();
			let refused;
			try { new Database(':memory:', { nativeBinding: {} }); } catch (e) { refused = [e.constructor.name, e.message]; }
			let refusedNull;
			try { new Database(':memory:', { nativeBinding: undefined }); } catch (e) { refusedNull = e.message; }
			const loaded = Object.keys(require.cache).map((f) => require('path').relative(__dirname, f));
			console.log(JSON.stringify({ row, x, refused, refusedNull, loaded, sameError: Database.SqliteError === require('cipherlite').SqliteError }));
			db.close();
		`,
    );
    assert.equal(out.row.v, '3.54.1');
    assert.equal(out.x, 1);
    assert.deepEqual(out.refused, [
      'TypeError',
      'The "nativeBinding" option is only supported by the default cipherlite entrypoint',
    ]);
    assert.equal(out.refusedNull, 'The "nativeBinding" option is only supported by the default cipherlite entrypoint');
    assert.ok(
      out.loaded.includes(path.join('node_modules', 'cipherlite', 'lib', 'platform', `${hostTarget().target}.js`)),
      out.loaded.join('\n'),
    );
    assert.ok(
      out.loaded.some((f) => f.startsWith(path.join('node_modules', packageName))),
      out.loaded.join('\n'),
    );
    assert.ok(
      !out.loaded.some((f) => f.endsWith('native-binding.js')),
      'platform detection stayed out of the module graph',
    );
    assert.ok(
      !out.loaded.some(
        (f) => f.endsWith(path.join('cipherlite', 'index.js')) || f.endsWith(path.join('lib', 'index.js')),
      ),
      'the default entrypoint was not loaded',
    );
    assert.equal(out.sameError, true);
  });

  it("the static entrypoint of a package that is not installed fails on use with the package's name", () => {
    const other = TARGETS.find((t) => t !== hostTarget().target);
    const res = runNode(dir, [
      '-e',
      `
			const Database = require('cipherlite/${other}');
			try { new Database(':memory:'); } catch (e) { console.log(JSON.stringify([e.code, e.message.split('\\n')[0]])); }
		`,
    ]);
    const [code, message] = JSON.parse(res);
    assert.equal(code, 'MODULE_NOT_FOUND');
    assert.match(message, new RegExp(`Cannot find module 'cipherlite-${other}'`));
  });
});

describe('41 musl detection: the mapped loader first, the diagnostic report as fallback', () => {
  const { muslFromMaps } = require('../lib/native-binding');

  it('reads which libc loader /proc/self/maps shows', () => {
    const line = (file) => `7f1c2a000000-7f1c2a028000 r--p 00000000 08:01 1234   ${file}\n`;
    assert.equal(muslFromMaps(line('/lib/ld-musl-x86_64.so.1')), true);
    assert.equal(muslFromMaps(line('/lib/ld-musl-aarch64.so.1') + line('/usr/lib/libstdc++.so.6')), true);
    assert.equal(muslFromMaps(line('/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2')), false);
    assert.equal(muslFromMaps(line('/lib/aarch64-linux-gnu/libc.so.6')), false);
    assert.equal(muslFromMaps(line('/usr/lib/libc.so.6') + line('/lib64/ld-linux-x86-64.so.2')), false);
    assert.equal(muslFromMaps(line('[vdso]') + line('/usr/bin/node')), null);
    assert.equal(muslFromMaps(''), null);
  });

  const probe = (prelude) =>
    runNode(ROOT, [
      '-e',
      `
		${prelude}
		let reportCalls = 0;
		const report = process.report;
		const getReport = report.getReport.bind(report);
		report.getReport = (...a) => { reportCalls++; return getReport(...a); };
		const { isMusl } = require('./lib/native-binding');
		const musl = isMusl();
		console.log(JSON.stringify({ musl, reportCalls, header: !getReport().header.glibcVersionRuntime }));
	`,
    ]);

  it(
    'on Linux it answers from /proc/self/maps without the diagnostic report',
    { skip: process.platform !== 'linux' && 'Linux only' },
    () => {
      const out = JSON.parse(probe(''));
      assert.equal(out.reportCalls, 0);
      assert.equal(out.musl, out.header, 'agrees with the diagnostic report');
    },
  );

  it(
    'without /proc/self/maps it falls back to the diagnostic report',
    { skip: process.platform !== 'linux' && 'Linux only' },
    () => {
      const out = JSON.parse(
        probe(`
			const fs = require('fs');
			const readFileSync = fs.readFileSync;
			fs.readFileSync = (file, ...rest) => {
				if (file === '/proc/self/maps') throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
				return readFileSync(file, ...rest);
			};
		`),
      );
      assert.equal(out.reportCalls, 1);
      assert.equal(out.musl, out.header);
    },
  );
});
