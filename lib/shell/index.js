'use strict';
// `cipherlite shell <db>`: an SQL shell for encrypted (and plaintext) databases, with the
// habits of sqlite3's. Interactive on a terminal; otherwise it runs the SQL given after `--`
// or on standard input and exits 0, or non-zero at the first error. The key comes from a
// file, the environment or a prompt that doesn't echo — never from argv — and goes nowhere
// on disk: history is kept in memory only. Docs: docs/shell.md.

const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const { fork } = require('node:child_process');
const { StringDecoder } = require('node:string_decoder');
const {
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
} = require('../cli/options');
const { isComplete } = require('./complete');
const { Engine, ScriptError, DotError } = require('./engine');
const { writeAll, ClosedOutput } = require('./output');

const USAGE = `Usage:
  cipherlite shell <db> [--key-file FILE | --key-env NAME | --passphrase-prompt]
                        [--page-size N] [--cipher sqlcipher|aegis [--algorithm A]]
                        [--tcost N --mcost KIB --pcost N] [--readonly]
                        [--json | --csv] [-- SQL ...]

On a terminal, an interactive SQL shell (.help lists its dot-commands). Otherwise, or with
SQL after --, it runs the SQL (and dot-commands) from the arguments or from standard input,
stopping at the first error. --json and --csv choose the output (csv with a header line).

Exit codes: 0 done, 1 a statement or dot-command failed (its line in the message), 2 usage
error, 3 wrong key or not a database, 4 the database is in use, 5 file error, 70 internal
error, 130 passphrase entry cancelled.`;

const VALUE_FLAGS = new Set([
  '--key-file',
  '--key-env',
  '--page-size',
  '--cipher',
  '--algorithm',
  '--tcost',
  '--mcost',
  '--pcost',
]);
const BOOLEAN_FLAGS = new Set(['--passphrase-prompt', '--readonly', '--json', '--csv', '--help', '-h']);
const EXIT_CANCELLED = 130;
const HISTORY_SIZE = 1000;

class Cancelled extends Error {}

/** Exit code for an error out of the shell: a failed statement is 1, not "internal". */
function shellExitCode(err) {
  if (err instanceof Cancelled) return EXIT_CANCELLED;
  const cause = err instanceof ScriptError ? err.cause : err;
  if (cause instanceof DotError) return EXIT.VERIFY_FAILED;
  if (typeof cause.code === 'string' && /^E[A-Z]+$/.test(cause.code)) return EXIT.FILE; // .read, .import, .output
  const code = exitCodeFor(cause);
  if (err instanceof ScriptError && (code === EXIT.INTERNAL || code === EXIT.USAGE)) return EXIT.VERIFY_FAILED;
  return code;
}

