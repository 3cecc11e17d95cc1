'use strict';
// What differs on Windows (docs/packaging.md "Windows", docs/design.md §4.5 and §4.6): run by
// scripts/test-windows.js under Wine (and natively by CI's windows-latest job); skipped
// elsewhere. It also runs once more with `--no-node-snapshot`, as Electron's main process
// starts Node.
const { describe, it, after } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const Database = require('..');
const { tempDir, removeDir, listDir } = require('./_helpers');

const skip = process.platform !== 'win32' && 'Windows only (node scripts/test-windows.js)';
const key = Buffer.alloc(32, 0x11);
const otherKey = Buffer.alloc(32, 0x22);

describe('46 Windows', { skip }, () => {
  let dir;
  const file = (name) => path.join(dir, name);
  after(() => removeDir(dir));

  it('the addon loaded is the win32 one', () => {
    dir = tempDir('win');
    assert.match(path.basename(Database.__nativePath), /win32-(x64|arm64)/);
  });

  it('paths: backslashes, forward slashes, a drive letter, non-ASCII names', () => {
    const names = [file('a.db'), file('a.db').replace(/\\/g, '/'), file('ünïcödé-データ.db')];
    for (const name of names) {
      const db = new Database(name, { key });
      db.exec('CREATE TABLE IF NOT EXISTS t(x); INSERT INTO t VALUES (1)');
      db.close();
    }
    assert.ok(/^[A-Za-z]:\\/.test(dir), `a drive-letter path: ${dir}`);
    const db = new Database(file('a.db'), { key, readonly: true });
    assert.equal(db.prepare('SELECT count(*) AS n FROM t').get().n, 2, 'both spellings name one file');
    db.close();
    assert.ok(listDir(dir).includes('ünïcödé-データ.db'), listDir(dir).join(', '));
  });

  it('an encrypted connection refuses WAL, saying why; the file stays in rollback mode', () => {
    const db = new Database(file('wal.db'), { key });
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    assert.throws(() => db.pragma('journal_mode = WAL'), /cannot use WAL mode on Windows/);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'delete');
    db.exec('INSERT INTO t VALUES (2)');
    db.close();
    assert.ok(!fs.existsSync(file('wal.db-wal')));
    assert.ok(!fs.existsSync(file('wal.db-shm')));
  });

  it('a plaintext connection keeps WAL (SQLite win32 VFS, unchanged)', () => {
    const db = new Database(file('plain.db'));
    assert.equal(db.pragma('journal_mode = WAL', { simple: true }), 'wal');
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    const reader = new Database(file('plain.db'), { readonly: true });
    assert.equal(reader.prepare('SELECT count(*) AS n FROM t').get().n, 1);
    reader.close();
    db.close();
  });

  it('new Database(fd) is a TypeError', () => {
    assert.throws(
      () => new Database(3, { journalFd: 4 }),
      (err) => err instanceof TypeError && /not supported on this platform \(Windows\)/.test(err.message),
    );
  });

  it('results are buffers V8 owns (no external ArrayBuffer, as Electron requires)', () => {
    const db = new Database(file('blobs.db'), { key });
    const row = db.prepare('SELECT randomblob(64) AS b, zeroblob(1000) AS z').get();
    assert.ok(Buffer.isBuffer(row.b) && row.b.length === 64);
    assert.equal(row.z.length, 1000);
    db.close();
  });

  it('rekey and encrypt are refused before any work, saying why; the file is unchanged', () => {
    const db = new Database(file('rekey.db'), { key });
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (42)');
    assert.throws(() => db.rekey(otherKey), /cannot rekey .* on Windows: .*does not rename over a file that is open/);
    assert.equal(db.prepare('SELECT x FROM t').get().x, 42);
    db.close();
    const plain = new Database(file('plain-to-encrypt.db'));
    plain.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    plain.close();
    assert.throws(
      () => Database.encrypt(file('plain-to-encrypt.db'), key),
      /cannot encrypt .* on Windows: .*does not rename over a file that is open/,
    );
    const again = new Database(file('rekey.db'), { key });
    assert.equal(again.prepare('SELECT x FROM t').get().x, 42);
    again.close();
    assert.deepEqual(
      listDir(dir).filter((n) => /^(rekey|plain-to-encrypt)\.db./.test(n)),
      [],
      'no copy or journal left beside the files',
    );
  });

  it('decrypt (a copy under a new name) and verify work', () => {
    const db = new Database(file('dec.db'), { key });
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (7)');
    assert.equal(db.verify().ok, true);
    db.close();
    Database.decrypt(file('dec.db'), key, file('dec-plain.db'));
    const plain = new Database(file('dec-plain.db'), { readonly: true });
    assert.equal(plain.prepare('SELECT x FROM t').get().x, 7);
    plain.close();
  });
});
