'use strict';
// ESLint's flat config (`npm run lint`). Formatting is Prettier's (`npm run format`,
// `.prettierrc.json`), so this checks only what a formatter cannot: mistakes such as unused
// variables, undefined names, unreachable code. The code is CommonJS for Node.js >= 20
// (package.json "engines"); the tests run under `node --test` and require node:test
// explicitly, so they need no extra globals.

const js = require('@eslint/js');
const globals = require('globals');

module.exports = [
  {
    // Build output, dependencies, pinned sources and generated or downloaded trees.
    ignores: [
      'node_modules/**',
      'target/**',
      'vendor/**',
      'fuzz/**',
      'npm/**',
      '.cache/**',
      '.venv*/**',
      'benchmark/results/**',
      '**/*.d.ts',
    ],
  },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: {
      ecmaVersion: 2023, // what Node.js 20 runs
      sourceType: 'commonjs',
      globals: { ...globals.node },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Arguments are not checked: a function's declared arity is API here (function(),
      // aggregate() and table() take their SQL argument count from `fn.length`, as
      // better-sqlite3 does), so an unused argument is often deliberate. `_name` marks a
      // binding kept for its position or for documentation.
      'no-unused-vars': [
        'error',
        {
          args: 'none',
          varsIgnorePattern: '^_',
          caughtErrors: 'none',
          ignoreRestSiblings: true,
        },
      ],
      // A `while (true)` loop with a `break` is the clearest form of some read loops.
      'no-constant-condition': ['error', { checkLoops: false }],
      // Empty catch blocks are deliberate here (best-effort cleanup), but must say so.
      'no-empty': ['error', { allowEmptyCatch: true }],
      strict: ['error', 'global'],
      'no-var': 'error',
      'prefer-const': ['error', { destructuring: 'all' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // What the tests do on purpose: arrays with holes (the argument checks reject them) and
    // generators that throw before their first row (a virtual table's failing rows()).
    files: ['__test__/**'],
    rules: {
      'no-sparse-arrays': 'off',
      'require-yield': 'off',
    },
  },
];
