'use strict';
// index.d.ts is checked by the TypeScript compiler: a typical program must compile under
// --strict, and misuse (a string key, an unknown layout) must not.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { execFileSync } = require('child_process');
const { tempDir, removeDir } = require('./_helpers');

test('index.d.ts compiles a typical program under --strict and rejects misuse', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const usage = path.join(__dirname, 'types', 'usage.ts');
  let output = '';
  try {
    output = execFileSync(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--strict',
        '--target',
        'es2020',
        '--module',
        'commonjs',
        '--moduleResolution',
        'node',
        '--types',
        'node',
        usage,
      ],
      { encoding: 'utf8', cwd: path.join(__dirname, '..') },
    );
  } catch (err) {
    assert.fail(`tsc reported errors:\n${err.stdout}${err.stderr}`);
  }
  assert.equal(output.trim(), '');
});

// Code written against @types/better-sqlite3 (the idioms of its namespace): it compiles
// against @types/better-sqlite3 itself, and unchanged against cipherlite's index.d.ts
// when `better-sqlite3` resolves to it (npm install better-sqlite3@npm:cipherlite).
const fs = require('fs');

function compileProject(dir, compilerOptions, files) {
  const tsc = require.resolve('typescript/bin/tsc');
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2020',
        types: ['node'],
        typeRoots: [path.join(__dirname, '..', 'node_modules', '@types')],
        ...compilerOptions,
      },
      files,
    }),
  );
  try {
    return execFileSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], { encoding: 'utf8', cwd: dir });
  } catch (err) {
    return assert.fail(`tsc reported errors:\n${err.stdout}${err.stderr}`);
  }
}

const idioms = path.join(__dirname, 'types', 'bs3-idioms', 'idioms.ts');

test('@types/better-sqlite3 idioms compile against @types/better-sqlite3 (they are its idioms)', () => {
  const dir = tempDir('tsc');
  try {
    const trace = compileProject(
      dir,
      { module: 'commonjs', moduleResolution: 'node', esModuleInterop: true, traceResolution: true },
      [idioms],
    );
    assert.match(
      trace,
      /Module name 'better-sqlite3' was successfully resolved to '[^']*@types\/better-sqlite3\/index\.d\.ts'/,
    );
  } finally {
    removeDir(dir);
  }
});

test("the same idioms compile unchanged against cipherlite's index.d.ts", () => {
  const dir = tempDir('tsc');
  try {
    const trace = compileProject(
      dir,
      {
        module: 'commonjs',
        moduleResolution: 'node',
        esModuleInterop: true,
        traceResolution: true,
        baseUrl: '.',
        paths: { 'better-sqlite3': [path.join(__dirname, '..', 'index.d.ts')] },
      },
      [idioms],
    );
    assert.match(
      trace,
      new RegExp(
        `Module name 'better-sqlite3' was successfully resolved to '${path.join(__dirname, '..', 'index.d.ts').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'`,
      ),
    );
  } finally {
    removeDir(dir);
  }
});

test('ESM TypeScript (module node16/nodenext) resolves cipherlite, cipherlite/relay and a platform entrypoint through "exports"', () => {
  const { installInto, hostEntrypoint } = require('./_helpers-install');
  const dir = installInto(tempDir('tsc'));
  try {
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    fs.writeFileSync(
      path.join(dir, 'app.ts'),
      `
      import Database from 'cipherlite';
      import Platform from 'cipherlite/${hostEntrypoint()}';
      import relay from 'cipherlite/relay';
      import type { RelayStorage } from 'cipherlite/relay';
      const db: Database.Database = new Database(':memory:');
      const pdb: Database.Database = new Platform(':memory:');
      const storage: RelayStorage = relay.createRelayStorage(db);
      const stmt: Database.Statement<{ id: number }, { id: number }> = db.prepare('SELECT @id AS id');
      const row: { id: number } | undefined = stmt.get({ id: 1 });
      void storage; void row; void pdb;
      // @ts-expect-error: not exported by the package
      import('cipherlite/src/lib.rs');
    `,
    );
    const trace = compileProject(dir, { module: 'nodenext', moduleResolution: 'nodenext', traceResolution: true }, [
      'app.ts',
    ]);
    assert.match(
      trace,
      /Module name 'cipherlite' was successfully resolved to '[^']*node_modules\/cipherlite\/index\.d\.ts'/,
    );
    assert.match(
      trace,
      /Module name 'cipherlite\/relay' was successfully resolved to '[^']*node_modules\/cipherlite\/relay\.d\.ts'/,
    );
  } finally {
    removeDir(dir);
  }
});

