#!/usr/bin/env node
'use strict';
// cipherlite encrypt|decrypt|rekey|verify <db>: the key lifecycle from a shell.
// Keys are 64 hex digits read from a file (--key-file) or from an environment variable
// named on the command line (--key-env NAME), never from the command line itself (it
// shows in `ps` and in shell history).

const fs = require('node:fs');
const path = require('node:path');

const EXIT = {
  OK: 0,
  VERIFY_FAILED: 1,
  USAGE: 2,
  NOT_A_DATABASE: 3, // wrong key, not encrypted / already encrypted, not a database
  BUSY: 4, // another connection has the database open
  FILE: 5, // missing file, permissions, read-only directory, disk full, I/O
  INTERNAL: 70,
};

const USAGE = `Usage:
  cipherlite encrypt <db> (--key-file FILE | --key-env NAME) [--layout sqlite3mc|sqlcipher]
                          [--page-size N]
  cipherlite decrypt <db> --out FILE (--key-file FILE | --key-env NAME) [--page-size N]
  cipherlite rekey   <db> (--key-file FILE | --key-env NAME)
                          (--new-key-file FILE | --new-key-env NAME) [--layout sqlite3mc|sqlcipher]
                          [--page-size N]
  cipherlite verify  <db> [--key-file FILE | --key-env NAME] [--page-size N] [--json]

Keys are 32 bytes written as 64 hex digits, in a file or in the environment variable
named by --key-env / --new-key-env; they are never accepted on the command line.
encrypt changes a plaintext database in place; decrypt writes a plaintext copy to a new
file; rekey changes the key; each writes a complete copy beside the file and renames it
over the original, so an interruption leaves the database under one of the two keys.
--page-size is SQLCipher's cipher_page_size (a power of two from 1024 to 65536; 4096 when
not given): the size encrypt gives the pages, and the size the others open the file with.

Exit codes: 0 done (verify: everything authenticated, integrity ok), 1 verify found a
problem, 2 usage error, 3 wrong key or not a database of the expected kind, 4 the
database is in use by another connection, 5 file error (missing, permissions, disk),
70 internal error.`;

class UsageError extends Error {}

const VALUE_FLAGS = new Set([
  '--key-file',
  '--key-env',
  '--new-key-file',
  '--new-key-env',
  '--out',
  '--layout',
  '--page-size',
]);
const BOOLEAN_FLAGS = new Set(['--json', '--help', '-h', '--version']);

function parseArgs(argv) {
  const flags = {};
  const positional = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--key' || arg === '--new-key' || arg.startsWith('--key=') || arg.startsWith('--new-key=')) {
      throw new UsageError(
        'keys are not accepted on the command line (they would show in ps and shell history): use --key-file or --key-env',
      );
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (VALUE_FLAGS.has(name)) {
      const value = eq > 0 && name !== arg ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined || value === '') throw new UsageError(`${name} needs a value`);
      if (name in flags) throw new UsageError(`${name} given twice`);
      flags[name] = value;
    } else if (BOOLEAN_FLAGS.has(arg)) {
      flags[arg] = true;
    } else if (arg.startsWith('-') && arg !== '-') {
      throw new UsageError(`unknown option ${arg}`);
    } else {
      positional.push(arg);
    }
  }
  return { flags, positional };
}

/** The key from `--<prefix>key-file` or `--<prefix>key-env`, or undefined if neither. */
function readKey(flags, prefix, required) {
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
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
    throw new UsageError(`${source} must hold exactly 64 hex digits (a 32-byte key)`);
  }
  return Buffer.from(hex, 'hex');
}

