'use strict';
// The shell's engine: runs SQL and dot-commands on one open connection, synchronously.
// Scripts (standard input, `--` arguments, .read) and the interactive shell's input all go
// through runScript(); output goes to the write function given (standard output, or the
// file of .output), messages for the user to note(). The engine owns no terminal: in the
// interactive shell it runs in a child process (lib/shell/child.js) so that a Ctrl-C can
// stop a statement by ending that process.

const fs = require('node:fs');
const { isComplete, splitStatements, isOnlyBlank } = require('./complete');
const { MODES, printer, parseCsv, realText, blobHex } = require('./format');
const { ClosedOutput } = require('./output');

const HELP = `.dump [TABLE]            SQL text that recreates the database (or one table): PLAINTEXT
.exit [CODE], .quit      close the database and leave
.headers on|off          column names above list, column and csv output
.help                    this text
.import FILE TABLE       CSV rows from FILE into TABLE (created from the header row if new)
.indexes [TABLE]         the indexes (of tables matching TABLE, a LIKE pattern)
.mode [MODE]             list, column, box, table, markdown, csv, json or line
.nullvalue TEXT          how NULL is shown (empty by default)
.output [FILE]           results to FILE (plaintext), or back to standard output
.read FILE               run the SQL and dot-commands in FILE
.schema [PATTERN]        the CREATE statements (of names matching PATTERN, a LIKE pattern)
.tables [PATTERN]        the tables and views
.timer on|off            how long each statement took
`;

/** An error in a script, with where it happened; `cause` is the SqliteError or other. */
class ScriptError extends Error {
  constructor(source, line, cause) {
    super(`${source} line ${line}: ${describe(cause)}`);
    this.code = cause.code;
    this.cause = cause;
    this.source = source;
    this.line = line;
    this.detail = describe(cause);
  }
}

/** An error as the shell shows it: SqliteError code and message. */
function describe(err) {
  return typeof err.code === 'string' && err.code.startsWith('SQLITE_') ? `${err.code}: ${err.message}` : err.message;
}

class DotError extends Error {}

const quoteId = (name) => `"${String(name).replace(/"/g, '""')}"`;
const quoteText = (s) => `'${String(s).replace(/'/g, "''")}'`;

function sqlLiteral(value) {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'NULL';
    if (!Number.isFinite(value)) return value > 0 ? '1e999' : '-1e999';
    return realText(value);
  }
  if (value instanceof Uint8Array) return `X'${blobHex(value)}'`;
  return quoteText(value);
}

const DEFAULT_SETTINGS = { mode: 'list', headers: false, nullValue: '', timer: false };

class Engine {
  /**
   * db: an open Database. write(text): the standard output. note(text): standard error.
   * settings: mode, headers, nullValue, timer. encrypted: whether .dump and .output warn.
   */
  constructor(db, { write, note, settings = {}, encrypted = false }) {
    this.db = db;
    this.stdout = write;
    this.note = note;
    this.settings = { ...DEFAULT_SETTINGS, ...settings };
    this.encrypted = encrypted;
    this.warned = new Set();
    this.outFd = null;
    this.outName = null;
    this.depth = 0;
    db.defaultSafeIntegers(true);
  }

  write(text) {
    if (this.outFd !== null) fs.writeSync(this.outFd, text);
    else this.stdout(text);
  }

  warnOnce(what, text) {
    if (this.warned.has(what)) return;
    this.warned.add(what);
    this.note(`${text}\n`);
  }

