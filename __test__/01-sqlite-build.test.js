'use strict';
// The SQLite inside the addon: the pinned version and the compile options of docs/design.md
// §3.1 (set in .cargo/config.toml), read back so that a silent change is caught.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Database } = require('./_module');

const REQUIRED_OPTIONS = [
  'TEMP_STORE=3', 'DQS=0', 'DEFAULT_FOREIGN_KEYS', 'DEFAULT_CACHE_SIZE=-16000', 'DEFAULT_WAL_SYNCHRONOUS=1',
  'THREADSAFE=2', 'ENABLE_COLUMN_METADATA', 'ENABLE_FTS5', 'ENABLE_RTREE',
  'ENABLE_MATH_FUNCTIONS', 'ENABLE_STAT4', 'ENABLE_DBSTAT_VTAB', 'OMIT_SHARED_CACHE', 'DEFAULT_MEMSTATUS=0',
  'ENABLE_FTS4', 'ENABLE_GEOPOLY', 'LIKE_DOESNT_MATCH_BLOBS', 'ENABLE_PERCENTILE', 'ENABLE_UPDATE_DELETE_LIMIT',
];
// SQLite does not list TRACE_SIZE_LIMIT or the value of USE_URI: their effects are tested
// in 36-verbose (bound strings cut after 32 bytes) and 19-compile-settings (file: names
// are plain file names).

test('sqlite_version() is the pinned 3.54.1', { skip: !require('./_module').isCipherlite && 'cipherlite only' }, () => {
  const db = new Database(':memory:');
  assert.equal(db.prepare('select sqlite_version() v').pluck().get(), '3.54.1');
  db.close();
});

test('PRAGMA compile_options lists every option docs/design.md §3.1 requires', { skip: !require('./_module').isCipherlite && 'cipherlite only' }, () => {
  const db = new Database(':memory:');
  const options = db.pragma('compile_options').map((r) => r.compile_options);
  db.close();
  for (const option of REQUIRED_OPTIONS) {
    const found = options.some((o) => o === option || (option === 'DEFAULT_FOREIGN_KEYS' && o === 'DEFAULT_FOREIGN_KEYS=1'));
    assert.ok(found, `missing compile option ${option} in ${options.join(', ')}`);
  }
  assert.ok(!options.some((o) => o.startsWith('THREADSAFE=1')), 'libsqlite3-sys default THREADSAFE=1 must be overridden');
});
