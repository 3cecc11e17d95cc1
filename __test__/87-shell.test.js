'use strict';
// `cipherlite shell`, used as a person uses it: the non-interactive forms (SQL after --, a
// script on standard input, --json/--csv, exit codes, the first error's line) as child
// processes, and the interactive shell through a pseudo-terminal (tmux): dot-commands, modes,
// the continuation prompt, the passphrase prompt that doesn't echo, Ctrl-C stopping a long
// statement, history kept in memory only, Ctrl-D closing the database.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Database, SQLITE_MAGIC, newKey, tempDir, removeDir } = require('./_helpers-encryption');
const { isComplete, splitStatements } = require('../lib/shell/complete');
const { parseCsv } = require('../lib/shell/format');

const CLI = path.join(__dirname, '..', 'bin', 'cipherlite.js');

let root;
let n = 0;
const fresh = () => {
  const d = path.join(root, `s${++n}`);
  fs.mkdirSync(d);
  return d;
};
before(() => {
  root = tempDir('shell');
});
after(() => removeDir(root));

/** Runs `cipherlite shell ARGS` with K (the key's hex) in the environment. */
function shell(args, { input, env = {}, cwd } = {}) {
  const r = spawnSync(process.execPath, [CLI, 'shell', ...args], {
    encoding: 'utf8',
    input: input ?? '',
    cwd,
    env: { ...process.env, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** An encrypted database with a table notes(id, body, n), and its key. */
function makeDb(dir, name = 'app.db') {
  const file = path.join(dir, name);
  const key = newKey();
  const db = new Database(file, { key });
  db.exec(`CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT, n REAL);
		INSERT INTO notes(body, n) VALUES ('hello', 1.5), ('a, "quoted" one', NULL), ('two
lines', 3);
		CREATE INDEX notes_body ON notes(body);
		CREATE VIEW bodies AS SELECT body FROM notes;`);
  db.close();
  return { file, key, env: { K: key.toString('hex') } };
}

describe('87.1 the shell from scripts', () => {
  it('87.1.1 --help, and the usage errors exit 2 (keys never from argv; no prompt without a terminal)', () => {
    const help = shell(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /cipherlite shell <db>/);
    assert.match(help.stdout, /Exit codes:/);
    assert.match(spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' }).stdout, /cipherlite shell +<db>/);
    for (const [args, message] of [
      [[], /needs a database file/],
      [['x.db', '--key', 'ab'], /keys are not accepted on the command line/],
      [['x.db', `--key=${'ab'.repeat(32)}`], /keys are not accepted on the command line/],
      [['x.db', '--json', '--csv'], /either --json or --csv/],
      [['x.db', '--passphrase-prompt'], /--passphrase-prompt reads from a terminal and standard input is not one/],
      [['x.db', '--key-env', 'K', '--passphrase-prompt'], /not both/],
      [['x.db', '--key-env', 'NOT_SET_87'], /NOT_SET_87 is not set/],
      [['x.db', 'select 1'], /unexpected argument select 1 \(SQL goes after --\)/],
    ]) {
      const r = shell(args, { env: { K: 'ab'.repeat(32) } });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    }
  });

  it('87.1.2 SQL after --: creates an encrypted database and queries it; each argument a script', () => {
    const dir = fresh();
    const file = path.join(dir, 'new.db');
    const env = { K: newKey().toString('hex') };
    const made = shell([file, '--key-env', 'K', '--', 'CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);'], { env });
    assert.deepEqual(made, { code: 0, stdout: '', stderr: '' });
    assert.notDeepEqual(fs.readFileSync(file).subarray(0, 16), SQLITE_MAGIC, 'encrypted on disk');
    const r = shell([file, '--key-env', 'K', '--', 'select count(*) from t', 'select sum(x) from t;'], { env });
    assert.deepEqual(r, { code: 0, stdout: '2\n3\n', stderr: '' });
    assert.deepEqual(fs.readdirSync(dir), ['new.db'], 'no other file: no history, no temporary copy');
    // A reader that stops early (`| head`) ends the shell quietly (a POSIX shell's pipe).
    if (process.platform === 'win32') return;
    const series = 'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200000) SELECT i FROM c';
    const piped = spawnSync(
      'sh',
      ['-c', `"${process.execPath}" "${CLI}" shell "${file}" --key-env K -- "${series}" | head -n 2`],
      { encoding: 'utf8', env: { ...process.env, ...env } },
    );
    assert.equal(piped.stdout, '1\n2\n');
    assert.equal(piped.stderr, '');
  });

  it('87.1.3 --json and --csv', () => {
    const { file, env } = makeDb(fresh());
    const json = shell([file, '--key-env', 'K', '--json', '--', 'SELECT id, body, n FROM notes ORDER BY id'], { env });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), [
      { id: 1, body: 'hello', n: 1.5 },
      { id: 2, body: 'a, "quoted" one', n: null },
      { id: 3, body: 'two\nlines', n: 3 },
    ]);
    assert.match(json.stdout, /"n":3\.0/, 'a REAL stays a REAL');
    const csv = shell([file, '--key-env', 'K', '--csv', '--', 'SELECT id, body FROM notes ORDER BY id'], { env });
    assert.equal(csv.stdout, 'id,body\r\n1,hello\r\n2,"a, ""quoted"" one"\r\n3,"two\nlines"\r\n');
    assert.deepEqual(
      parseCsv(csv.stdout).map((r) => r.fields),
      [
        ['id', 'body'],
        ['1', 'hello'],
        ['2', 'a, "quoted" one'],
        ['3', 'two\nlines'],
      ],
    );
  });

  it('87.1.4 a script on standard input: statements over lines, a trigger, dot-commands; stops at the first error with its line', () => {
    const { file, env } = makeDb(fresh());
    const script = [
      '-- a migration',
      'CREATE TABLE log(msg TEXT);',
      'CREATE TRIGGER notes_log AFTER INSERT ON notes BEGIN',
      "  INSERT INTO log VALUES ('added ' || new.body);",
      'END;',
      "INSERT INTO notes(body) VALUES ('x;y'),",
      "  ('it''s');",
      '.mode list',
      'SELECT msg FROM log ORDER BY rowid;',
      'SELECT * FROM missing;',
      "INSERT INTO log VALUES ('never');",
    ].join('\n');
    const r = shell([file, '--key-env', 'K'], { input: script, env });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, "added x;y\nadded it's\n");
    assert.equal(r.stderr, 'cipherlite: stdin line 10: SQLITE_ERROR: no such table: missing\n');
    const db = new Database(file, { key: Buffer.from(env.K, 'hex') });
    assert.equal(db.prepare('SELECT count(*) FROM log').pluck().get(), 2, 'what ran before the error stays');
    db.close();
    const bad = shell([file, '--key-env', 'K'], { input: 'select 1;\n.nonsense\n', env });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^cipherlite: stdin line 2: unknown command \.nonsense/);
    const quit = shell([file, '--key-env', 'K', '--', 'select 1', '.exit 3', 'select 2'], { env });
    assert.deepEqual([quit.code, quit.stdout], [3, '1\n']);
  });

  it('87.1.5 the exit-code families: wrong key 3, no key 3, missing file with --readonly 5, a write under --readonly 5', () => {
    const { file, env } = makeDb(fresh());
    const wrong = shell([file, '--key-env', 'K', '--', 'select 1'], { env: { K: newKey().toString('hex') } });
    assert.equal(wrong.code, 3);
    assert.match(wrong.stderr, /file is not a database \(wrong key/);
    assert.ok(!wrong.stderr.includes(env.K));
    assert.equal(shell([file, '--', 'select 1']).code, 3);
    assert.equal(shell([path.join(root, 'absent.db'), '--readonly', '--', 'select 1']).code, 5);
    const ro = shell([file, '--key-env', 'K', '--readonly', '--', 'DELETE FROM notes'], { env });
    assert.equal(ro.code, 5);
    assert.match(ro.stderr, /argument line 1: SQLITE_READONLY/);
    const keyFile = path.join(root, 'k87');
    fs.writeFileSync(keyFile, `${env.K}\n`, { mode: 0o600 });
    assert.equal(shell([file, '--key-file', keyFile, '--', 'select count(*) from notes']).stdout, '3\n');
  });

  it('87.1.6 every mode, .headers, .nullvalue', () => {
    const { file, env } = makeDb(fresh());
    const q = 'SELECT id, n FROM notes WHERE id < 3 ORDER BY id;';
    const run = (lines) => shell([file, '--key-env', 'K'], { input: lines.join('\n'), env });
    const expected = {
      list: '1|1.5\n2|\n',
      csv: '1,1.5\r\n2,\r\n',
      json: '[{"id":1,"n":1.5},\n{"id":2,"n":null}]\n',
      line: 'id = 1\n n = 1.5\n\nid = 2\n n = \n',
      column: 'id    n\n--  ---\n 1  1.5\n 2\n',
      box: '┌────┬─────┐\n│ id │  n  │\n├────┼─────┤\n│  1 │ 1.5 │\n│  2 │     │\n└────┴─────┘\n',
      table: '+----+-----+\n| id |  n  |\n+----+-----+\n|  1 | 1.5 |\n|  2 |     |\n+----+-----+\n',
      markdown: '| id |   n |\n|---:|----:|\n|  1 | 1.5 |\n|  2 |     |\n',
    };
    for (const [mode, text] of Object.entries(expected)) {
      const r = run([`.mode ${mode}`, '.headers on', q]);
      assert.equal(r.code, 0, r.stderr);
      const withHeader = mode === 'list' ? 'id|n\n' + text : mode === 'csv' ? 'id,n\r\n' + text : text;
      assert.equal(r.stdout, withHeader, mode);
    }
    assert.equal(run(['.headers off', '.nullvalue NULL', '.mode list', q]).stdout, '1|1.5\n2|NULL\n');
    assert.equal(run(['.mode', '.mode nope']).stdout, 'current output mode: list\n');
    assert.match(run(['.mode nope']).stderr, /unknown mode nope/);
    assert.match(run(['.timer on', 'select 1;']).stdout, /^1\nRun Time: real \d+\.\d{3}\n$/);
  });

  it('87.1.7 .tables, .schema [pattern], .indexes, .help', () => {
    const { file, env } = makeDb(fresh());
    const run = (line) => shell([file, '--key-env', 'K'], { input: line, env }).stdout;
    assert.equal(run('.tables'), 'bodies  notes\n');
    assert.equal(run('.tables no%'), 'notes\n');
    assert.equal(run('.indexes'), 'notes_body\n');
    assert.equal(run('.schema bod%'), 'CREATE VIEW bodies AS SELECT body FROM notes;\n');
    assert.match(run('.schema'), /^CREATE TABLE notes\(.*\);\nCREATE INDEX notes_body ON notes\(body\);\nCREATE VIEW/);
    assert.match(run('.help'), /\.dump \[TABLE\][\s\S]*\.import FILE TABLE/);
  });

  it('87.1.8 .dump: plaintext SQL that rebuilds the database, a warning once on stderr, written only where asked', () => {
    const dir = fresh();
    const { file, env } = makeDb(dir);
    const r = shell([file, '--key-env', 'K'], { input: '.dump\n.dump notes\n', env });
    assert.equal(r.code, 0);
    assert.equal(r.stderr.match(/plaintext SQL/g).length, 1, r.stderr);
    assert.match(r.stdout, /^PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE notes/);
    assert.match(r.stdout, /INSERT INTO "notes" VALUES\(2,'a, "quoted" one',NULL\);/);
    const dumped = r.stdout.slice(0, r.stdout.indexOf('COMMIT;\n') + 8);
    const plain = new Database(':memory:');
    plain.exec(dumped);
    const db = new Database(file, { key: Buffer.from(env.K, 'hex') });
    const rows = (d) => d.prepare('SELECT * FROM notes ORDER BY id').all();
    assert.deepEqual(rows(plain), rows(db));
    assert.deepEqual(plain.prepare('SELECT * FROM bodies').all(), db.prepare('SELECT * FROM bodies').all());
    db.close();
    const out = path.join(dir, 'dump.sql');
    const to = shell([file, '--key-env', 'K'], { input: `.output ${out}\n.dump\n.output\nselect 7;\n`, env });
    assert.equal(to.stdout, '7\n');
    assert.equal(fs.readFileSync(out, 'utf8'), dumped);
    // POSIX modes (Windows gives the file its folder's permissions).
    if (process.platform !== 'win32') assert.equal(fs.statSync(out).mode & 0o777, 0o600);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['app.db', 'dump.sql']);
  });

  it('87.1.9 .import: RFC 4180 CSV into a new table (header row names it) and into an existing one', () => {
    const dir = fresh();
    const { file, env } = makeDb(dir);
    const csvFile = path.join(dir, 'in.csv');
    fs.writeFileSync(csvFile, 'name,"note, with comma"\r\nAda,"said ""hi"""\r\n"Bob","two\r\nlines"\r\nCy,\r\n');
    const r = shell([file, '--key-env', 'K', '--json'], {
      input: `.import ${csvFile} people\n.import ${csvFile} people\nselect * from people;\n`,
      env,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [
      { name: 'Ada', 'note, with comma': 'said "hi"' },
      { name: 'Bob', 'note, with comma': 'two\r\nlines' },
      { name: 'Cy', 'note, with comma': '' },
      { name: 'name', 'note, with comma': 'note, with comma' },
      { name: 'Ada', 'note, with comma': 'said "hi"' },
      { name: 'Bob', 'note, with comma': 'two\r\nlines' },
      { name: 'Cy', 'note, with comma': '' },
    ]);
    fs.writeFileSync(path.join(dir, 'bad.csv'), '1,2\n3\n');
    const bad = shell([file, '--key-env', 'K'], { input: `.import ${path.join(dir, 'bad.csv')} people\n`, env });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /bad\.csv line 2: 1 values for the 2 columns of people/);
    assert.equal(shell([file, '--key-env', 'K', '--', 'select count(*) from people'], { env }).stdout, '7\n');
  });

  it('87.1.10 .read FILE: its errors name the file and line', () => {
    const dir = fresh();
    const { file, env } = makeDb(dir);
    const sql = path.join(dir, 'm.sql');
    fs.writeFileSync(sql, 'select 1;\n\nselect nope;\n');
    const r = shell([file, '--key-env', 'K', '--', `.read ${sql}`], { env });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '1\n');
    assert.equal(r.stderr, `cipherlite: ${sql} line 3: SQLITE_ERROR: no such column: nope\n`);
    assert.equal(shell([file, '--', `.read ${path.join(dir, 'none.sql')}`], { env }).code, 3, 'no key: not a database');
    assert.equal(shell([file, '--key-env', 'K', '--', `.read ${path.join(dir, 'none.sql')}`], { env }).code, 5);
  });

  it('87.1.12 --cipher sqlcipher|aegis: the shell and every key command read and write the format it names; a bad value exits 2 naming the option', () => {
    const dir = fresh();
    const file = path.join(dir, 'aegis.db');
    const env = { K: newKey().toString('hex'), N: newKey().toString('hex') };
    const cli = (args) => {
      const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    const made = shell(
      [file, '--key-env', 'K', '--cipher', 'aegis', '--', 'CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);'],
      {
        env,
      },
    );
    assert.deepEqual(made, { code: 0, stdout: '', stderr: '' });
    assert.equal(fs.readFileSync(file)[20], 64, 'AEGIS-256 reserves 64 bytes a page');
    const read = (args) => shell([file, ...args, '--', 'select sum(x) from t'], { env });
    assert.deepEqual(read(['--key-env', 'K', '--cipher', 'aegis']), { code: 0, stdout: '3\n', stderr: '' });
    const wrongFormat = read(['--key-env', 'K']);
    assert.equal(wrongFormat.code, 3);
    assert.match(wrongFormat.stderr, /"cipher"/);
    assert.ok(!wrongFormat.stderr.includes(env.K));

    assert.equal(cli(['verify', file, '--key-env', 'K', '--cipher', 'aegis']).code, 0);
    assert.equal(cli(['verify', file, '--key-env', 'K']).code, 3);
    // rekey into SQLCipher 4 under another key, then back into AEGIS.
    const rekeyed = cli([
      'rekey',
      file,
      '--key-env',
      'K',
      '--cipher',
      'aegis',
      '--new-key-env',
      'N',
      '--new-cipher',
      'sqlcipher',
    ]);
    assert.equal(rekeyed.code, 0, rekeyed.stderr);
    assert.equal(fs.readFileSync(file)[20], 80);
    assert.equal(cli(['verify', file, '--key-env', 'N', '--cipher', 'sqlcipher']).code, 0);
    assert.equal(cli(['rekey', file, '--key-env', 'N', '--new-key-env', 'K', '--new-cipher', 'aegis']).code, 0);
    assert.equal(fs.readFileSync(file)[20], 64);
    // decrypt, then encrypt the plaintext copy into AEGIS again.
    const plain = path.join(dir, 'plain.db');
    assert.equal(cli(['decrypt', file, '--key-env', 'K', '--out', plain]).code, 3, 'SQLCipher 4 by default');
    assert.equal(fs.existsSync(plain), false);
    assert.equal(cli(['decrypt', file, '--key-env', 'K', '--cipher', 'aegis', '--out', plain]).code, 0);
    assert.deepEqual(fs.readFileSync(plain).subarray(0, 16), SQLITE_MAGIC);
    assert.equal(cli(['encrypt', plain, '--key-env', 'N', '--cipher', 'aegis']).code, 0);
    assert.equal(fs.readFileSync(plain)[20], 64);
    assert.equal(
      shell([plain, '--key-env', 'N', '--cipher', 'aegis', '--', 'select sum(x) from t'], { env }).stdout,
      '3\n',
    );

    // Refused, naming the option, before any file is touched.
    const before = fs.readdirSync(dir).map((f) => [f, fs.readFileSync(path.join(dir, f)).toString('hex')]);
    for (const args of [
      ['shell', file, '--key-env', 'K', '--cipher', 'aes', '--', 'select 1'],
      ['shell', path.join(dir, 'never.db'), '--cipher', 'aegis', '--', 'create table x(y)'],
      ['verify', file, '--key-env', 'K', '--cipher', 'AEGIS'],
      ['encrypt', plain, '--key-env', 'N', '--cipher', 'chacha20'],
      ['decrypt', file, '--key-env', 'K', '--cipher', '', '--out', path.join(dir, 'never.db')],
      ['rekey', file, '--key-env', 'K', '--cipher', 'aegis', '--new-key-env', 'N', '--new-cipher', 'rc4'],
      ['verify', file, '--cipher', 'aegis'],
    ]) {
      const r = cli(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /--(new-)?cipher/, args.join(' '));
      assert.equal(r.stdout, '');
    }
    const after = fs.readdirSync(dir).map((f) => [f, fs.readFileSync(path.join(dir, f)).toString('hex')]);
    assert.deepEqual(after, before);
  });

  it('87.1.11 sqlite3_complete: quotes, comments, brackets and CREATE TRIGGER ... END', () => {
    for (const [sql, complete] of [
      ['select 1', false],
      ['select 1;', true],
      ["select ';'", false],
      ["select ';", false],
      ['select 1; -- done', true],
      ['select 1 -- ;', false],
      ['select "a;b" /* ; */ ;', true],
      ['select [x;y];', true],
      ['select 1 /* open ;', false],
      ['CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1;', false],
      ['CREATE TEMP TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END;', true],
      ['create trigger t after insert on a begin select 1; select 2; end ;', true],
    ]) {
      assert.equal(isComplete(sql), complete, sql);
    }
    assert.deepEqual(
      splitStatements('select 1; ; -- c\nselect 2').map((s) => [s.sql, s.offset, !!s.incomplete]),
      [
        ['select 1;', 0, false],
        ['select 2', 17, true],
      ],
    );
  });
});

// The interactive shell through a pseudo-terminal: tmux on a private socket, keys sent as a
// person types them, the screen read back.
const HAVE_TMUX = spawnSync('tmux', ['-V']).status === 0;
const NO_TMUX = HAVE_TMUX ? false : 'tmux is not installed: the interactive shell needs a pseudo-terminal to drive';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let panes = 0;

class Pane {
  /** Starts `cipherlite shell ARGS` in a new tmux server; env adds to the environment. */
  constructor(args, env = {}) {
    this.socket = `cipherlite-87-${process.pid}-${++panes}`;
    this.env = { ...process.env, ...env };
    const quote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;
    const command = [process.execPath, CLI, 'shell', ...args].map(quote).join(' ');
    const r = this.tmux([
      'new-session',
      '-d',
      '-s',
      'w',
      '-x',
      '150',
      '-y',
      '50',
      `${command}; echo "EXITED rc=$?"; sleep 60`,
    ]);
    assert.equal(r.status, 0, r.stderr);
  }
  tmux(args) {
    return spawnSync('tmux', ['-L', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8', env: this.env });
  }
  text() {
    return this.tmux(['capture-pane', '-p', '-J', '-S', '-1000', '-t', 'w']).stdout;
  }
  async waitFor(re, ms = 10000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const text = this.text();
      const m = text.match(re);
      if (m) return m;
      if (Date.now() > deadline) assert.fail(`waited ${ms} ms for ${re}; the screen:\n${text}`);
      await sleep(50);
    }
  }
  /** Types text (literally) and, unless told not to, Enter. */
  type(text, enter = true) {
    // tmux reads a `;` ending an argument as its command separator.
    this.tmux(['send-keys', '-t', 'w', '-l', text.endsWith(';') ? `${text.slice(0, -1)}\\;` : text]);
    if (enter) this.keys('Enter');
  }
  keys(...names) {
    this.tmux(['send-keys', '-t', 'w', ...names]);
  }
  /** Types a line and waits for the prompt after it (the nth prompt on the screen). */
  async line(text) {
    const before = this.text().match(/cipherlite> /g)?.length ?? 0;
    this.type(text);
    await this.waitFor(new RegExp(`(?:cipherlite> [^]*){${before + 1}}`));
  }
  close() {
    const socket = this.tmux(['display-message', '-p', '#{socket_path}']).stdout.trim();
    this.tmux(['kill-server']);
    if (socket) fs.rmSync(socket, { force: true }); // tmux leaves the socket file behind
  }
}

/** Every process's command line (NUL-separated) by pid. */
function commandLines() {
  const out = new Map();
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      out.set(pid, fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
    } catch {}
  }
  return out;
}

describe('87.2 the interactive shell (through tmux)', { skip: NO_TMUX }, () => {
  it('87.2.1 a session: dot-commands, continuation lines, modes, an error that the shell survives, history in memory, Ctrl-D closes the database', async () => {
    const dir = fresh();
    const { file, env } = makeDb(dir);
    const home = path.join(dir, 'home');
    fs.mkdirSync(home);
    const pane = new Pane([file, '--key-env', 'K'], { ...env, HOME: home });
    try {
      await pane.waitFor(
        /encrypted\nEnter SQL ending with ";", or \.help\. History is kept in memory only\.\ncipherlite> $/m,
      );
      await pane.line('.tables');
      assert.match(pane.text(), /cipherlite> \.tables\nbodies {2}notes\n/);
      pane.type('SELECT id, body');
      await pane.waitFor(/ {3}\.\.\.> $/m);
      await pane.line('FROM notes WHERE id = 1;');
      assert.match(pane.text(), /┌────┬───────┐\n│ id │ body {2}│\n├────┼───────┤\n│ {2}1 │ hello │\n└────┴───────┘/);
      await pane.line('.mode line');
      await pane.line('SELECT body FROM notes WHERE id = 1;');
      assert.match(pane.text(), /\nbody = hello\n/);
      await pane.line('.mode csv');
      await pane.line('.headers off');
      await pane.line('SELECT * FROM nope;');
      assert.match(pane.text(), /\nError: SQLITE_ERROR: no such table: nope\ncipherlite> $/m);
      await pane.line('PRAGMA journal_mode = wal;');
      await pane.line("INSERT INTO notes(body) VALUES ('from the shell');");
      await pane.line('SELECT 40 + 2;');
      pane.keys('Up');
      await pane.waitFor(/cipherlite> SELECT 40 \+ 2;$/m);
      pane.keys('Enter');
      await pane.waitFor(/(?:\n42\n[^]*){2}cipherlite> $/m);
      assert.ok(fs.existsSync(`${file}-wal`), 'the WAL is in use');
      const lines = commandLines();
      for (const cmdline of lines.values()) assert.ok(!cmdline.includes(env.K), 'no key in any argv');
      const shellPid = [...lines].find(([, c]) => c.includes(`${CLI}\0shell\0${file}\0`))[0];
      const children = fs.readFileSync(`/proc/${shellPid}/task/${shellPid}/children`, 'utf8').trim().split(/\s+/);
      assert.equal(children.length, 1, 'one process holds the connection');
      assert.match(lines.get(children[0]), /lib\/shell\/child\.js\0$/);
      const environ = fs.readFileSync(`/proc/${children[0]}/environ`, 'utf8');
      assert.ok(
        !environ.includes(env.K) && !/(^|\0)K=/.test(environ),
        "no key in the connection process's environment",
      );
      pane.keys('C-d');
      await pane.waitFor(/EXITED rc=0/);
      assert.ok(!fs.existsSync(`${file}-wal`), 'closed: the WAL checkpointed and removed');
      assert.deepEqual(fs.readdirSync(home), [], 'no history file');
      assert.deepEqual(fs.readdirSync(dir).sort(), ['app.db', 'home']);
      const db = new Database(file, { key: Buffer.from(env.K, 'hex') });
      assert.equal(db.prepare('SELECT count(*) FROM notes').pluck().get(), 4);
      db.close();
    } finally {
      pane.close();
    }
  });

  it('87.2.2 --passphrase-prompt reads without echo; a wrong passphrase exits 3, Ctrl-C at the prompt 130', async () => {
    const dir = fresh();
    const file = path.join(dir, 'pp.db');
    const db = new Database(file, { passphrase: 'correct horse battery' });
    db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('secret row');");
    db.close();
    const pane = new Pane([file, '--passphrase-prompt']);
    try {
      await pane.waitFor(/^Passphrase: $/m);
      pane.type('correct horse battery');
      await pane.waitFor(/cipherlite> $/m);
      assert.ok(!pane.text().includes('correct horse'), 'the passphrase is not echoed');
      await pane.line('SELECT x FROM t;');
      assert.match(pane.text(), /│ secret row │/);
      pane.type('.quit');
      await pane.waitFor(/EXITED rc=0/);
      assert.ok(!pane.text().includes('correct horse'));
    } finally {
      pane.close();
    }
    const wrong = new Pane([file, '--passphrase-prompt']);
    try {
      await wrong.waitFor(/^Passphrase: $/m);
      wrong.type('wrong horse');
      await wrong.waitFor(/cipherlite: file is not a database \(wrong key[^]*EXITED rc=3/);
      assert.ok(!wrong.text().includes('wrong horse'));
    } finally {
      wrong.close();
    }
    const cancelled = new Pane([file, '--passphrase-prompt']);
    try {
      await cancelled.waitFor(/^Passphrase: $/m);
      cancelled.type('abc', false);
      cancelled.keys('C-c');
      await cancelled.waitFor(/passphrase entry cancelled\nEXITED rc=130/);
    } finally {
      cancelled.close();
    }
  });

  it('87.2.3 Ctrl-C stops a long query (its transaction rolled back), not the shell; Ctrl-C clears a half-typed statement; a second Ctrl-C leaves', async () => {
    const dir = fresh();
    const { file, env } = makeDb(dir);
    const pane = new Pane([file, '--key-env', 'K'], env);
    try {
      await pane.waitFor(/cipherlite> $/m);
      await pane.line('BEGIN;');
      await pane.line("INSERT INTO notes(body) VALUES ('not committed');");
      pane.type(
        'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000000000) SELECT count(*) FROM c;',
      );
      await sleep(700);
      const started = Date.now();
      pane.keys('C-c');
      await pane.waitFor(/\^C\nInterrupted: the statement was stopped and the database opened again/, 5000);
      assert.ok(Date.now() - started < 5000);
      await pane.waitFor(/opened again[^\n]*\ncipherlite> $/m);
      await pane.line('SELECT count(*) FROM notes;');
      assert.match(pane.text(), /│ +3 │/, 'the unfinished transaction was rolled back');
      pane.type('SELECT');
      await pane.waitFor(/ {3}\.\.\.> $/m);
      pane.type('12', false);
      pane.keys('C-c');
      await pane.waitFor(/\.\.\.> \^C\ncipherlite> $/m);
      await pane.line('SELECT 5 AS five;');
      assert.match(pane.text(), /│ five │\n├──────┤\n│ {4}5 │/, 'the half-typed statement was dropped');
      pane.keys('C-c');
      await pane.waitFor(/Ctrl-C again or Ctrl-D to leave/);
      pane.keys('C-c');
      await pane.waitFor(/EXITED rc=0/);
      // SQLite leaves a journal it rolled back for the next write to remove (better-sqlite3 too).
      assert.deepEqual(
        fs.readdirSync(dir).filter((f) => f !== 'app.db-journal'),
        ['app.db'],
      );
      const db = new Database(file, { key: Buffer.from(env.K, 'hex') });
      assert.equal(db.prepare('SELECT count(*) FROM notes').pluck().get(), 3);
      db.close();
    } finally {
      pane.close();
    }
  });
});
