'use strict';
// What every `cipherlite` command shares: the exit-code families, option parsing, reading
// a key from a file or the environment (never from argv: it would show in `ps` and in shell
// history), --page-size, --cipher, and how an error becomes an exit code and a message.

const fs = require('node:fs');
const { AEGIS_ALGORITHMS, keyLength } = require('../encryption-options');

const EXIT = {
  OK: 0,
  VERIFY_FAILED: 1, // verify found a problem; shell: a statement or dot-command failed
  USAGE: 2,
  NOT_A_DATABASE: 3, // wrong key, not encrypted / already encrypted, not a database
  BUSY: 4, // another connection has the database open
  FILE: 5, // missing file, permissions, read-only directory, disk full, I/O
  INTERNAL: 70,
};

class UsageError extends Error {}

/**
 * Splits argv into flags and positional arguments. `valueFlags` take a value (`--flag v` or
 * `--flag=v`), `booleanFlags` don't. With `rest`, everything after a `--` is returned as
 * `rest` untouched (the shell's SQL); without it `--` is an unknown option.
 */
function parseArgs(argv, { valueFlags, booleanFlags, rest: allowRest = false }) {
  const flags = {};
  const positional = [];
  let rest;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (allowRest && arg === '--') {
      rest = argv.slice(i + 1);
      break;
    }
    if (arg === '--key' || arg === '--new-key' || arg.startsWith('--key=') || arg.startsWith('--new-key=')) {
      throw new UsageError(
        'keys are not accepted on the command line (they would show in ps and shell history): use --key-file or --key-env',
      );
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (valueFlags.has(name)) {
      const value = eq > 0 && name !== arg ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined || value === '') throw new UsageError(`${name} needs a value`);
      if (name in flags) throw new UsageError(`${name} given twice`);
      flags[name] = value;
    } else if (booleanFlags.has(arg)) {
      flags[arg] = true;
    } else if (arg.startsWith('-') && arg !== '-') {
      throw new UsageError(`unknown option ${arg}`);
    } else {
      positional.push(arg);
    }
  }
  return { flags, positional, rest };
}

/** The key from `--<prefix>key-file` or `--<prefix>key-env`, or undefined if neither:
 * `length` bytes (32; 16 for an AEGIS-128 algorithm) written as twice as many hex digits. */
function readKey(flags, prefix, required, length = 32) {
  const fileFlag = `--${prefix}key-file`;
  const envFlag = `--${prefix}key-env`;
  if (fileFlag in flags && envFlag in flags) throw new UsageError(`give either ${fileFlag} or ${envFlag}, not both`);
  let text;
  let source;
  if (fileFlag in flags) {
    source = `the key file ${flags[fileFlag]}`;
    try {
      text = fs.readFileSync(flags[fileFlag], 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read ${source}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
    }
  } else if (envFlag in flags) {
    const name = flags[envFlag];
    source = `the environment variable ${name}`;
    text = process.env[name];
    if (text === undefined) throw new UsageError(`${source} is not set`);
  } else if (required) {
    throw new UsageError(`a ${prefix ? 'new ' : ''}key is needed: ${fileFlag} FILE or ${envFlag} NAME`);
  } else {
    return undefined;
  }
  const hex = text.trim();
  if (!new RegExp(`^[0-9a-fA-F]{${2 * length}}$`).test(hex)) {
    throw new UsageError(`${source} must hold exactly ${2 * length} hex digits (a ${length}-byte key)`);
  }
  return Buffer.from(hex, 'hex');
}

/** `--page-size N` as a number, or undefined when not given. */
function pageSizeFlag(flags) {
  const text = flags['--page-size'];
  if (text === undefined) return undefined;
  const n = /^[0-9]{3,5}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1024 && n <= 65536 && (n & (n - 1)) === 0)) {
    throw new UsageError(
      '--page-size must be a power of two from 1024 to 65536 (512-byte pages leave SQLite too few usable bytes)',
    );
  }
  return n;
}

/** `--<prefix>cipher sqlcipher|aegis` (the page format, docs/aegis-format.md), or undefined. */
function cipherFlag(flags, prefix = '') {
  const name = `--${prefix}cipher`;
  const cipher = flags[name];
  if (cipher !== undefined && cipher !== 'sqlcipher' && cipher !== 'aegis') {
    throw new UsageError(`${name} must be sqlcipher or aegis`);
  }
  return cipher;
}

/** `--<prefix>algorithm NAME` (an AEGIS algorithm, with `--<prefix>cipher aegis` only), or undefined. */
function algorithmFlag(flags, cipher, prefix = '') {
  const name = `--${prefix}algorithm`;
  const algorithm = flags[name];
  if (algorithm === undefined) return undefined;
  if (!AEGIS_ALGORITHMS.includes(algorithm)) {
    throw new UsageError(`${name} must be ${AEGIS_ALGORITHMS.join(', ')}`);
  }
  if (cipher !== 'aegis') throw new UsageError(`${name} applies to --${prefix}cipher aegis`);
  return algorithm;
}

function exitCodeFor(err) {
  if (err instanceof UsageError || err instanceof TypeError || err instanceof RangeError) return EXIT.USAGE;
  const code = typeof err.code === 'string' ? err.code : '';
  if (code.startsWith('SQLITE_NOTADB')) return EXIT.NOT_A_DATABASE;
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return EXIT.BUSY;
  if (/^SQLITE_(CANTOPEN|READONLY|IOERR|FULL|PERM)/.test(code)) return EXIT.FILE;
  return EXIT.INTERNAL;
}

/** SQLite's own words for a wrong key say nothing about keys: this adds what they mean. */
function errorHint(err) {
  return err && err.code === 'SQLITE_NOTADB' && err.message === 'file is not a database'
    ? ' (wrong key, or a plaintext database given a key, or an encrypted one given none)'
    : '';
}

function requireDatabaseFile(file) {
  let stat;
  try {
    stat = fs.statSync(file);
  } catch {
    const err = new Error(`${file}: no such file`);
    err.code = 'SQLITE_CANTOPEN';
    throw err;
  }
  if (!stat.isFile()) {
    const err = new Error(`${file}: not a file`);
    err.code = 'SQLITE_CANTOPEN';
    throw err;
  }
}

module.exports = {
  EXIT,
  UsageError,
  parseArgs,
  readKey,
  pageSizeFlag,
  cipherFlag,
  algorithmFlag,
  keyLength,
  exitCodeFor,
  errorHint,
  requireDatabaseFile,
};
