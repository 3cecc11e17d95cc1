'use strict';
// Encrypted databases in the situations a review found: WAL transactions bigger than the
// page cache (SQLite rewrites frames in place), two connections opening one new file
// (each draws a salt until the first write settles it), ATTACH + write in one exec().
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { Database } = require('./_module');
const { isCipherlite } = require('./_module');
const { tempDir, removeDir } = require('./_helpers');

describe('encryption edge cases', { skip: !isCipherlite && 'cipherlite only' }, () => {
  let dir;
  const key = Buffer.alloc(32, 0x5a);
  beforeEach(() => {
    dir = tempDir('edge');
  });
  afterEach(() => {
    removeDir(dir);
  });

  it('a WAL transaction larger than the page cache commits, survives reopening and has no plaintext', () => {
    const file = path.join(dir, 'big.db');
    const db = new Database(file, { key });
    db.pragma('journal_mode = WAL');
    db.pragma('cache_size = 10');
    db.exec('create table t(x integer primary key, y text); create index ty on t(y)');
    const insert = db.prepare('insert into t(y) values (?)');
    db.transaction(() => {
      for (let i = 0; i < 5000; i++) insert.run(`CANARY-${(i * 7919) % 5000}`);
    })();
    assert.equal(db.prepare('select count(*) from t').pluck().get(), 5000);
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    for (const f of fs.readdirSync(dir)) {
      assert.ok(!fs.readFileSync(path.join(dir, f)).includes('CANARY'), `plaintext in ${f}`);
    }
    db.close();
    const again = new Database(file, { key });
    assert.equal(again.prepare('select count(*) from t').pluck().get(), 5000);
    again.close();
  });

  it('two connections that open the same new file agree on its salt once one of them writes', () => {
    const file = path.join(dir, 'new.db');
    const a = new Database(file, { key });
    const b = new Database(file, { key });
    a.exec('create table t(x)');
    a.prepare('insert into t values (1)').run();
    assert.equal(b.prepare('select count(*) from t').pluck().get(), 1);
    b.prepare('insert into t values (2)').run();
    assert.equal(a.prepare('select count(*) from t').pluck().get(), 2);
    a.close();
    b.close();
  });

  it('a crash during the first transaction of a new database rolls back to an empty, usable database', () => {
    const { spawnSync } = require('child_process');
    const file = path.join(dir, 'first.db');
    // The child spills pages of its first transaction (page 1 stays in the cache, so the
    // file's page 1 is zeros) and dies without committing.
    const child = `
      const { Database } = require(${JSON.stringify(path.join(__dirname, '_module'))});
      const db = new Database(${JSON.stringify(file)}, { key: Buffer.alloc(32, 0x5a) });
      db.pragma('cache_size = 5');
      db.exec('begin; create table t(x, y)');
      const s = db.prepare('insert into t values (?, ?)');
      for (let i = 0; i < 2000; i++) s.run(i, 'CANARY'.repeat(30));
      process.kill(process.pid, 'SIGKILL');
    `;
    spawnSync(process.execPath, ['-e', child], { stdio: 'ignore' });
    assert.ok(fs.existsSync(`${file}-journal`), 'a hot journal was left');
    assert.ok(
      fs
        .readFileSync(file)
        .subarray(0, 4096)
        .every((b) => b === 0),
      'page 1 never written',
    );
    const db = new Database(file, { key });
    assert.equal(db.prepare('select count(*) from sqlite_master').pluck().get(), 0);
    db.exec("create table z(a); insert into z values ('after')");
    db.close();
    assert.ok(!fs.existsSync(`${file}-journal`));
    const again = new Database(file, { key });
    assert.equal(again.prepare('select a from z').pluck().get(), 'after');
    again.close();
  });

  it('ATTACH of a new file and a write to it in the same exec() works and is encrypted', () => {
    const db = new Database(path.join(dir, 'main.db'), { key });
    const other = path.join(dir, 'other.db');
    db.exec(`ATTACH '${other}' AS o; CREATE TABLE o.z(v); INSERT INTO o.z VALUES ('CANARY-attached')`);
    assert.equal(db.prepare('select v from o.z').pluck().get(), 'CANARY-attached');
    db.close();
    assert.ok(!fs.readFileSync(other).includes('CANARY'));
    const reopened = new Database(other, { key });
    assert.equal(reopened.prepare('select v from z').pluck().get(), 'CANARY-attached');
    reopened.close();
  });
});
