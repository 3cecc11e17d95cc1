'use strict';
// Forward Email's SQLite benchmark, in the shape its public suite (forwardemail/sqlite-
// benchmarks) measures, run on every stack: one configuration of PRAGMAs per child.
//
// - setup: open (and key), apply the configuration's PRAGMAs, create the mail schema
//   (mailboxes, messages + 3 indexes), insert 1 mailbox and 1,000 messages of ~3.5 KB in
//   one transaction — timed as one block, in ms;
// - insert: 100 autocommit INSERTs of ~1 KB messages — ops/s;
// - select: 1,000 `.all()` of the 50 newest messages of the mailbox — ops/s;
// - update: 100 autocommit UPDATEs of flags by id — ops/s;
// - delete: one DELETE of the 600 newest rows (id > 1500 in Forward Email's numbering;
//   here id > 500 of our 1,100) — "ops/s" is 1 / its time, as Forward Email reports it;
// - the sizes of the database file and its WAL just before close.
//
// Timestamps are fixed (not Date.now()) so every stack stores the same rows; the row
// counts and a checksum after every step must be equal across stacks.

const path = require('node:path');
const fs = require('node:fs');
const { checksum } = require('../data');
const { timeNs, tableState } = require('./common');

// Forward Email's production PRAGMAs (the order they are applied in) and its variants.
const PRODUCTION = [
  ['analysis_limit', 400],
  ['auto_vacuum', 'NONE'],
  ['automatic_index', 'ON'],
  ['busy_timeout', 30000],
  ['cache_size', -16000],
  ['foreign_keys', 'ON'],
  ['journal_mode', 'WAL'],
  ['synchronous', 'NORMAL'],
  ['temp_store', 1],
  ['wal_autocheckpoint', 1000],
];
const withPragmas = (...changes) => {
  const out = PRODUCTION.map(([k, v]) => [k, v]);
  for (const [k, v] of changes) {
    const at = out.findIndex(([key]) => key === k);
    if (at >= 0) out[at][1] = v;
    else out.push([k, v]);
  }
  return out;
};
const CONFIGS = {
  production: PRODUCTION,
  'WAL autocheckpoint 1000': withPragmas(['wal_autocheckpoint', 1000]),
  'temp_store MEMORY': withPragmas(['temp_store', 2]),
  'cache 64 MB': withPragmas(['cache_size', -64000]),
  'mmap 256 MB': withPragmas(['mmap_size', 268435456]),
  'synchronous OFF': withPragmas(['synchronous', 'OFF']),
  'synchronous EXTRA': withPragmas(['synchronous', 'EXTRA']),
  'incremental vacuum': withPragmas(['auto_vacuum', 'INCREMENTAL']),
  'analysis_limit 1000': withPragmas(['analysis_limit', 1000]),
  'busy timeout 60 s': withPragmas(['busy_timeout', 60000]),
  'cache + mmap': withPragmas(['cache_size', -64000], ['mmap_size', 268435456]),
  'all optimisations': withPragmas(['cache_size', -64000], ['mmap_size', 268435456], ['temp_store', 2]),
  'baseline (no PRAGMAs)': [],
};
// Read back after setup, for every configuration (so a PRAGMA a stack ignores shows).
const READ_BACK = [
  'journal_mode',
  'synchronous',
  'cache_size',
  'temp_store',
  'mmap_size',
  'auto_vacuum',
  'analysis_limit',
  'busy_timeout',
  'wal_autocheckpoint',
];

