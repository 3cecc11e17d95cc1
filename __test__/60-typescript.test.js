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
