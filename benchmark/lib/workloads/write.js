'use strict';
// Write-heavy workload: one small transaction per statement (autocommit), the way an app
// records events, in WAL mode with synchronous=NORMAL (commits append to the WAL without
// fsync; checkpoints every 1000 pages). Every commit writes pages — to an encrypted
// database, encrypts them — so this is where a codec's cost shows most.

const { prng, intPrng, shuffledIds, checksum } = require('../data');
const { pragmaSettings, openDatabase, timeNs, perOp, tableState } = require('./common');

const SIZES = {
  full: { inserts: 5000, updates: 5000, deletes: 2500 },
  quick: { inserts: 500, updates: 500, deletes: 250 },
};

const KINDS = ['page_view', 'click', 'form_submit', 'sign_in', 'purchase', 'search'];
const PAGES = ['/', '/pricing', '/docs/getting-started', '/blog/2025/encrypted-sqlite', '/account/settings', '/search'];

/** Event rows (user_id, kind, payload JSON of 80–200 bytes, ts), from `seed`. */
function eventRows(count, seed) {
  const rand = prng(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const out = new Array(count);
  let ts = 1_750_000_000_000;
  for (let i = 0; i < count; i++) {
    ts += 1 + Math.floor(rand() * 5000);
    const payload = JSON.stringify({
      page: pick(PAGES),
      ms: Math.floor(rand() * 2000),
      session: Math.floor(rand() * 2 ** 48).toString(36),
      ua:
        rand() < 0.5
          ? 'Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/140.0'
          : 'Mozilla/5.0 (Macintosh) Safari/605.1.15',
    });
    out[i] = [1 + Math.floor(rand() * 500), pick(KINDS), payload, ts];
  }
  return out;
}

function run(ctx) {
  const size = SIZES[ctx.quick ? 'quick' : 'full'];
  const seed = ctx.seed;
  const inserts = eventRows(size.inserts, seed);
  const updates = eventRows(size.updates, seed + 1);
  const rnd = intPrng(seed + 2);
  const updateIds = updates.map(() => 1 + rnd(size.inserts));
  const deleteIds = shuffledIds(size.inserts, seed + 3).slice(0, size.deletes);

  const { db, file, pragmas } = openDatabase(ctx, 'write.db', pragmaSettings('WAL', 'NORMAL'));
  db.exec(`CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    ts INTEGER NOT NULL
  )`);
  db.exec('CREATE INDEX events_user_ts ON events(user_id, ts)');
  const metrics = {};
  const checks = {};
  const snapshot = () => {
    const rows = tableState(db, 'events', 'id');
    return { rows: rows.length, checksum: checksum(rows) };
  };

  const insert = db.prepare('INSERT INTO events (user_id, kind, payload, ts) VALUES (?, ?, ?, ?)');
  let ns = timeNs(ctx, () => {
    for (const r of inserts) insert.run(r[0], r[1], r[2], r[3]);
  });
  metrics.insert = perOp(`autocommit INSERT (indexed table) ×${inserts.length}`, ns, inserts.length, 'µs');
  checks.insert = snapshot();

  const update = db.prepare('UPDATE events SET payload = ?, ts = ? WHERE id = ?');
  ns = timeNs(ctx, () => {
    for (let i = 0; i < updates.length; i++) update.run(updates[i][2], updates[i][3], updateIds[i]);
  });
  metrics.update = perOp(`autocommit UPDATE by primary key ×${updates.length}`, ns, updates.length, 'µs');
  checks.update = snapshot();

  const del = db.prepare('DELETE FROM events WHERE id = ?');
  ns = timeNs(ctx, () => {
    for (const id of deleteIds) del.run(id);
  });
  metrics.delete = perOp(`autocommit DELETE by primary key ×${deleteIds.length}`, ns, deleteIds.length, 'µs');
  checks.delete = snapshot();

  db.close();
  return { metrics, checks, pragmas, files: [file] };
}

module.exports = { name: 'write', title: 'Write-heavy (autocommit, WAL, synchronous=NORMAL)', run };
