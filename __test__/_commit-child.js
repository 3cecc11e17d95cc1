'use strict';
// Child process for 59-process-kills: commits numbered transactions into an encrypted
// database and reports each one on stdout once commit() returned (acknowledged), until
// killed. Each transaction writes one row per table (t1, t2) with the same number and a
// payload that spills pages, so a half-applied one is visible. Config: env
// CIPHERLITE_COMMIT_CONFIG = { file, key (hex), journalMode, start, busyTimeout, writer }.
const path = require('node:path');
const Database = require(path.join(__dirname, '..'));

const config = JSON.parse(process.env.CIPHERLITE_COMMIT_CONFIG);
const db = new Database(config.file, { key: Buffer.from(config.key, 'hex'), timeout: config.busyTimeout || 5000 });
if (config.journalMode) db.pragma(`journal_mode = ${config.journalMode}`);
db.pragma('synchronous = FULL');
db.pragma('cache_size = 4');
db.exec(
  'CREATE TABLE IF NOT EXISTS t1(n INTEGER PRIMARY KEY, w INTEGER, pad TEXT); CREATE TABLE IF NOT EXISTS t2(n INTEGER PRIMARY KEY, w INTEGER, pad TEXT)',
);
const i1 = db.prepare('INSERT INTO t1 VALUES (?, ?, ?)');
const i2 = db.prepare('INSERT INTO t2 VALUES (?, ?, ?)');
const commit = db.transaction((n) => {
  const pad = `${n}-`.repeat(300);
  i1.run(n, config.writer || 0, pad);
  i2.run(n, config.writer || 0, pad);
});
const stride = config.stride || 1;
for (let n = config.start; n < config.start + (config.count || 1e9) * stride; n += stride) {
  commit.immediate(n);
  process.stdout.write(`${n}\n`);
}
db.close();