function layoutFlag(flags) {
  const layout = flags['--layout'];
  if (layout !== undefined && layout !== 'sqlite3mc' && layout !== 'sqlcipher') {
    throw new UsageError('--layout must be sqlite3mc or sqlcipher');
  }
  return layout;
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

/** A progress bar on stderr, only when it is a terminal and the file is big enough to
 * wait for. */
function progressBar(label, file) {
  const MIN_BYTES = 4 * 1024 * 1024;
  let size = 0;
  try {
    size = fs.statSync(file).size;
  } catch {}
  if (!process.stderr.isTTY || size < MIN_BYTES) return { update: undefined, done() {} };
  const width = 30;
  let drawn = -1;
  let shown = false;
  return {
    update(done, total) {
      const percent = total > 0 ? Math.floor((done * 100) / total) : 100;
      if (percent === drawn) return;
      drawn = percent;
      shown = true;
      const filled = Math.round((percent * width) / 100);
      process.stderr.write(
        `\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(percent).padStart(3)}%`,
      );
    },
    done() {
      if (shown) process.stderr.write('\n');
    },
  };
}

function exitCodeFor(err) {
  if (err instanceof UsageError || err instanceof TypeError || err instanceof RangeError) return EXIT.USAGE;
  const code = typeof err.code === 'string' ? err.code : '';
  if (code.startsWith('SQLITE_NOTADB')) return EXIT.NOT_A_DATABASE;
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return EXIT.BUSY;
  if (/^SQLITE_(CANTOPEN|READONLY|IOERR|FULL|PERM)/.test(code)) return EXIT.FILE;
  return EXIT.INTERNAL;
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

function run(argv, out) {
  const { flags, positional } = parseArgs(argv);
  if (flags['--help'] || flags['-h']) {
    out(USAGE);
    return EXIT.OK;
  }
  if (flags['--version']) {
    out(require(path.join(__dirname, '..', 'package.json')).version);
    return EXIT.OK;
  }
  const [command, file, ...extra] = positional;
  if (!command) throw new UsageError('no command given');
  if (!['encrypt', 'decrypt', 'rekey', 'verify'].includes(command)) throw new UsageError(`unknown command ${command}`);
  if (!file) throw new UsageError(`${command} needs a database file`);
  if (extra.length) throw new UsageError(`unexpected argument ${extra[0]}`);
  const allowed = {
    encrypt: ['--key-file', '--key-env', '--layout', '--page-size'],
    decrypt: ['--key-file', '--key-env', '--out', '--page-size'],
    rekey: ['--key-file', '--key-env', '--new-key-file', '--new-key-env', '--layout', '--page-size'],
    verify: ['--key-file', '--key-env', '--json', '--page-size'],
  }[command];
  const pageSize = pageSizeFlag(flags);
  for (const flag of Object.keys(flags)) {
    if (!allowed.includes(flag)) throw new UsageError(`${flag} does not apply to ${command}`);
  }

  const Database = require(path.join(__dirname, '..'));
  switch (command) {
    case 'encrypt': {
      const key = readKey(flags, '', true);
      const layout = layoutFlag(flags);
      requireDatabaseFile(file);
      const bar = progressBar('encrypting', file);
      try {
        Database.encrypt(file, key, { cipherLayout: layout, pageSize, progress: bar.update });
      } finally {
        bar.done();
      }
      out(`encrypted ${file}`);
      return EXIT.OK;
    }
    case 'decrypt': {
      const key = readKey(flags, '', true);
      const dest = flags['--out'];
      if (!dest) throw new UsageError('decrypt needs --out FILE (a new file: the plaintext copy)');
      requireDatabaseFile(file);
      const bar = progressBar('decrypting', file);
      try {
        Database.decrypt(file, key, dest, { pageSize, progress: bar.update });
      } finally {
        bar.done();
      }
      out(`wrote a plaintext copy of ${file} to ${dest}`);
      return EXIT.OK;
    }
    case 'rekey': {
      const key = readKey(flags, '', true);
      const newKey = readKey(flags, 'new-', true);
      const layout = layoutFlag(flags);
      requireDatabaseFile(file);
      const db = new Database(file, { key, pageSize, fileMustExist: true, timeout: 0 });
      const bar = progressBar('rekeying', file);
      try {
        db.rekey(newKey, { cipherLayout: layout, progress: bar.update });
      } finally {
        bar.done();
        db.close();
      }
      out(`rekeyed ${file}`);
      return EXIT.OK;
    }
    case 'verify': {
      const key = readKey(flags, '', false);
      requireDatabaseFile(file);
      if (!key && pageSize !== undefined)
        throw new UsageError('--page-size applies to an encrypted database: give its key too');
      const db = new Database(file, { key, pageSize, fileMustExist: true });
      let report;
      try {
        report = db.verify();
      } finally {
        db.close();
      }
      if (flags['--json']) {
        out(JSON.stringify(report));
      } else {
        const what = report.encrypted
          ? `${report.pages} pages and ${report.walFrames} WAL frames authenticated`
          : `${report.pages} pages (plaintext: nothing to authenticate)`;
        out(
          report.ok
            ? `ok: ${what}; integrity ok`
            : `FAILED: ${report.firstBadPage != null ? `page ${report.firstBadPage} does not authenticate; ` : ''}integrity: ${report.integrity}`,
        );
        if (report.ok) out(`content digest ${report.contentDigest}`);
      }
      return report.ok ? EXIT.OK : EXIT.VERIFY_FAILED;
    }
  }
  return EXIT.INTERNAL;
}

function main() {
  let code;
  try {
    code = run(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`));
  } catch (err) {
    code = exitCodeFor(err);
    // SQLite's own words for a wrong key say nothing about keys.
    const hint =
      err.code === 'SQLITE_NOTADB' && err.message === 'file is not a database'
        ? ' (wrong key, or a plaintext database given a key, or an encrypted one given none)'
        : '';
    process.stderr.write(`cipherlite: ${err.message}${hint}\n`);
    if (code === EXIT.USAGE && err instanceof UsageError) process.stderr.write('Run cipherlite --help for usage.\n');
  }
  process.exitCode = code;
}

if (require.main === module) main();

module.exports = { run, EXIT };
