'use strict';
// Databases bigger than the page cache (issue 13, item 3): every page SQLite misses in its
// cache is read through the VFS again, and an encrypted stack decrypts and verifies it
// again. The cache is set small (cache_size −1600, 1.6 MB) so that the database is many times
// its size without a long load.
//
// 1. Load 100,000 rows (untimed; ~7× the cache). Then, timed: full scans
//    (`SELECT sum(length(payload)), sum(k)`: every page) and random point reads by primary key.
// 2. A Turso-style mix as the table grows (100k → 300k → 1M rows): batches of 100 operations
//    in one transaction each, 75% point reads of random existing rows and 25% inserts; µs per
//    batch at each size, to show the encrypted overhead against the database's size.
//
// WAL, synchronous=NORMAL, mmap off (the same PRAGMAs as the other workloads but the cache).

const { intPrng, checksum } = require('../data');
const { pragmaSettings, openDatabase, timeNs, perOp } = require('./common');

const SIZES = {
  full: { cacheKiB: 1600, steps: [100_000, 300_000, 1_000_000], scans: 3, points: 5000, batches: 200 },
  quick: { cacheKiB: 64, steps: [5_000, 10_000, 20_000], scans: 2, points: 500, batches: 20 },
};

/** Row `i`: (k, payload of ~120 bytes), the same on every stack. */
function row(i) {
  const k = (i * 2654435761) % 1000003;
  return [
    k,
    `user${i}@example.com ${k.toString(36).padStart(8, '0')} ${'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(2)} ${i}`,
  ];
}

function run(ctx) {
  const size = SIZES[ctx.quick ? 'quick' : 'full'];
  const settings = pragmaSettings('WAL', 'NORMAL').map(([k, v]) => (k === 'cache_size' ? [k, -size.cacheKiB] : [k, v]));
  const { db, file, pragmas } = openDatabase(ctx, 'bigdb.db', settings);
  db.exec('CREATE TABLE big (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, payload TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO big (id, k, payload) VALUES (?, ?, ?)');
  const point = db.prepare('SELECT k, payload FROM big WHERE id = ?');
  let rows = 0;
  const grow = (to) => {
    while (rows < to) {
      const end = Math.min(to, rows + 50_000);
      db.exec('BEGIN');
      for (let i = rows + 1; i <= end; i++) {
        const r = row(i);
        insert.run(i, r[0], r[1]);
      }
      db.exec('COMMIT');
      rows = end;
    }
    db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get();
  };
  const metrics = {};
  const checks = {};
  const pageCount = () => db.prepare('PRAGMA page_count').get().page_count;

  grow(size.steps[0]);
  const cachePages = Math.floor((size.cacheKiB * 1024) / 4096);
  // In the labels, not the checks: an encrypted file has more pages (each keeps 80 bytes).
  const multiple = Math.floor(pageCount() / cachePages);

  // 1. Full scans and random point reads of a database ~7× the cache.
  const scan = db.prepare('SELECT sum(length(payload)) AS bytes, sum(k) AS ks FROM big');
  let last = scan.get();
  let ns = timeNs(ctx, () => {
    for (let s = 0; s < size.scans; s++) last = scan.get();
  });
  metrics.scan = perOp(`full scan of ${rows} rows (${multiple}× the cache) ×${size.scans}`, ns, size.scans, 'ms');
  checks.scan = last;
  const rnd = intPrng(ctx.seed + 5);
  const ids = Array.from({ length: size.points }, () => 1 + rnd(rows));
  let bytes = 0;
  ns = timeNs(ctx, () => {
    for (let i = 0; i < ids.length; i++) bytes += point.get(ids[i]).payload.length;
  });
  metrics.point = perOp(`random point read beyond the cache ×${ids.length}`, ns, ids.length, 'µs');
  checks.point = bytes;

  // 2. Turso-style batches at each size.
  const mix = intPrng(ctx.seed + 6);
  for (const step of size.steps) {
    grow(step);
    let read = 0;
    let next = rows + 1;
    ns = timeNs(ctx, () => {
      for (let b = 0; b < size.batches; b++) {
        db.exec('BEGIN');
        for (let j = 0; j < 100; j++) {
          if (j % 4 === 3) {
            const r = row(next);
            insert.run(next++, r[0], r[1]);
          } else {
            read += point.get(1 + mix(step)).payload.length;
          }
        }
        db.exec('COMMIT');
      }
    });
    rows = next - 1;
    const label = step >= 1e6 ? `${step / 1e6}M` : `${step / 1e3}k`;
    metrics[`mix${label}`] = perOp(
      `batch of 100 ops (75% reads), at ${label} rows (${Math.floor(pageCount() / cachePages)}× the cache) ×${size.batches}`,
      ns,
      size.batches,
      'µs',
    );
    checks[`mix${label}`] = { read, rows };
  }
  checks.final = checksum([db.prepare('SELECT count(*) AS n, sum(k) AS k FROM big').get()]);
  db.close();
  return { metrics, checks, pragmas, files: [file] };
}

module.exports = {
  name: 'bigdb',
  title: 'Beyond the page cache (cache_size −1600) and a Turso-style mix as the table grows',
  run,
};