const SCHEMA = `
CREATE TABLE mailboxes (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  uidvalidity INTEGER NOT NULL,
  uidnext INTEGER NOT NULL
);
CREATE TABLE messages (
  id INTEGER PRIMARY KEY,
  mailbox_id INTEGER NOT NULL REFERENCES mailboxes(id),
  uid INTEGER NOT NULL,
  date INTEGER NOT NULL,
  flags TEXT,
  subject TEXT,
  from_addr TEXT,
  to_addr TEXT,
  message_id TEXT,
  raw BLOB
);
CREATE INDEX idx_messages_mailbox_date ON messages(mailbox_id, date DESC);
CREATE INDEX idx_messages_uid ON messages(mailbox_id, uid);
CREATE INDEX idx_messages_flags ON messages(mailbox_id, flags) WHERE flags IS NOT NULL;`;
const INSERT = `INSERT INTO messages (mailbox_id, uid, date, flags, subject, from_addr, to_addr, message_id, raw)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const NOW = 1_764_547_200_000; // 2025-12-01, fixed

const SIZES = {
  full: { messages: 1000, inserts: 100, selects: 1000, updates: 100 },
  quick: { messages: 200, inserts: 20, selects: 200, updates: 20 },
};

function message(i, base, text, repeat) {
  return [
    1,
    i,
    base - i * 60000,
    i % 10 === 0 ? '\\Seen' : '',
    `${text} Subject ${i}`,
    `sender${i}@example.com`,
    `recipient${i}@example.com`,
    `<message-${i}@example.com>`,
    Buffer.from(`${text} message content ${i} `.repeat(repeat)),
  ];
}

function run(ctx) {
  const pragmaList = CONFIGS[ctx.config];
  if (!pragmaList) throw new Error(`unknown configuration ${ctx.config} (known: ${Object.keys(CONFIGS).join(', ')})`);
  const size = SIZES[ctx.quick ? 'quick' : 'full'];
  const file = path.join(ctx.dir, 'configs.db');
  const initial = Array.from({ length: size.messages }, (_, k) => message(k + 1, NOW, 'Raw', 100));
  const extra = Array.from({ length: size.inserts }, (_, k) =>
    message(size.messages + 1 + k, NOW + 3.6e6, 'Benchmark', 40),
  );
  const metrics = {};
  const checks = {};
  const snapshot = () => {
    const rows = tableState(db, 'messages', 'id');
    return {
      rows: rows.length,
      checksum: checksum(rows.map((r) => [r.id, r.uid, r.date, r.flags, r.subject, r.raw.length])),
    };
  };

  let db;
  const setupNs = timeNs(ctx, () => {
    db = ctx.stack.open(file);
    for (const [k, v] of pragmaList) db.exec(`PRAGMA ${k} = ${v}`);
    db.exec(SCHEMA);
    db.prepare('INSERT INTO mailboxes (id, name, path, uidvalidity, uidnext) VALUES (1, ?, ?, 1234567890, 1)').run(
      'INBOX',
      'INBOX',
    );
    const insert = db.prepare(INSERT);
    db.exec('BEGIN');
    for (const m of initial) insert.run(m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]);
    db.exec('COMMIT');
  });
  metrics.setup = {
    label: `setup: open, PRAGMAs, schema, ${size.messages} messages`,
    value: setupNs / 1e6,
    unit: 'ms',
    ops: 1,
  };
  const pragmas = {};
  for (const k of READ_BACK) {
    const row = db.prepare(`PRAGMA ${k}`).get();
    pragmas[k] = row === undefined ? null : Object.values(row)[0];
  }
  checks.setup = snapshot();

  const rate = (label, ns, ops) => ({ label, value: ops / (ns / 1e9), unit: 'ops/s', ops, ms: ns / 1e6 });

  const insert = db.prepare(INSERT);
  let ns = timeNs(ctx, () => {
    for (const m of extra) insert.run(m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]);
  });
  metrics.insert = rate(`autocommit INSERT ×${extra.length}`, ns, extra.length);
  checks.insert = snapshot();

  const select = db.prepare(
    'SELECT id, subject, from_addr, date FROM messages WHERE mailbox_id = ? AND date > ? ORDER BY date DESC LIMIT 50',
  );
  let last;
  ns = timeNs(ctx, () => {
    for (let i = 0; i < size.selects; i++) last = select.all(1, NOW - 86400000 * 30);
  });
  metrics.select = rate(`SELECT 50 newest, .all() ×${size.selects}`, ns, size.selects);
  checks.select = { rows: last.length, checksum: checksum(last) };

  const update = db.prepare('UPDATE messages SET flags = ? WHERE id = ?');
  ns = timeNs(ctx, () => {
    for (let i = 1; i <= size.updates; i++) update.run('\\Seen \\Flagged', i);
  });
  metrics.update = rate(`autocommit UPDATE by id ×${size.updates}`, ns, size.updates);
  checks.update = snapshot();

  const cut = Math.floor(size.messages / 2);
  const del = db.prepare('DELETE FROM messages WHERE id > ?');
  ns = timeNs(ctx, () => {
    checks.deleted = del.run(cut).changes;
  });
  metrics.delete = rate(`DELETE id > ${cut} (1 statement)`, ns, 1);
  checks.delete = snapshot();

  const bytes = (f) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
  metrics.dbSize = { label: 'database file before close', value: bytes(file) / 2 ** 20, unit: 'MiB', ops: 1 };
  metrics.walSize = { label: 'WAL file before close', value: bytes(`${file}-wal`) / 2 ** 20, unit: 'MiB', ops: 1 };
  db.close();
  return { metrics, checks, pragmas, files: [file] };
}

module.exports = { name: 'configs', title: "Forward Email's PRAGMA configurations", run, CONFIGS, PRODUCTION };
