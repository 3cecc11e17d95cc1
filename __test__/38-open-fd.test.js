'use strict';
// better-sqlite3 13.2: new Database(fd, { journalFd }) opens a database from an open
// descriptor of the file and one of its rollback journal `<file>-journal`
// (crates/vfs/src/fd.rs). Linux only in cipherlite.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Database, isCipherlite } = require('./_module');
const { tempDir, removeDir, throwsExactly } = require('./_helpers');

const { SqliteError } = Database;
const LINUX = process.platform === 'linux';
// Where cipherlite differs from better-sqlite3 13.2 (CIPHERLITE_TEST_AGAINST runs the rest
// against it): its locks are the OS VFS's own, so they also exclude connections by path in
// the same process (13.2's don't); a broken journal fails with SQLite's codes rather than
// 13.2's own messages; and the database descriptor must stay open.
const CIPHERLITE_ONLY = !isCipherlite && 'cipherlite differs from 13.2 here';

let dir;
let counter = 0;
before(() => {
  dir = tempDir();
});
after(() => removeDir(dir));

/** A new database file with its (empty) journal, opened as `flags`; returns the paths and
 * descriptors, which `close()` closes. */
function files(flags = 'r+', setup = 'CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);') {
  const file = path.join(dir, `fd-${++counter}.db`);
  if (setup) {
    const db = new Database(file);
    db.exec(setup);
    db.close();
  } else {
    fs.writeFileSync(file, '');
  }
  fs.writeFileSync(`${file}-journal`, '');
  const fd = fs.openSync(file, flags);
  const journalFd = fs.openSync(`${file}-journal`, flags);
  const open = new Set([fd, journalFd]);
  return {
    file,
    fd,
    journalFd,
    closeFd(n) {
      if (open.delete(n)) fs.closeSync(n);
    },
    close() {
      for (const n of open) fs.closeSync(n);
      open.clear();
    },
  };
}

describe('new Database(fd, { journalFd }): argument checks (better-sqlite3 13.2 messages)', () => {
  it('the descriptor must be a non-negative 32-bit integer', () => {
    for (const bad of [-1, 1.5, 2 ** 31, NaN, Infinity]) {
      throwsExactly(
        () => new Database(bad, { journalFd: 3 }),
        TypeError,
        'Expected the file descriptor to be a non-negative 32-bit integer',
      );
    }
  });

  it('journalFd is required with a descriptor, refused without one, and checked', () => {
    throwsExactly(
      () => new Database(3),
      TypeError,
      'The "journalFd" option is required when opening a database from a file descriptor',
    );
    throwsExactly(
      () => new Database(3, {}),
      TypeError,
      'The "journalFd" option is required when opening a database from a file descriptor',
    );
    throwsExactly(
      () => new Database(':memory:', { journalFd: 4 }),
      TypeError,
      'The "journalFd" option can only be used when opening a database from a file descriptor',
    );
    throwsExactly(
      () => new Database(path.join(dir, 'x.db'), { journalFd: 4 }),
      TypeError,
      'The "journalFd" option can only be used when opening a database from a file descriptor',
    );
    for (const bad of [-1, 1.5, '4', null, 2 ** 31]) {
      throwsExactly(
        () => new Database(3, { journalFd: bad }),
        TypeError,
        'Expected the "journalFd" option to be a non-negative 32-bit integer',
      );
    }
    assert.equal(fs.existsSync(path.join(dir, 'x.db')), false);
  });

  it('a key is refused: encryption needs the journal by path', { skip: !isCipherlite && 'cipherlite only' }, () => {
    const f = files();
    try {
      throwsExactly(
        () => new Database(f.fd, { journalFd: f.journalFd, key: Buffer.alloc(32, 1) }),
        TypeError,
        'The "key" option cannot be used when opening a database from a file descriptor',
      );
    } finally {
      f.close();
    }
  });
});

