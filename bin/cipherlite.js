#!/usr/bin/env node
'use strict';
// cipherlite encrypt|decrypt|rekey|verify <db>: the key lifecycle from a shell;
// cipherlite shell <db>: an SQL shell (lib/shell/).
// Keys are 64 hex digits read from a file (--key-file) or from an environment variable
// named on the command line (--key-env NAME), never from the command line itself (it
// shows in `ps` and in shell history).

const fs = require('node:fs');
const path = require('node:path');

const {
  EXIT,
  UsageError,
  parseArgs: parseOptions,
  readKey,
  pageSizeFlag,
  cipherFlag,
  algorithmFlag,
  keyLength,
  exitCodeFor,
  errorHint,
  requireDatabaseFile,
} = require('../lib/cli/options');

const USAGE = `Usage:
  cipherlite encrypt <db> (--key-file FILE | --key-env NAME) [--layout sqlite3mc|sqlcipher]
                          [--page-size N] [--cipher sqlcipher|aegis [--algorithm A]]
  cipherlite decrypt <db> --out FILE (--key-file FILE | --key-env NAME) [--page-size N]
                          [--cipher sqlcipher|aegis [--algorithm A]]
  cipherlite rekey   <db> (--key-file FILE | --key-env NAME)
                          (--new-key-file FILE | --new-key-env NAME) [--layout sqlite3mc|sqlcipher]
                          [--page-size N] [--cipher sqlcipher|aegis [--algorithm A]]
                          [--new-cipher sqlcipher|aegis [--new-algorithm A]]
  cipherlite verify  <db> [--key-file FILE | --key-env NAME] [--page-size N]
                          [--cipher sqlcipher|aegis [--algorithm A]] [--json]
  cipherlite shell   <db> [--key-file FILE | --key-env NAME | --passphrase-prompt]
                          [--page-size N] [--cipher sqlcipher|aegis] [--readonly] [--json | --csv]
                          [-- SQL ...]

Keys are 32 bytes written as 64 hex digits, in a file or in the environment variable
named by --key-env / --new-key-env; they are never accepted on the command line.
encrypt changes a plaintext database in place; decrypt writes a plaintext copy to a new
file; rekey changes the key; each writes a complete copy beside the file and renames it
over the original, so an interruption leaves the database under one of the two keys.
shell is an SQL shell, interactive or for scripts (cipherlite shell --help).
--page-size is SQLCipher's cipher_page_size (a power of two from 1024 to 65536; 4096 when
not given): the size encrypt gives the pages, and the size the others open the file with.
--cipher is the page format: sqlcipher (SQLCipher 4, the default) or aegis (SQLite3
Multiple Ciphers' AEGIS scheme): the one encrypt writes, and the one the others open the
file with; rekey --new-cipher moves the file to the other format (the current one when
not given). --algorithm (--new-algorithm) is the AEGIS algorithm with --cipher aegis
(--new-cipher aegis): aegis-256 (the default), aegis-256x2, aegis-256x4, or aegis-128l,
aegis-128x2, aegis-128x4, whose keys are 16 bytes (32 hex digits).

Exit codes: 0 done (verify: everything authenticated, integrity ok), 1 verify found a
problem, 2 usage error, 3 wrong key or not a database of the expected kind, 4 the
database is in use by another connection, 5 file error (missing, permissions, disk),
70 internal error.`;

const VALUE_FLAGS = new Set([
  '--key-file',
  '--key-env',
  '--new-key-file',
  '--new-key-env',
  '--out',
  '--layout',
  '--page-size',
  '--cipher',
  '--new-cipher',
  '--algorithm',
  '--new-algorithm',
]);
const BOOLEAN_FLAGS = new Set(['--json', '--help', '-h', '--version']);

function parseArgs(argv) {
  return parseOptions(argv, { valueFlags: VALUE_FLAGS, booleanFlags: BOOLEAN_FLAGS });
}

