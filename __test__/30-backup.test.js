'use strict';
// docs/better-sqlite3-behaviour.md §4.5 Database#backup(destination, { attached, progress }) — better-sqlite3 v12 behaviour.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Database, NOT_OPEN, makeTempDir, removeDir, exact, checkSqliteError, bigMemoryDb } = require('./_helpers-ext');

const PROGRESS_RETURN = 'Expected progress callback to return a number or undefined';

let dir;
let counter = 0;
const next = (name = 'backup') => path.join(dir, `${name}-${++counter}.db`);

before(() => {
  dir = makeTempDir();
});
after(() => {
  removeDir(dir);
});

/** Opens a backup file and returns what it holds, so a test can compare it with the source. */
function readBackup(file) {
  const db = new Database(file, { fileMustExist: true });
  try {
    return {
      integrity: db.pragma('integrity_check', { simple: true }),
      pageCount: db.pragma('page_count', { simple: true }),
      tables: db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all(),
      small: db.prepare('SELECT x FROM small ORDER BY rowid').pluck().all(),
      big: db.prepare('SELECT data FROM big').pluck().get(),
    };
  } finally {
    db.close();
  }
}

/** Writes a small valid database at `file` and returns its bytes. */
function makeExistingDb(file) {
  const db = new Database(file);
  db.exec("CREATE TABLE keep (y); INSERT INTO keep VALUES ('kept');");
  db.close();
  return fs.readFileSync(file);
}