describe('new Database(fd, { journalFd }): the descriptors are checked', { skip: !LINUX && 'Linux only' }, () => {
  const pre = 'Cannot open database because the ';

  it('not open, not a regular file, the same file', () => {
    const f = files();
    try {
      throwsExactly(
        () => new Database(999, { journalFd: f.journalFd }),
        TypeError,
        `${pre}database file descriptor is not open`,
      );
      throwsExactly(
        () => new Database(f.fd, { journalFd: 998 }),
        TypeError,
        `${pre}journal file descriptor is not open`,
      );
      const dirFd = fs.openSync(dir, 'r');
      try {
        throwsExactly(
          () => new Database(dirFd, { journalFd: f.journalFd }),
          TypeError,
          `${pre}database file descriptor does not refer to a regular file`,
        );
        throwsExactly(
          () => new Database(f.fd, { journalFd: dirFd, readonly: true }),
          TypeError,
          `${pre}journal file descriptor does not refer to a regular file`,
        );
      } finally {
        fs.closeSync(dirFd);
      }
      throwsExactly(
        () => new Database(f.fd, { journalFd: f.fd }),
        TypeError,
        `${pre}database and journal file descriptors refer to the same file`,
      );
      const again = fs.openSync(f.file, 'r+');
      try {
        throwsExactly(
          () => new Database(f.fd, { journalFd: again }),
          TypeError,
          `${pre}database and journal file descriptors refer to the same file`,
        );
      } finally {
        fs.closeSync(again);
      }
    } finally {
      f.close();
    }
  });

  it(
    'the journal must be the database\'s "-journal" file (cipherlite checks the name the kernel gives it)',
    { skip: CIPHERLITE_ONLY },
    () => {
      const f = files();
      const other = path.join(dir, `not-the-journal-${counter}`);
      fs.writeFileSync(other, '');
      const wrong = fs.openSync(other, 'r+');
      try {
        throwsExactly(
          () => new Database(f.fd, { journalFd: wrong }),
          TypeError,
          `${pre}journal file descriptor does not refer to the database's "-journal" file`,
        );
      } finally {
        fs.closeSync(wrong);
        f.close();
      }
    },
  );

  it('access modes: write-only, read-only without "readonly", append', () => {
    const f = files();
    const opened = [];
    const open = (file, flags) => {
      const n = fs.openSync(file, flags);
      opened.push(n);
      return n;
    };
    try {
      const journal = `${f.file}-journal`;
      throwsExactly(
        () => new Database(open(f.file, 'w'), { journalFd: f.journalFd }),
        TypeError,
        `${pre}database file descriptor was not opened for reading`,
      );
      throwsExactly(
        () => new Database(f.fd, { journalFd: open(journal, fs.constants.O_WRONLY) }),
        TypeError,
        `${pre}journal file descriptor was not opened for reading`,
      );
      throwsExactly(
        () => new Database(open(f.file, 'r'), { journalFd: f.journalFd }),
        TypeError,
        `${pre}database file descriptor was not opened for writing (use the "readonly" option)`,
      );
      throwsExactly(
        () => new Database(f.fd, { journalFd: open(journal, 'r') }),
        TypeError,
        `${pre}journal file descriptor was not opened for writing (use the "readonly" option)`,
      );
      throwsExactly(
        () => new Database(open(f.file, 'a+'), { journalFd: f.journalFd }),
        TypeError,
        `${pre}database file descriptor was opened in append mode`,
      );
      throwsExactly(
        () => new Database(f.fd, { journalFd: open(journal, 'a+') }),
        TypeError,
        `${pre}journal file descriptor was opened in append mode`,
      );
    } finally {
      opened.forEach((n) => fs.closeSync(n));
      f.close();
    }
    // the file was not changed by any of it (the write-only descriptor did not truncate: 'w' did)
  });

  it('deleted files and WAL databases', () => {
    const f = files();
    try {
      fs.unlinkSync(`${f.file}-journal`);
      throwsExactly(
        () => new Database(f.fd, { journalFd: f.journalFd }),
        TypeError,
        `${pre}journal file has been deleted`,
      );
    } finally {
      f.close();
    }
    const g = files();
    try {
      fs.unlinkSync(g.file);
      throwsExactly(
        () => new Database(g.fd, { journalFd: g.journalFd }),
        TypeError,
        `${pre}database file has been deleted`,
      );
    } finally {
      g.close();
    }
    const w = files('r+', 'CREATE TABLE t(x); PRAGMA journal_mode = WAL; INSERT INTO t VALUES (1);');
    try {
      throwsExactly(
        () => new Database(w.fd, { journalFd: w.journalFd }),
        TypeError,
        'Cannot open database from a file descriptor because it is in WAL mode',
      );
    } finally {
      w.close();
    }
  });
});

