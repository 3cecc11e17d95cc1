'use strict';
// Child process for the crash tests (53, and 51/54 use it too): opens a database, commits
// the `committed` statements, then with a tiny page cache (so dirty pages spill into the
// database file or the WAL) starts a transaction, runs `uncommitted`, reports the file
// sizes on stdout, prints READY and waits to be SIGKILLed. Config: env CIPHERLITE_CRASH_CONFIG.
const fs = require('node:fs');
const path = require('node:path');
const Database = require(path.join(__dirname, '..'));

const config = JSON.parse(process.env.CIPHERLITE_CRASH_CONFIG);
const options = {};
if (config.key) options.key = Buffer.from(config.key, 'hex');
if (config.layout) options.cipherLayout = config.layout;
if (config.cipher) options.cipher = config.cipher;

const db = new Database(config.file, options);
if (config.journalMode) db.pragma(`journal_mode = ${config.journalMode}`);
if (config.journalMode === 'wal') db.pragma('wal_autocheckpoint = 0');
for (const sql of config.committed || []) db.exec(sql);
db.pragma(`cache_size = ${config.cacheSize || 2}`);
db.exec('BEGIN');
for (const sql of config.uncommitted || []) db.exec(sql);

const size = (suffix) => {
  try {
    return fs.statSync(config.file + suffix).size;
  } catch {
    return -1;
  }
};
process.stdout.write(`INFO ${JSON.stringify({ db: size(''), journal: size('-journal'), wal: size('-wal') })}\nREADY\n`);
// Stay in the transaction until the parent kills us. The timer holds `db`: nothing else
// does once this module has run, and a collected Database closes its connection (as
// better-sqlite3's does), which rolls the transaction back and deletes the journal before
// the kill arrives (a GC in this idle child made test 51 fail under load).
setInterval(() => db, 60000);