/** Reads a line from the terminal without echoing it. */
function promptHidden(label) {
  const input = process.stdin;
  return new Promise((resolve, reject) => {
    const decoder = new StringDecoder('utf8');
    let value = '';
    process.stderr.write(label);
    input.setRawMode(true);
    const finish = (err) => {
      input.removeListener('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    function onData(chunk) {
      for (const ch of decoder.write(chunk)) {
        if (ch === '\r' || ch === '\n') return finish();
        if (ch === '\u0003' || (ch === '\u0004' && value === '')) {
          return finish(new Cancelled('passphrase entry cancelled'));
        }
        if (ch === '\u007f' || ch === '\b') value = Array.from(value).slice(0, -1).join('');
        else if (ch === '\u0015') value = '';
        else if (ch >= ' ') value += ch;
      }
    }
    input.on('data', onData);
    input.resume();
  });
}

async function options(argv) {
  const { flags, positional, rest } = parseArgs(argv, {
    valueFlags: VALUE_FLAGS,
    booleanFlags: BOOLEAN_FLAGS,
    rest: true,
  });
  if (flags['--help'] || flags['-h']) return { help: true };
  const [file, ...extra] = positional;
  if (!file) throw new UsageError('shell needs a database file');
  if (extra.length) throw new UsageError(`unexpected argument ${extra[0]} (SQL goes after --)`);
  if (flags['--json'] && flags['--csv']) throw new UsageError('give either --json or --csv, not both');
  const pageSize = pageSizeFlag(flags);
  const cipher = cipherFlag(flags);
  const algorithm = algorithmFlag(flags, cipher);
  const key = readKey(flags, '', false, keyLength(cipher, algorithm));
  const wantsPrompt = !!flags['--passphrase-prompt'];
  // A passphrase's Argon2 costs with --cipher aegis (SQLite3MC's tcost, mcost, pcost):
  // checked by the options of new Database.
  const costs = {};
  for (const name of ['tcost', 'mcost', 'pcost']) {
    const text = flags[`--${name}`];
    if (text === undefined) continue;
    if (!wantsPrompt)
      throw new UsageError(`--${name} applies to a passphrase (--passphrase-prompt) with --cipher aegis`);
    costs[name] = /^[0-9]{1,10}$/.test(text) ? Number(text) : NaN;
  }
  if (wantsPrompt && key)
    throw new UsageError('give either a key (--key-file, --key-env) or --passphrase-prompt, not both');
  if (wantsPrompt && !process.stdin.isTTY) {
    throw new UsageError(
      '--passphrase-prompt reads from a terminal and standard input is not one: use --key-file or --key-env in scripts',
    );
  }
  if (!key && !wantsPrompt && pageSize !== undefined) {
    throw new UsageError('--page-size applies to an encrypted database: give its key too');
  }
  if (!key && !wantsPrompt && cipher !== undefined) {
    throw new UsageError('--cipher applies to an encrypted database: give its key too');
  }
  const readonly = !!flags['--readonly'];
  if (readonly && !fs.existsSync(file)) {
    const err = new Error(`${file}: no such file`);
    err.code = 'SQLITE_CANTOPEN';
    throw err;
  }
  let passphrase;
  if (wantsPrompt) {
    passphrase = await promptHidden('Passphrase: ');
    if (passphrase === '') throw new UsageError('the passphrase is empty');
  }
  const settings = flags['--json'] ? { mode: 'json' } : flags['--csv'] ? { mode: 'csv', headers: true } : undefined;
  return {
    file,
    key,
    passphrase,
    pageSize,
    cipher,
    algorithm,
    costs,
    readonly,
    rest,
    settings,
    keyEnv: flags['--key-env'],
  };
}

/** SQL from `--` arguments or standard input, in this process; the first error ends it. */
function runScripts(opts) {
  const Database = require(path.join(__dirname, '..', '..'));
  const db = new Database(opts.file, {
    key: opts.key,
    passphrase: opts.passphrase,
    pageSize: opts.pageSize,
    cipher: opts.cipher,
    algorithm: opts.algorithm,
    ...opts.costs,
    readonly: opts.readonly,
    fileMustExist: opts.readonly,
  });
  let engine;
  try {
    db.prepare('SELECT count(*) FROM sqlite_schema').get(); // a wrong key shows here
    engine = new Engine(db, {
      write: (t) => writeAll(1, t),
      note: (t) => writeAll(2, t),
      settings: opts.settings,
      encrypted: opts.key !== undefined || opts.passphrase !== undefined,
    });
    const scripts = opts.rest
      ? opts.rest.map((text, i) => ({ text, source: opts.rest.length > 1 ? `argument ${i + 1}` : 'argument' }))
      : [{ text: fs.readFileSync(0, 'utf8'), source: 'stdin' }];
    for (const { text, source } of scripts) {
      const r = engine.runScript(text, source);
      if (r.quit) return r.code;
    }
    return EXIT.OK;
  } finally {
    if (engine) engine.close();
    db.close();
  }
}

/** The child process that holds the connection (lib/shell/child.js), reopened after a Ctrl-C. */
class Connection {
  constructor(opts) {
    this.opts = opts;
    this.settings = { mode: 'box', headers: true, ...opts.settings };
    this.child = null;
    this.pending = null; // { resolve } of the running script
  }

  start() {
    const env = { ...process.env };
    if (this.opts.keyEnv) delete env[this.opts.keyEnv];
    const child = fork(path.join(__dirname, 'child.js'), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env,
      execArgv: [],
    });
    this.child = child;
    return new Promise((resolve, reject) => {
      child.on('message', (msg) => {
        if (child !== this.child) return;
        if (msg.type === 'opened') resolve(msg.version);
        else if (msg.type === 'open-failed') {
          const err = new Error(msg.message);
          err.code = msg.code;
          if (msg.name === 'TypeError' || msg.name === 'RangeError') err.name = msg.name;
          reject(err);
        } else if (msg.type === 'done') {
          this.settings = msg.settings;
          const p = this.pending;
          this.pending = null;
          if (p) p.resolve(msg);
        }
      });
      child.on('exit', (code, signal) => {
        if (child !== this.child) return;
        this.child = null;
        reject(new Error(`the connection's process ended (${signal || code}) before the database opened`));
        const p = this.pending;
        this.pending = null;
        if (p) p.resolve({ crashed: true, signal, code });
      });
      child.send({
        type: 'open',
        file: this.opts.file,
        key: this.opts.key !== undefined ? this.opts.key.toString('hex') : undefined,
        passphrase: this.opts.passphrase,
        pageSize: this.opts.pageSize,
        cipher: this.opts.cipher,
        algorithm: this.opts.algorithm,
        costs: this.opts.costs,
        readonly: this.opts.readonly,
        settings: this.settings,
      });
    });
  }

  run(text) {
    return new Promise((resolve) => {
      this.pending = { resolve };
      this.child.send({ type: 'run', text, source: 'input' });
    });
  }

  /** Stops the running statement: ends the process and opens the database again. */
  async interrupt() {
    const child = this.child;
    const p = this.pending;
    this.pending = null;
    this.child = null;
    if (child) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    await this.start();
    if (p) p.resolve({ interrupted: true });
  }

  close() {
    const child = this.child;
    this.child = null;
    if (!child) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', resolve);
      child.send({ type: 'close' });
    });
  }
}