function layoutFlag(flags) {
  const layout = flags['--layout'];
  if (layout !== undefined && layout !== 'sqlite3mc' && layout !== 'sqlcipher') {
    throw new UsageError('--layout must be sqlite3mc or sqlcipher');
  }
  return layout;
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
    encrypt: ['--key-file', '--key-env', '--layout', '--page-size', '--cipher', '--algorithm'],
    decrypt: ['--key-file', '--key-env', '--out', '--page-size', '--cipher', '--algorithm'],
    rekey: [
      '--key-file',
      '--key-env',
      '--new-key-file',
      '--new-key-env',
      '--layout',
      '--page-size',
      '--cipher',
      '--new-cipher',
      '--algorithm',
      '--new-algorithm',
    ],
    verify: ['--key-file', '--key-env', '--json', '--page-size', '--cipher', '--algorithm'],
  }[command];
  const pageSize = pageSizeFlag(flags);
  const cipher = cipherFlag(flags);
  const newCipher = cipherFlag(flags, 'new-');
  const algorithm = algorithmFlag(flags, cipher);
  const newAlgorithm = algorithmFlag(flags, newCipher, 'new-');
  // A key's length is its format's: 16 bytes for an AEGIS-128 algorithm, else 32.
  const keyBytes = keyLength(cipher, algorithm);
  const newKeyBytes = newCipher === undefined ? keyBytes : keyLength(newCipher, newAlgorithm);
  for (const flag of Object.keys(flags)) {
    if (!allowed.includes(flag)) throw new UsageError(`${flag} does not apply to ${command}`);
  }

  const Database = require(path.join(__dirname, '..'));
  switch (command) {
    case 'encrypt': {
      const key = readKey(flags, '', true, keyBytes);
      const layout = layoutFlag(flags);
      requireDatabaseFile(file);
      const bar = progressBar('encrypting', file);
      try {
        Database.encrypt(file, key, { cipherLayout: layout, cipher, algorithm, pageSize, progress: bar.update });
      } finally {
        bar.done();
      }
      out(`encrypted ${file}`);
      return EXIT.OK;
    }
    case 'decrypt': {
      const key = readKey(flags, '', true, keyBytes);
      const dest = flags['--out'];
      if (!dest) throw new UsageError('decrypt needs --out FILE (a new file: the plaintext copy)');
      requireDatabaseFile(file);
      const bar = progressBar('decrypting', file);
      try {
        Database.decrypt(file, key, dest, { cipher, algorithm, pageSize, progress: bar.update });
      } finally {
        bar.done();
      }
      out(`wrote a plaintext copy of ${file} to ${dest}`);
      return EXIT.OK;
    }
    case 'rekey': {
      const key = readKey(flags, '', true, keyBytes);
      const newKey = readKey(flags, 'new-', true, newKeyBytes);
      const layout = layoutFlag(flags);
      requireDatabaseFile(file);
      const db = new Database(file, { key, cipher, algorithm, pageSize, fileMustExist: true, timeout: 0 });
      const bar = progressBar('rekeying', file);
      try {
        db.rekey(newKey, { cipherLayout: layout, cipher: newCipher, algorithm: newAlgorithm, progress: bar.update });
      } finally {
        bar.done();
        db.close();
      }
      out(`rekeyed ${file}`);
      return EXIT.OK;
    }
    case 'verify': {
      const key = readKey(flags, '', false, keyBytes);
      requireDatabaseFile(file);
      if (!key && pageSize !== undefined)
        throw new UsageError('--page-size applies to an encrypted database: give its key too');
      if (!key && cipher !== undefined)
        throw new UsageError('--cipher applies to an encrypted database: give its key too');
      const db = new Database(file, { key, cipher, algorithm, pageSize, fileMustExist: true });
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
  const argv = process.argv.slice(2);
  if (argv[0] === 'shell') {
    // Interactive, so asynchronous: lib/shell sets the exit code when it is done.
    require('../lib/shell')
      .main(argv.slice(1))
      .then((code) => {
        process.exitCode = code;
      });
    return;
  }
  let code;
  try {
    code = run(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`));
  } catch (err) {
    code = exitCodeFor(err);
    process.stderr.write(`cipherlite: ${err.message}${errorHint(err)}\n`);
    if (code === EXIT.USAGE && err instanceof UsageError) process.stderr.write('Run cipherlite --help for usage.\n');
  }
  process.exitCode = code;
}

if (require.main === module) main();

module.exports = { run, EXIT };