describe('4.5 Database#backup()', () => {
  it('4.5 resolves to { totalPages, remainingPages: 0 } and writes a complete copy', async () => {
    const db = bigMemoryDb();
    const pageCount = db.pragma('page_count', { simple: true });
    const data = db.prepare('SELECT data FROM big').pluck().get();
    const file = next();
    const promise = db.backup(file);
    assert.ok(promise instanceof Promise);
    const result = await promise;
    assert.deepEqual(result, { totalPages: pageCount, remainingPages: 0 });
    assert.deepEqual(Object.keys(result), ['totalPages', 'remainingPages']);
    const copy = readBackup(file);
    assert.equal(copy.integrity, 'ok');
    assert.equal(copy.pageCount, pageCount);
    assert.deepEqual(copy.tables, ['big', 'small']);
    assert.deepEqual(copy.small, ['first', 'second']);
    assert.ok(data.equals(copy.big));
    assert.equal(fs.statSync(file).size, pageCount * 4096);
    db.close();
  });

  it('4.5 copies an on-disk database and overwrites an existing destination database', async () => {
    const src = next('source');
    const db = new Database(src);
    db.exec("CREATE TABLE small (x); INSERT INTO small VALUES ('a'), ('b'), ('c');");
    const file = next();
    makeExistingDb(file);
    const result = await db.backup(file);
    assert.deepEqual(result, { totalPages: db.pragma('page_count', { simple: true }), remainingPages: 0 });
    const copy = new Database(file);
    assert.deepEqual(copy.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), ['small']);
    assert.deepEqual(copy.prepare('SELECT x FROM small ORDER BY rowid').pluck().all(), ['a', 'b', 'c']);
    copy.close();
    db.close();
  });

  it('4.5 the destination filename is trimmed before use', async () => {
    const db = bigMemoryDb(10000);
    const file = next('trimmed');
    await db.backup(`  ${file}\t `);
    assert.ok(fs.existsSync(file));
    assert.deepEqual(readBackup(file).small, ['first', 'second']);
    db.close();
  });

  describe('4.5 argument errors are promise rejections (TypeError), never synchronous throws', () => {
    const cases = [
      ['destination missing', (db) => db.backup(), 'Expected first argument to be a string'],
      ['destination a number', (db) => db.backup(123), 'Expected first argument to be a string'],
      ['destination null', (db) => db.backup(null), 'Expected first argument to be a string'],
      ['destination a String object', (db) => db.backup(new String(next())), 'Expected first argument to be a string'],
      ['destination a Buffer', (db) => db.backup(Buffer.from(next())), 'Expected first argument to be a string'],
      ['options a string', (db) => db.backup(next(), 'x'), 'Expected second argument to be an options object'],
      ['options a number', (db) => db.backup(next(), 123), 'Expected second argument to be an options object'],
      ['options true', (db) => db.backup(next(), true), 'Expected second argument to be an options object'],
      ['options a function', (db) => db.backup(next(), () => {}), 'Expected second argument to be an options object'],
      ['empty destination', (db) => db.backup(''), 'Backup filename cannot be an empty string'],
      ['blank destination', (db) => db.backup('  \t '), 'Backup filename cannot be an empty string'],
      ['":memory:"', (db) => db.backup(':memory:'), 'Invalid backup filename ":memory:"'],
      ['" :memory: " (trimmed)', (db) => db.backup(' :memory: '), 'Invalid backup filename ":memory:"'],
      [
        'attached a number',
        (db) => db.backup(next(), { attached: 1 }),
        'Expected the "attached" option to be a string',
      ],
      [
        'attached undefined',
        (db) => db.backup(next(), { attached: undefined }),
        'Expected the "attached" option to be a string',
      ],
      ['attached null', (db) => db.backup(next(), { attached: null }), 'Expected the "attached" option to be a string'],
      [
        'attached empty',
        (db) => db.backup(next(), { attached: '' }),
        'The "attached" option cannot be an empty string',
      ],
      [
        'progress a number',
        (db) => db.backup(next(), { progress: 5 }),
        'Expected the "progress" option to be a function',
      ],
      [
        'progress a string',
        (db) => db.backup(next(), { progress: 'x' }),
        'Expected the "progress" option to be a function',
      ],
      [
        'progress an object',
        (db) => db.backup(next(), { progress: {} }),
        'Expected the "progress" option to be a function',
      ],
      [
        'directory missing',
        (db) => db.backup(path.join(dir, 'no-such-dir', 'x.db')),
        'Cannot save backup because the directory does not exist',
      ],
    ];
    for (const [label, call, message] of cases) {
      it(`4.5 ${label} → rejects with TypeError "${message}"`, async () => {
        const db = bigMemoryDb(1000);
        const before = fs.readdirSync(dir).sort();
        let promise;
        assert.doesNotThrow(() => {
          promise = call(db);
        });
        assert.ok(promise instanceof Promise);
        await assert.rejects(promise, { name: 'TypeError', message: exact(message) });
        assert.deepEqual(fs.readdirSync(dir).sort(), before, 'no file may be created');
        assert.equal(fs.existsSync(path.join(dir, 'no-such-dir')), false);
        db.close();
      });
    }

    it('4.5 null/undefined options and null/undefined progress are accepted', async () => {
      const db = bigMemoryDb(1000);
      const expected = { totalPages: db.pragma('page_count', { simple: true }), remainingPages: 0 };
      assert.deepEqual(await db.backup(next(), null), expected);
      assert.deepEqual(await db.backup(next(), undefined), expected);
      assert.deepEqual(await db.backup(next(), {}), expected);
      assert.deepEqual(await db.backup(next(), { progress: null }), expected);
      assert.deepEqual(await db.backup(next(), { progress: undefined }), expected);
      assert.deepEqual(await db.backup(next(), { attached: 'main' }), expected);
      db.close();
    });
  });

  describe('4.5 progress callback', () => {
    it('4.5 first step copies 0 pages, then 100 pages per step; called with this === undefined', async () => {
      const db = bigMemoryDb();
      const total = db.pragma('page_count', { simple: true });
      assert.ok(total > 200 && total < 300, `fixture should span 2xx pages, has ${total}`);
      const calls = [];
      const result = await db.backup(next(), {
        progress: function (info) {
          calls.push({ self: this, keys: Object.keys(info), ...info });
        },
      });
      assert.deepEqual(result, { totalPages: total, remainingPages: 0 });
      const expected = [];
      for (let remaining = total; remaining > 0; remaining -= 100) {
        expected.push({
          self: undefined,
          keys: ['totalPages', 'remainingPages'],
          totalPages: total,
          remainingPages: remaining,
        });
      }
      assert.deepEqual(calls, expected);
      assert.equal(calls.length, Math.ceil(total / 100));
      db.close();
    });

    it('4.5 return values set the next step size: rounded (Math.round), clamped at 0, 0 pauses', async () => {
      const db = bigMemoryDb();
      const total = db.pragma('page_count', { simple: true });
      const returns = [0, 0, 1.4, 1.6, -3, 2.5, 3.5, 1e12];
      const seen = [];
      const result = await db.backup(next(), {
        progress(info) {
          seen.push(info.remainingPages);
          return returns[seen.length - 1];
        },
      });
      assert.deepEqual(result, { totalPages: total, remainingPages: 0 });
      // 0 → paused twice, 1.4 → 1, 1.6 → 2, -3 → 0 (paused), 2.5 → 3, 3.5 → 4, 1e12 → everything.
      assert.deepEqual(seen, [total, total, total, total - 1, total - 3, total - 3, total - 6, total - 10]);
      db.close();
    });

    it('4.5 returning undefined keeps the current step size; Infinity is clamped to 2^31-1', async () => {
      const db = bigMemoryDb();
      const total = db.pragma('page_count', { simple: true });
      const seen = [];
      const result = await db.backup(next(), {
        progress(info) {
          seen.push(info.remainingPages);
          if (seen.length === 1) return 10;
          if (seen.length === 4) return Infinity;
          return undefined;
        },
      });
      assert.deepEqual(result, { totalPages: total, remainingPages: 0 });
      assert.deepEqual(seen, [total, total - 10, total - 20, total - 30]);
      db.close();
    });

    it('4.5 -Infinity pauses like 0', async () => {
      const db = bigMemoryDb(100000);
      const total = db.pragma('page_count', { simple: true });
      const seen = [];
      await db.backup(next(), {
        progress(info) {
          seen.push(info.remainingPages);
          return seen.length < 3 ? -Infinity : 0x7fffffff;
        },
      });
      assert.deepEqual(seen, [total, total, total]);
      db.close();
    });

    for (const [label, value] of [
      ['NaN', NaN],
      ['a numeric string', '5'],
      ['null', null],
      ['true', true],
      ['an object', {}],
      ['a bigint', 5n],
    ]) {
      it(`4.5 returning ${label} → TypeError rejection and the new file is removed`, async () => {
        const db = bigMemoryDb();
        const file = next();
        let calls = 0;
        await assert.rejects(
          db.backup(file, {
            progress() {
              calls += 1;
              return value;
            },
          }),
          { name: 'TypeError', message: exact(PROGRESS_RETURN) },
        );
        assert.equal(calls, 1);
        assert.equal(fs.existsSync(file), false);
        db.close();
      });
    }

    it('4.5 an exception thrown by progress aborts the backup and is the rejection value', async () => {
      for (const thrown of [new Error('stop'), 'a string', { reason: 'object' }]) {
        const db = bigMemoryDb();
        const file = next();
        let calls = 0;
        let rejection;
        await db
          .backup(file, {
            progress() {
              calls += 1;
              if (calls === 2) throw thrown;
            },
          })
          .then(
            () => assert.fail('backup should have been rejected'),
            (err) => {
              rejection = err;
            },
          );
        assert.equal(rejection, thrown);
        assert.equal(calls, 2);
        assert.equal(fs.existsSync(file), false, 'an aborted backup deletes the file it created');
        db.close();
      }
    });
  });

  describe('4.5 aborted backups and bad destinations', () => {
    it('4.5 aborting a backup onto an existing database leaves that file byte-for-byte as it was', async () => {
      const db = bigMemoryDb();
      const file = next('existing');
      const original = makeExistingDb(file);
      let calls = 0;
      await assert.rejects(
        db.backup(file, {
          progress() {
            if (++calls === 3) throw new Error('abort');
          },
        }),
        { message: 'abort' },
      );
      assert.equal(calls, 3);
      assert.ok(fs.existsSync(file));
      assert.ok(fs.readFileSync(file).equals(original));
      const check = new Database(file);
      assert.deepEqual(check.prepare('SELECT y FROM keep').pluck().all(), ['kept']);
      check.close();
      db.close();
    });

    it('4.5 a destination that is not a database → SqliteError SQLITE_NOTADB rejection, file untouched', async () => {
      const db = bigMemoryDb(10000);
      const file = next('garbage');
      const garbage = Buffer.alloc(8192, 'this is not a database ');
      fs.writeFileSync(file, garbage);
      await assert.rejects(db.backup(file), (err) => checkSqliteError(err, 'SQLITE_NOTADB', 'file is not a database'));
      assert.ok(fs.readFileSync(file).equals(garbage));
      db.close();
    });

    it('4.5 closing the database from the progress callback aborts the backup: TypeError rejection, new file deleted', async () => {
      const db = bigMemoryDb();
      const file = next();
      let calls = 0;
      let existedMidway;
      await assert.rejects(
        db.backup(file, {
          progress() {
            if (++calls === 2) {
              existedMidway = fs.existsSync(file);
              db.close();
            }
          },
        }),
        { name: 'TypeError', message: exact(NOT_OPEN) },
      );
      assert.equal(existedMidway, true);
      assert.equal(calls, 2);
      assert.equal(fs.existsSync(file), false);
      assert.equal(db.open, false);
    });

    it('4.5 closing the database aborts every pending backup; an existing destination stays unchanged', async () => {
      // Each backup starts after its own file-system checks, whose order and latency the
      // machine's load decides: the database is closed from whichever backup's progress
      // first runs after the other has reported once, so both are mid-copy then. The
      // source is large (about 2,000 one-page steps) to give the later one a wide margin
      // to start before the earlier one could finish; the last assertion says if it
      // did not.
      const db = bigMemoryDb(8000000);
      const fresh = next();
      const existing = next('existing');
      const original = makeExistingDb(existing);
      const calls = [0, 0];
      const progressOf = (me) => () => {
        calls[me]++;
        if (calls[1 - me] > 0 && db.open) db.close();
        return 1;
      };
      const a = db.backup(fresh, { progress: progressOf(0) });
      const b = db.backup(existing, { progress: progressOf(1) });
      const results = await Promise.allSettled([a, b]);
      for (const r of results) {
        assert.equal(r.status, 'rejected');
        assert.ok(r.reason instanceof TypeError);
        assert.equal(r.reason.message, NOT_OPEN);
      }
      assert.ok(calls[0] > 0 && calls[1] > 0, `both backups were copying (${calls})`);
      assert.equal(fs.existsSync(fresh), false);
      assert.ok(fs.readFileSync(existing).equals(original));
    });

    it('4.5 closing the database right after calling backup() → TypeError rejection, no file', async () => {
      const db = bigMemoryDb(10000);
      const file = next();
      const promise = db.backup(file);
      db.close();
      await assert.rejects(promise, { name: 'TypeError', message: exact(NOT_OPEN) });
      assert.equal(fs.existsSync(file), false);
    });

    it('4.5 a closed database → TypeError rejection, no file', async () => {
      const db = bigMemoryDb(10000);
      db.close();
      const file = next();
      let promise;
      assert.doesNotThrow(() => {
        promise = db.backup(file);
      });
      await assert.rejects(promise, { name: 'TypeError', message: exact(NOT_OPEN) });
      assert.equal(fs.existsSync(file), false);
    });
  });

  describe('4.5 attached option', () => {
    it('4.5 { attached } backs up that schema instead of main', async () => {
      const db = bigMemoryDb(10000);
      const attachedFile = next('attached');
      db.prepare('ATTACH DATABASE ? AS other').run(attachedFile);
      db.exec("CREATE TABLE other.only_here (z); INSERT INTO other.only_here VALUES ('from other');");
      const file = next();
      const result = await db.backup(file, { attached: 'other' });
      assert.deepEqual(result, { totalPages: db.pragma('other.page_count', { simple: true }), remainingPages: 0 });
      const copy = new Database(file);
      assert.deepEqual(copy.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), [
        'only_here',
      ]);
      assert.deepEqual(copy.prepare('SELECT z FROM only_here').pluck().all(), ['from other']);
      copy.close();
      db.close();
    });

    it('4.5 an unknown attached name → SqliteError SQLITE_ERROR "unknown database <name>"', async () => {
      const db = bigMemoryDb(1000);
      await assert.rejects(db.backup(next(), { attached: 'nope' }), (err) =>
        checkSqliteError(err, 'SQLITE_ERROR', 'unknown database nope'),
      );
      db.close();
    });
  });

  describe('4.5 state rules', () => {
    it('4.5 allowed while an iterator is open; the iterator keeps working', async () => {
      const db = bigMemoryDb(10000);
      const iterator = db.prepare('SELECT x FROM small ORDER BY rowid').pluck().iterate();
      assert.deepEqual(iterator.next(), { value: 'first', done: false });
      const file = next();
      const result = await db.backup(file);
      assert.equal(result.remainingPages, 0);
      assert.deepEqual(iterator.next(), { value: 'second', done: false });
      assert.deepEqual(iterator.next(), { value: undefined, done: true });
      assert.deepEqual(readBackup(file).small, ['first', 'second']);
      db.close();
    });

    it('4.5 allowed while busy (called from inside a user function): returns a promise that resolves', async () => {
      const db = bigMemoryDb(10000);
      const file = next();
      let promise;
      db.function('start_backup', () => {
        promise = db.backup(file);
        return 1;
      });
      assert.equal(db.prepare('SELECT start_backup()').pluck().get(), 1);
      assert.ok(promise instanceof Promise);
      const result = await promise;
      assert.deepEqual(result, { totalPages: db.pragma('page_count', { simple: true }), remainingPages: 0 });
      assert.deepEqual(readBackup(file).small, ['first', 'second']);
      db.close();
    });
  });
});