async function interactive(opts) {
  const conn = new Connection(opts);
  const version = await conn.start();
  const out = process.stdout;
  const kind = opts.key || opts.passphrase ? 'encrypted' : 'plaintext';
  out.write(
    `cipherlite shell (SQLite ${version}): ${opts.file}, ${kind}${opts.readonly ? ', read-only' : ''}\n` +
      'Enter SQL ending with ";", or .help. History is kept in memory only.\n',
  );
  const rl = readline.createInterface({
    input: process.stdin,
    output: out,
    terminal: true,
    historySize: HISTORY_SIZE,
    removeHistoryDuplicates: true,
  });
  const queue = [];
  let buffer = '';
  let busy = false;
  let closing = false;
  let closed = false;
  let sigints = 0;
  let exitCode = EXIT.OK;
  let finished;
  const done = new Promise((resolve) => (finished = resolve));

  const prompt = () => {
    if (closing) return;
    rl.setPrompt(buffer ? '   ...> ' : 'cipherlite> ');
    rl.prompt();
  };

  async function finish() {
    if (closed) return;
    closed = true;
    rl.close();
    await conn.close();
    finished(exitCode);
  }

  async function pump() {
    while (!busy && !closing && queue.length) {
      const line = queue.shift();
      let text;
      if (buffer === '' && /^\s*\./.test(line)) {
        text = line;
      } else if (buffer === '' && line.trim() === '') {
        continue;
      } else {
        buffer += `${line}\n`;
        if (!isComplete(buffer)) continue;
        text = buffer;
        buffer = '';
      }
      busy = true;
      const r = await conn.run(text);
      busy = false;
      if (r.interrupted) {
        out.write(
          'Interrupted: the statement was stopped and the database opened again (SQLite rolled back what it had not committed).\n',
        );
        queue.length = 0;
        buffer = '';
        sigints = 1;
      } else if (r.crashed) {
        out.write(`The connection's process ended (${r.signal || r.code}); opening the database again.\n`);
        try {
          await conn.start();
        } catch (err) {
          out.write(`cipherlite: ${err.message}${errorHint(err)}\n`);
          exitCode = shellExitCode(err);
          closing = true;
        }
      } else if (r.quit) {
        exitCode = r.code || 0;
        closing = true;
      }
    }
    if (busy) return;
    if (closing) return finish();
    prompt();
  }

  function onSigint() {
    if (closed) return;
    if (busy) {
      out.write('^C\n');
      conn.interrupt().catch((err) => {
        out.write(`cipherlite: cannot open the database again: ${err.message}\n`);
        exitCode = shellExitCode(err);
        closing = true;
        finish();
      });
      return;
    }
    if (buffer !== '' || rl.line !== '') {
      buffer = '';
      rl.write(null, { ctrl: true, name: 'e' });
      rl.write(null, { ctrl: true, name: 'u' });
      out.write('^C\n');
      sigints = 0;
      prompt();
      return;
    }
    if (sigints > 0) {
      out.write('\n');
      closing = true;
      finish();
      return;
    }
    sigints++;
    out.write('^C (Ctrl-C again or Ctrl-D to leave, or .quit)\n');
    prompt();
  }

  rl.on('line', (line) => {
    sigints = 0;
    queue.push(line);
    pump();
  });
  rl.on('SIGINT', onSigint);
  process.on('SIGINT', onSigint);
  rl.on('close', () => {
    if (closed) return;
    if (!closing) out.write('\n'); // Ctrl-D: leave the prompt's line
    closing = true;
    if (!busy) finish();
  });
  const onTerm = () => {
    closing = true;
    if (busy) conn.interrupt().then(finish, finish);
    else finish();
  };
  process.on('SIGTERM', onTerm);
  process.on('SIGHUP', onTerm);
  prompt();
  const code = await done;
  process.removeListener('SIGINT', onSigint);
  process.removeListener('SIGTERM', onTerm);
  process.removeListener('SIGHUP', onTerm);
  return code;
}

/** Runs `cipherlite shell ARGS`; resolves to the exit code. */
async function main(argv) {
  try {
    const opts = await options(argv);
    if (opts.help) {
      process.stdout.write(`${USAGE}\n`);
      return EXIT.OK;
    }
    if (opts.rest || !process.stdin.isTTY) return runScripts(opts);
    return await interactive(opts);
  } catch (err) {
    if (err instanceof ClosedOutput) return EXIT.OK;
    process.stderr.write(`cipherlite: ${err.message}${errorHint(err.cause || err)}\n`);
    const code = shellExitCode(err);
    if (code === EXIT.USAGE && err instanceof UsageError)
      process.stderr.write('Run cipherlite shell --help for usage.\n');
    return code;
  }
}

module.exports = { main, USAGE };