describe('new Database(fd, { journalFd }): using the database', { skip: !LINUX && 'Linux only' }, () => {
  it('reads and writes; name fd:<n>; the journal is emptied, never deleted; path users see the rows', () => {
    const f = files();
    try {
      const db = new Database(f.fd, { journalFd: f.journalFd });
      try {
        assert.equal(db.name, `fd:${f.fd}`);
        assert.equal(db.memory, false);
        assert.equal(db.readonly, false);
        assert.equal(db.open, true);
        assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1, 2]);
        const insert = db.prepare('INSERT INTO t VALUES (?)');
        db.transaction(() => {
          for (let i = 3; i <= 500; ++i) insert.run(i);
        })();
        db.exec('UPDATE t SET x = x + 0');
        assert.equal(fs.existsSync(`${f.file}-journal`), true);
        assert.equal(fs.statSync(`${f.file}-journal`).size, 0);
        assert.equal(db.pragma('journal_mode', { simple: true }), 'delete');
        const viaPath = new Database(f.file, { readonly: true });
        try {
          assert.equal(viaPath.prepare('SELECT count(*) FROM t').pluck().get(), 500);
        } finally {
          viaPath.close();
        }
      } finally {
        db.close();
      }
      // the caller's descriptors stay open and usable
      assert.equal(fs.fstatSync(f.fd).size > 0, true);
      fs.fstatSync(f.journalFd);
    } finally {
      f.close();
    }
  });

  it('the caller may close journalFd once opened (cipherlite keeps its own), not fd', { skip: CIPHERLITE_ONLY }, () => {
    const f = files();
    try {
      const db = new Database(f.fd, { journalFd: f.journalFd });
      try {
        f.closeFd(f.journalFd);
        db.exec('INSERT INTO t VALUES (3)');
        assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
        // ... but not the database's descriptor (unlike better-sqlite3 13.2): cipherlite
        // reaches the file through it, and without it writes fail closed
        f.closeFd(f.fd);
        throwsExactly(() => db.exec('INSERT INTO t VALUES (4)'), SqliteError, 'attempt to write a readonly database', {
          code: 'SQLITE_READONLY_DBMOVED',
        });
        assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
      } finally {
        db.close();
      }
    } finally {
      f.close();
    }
  });

  it(
    'locks coordinate with connections that open the file by path (journal_mode=TRUNCATE there)',
    { skip: CIPHERLITE_ONLY },
    () => {
      const f = files();
      try {
        const db = new Database(f.fd, { journalFd: f.journalFd, timeout: 0 });
        const other = new Database(f.file, { timeout: 0 });
        try {
          // A connection by path must not delete the journal (DELETE mode would):
          // the descriptor connection could not use a new one.
          other.pragma('journal_mode = TRUNCATE');
          other.exec('BEGIN EXCLUSIVE');
          throwsExactly(() => db.exec('INSERT INTO t VALUES (3)'), SqliteError, 'database is locked', {
            code: 'SQLITE_BUSY',
          });
          other.exec('COMMIT');
          db.exec('BEGIN IMMEDIATE');
          throwsExactly(() => other.exec('INSERT INTO t VALUES (4)'), SqliteError, 'database is locked', {
            code: 'SQLITE_BUSY',
          });
          db.exec('INSERT INTO t VALUES (3); COMMIT');
          other.exec('INSERT INTO t VALUES (4)');
          assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1, 2, 3, 4]);
        } finally {
          other.close();
          db.close();
        }
      } finally {
        f.close();
      }
    },
  );

  it(
    'a connection by path in DELETE mode deletes the journal: the descriptor connection fails closed',
    { skip: CIPHERLITE_ONLY },
    () => {
      const f = files();
      try {
        const db = new Database(f.fd, { journalFd: f.journalFd, timeout: 0 });
        try {
          const other = new Database(f.file);
          other.exec('INSERT INTO t VALUES (3)');
          other.close();
          assert.equal(fs.existsSync(`${f.file}-journal`), false);
          // Its journal is now a nameless file that may hold another connection's
          // records: neither used for recovery nor written to.
          throwsExactly(() => db.exec('INSERT INTO t VALUES (4)'), SqliteError, 'unable to open database file', {
            code: 'SQLITE_CANTOPEN',
          });
          throwsExactly(() => db.prepare('SELECT x FROM t').all(), SqliteError, 'unable to open database file', {
            code: 'SQLITE_CANTOPEN',
          });
        } finally {
          db.close();
        }
        const check = new Database(f.file);
        assert.equal(check.pragma('integrity_check', { simple: true }), 'ok');
        assert.deepEqual(check.prepare('SELECT x FROM t').pluck().all(), [1, 2, 3]);
        check.close();
      } finally {
        f.close();
      }
    },
  );

  it('locks exclude another process that opens the file by path, both ways', async () => {
    const f = files();
    const { spawn } = require('node:child_process');
    // The child takes a lock by path, says so, and keeps it until its stdin closes.
    const holdLock = (sql) =>
      new Promise((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [
            '-e',
            `
				const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
				const db = new Database(${JSON.stringify(f.file)}, { timeout: 0 });
				db.pragma('journal_mode = TRUNCATE');
				db.exec(${JSON.stringify(sql)});
				process.stdout.write('locked\\n');
				process.stdin.on('end', () => { db.exec('COMMIT'); db.close(); }).resume();
			`,
          ],
          { stdio: ['pipe', 'pipe', 'inherit'] },
        );
        child.stdout.once('data', () => resolve(child));
        child.once('error', reject);
        child.once('exit', (code) => reject(new Error(`child exited ${code} before locking`)));
      });
    const release = (child) =>
      new Promise((resolve) => {
        child.removeAllListeners('exit');
        child.once('exit', resolve);
        child.stdin.end();
      });
    try {
      const db = new Database(f.fd, { journalFd: f.journalFd, timeout: 0 });
      try {
        let child = await holdLock('BEGIN EXCLUSIVE');
        throwsExactly(() => db.prepare('SELECT count(*) FROM t').get(), SqliteError, 'database is locked', {
          code: 'SQLITE_BUSY',
        });
        assert.equal(await release(child), 0);
        db.exec('BEGIN IMMEDIATE; INSERT INTO t VALUES (3)');
        const res = spawnSync(
          process.execPath,
          [
            '-e',
            `
					const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
					const db = new Database(${JSON.stringify(f.file)}, { timeout: 0 });
					try { db.exec('BEGIN IMMEDIATE'); console.log('got the lock'); } catch (e) { console.log(e.code); }
				`,
          ],
          { encoding: 'utf8' },
        );
        assert.equal(res.stdout.trim(), 'SQLITE_BUSY', res.stderr);
        db.exec('COMMIT');
        child = await holdLock('BEGIN IMMEDIATE; INSERT INTO t VALUES (4)');
        assert.equal(await release(child), 0);
        assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1, 2, 3, 4]);
      } finally {
        db.close();
      }
    } finally {
      f.close();
    }
  });

  it('readonly with read-only descriptors: reads work, writes are SQLITE_READONLY', () => {
    const f = files('r');
    try {
      const db = new Database(f.fd, { journalFd: f.journalFd, readonly: true });
      try {
        assert.equal(db.readonly, true);
        assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1, 2]);
        throwsExactly(() => db.exec('INSERT INTO t VALUES (3)'), SqliteError, 'attempt to write a readonly database', {
          code: 'SQLITE_READONLY',
        });
      } finally {
        db.close();
      }
    } finally {
      f.close();
    }
  });

  it('an empty file becomes a new database', () => {
    const f = files('r+', null);
    try {
      const db = new Database(f.fd, { journalFd: f.journalFd });
      db.exec('CREATE TABLE n(v); INSERT INTO n VALUES (42)');
      db.close();
      const check = new Database(f.file);
      assert.equal(check.prepare('SELECT v FROM n').pluck().get(), 42);
      check.close();
    } finally {
      f.close();
    }
  });

  it('WAL mode and multi-database transactions are refused; other journal modes work', () => {
    const f = files();
    try {
      const db = new Database(f.fd, { journalFd: f.journalFd });
      try {
        throwsExactly(
          () => db.pragma('journal_mode = WAL'),
          SqliteError,
          'journal_mode WAL is not supported for databases opened from file descriptors',
          { code: 'SQLITE_ERROR' },
        );
        assert.equal(db.pragma('journal_mode', { simple: true }), 'delete');
        for (const mode of ['truncate', 'persist', 'memory', 'delete']) {
          assert.equal(db.pragma(`journal_mode = ${mode}`, { simple: true }), mode);
          db.exec('INSERT INTO t VALUES (9)');
        }
        assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 6);
        // an attached database by path works on its own ...
        const other = path.join(dir, `attached-${counter}.db`);
        db.prepare('ATTACH ? AS other').run(other);
        db.exec('CREATE TABLE other.o(v); INSERT INTO other.o VALUES (1)');
        assert.equal(db.prepare('SELECT v FROM other.o').pluck().get(), 1);
        // ... but a transaction writing both needs a super-journal next to the file
        let err;
        try {
          db.exec('BEGIN; INSERT INTO t VALUES (10); INSERT INTO other.o VALUES (2); COMMIT');
        } catch (e) {
          err = e;
        }
        assert.ok(err instanceof SqliteError, String(err));
        assert.equal(err.code, 'SQLITE_CANTOPEN');
        if (db.inTransaction) db.exec('ROLLBACK');
        assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 6);
      } finally {
        db.close();
      }
    } finally {
      f.close();
    }
  });

  it(
    'a journal deleted or replaced while open: no more writes (fail closed), reads go on',
    { skip: CIPHERLITE_ONLY },
    () => {
      const f = files();
      try {
        const db = new Database(f.fd, { journalFd: f.journalFd });
        try {
          fs.unlinkSync(`${f.file}-journal`);
          fs.writeFileSync(`${f.file}-journal`, ''); // a different file under the name
          let err;
          try {
            db.exec('INSERT INTO t VALUES (3)');
          } catch (e) {
            err = e;
          }
          assert.ok(err instanceof SqliteError, String(err));
          assert.equal(err.code, 'SQLITE_READONLY_DBMOVED');
          assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1, 2]);
        } finally {
          db.close();
        }
      } finally {
        f.close();
      }
    },
  );

  it('a crash mid-transaction leaves a hot journal that a connection by path rolls back', () => {
    const f = files();
    f.close();
    const child = `
			const fs = require('fs');
			const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
			const fd = fs.openSync(${JSON.stringify(f.file)}, 'r+');
			const journalFd = fs.openSync(${JSON.stringify(`${f.file}-journal`)}, 'r+');
			const db = new Database(fd, { journalFd });
			db.pragma('cache_size = 1');
			db.exec('BEGIN');
			const insert = db.prepare('INSERT INTO t VALUES (randomblob(1000))');
			for (let i = 0; i < 300; ++i) insert.run();
			db.exec('UPDATE t SET x = 0');
			process.stdout.write(String(fs.fstatSync(journalFd).size));
			process.kill(process.pid, 'SIGKILL');
		`;
    const res = spawnSync(process.execPath, ['-e', child], { encoding: 'utf8' });
    assert.equal(res.signal, 'SIGKILL', res.stderr);
    assert.ok(Number(res.stdout) > 0, `the journal had content: ${res.stdout}`);
    assert.ok(fs.statSync(`${f.file}-journal`).size > 0);
    const db = new Database(f.file);
    try {
      assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
      assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1, 2]);
    } finally {
      db.close();
    }
  });

  it('after a crash, opening from descriptors recovers the hot journal too', () => {
    const f = files();
    f.close();
    const child = `
			const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
			const db = new Database(${JSON.stringify(f.file)});
			db.pragma('cache_size = 1');
			db.exec('BEGIN');
			const insert = db.prepare('INSERT INTO t VALUES (randomblob(1000))');
			for (let i = 0; i < 300; ++i) insert.run();
			process.kill(process.pid, 'SIGKILL');
		`;
    const res = spawnSync(process.execPath, ['-e', child], { encoding: 'utf8' });
    assert.equal(res.signal, 'SIGKILL', res.stderr);
    assert.ok(fs.statSync(`${f.file}-journal`).size > 0);
    const fd = fs.openSync(f.file, 'r+');
    const journalFd = fs.openSync(`${f.file}-journal`, 'r+');
    try {
      const db = new Database(fd, { journalFd });
      try {
        assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
        assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1, 2]);
      } finally {
        db.close();
      }
      assert.equal(fs.statSync(`${f.file}-journal`).size, 0);
    } finally {
      fs.closeSync(fd);
      fs.closeSync(journalFd);
    }
  });
});