  /**
   * Runs a script: complete SQL statements and dot-commands, each dot-command a line of its
   * own where no statement is pending. Stops at the first error and throws a ScriptError
   * naming `source` and the line. Returns { quit, code } when .quit/.exit ran.
   */
  runScript(text, source, firstLine = 1) {
    const lines = text.split('\n');
    let pending = '';
    let pendingLine = firstLine;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].replace(/\r$/, '');
      const lineNo = firstLine + i;
      if (pending === '' && /^\s*\./.test(line)) {
        const r = this.guard(source, lineNo, () => this.dot(line.trim()));
        if (r && r.quit) return r;
        continue;
      }
      if (pending === '') {
        if (line.trim() === '') continue;
        pendingLine = lineNo;
      }
      pending += (pending === '' ? '' : '\n') + line;
      if (isComplete(pending)) {
        this.runSql(pending, source, pendingLine);
        pending = '';
      }
    }
    if (pending !== '' && !isOnlyBlank(pending)) {
      // sqlite3 runs a last statement without its `;` too, when the input ends.
      this.runSql(pending, source, pendingLine);
    }
    return { quit: false };
  }

  guard(source, line, fn) {
    try {
      return fn();
    } catch (err) {
      // A reader that went away (`| head`) ends the script quietly, as in sqlite3.
      if (err instanceof ScriptError || err instanceof ClosedOutput) throw err;
      throw new ScriptError(source, line, err);
    }
  }

  /** Runs every statement of sql (which starts at line firstLine of source). */
  runSql(sql, source, firstLine) {
    for (const stmt of splitStatements(sql)) {
      const line = firstLine + (sql.slice(0, stmt.offset).match(/\n/g) || []).length;
      this.guard(source, line, () => this.statement(stmt.sql));
    }
  }

  statement(sql) {
    const started = process.hrtime.bigint();
    const stmt = this.db.prepare(sql);
    if (stmt.reader) {
      const names = stmt.columns().map((c) => c.name);
      const p = printer(names, this.settings, (t) => this.write(t));
      for (const row of stmt.raw(true).iterate()) p.row(row);
      p.end();
    } else {
      stmt.run();
    }
    if (this.settings.timer) {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.write(`Run Time: real ${seconds.toFixed(3)}\n`);
    }
  }

  all(sql, ...params) {
    return this.db.prepare(sql).all(...params);
  }

  /** One dot-command line. */
  dot(line) {
    const args = splitArgs(line.slice(1));
    const cmd = args.shift() || '';
    const need = (n, usage) => {
      if (args.length < n) throw new DotError(`usage: .${usage}`);
    };
    const onOff = (usage) => {
      need(1, usage);
      const v = args[0].toLowerCase();
      if (['on', 'yes', '1', 'true'].includes(v)) return true;
      if (['off', 'no', '0', 'false'].includes(v)) return false;
      throw new DotError(`usage: .${usage}`);
    };
    switch (cmd) {
      case 'help':
        this.write(HELP);
        return;
      case 'quit':
      case 'exit':
        return { quit: true, code: args[0] !== undefined ? Number(args[0]) || 0 : 0 };
      case 'mode':
        if (!args.length) {
          this.write(`current output mode: ${this.settings.mode}\n`);
          return;
        }
        if (!MODES.includes(args[0])) throw new DotError(`unknown mode ${args[0]}: one of ${MODES.join(', ')}`);
        this.settings.mode = args[0];
        return;
      case 'headers':
      case 'header':
        this.settings.headers = onOff('headers on|off');
        return;
      case 'nullvalue':
        need(1, 'nullvalue TEXT');
        this.settings.nullValue = args[0];
        return;
      case 'timer':
        this.settings.timer = onOff('timer on|off');
        return;
      case 'tables': {
        const rows = this.all(
          `SELECT name FROM sqlite_schema WHERE type IN ('table','view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
           AND name LIKE ? ORDER BY name`,
          args[0] ?? '%',
        );
        this.write(columns(rows.map((r) => r.name)));
        return;
      }
      case 'indexes':
      case 'indices': {
        const rows = this.all(
          `SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name LIKE ? ORDER BY name`,
          args[0] ?? '%',
        );
        this.write(columns(rows.map((r) => r.name)));
        return;
      }
      case 'schema': {
        const rows = this.all(
          `SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
           AND (name LIKE ? OR tbl_name LIKE ?)
           ORDER BY rowid`,
          args[0] ?? '%',
          args[0] ?? '%',
        );
        for (const r of rows) this.write(`${r.sql};\n`);
        return;
      }
      case 'output':
      case 'once':
        this.closeOutput();
        if (args[0] !== undefined && args[0] !== 'stdout') {
          if (this.encrypted) {
            this.warnOnce('output', `note: results written to ${args[0]} are plaintext (the file is not encrypted)`);
          }
          this.outFd = fs.openSync(args[0], 'w', 0o600);
          this.outName = args[0];
        }
        return;
      case 'read': {
        need(1, 'read FILE');
        if (this.depth > 16) throw new DotError('.read nested too deeply');
        const text = fs.readFileSync(args[0], 'utf8');
        this.depth++;
        try {
          return this.runScript(text, args[0]);
        } finally {
          this.depth--;
        }
      }
      case 'dump':
        if (this.encrypted) {
          this.warnOnce('dump', 'note: .dump writes the database as plaintext SQL; keep where it goes safe');
        }
        this.dump(args[0]);
        return;
      case 'import':
        need(2, 'import FILE TABLE');
        this.importCsv(args[0], args[1]);
        return;
      default:
        throw new DotError(`unknown command .${cmd} (.help lists them)`);
    }
  }

  closeOutput() {
    if (this.outFd !== null) {
      fs.closeSync(this.outFd);
      this.outFd = null;
      this.outName = null;
    }
  }

  dump(pattern) {
    const w = (t) => this.write(t);
    const objects = this.all(
      `SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE sql IS NOT NULL ${pattern !== undefined ? 'AND tbl_name LIKE ?' : ''} ORDER BY rowid`,
      ...(pattern !== undefined ? [pattern] : []),
    );
    w('PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n');
    for (const o of objects) {
      if (o.type !== 'table') continue;
      if (/^sqlite_stat/.test(o.name)) continue;
      if (o.name === 'sqlite_sequence') {
        w('DELETE FROM sqlite_sequence;\n');
      } else {
        w(`${o.sql};\n`);
      }
      if (/^create\s+virtual\s+table/i.test(o.sql)) continue;
      const cols = this.all(`PRAGMA table_xinfo(${quoteText(o.name)})`);
      const stored = cols.filter((c) => c.hidden === 0n || c.hidden === 0);
      const list = stored.length === cols.length ? '' : `(${stored.map((c) => quoteId(c.name)).join(',')})`;
      const select = this.db.prepare(`SELECT ${stored.map((c) => quoteId(c.name)).join(',')} FROM ${quoteId(o.name)}`);
      for (const row of select.raw(true).iterate()) {
        w(`INSERT INTO ${quoteId(o.name)}${list} VALUES(${row.map(sqlLiteral).join(',')});\n`);
      }
    }
    for (const o of objects) {
      if (o.type !== 'table') w(`${o.sql};\n`);
    }
    w('COMMIT;\n');
  }

  importCsv(file, table) {
    const rows = parseCsv(fs.readFileSync(file, 'utf8'));
    if (!rows.length) return;
    const exists =
      this.all(`SELECT 1 FROM sqlite_schema WHERE type IN ('table','view') AND name = ?`, table).length > 0;
    let data = rows;
    if (!exists) {
      const header = rows[0].fields;
      this.db.exec(`CREATE TABLE ${quoteId(table)}(${header.map((h) => `${quoteId(h)} TEXT`).join(', ')})`);
      data = rows.slice(1);
    }
    const n = this.all(`PRAGMA table_info(${quoteText(table)})`).length;
    const insert = this.db.prepare(`INSERT INTO ${quoteId(table)} VALUES(${Array(n).fill('?').join(',')})`);
    const load = this.db.transaction(() => {
      for (const r of data) {
        if (r.fields.length !== n) {
          throw new DotError(`${file} line ${r.line}: ${r.fields.length} values for the ${n} columns of ${table}`);
        }
        insert.run(r.fields);
      }
    });
    load();
  }

  close() {
    this.closeOutput();
  }
}

/** A dot-command's arguments: blank-separated, "double" or 'single' quoted. */
function splitArgs(text) {
  const out = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+))/gy;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m[1] !== undefined) out.push(m[1].replace(/\\(.)/g, '$1'));
    else if (m[2] !== undefined) out.push(m[2]);
    else if (m[3] !== undefined) out.push(m[3]);
  }
  return out;
}

/** Names laid out in columns, as sqlite3's .tables does. */
function columns(names) {
  if (!names.length) return '';
  const w = Math.max(...names.map((n) => n.length)) + 2;
  const per = Math.max(1, Math.floor(80 / w));
  const rowsCount = Math.ceil(names.length / per);
  const out = [];
  for (let r = 0; r < rowsCount; r++) {
    const line = [];
    for (let c = 0; c < per; c++) {
      const name = names[c * rowsCount + r];
      if (name !== undefined) line.push(name.padEnd(w));
    }
    out.push(line.join('').trimEnd());
  }
  return out.join('\n') + '\n';
}

module.exports = { Engine, ScriptError, DotError, describe };
