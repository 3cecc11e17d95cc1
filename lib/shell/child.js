'use strict';
// The interactive shell's connection lives in this process, a child of the shell's, so that
// a Ctrl-C can stop a statement that runs for long: SQLite's C call can't be interrupted
// from JS (the addon has no sqlite3_interrupt), and a worker thread in a native call can't
// be terminated either, but a process can be killed. SQLite then rolls back on the next open
// whatever the statement left unfinished. The key arrives over the IPC channel, never in argv
// or the environment. Output goes straight to the inherited standard output and error.

const path = require('node:path');
const { Engine, ScriptError, describe } = require('./engine');
const { writeAll } = require('./output');

// The terminal's Ctrl-C is the parent's to handle.
process.on('SIGINT', () => {});

let db;
let engine;

const send = (msg) => process.send(msg);

function open(msg) {
  const Database = require(path.join(__dirname, '..', '..'));
  const key = msg.key !== undefined ? Buffer.from(msg.key, 'hex') : undefined;
  try {
    db = new Database(msg.file, {
      key,
      passphrase: msg.passphrase,
      pageSize: msg.pageSize,
      cipher: msg.cipher,
      algorithm: msg.algorithm,
      ...msg.costs,
      readonly: msg.readonly,
      fileMustExist: msg.readonly,
    });
    // A wrong key shows at the first read, not always at open.
    const version = db.prepare('SELECT sqlite_version() AS v, (SELECT count(*) FROM sqlite_schema) AS n').get().v;
    engine = new Engine(db, {
      write: (t) => writeAll(1, t),
      note: (t) => writeAll(2, t),
      settings: msg.settings,
      encrypted: key !== undefined || msg.passphrase !== undefined,
    });
    send({ type: 'opened', version });
  } catch (err) {
    if (db) db.close();
    send({ type: 'open-failed', code: err.code, message: err.message, name: err.name });
    process.disconnect();
  }
}

function run(msg) {
  let result = { quit: false };
  try {
    result = engine.runScript(msg.text, msg.source);
  } catch (err) {
    const where = err instanceof ScriptError && err.source !== msg.source ? `${err.source} line ${err.line}: ` : '';
    const multiLine = err instanceof ScriptError && err.source === msg.source && /\n./.test(msg.text.trimEnd());
    const detail = err instanceof ScriptError ? err.detail : describe(err);
    writeAll(2, `Error: ${where}${detail}${multiLine ? ` (line ${err.line} of the input)` : ''}\n`);
  }
  send({ type: 'done', quit: result.quit, code: result.code, settings: engine.settings });
}

process.on('message', (msg) => {
  if (msg.type === 'open') open(msg);
  else if (msg.type === 'run') run(msg);
  else if (msg.type === 'close') {
    if (engine) engine.close();
    if (db) db.close(); // checkpoints a WAL as every close does
    process.disconnect();
  }
});
