'use strict';
// What every workload shares: opening a file database with the same PRAGMAs on every
// stack (and reading them back), the clock, and collecting garbage outside timed code.

const path = require('node:path');

/**
 * PRAGMA settings, applied in this order right after open (page_size first: it only takes
 * effect before the first table is created, and never in WAL mode).
 * @param {'WAL'|'DELETE'} journalMode
 * @param {'NORMAL'|'OFF'|'FULL'} synchronous
 * @returns {Array<[string, string|number]>}
 */
function pragmaSettings(journalMode, synchronous) {
  return [
    ['page_size', 4096],
    ['journal_mode', journalMode],
    ['synchronous', synchronous],
    ['cache_size', -16000], // 16 MB, better-sqlite3's and cipherlite's compiled default
    ['temp_store', 'MEMORY'],
    ['mmap_size', 0],
    ['wal_autocheckpoint', 1000],
    ['foreign_keys', 'ON'],
  ];
}

/**
 * Opens `name` in the run's directory with the given settings and reads every PRAGMA back.
 * @returns {{ db: any, file: string, pragmas: Record<string, unknown> }}
 */
function openDatabase(ctx, name, settings) {
  const file = path.join(ctx.dir, name);
  const db = ctx.stack.open(file);
  // A stack that opens with its own page size (cipherlite-encrypted-8k) keeps it.
  for (const [key, value] of settings) {
    if (!(key === 'page_size' && ctx.stack.pageSize)) db.exec(`PRAGMA ${key} = ${value}`);
  }
  const pragmas = {};
  for (const [key] of settings) {
    const row = db.prepare(`PRAGMA ${key}`).get();
    pragmas[key] = row === undefined ? null : Object.values(row)[0];
  }
  return { db, file, pragmas };
}

/** Runs `fn` once and returns how long it took, in nanoseconds (as a Number). */
function timeNs(ctx, fn) {
  ctx.gc();
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

/** A metric: a per-operation time in the unit that reads naturally for it. */
function perOp(label, ns, ops, unit) {
  const scale = { µs: 1e3, ms: 1e6 }[unit];
  return { label, value: ns / ops / scale, unit, ops };
}

/** Every row of a table in a stable order, for a results checksum (read untimed). */
function tableState(db, table, orderBy = 'rowid') {
  return db.prepare(`SELECT * FROM ${table} ORDER BY ${orderBy}`).all();
}

module.exports = { pragmaSettings, openDatabase, timeNs, perOp, tableState };
