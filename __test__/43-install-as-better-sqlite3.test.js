'use strict';
// Installing cipherlite *as* better-sqlite3 (`npm install better-sqlite3@npm:cipherlite`)
// for code and ORMs that require('better-sqlite3'): npm then checks ORMs' peer ranges
// (drizzle-orm: better-sqlite3 >=7) against cipherlite's 0.x version and refuses; the
// `overrides` recipe of docs/packaging.md makes it install, and drizzle runs on it.
// npm works offline here: every package is a local tarball (the registry alias itself is
// npm's `alias@npm:name` form of the same dependency, which a local tarball stands for).
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { tempDir, removeDir } = require('./_helpers');
const { ROOT, hostTarget, runNode } = require('./_helpers-install');

// (drizzle-orm's exports map has no ./package.json: find its folder from its main file)
let drizzleDir = null;
try {
  for (let d = path.dirname(require.resolve('drizzle-orm')); d !== path.dirname(d); d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, 'package.json')) && path.basename(d) === 'drizzle-orm') {
      drizzleDir = d;
      break;
    }
  }
} catch {
  /* not installed */
}

function npm(cwd, args) {
  return spawnSync('npm', [...args, '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
}

describe(
  '43 cipherlite installed as better-sqlite3, with an ORM',
  { skip: !drizzleDir && 'drizzle-orm is not installed (npm ci)' },
  () => {
    let dir;
    let tarballs;
    before(() => {
      dir = tempDir();
      const packs = path.join(dir, 'packs');
      fs.mkdirSync(packs);
      // The root package as published, minus the optional platform packages (not on any
      // registry here); the host's platform package with the local build.
      const staged = require('../scripts/lib/root-package').stageRootPackage(path.join(dir, 'staged'));
      const manifest = JSON.parse(fs.readFileSync(path.join(staged, 'package.json'), 'utf8'));
      delete manifest.optionalDependencies;
      fs.writeFileSync(path.join(staged, 'package.json'), JSON.stringify(manifest, null, 2));
      const { target, packageName } = hostTarget();
      const platform = path.join(dir, 'platform');
      fs.mkdirSync(platform);
      fs.copyFileSync(path.join(ROOT, 'npm', target, 'package.json'), path.join(platform, 'package.json'));
      fs.copyFileSync(path.join(ROOT, `cipherlite.${target}.node`), path.join(platform, `cipherlite.${target}.node`));
      const res = spawnSync(
        'npm',
        ['pack', '--json', '--ignore-scripts', '--pack-destination', packs, staged, platform, drizzleDir],
        { encoding: 'utf8', maxBuffer: 64 << 20 },
      );
      assert.equal(res.status, 0, res.stderr);
      const [root, plat, drizzle] = JSON.parse(res.stdout).map((p) => path.join(packs, p.filename));
      tarballs = { root, plat, drizzle, packageName, version: manifest.version };
    });
    after(() => removeDir(dir));

    function app(name, extra) {
      const appDir = path.join(dir, name);
      fs.mkdirSync(appDir);
      fs.writeFileSync(
        path.join(appDir, 'package.json'),
        JSON.stringify(
          {
            name,
            version: '1.0.0',
            private: true,
            dependencies: {
              'better-sqlite3': `file:${tarballs.root}`,
              [tarballs.packageName]: `file:${tarballs.plat}`,
              'drizzle-orm': `file:${tarballs.drizzle}`,
            },
            ...extra,
          },
          null,
          2,
        ),
      );
      return appDir;
    }

    it('without overrides npm refuses: drizzle-orm wants better-sqlite3 >=7, cipherlite is 0.x', () => {
      const appDir = app('plain');
      const res = npm(appDir, ['install']);
      assert.notEqual(res.status, 0, res.stdout);
      assert.match(res.stderr, /ERESOLVE/);
      assert.match(res.stderr, /peerOptional better-sqlite3@">=7" from drizzle-orm/);
    });

    it('with overrides { "drizzle-orm": { "better-sqlite3": "$better-sqlite3" } } it installs and drizzle runs on cipherlite', () => {
      const appDir = app('overridden', { overrides: { 'drizzle-orm': { 'better-sqlite3': '$better-sqlite3' } } });
      const res = npm(appDir, ['install']);
      assert.equal(res.status, 0, res.stderr);
      const installed = JSON.parse(
        fs.readFileSync(path.join(appDir, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8'),
      );
      assert.equal(installed.name, 'cipherlite');
      assert.equal(installed.version, tarballs.version);
      // npm agrees the tree is valid now
      const ls = npm(appDir, ['ls', '--all']);
      assert.equal(ls.status, 0, ls.stderr + ls.stdout);
      fs.writeFileSync(
        path.join(appDir, 'app.js'),
        `
			const Database = require('better-sqlite3');
			const { drizzle } = require('drizzle-orm/better-sqlite3');
			const { sqliteTable, integer, text } = require('drizzle-orm/sqlite-core');
			const { eq, sql } = require('drizzle-orm');
			const path = require('path');
			const users = sqliteTable('users', { id: integer('id').primaryKey(), name: text('name').notNull() });
			const sqlite = new Database(path.join(__dirname, 'app.db'), { key: Buffer.alloc(32, 3) });
			const db = drizzle(sqlite);
			db.run(sql\`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)\`);
			db.insert(users).values([{ id: 1, name: 'Ada' }, { id: 2, name: 'Grace' }]).run();
			db.update(users).set({ name: 'Grace Hopper' }).where(eq(users.id, 2)).run();
			const rows = db.select().from(users).orderBy(users.id).all();
			const one = db.select({ name: users.name }).from(users).where(eq(users.id, 1)).get();
			const counted = db.transaction((tx) => tx.select({ n: sql\`count(*)\` }).from(users).get());
			sqlite.close();
			console.log(JSON.stringify({ rows, one, counted, isCipherlite: typeof Database.prototype.explain === 'function' && require('better-sqlite3/package.json').name }));
		`,
      );
      assert.deepEqual(JSON.parse(runNode(appDir, ['app.js'])), {
        rows: [
          { id: 1, name: 'Ada' },
          { id: 2, name: 'Grace Hopper' },
        ],
        one: { name: 'Ada' },
        counted: { n: 2 },
        isCipherlite: 'cipherlite',
      });
      // the file on disk is encrypted
      assert.notEqual(
        fs.readFileSync(path.join(appDir, 'app.db')).subarray(0, 15).toString('latin1'),
        'SQLite format 3',
      );
    });
  },
);