// cipherlite/evolu's typings take Evolu's own types from @evolu/common (an optional peer
// dependency): with it installed beside cipherlite, an ES module and a CommonJS program
// get Evolu's `Storage` and `CreateSqliteDriver`, and misuse does not compile. Evolu's own
// declarations need the DOM and disposable libs, as in any project that uses Evolu.
for (const type of ['module', 'commonjs']) {
  test(`cipherlite/evolu from ${type === 'module' ? 'an ES module' : 'CommonJS'}: Evolu's Storage and CreateSqliteDriver, misuse refused`, () => {
    const { installInto } = require('./_helpers-install');
    const dir = installInto(tempDir('tsc'));
    try {
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type }));
      fs.mkdirSync(path.join(dir, 'node_modules', '@evolu'), { recursive: true });
      fs.symlinkSync(
        path.join(__dirname, '..', 'node_modules', '@evolu', 'common'),
        path.join(dir, 'node_modules', '@evolu', 'common'),
      );
      const imports =
        type === 'module'
          ? `import Database from 'cipherlite';
             import { createEvoluStorage, createEvoluSqliteDriver } from 'cipherlite/evolu';`
          : `import Database = require('cipherlite');
             import evolu = require('cipherlite/evolu');
             const { createEvoluStorage, createEvoluSqliteDriver } = evolu;`;
      fs.writeFileSync(
        path.join(dir, 'app.ts'),
        `${imports}
        import type { EvoluStorageDeps } from 'cipherlite/evolu';
        import type { CreateSqliteDriver, Random } from '@evolu/common';
        import type { Storage } from '@evolu/common/local-first';
        declare const random: Random;
        const db = new Database(':memory:');
        const deps: EvoluStorageDeps = { db, random };
        const storage: Storage = createEvoluStorage(deps)({
          isOwnerWithinQuota: (ownerId: string, requiredBytes: number) => ownerId.length === 22 && requiredBytes < 1e6,
        });
        const asyncQuota: Storage = createEvoluStorage(deps)({ isOwnerWithinQuota: async () => true });
        const driver: CreateSqliteDriver = createEvoluSqliteDriver({ key: Buffer.alloc(32), pageSize: 4096, timeout: 1000 });
        const plainDriver: CreateSqliteDriver = createEvoluSqliteDriver();
        // @ts-expect-error: the quota callback gets Evolu's OwnerId string, not the bytes
        createEvoluStorage(deps)({ isOwnerWithinQuota: (ownerId: Uint8Array) => ownerId.length === 16 });
        // @ts-expect-error: random is Evolu's Random, not a function
        createEvoluStorage({ db, random: Math.random });
        // @ts-expect-error: a key is bytes
        createEvoluSqliteDriver({ key: 'secret' });
        void storage; void asyncQuota; void driver; void plainDriver;
      `,
      );
      const trace = compileProject(
        dir,
        {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          lib: ['es2022', 'esnext.disposable', 'dom'],
          listFiles: true,
        },
        ['app.ts'],
      );
      assert.match(trace, /node_modules\/cipherlite\/evolu\.d\.ts$/m);
      assert.match(trace, /@evolu\/common\/dist\/src\/local-first\/Storage\.d\.ts$/m);
    } finally {
      removeDir(dir);
    }
  });
}
