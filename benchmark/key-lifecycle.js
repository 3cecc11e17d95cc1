'use strict';
// Times the key lifecycle on a big database against copying the file with cp(1):
//   node benchmark/key-lifecycle.js [sizeMiB=1024] [--native path/to/release.node]
// Build the release addon first (node scripts/build.js --release). One run of each, in
// this order: cp, encrypt (plaintext -> encrypted in place), verify, rekey, decrypt.
// The database is made by cipherlite itself (plaintext, rollback journal), rows of random
// 3000-byte blobs (one per page) with an integer key, like an application's data.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawnSync } = require('node:child_process');

const args = process.argv.slice(2);
const nativeAt = args.indexOf('--native');
const nativeBinding = nativeAt >= 0 ? path.resolve(args.splice(nativeAt, 2)[1]) : undefined;
const sizeMiB = Number(args[0] || 1024);
const Database = require('..');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cipherlite-bench-keys-'));
const file = path.join(dir, 'big.db');
const time = (label, fn) => {
  const start = process.hrtime.bigint();
  fn();
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(`${label.padEnd(34)} ${s.toFixed(2).padStart(8)} s`);
  return s;
};

try {
  const opts = nativeBinding ? { nativeBinding } : {};
  const db = new Database(file, opts);
  db.pragma('journal_mode = off');
  db.pragma('synchronous = off');
  // A 3000-byte row fills a 4096-byte page (two do not fit in one).
  const rows = Math.ceil((sizeMiB * 1024 * 1024) / 4096);
  db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)');
  const insert = db.prepare('INSERT INTO t(id, v) VALUES (?, randomblob(3000))');
  db.transaction(() => {
    for (let i = 1; i <= rows; i++) insert.run(i);
  })();
  db.pragma('journal_mode = delete');
  db.close();
  const bytes = fs.statSync(file).size;
  console.log(
    `database: ${(bytes / 1048576).toFixed(0)} MiB, ${rows} rows; node ${process.version}; ${os.cpus()[0].model}`,
  );
  spawnSync('sync');

  const key = crypto.randomBytes(32);
  const newKey = crypto.randomBytes(32);
  const cp = time('cp (then sync)', () => {
    spawnSync('cp', [file, `${file}.copy`]);
    spawnSync('sync');
  });
  fs.rmSync(`${file}.copy`);
  const enc = time('Database.encrypt (in place)', () => Database.encrypt(file, key, opts));
  let report;
  const ver = time('db.verify() (auth + integrity + digest)', () => {
    const d = new Database(file, { ...opts, key });
    report = d.verify();
    d.close();
  });
  if (!report.ok) throw new Error(`verify failed: ${JSON.stringify(report)}`);
  const rk = time('db.rekey()', () => {
    const d = new Database(file, { ...opts, key });
    d.rekey(newKey);
    d.close();
  });
  const dec = time('Database.decrypt (to a new file)', () => Database.decrypt(file, newKey, `${file}.plain`, opts));
  console.log(
    `\nratios to cp: encrypt ${(enc / cp).toFixed(1)}x, rekey ${(rk / cp).toFixed(1)}x, decrypt ${(dec / cp).toFixed(1)}x, verify ${(ver / cp).toFixed(1)}x`,
  );
  console.log(
    `throughput: encrypt ${(bytes / 1048576 / enc).toFixed(0)} MiB/s, rekey ${(bytes / 1048576 / rk).toFixed(0)} MiB/s, cp ${(bytes / 1048576 / cp).toFixed(0)} MiB/s`,
  );
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
