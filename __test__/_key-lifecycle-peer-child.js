'use strict';
// Child process for 86-key-lifecycle-files: another connection to a database while the
// parent encrypts or rekeys it. Config: env CIPHERLITE_PEER_CONFIG = { driver
// ('cipherlite' | 'better-sqlite3'), file, key (hex or null), journalMode, behaviour
// ('loop': commit one row at a time until a statement fails or the stop file appears;
// 'idle': one read, then wait for the stop file, then one write), stopFile }.
// Prints READY once it has the file open (and, looping, committed some rows), then one
// JSON line: { committed: rows it saw commit, error: { code, message } | null }.
const path = require('node:path');
const fs = require('node:fs');

const config = JSON.parse(process.env.CIPHERLITE_PEER_CONFIG);
const Driver = config.driver === 'better-sqlite3' ? require('better-sqlite3') : require(path.join(__dirname, '..'));
const db = new Driver(config.file, config.key ? { key: Buffer.from(config.key, 'hex') } : {});
db.pragma('busy_timeout = 20');
if (config.journalMode === 'off') db.unsafeMode(true);
db.pragma(`journal_mode = ${config.journalMode}`);
const insert = db.prepare("INSERT INTO t(v) VALUES ('from the peer')");
let committed = 0;
const done = (err) => {
  process.stdout.write(
    `${JSON.stringify({ committed, error: err ? { code: err.code, message: err.message } : null })}\n`,
  );
  process.exit(0);
};
const stopped = () => fs.existsSync(config.stopFile);

if (config.behaviour === 'idle') {
  db.prepare('SELECT count(*) FROM t').pluck().get();
  process.stdout.write('READY\n');
  const wait = () => {
    if (!stopped()) return setTimeout(wait, 10);
    try {
      insert.run();
      committed++;
      done(null);
    } catch (err) {
      done(err);
    }
  };
  wait();
} else {
  for (;;) {
    try {
      insert.run();
      committed++;
    } catch (err) {
      if (err.code === 'SQLITE_BUSY') continue;
      done(err);
    }
    if (committed === 20) process.stdout.write('READY\n');
    // A writer that pauses between transactions, as applications do: the parent's
    // operation finds the file unlocked now and then.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    if (committed % 20 === 0 && stopped()) done(null);
  }
}
