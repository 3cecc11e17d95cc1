'use strict';
// Encryption basics: the key/cipherLayout options, round trips, what the file looks like on
// disk (both page-1 layouts, checked with an independent node:crypto decryption), the
// refused key pragmas, WAL, backup, serialize and ATTACH of an encrypted connection.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  Database,
  PAGE,
  SQLITE_MAGIC,
  MC_CLEAR_HEADER,
  MC_CLEAR_HEADER_WAL,
  newKey,
  tempDir,
  removeDir,
  throwsSqlite,
  throwsType,
  integrity,
  pageHmacOk,
  decryptPage,
} = require('./_helpers-encryption');

const KEY_PRAGMA_MESSAGE = /new Database\(path, \{ key \}\)/;
const LAYOUTS = ['sqlite3mc', 'sqlcipher'];

let dir;
let n = 0;
const file = (tag = 'db') => path.join(dir, `${tag}-${++n}.db`);
const canary = (tag) => `CANARY-${tag}-${Math.random().toString(36).slice(2)}-zq`;

before(() => {
  dir = tempDir('basics');
});
after(() => {
  removeDir(dir);
});

/** Writes a table `c` holding `text` (and 300 filler rows, so there are several pages). */
function writeCanary(db, text) {
  db.exec('CREATE TABLE c(id INTEGER PRIMARY KEY, v TEXT)');
  const ins = db.prepare('INSERT INTO c(v) VALUES (?)');
  db.transaction(() => {
    ins.run(text);
    for (let i = 0; i < 300; i++) ins.run(`filler-${i}-${'x'.repeat(40)}`);
  })();
}

function readCanary(db) {
  return db.prepare('SELECT v FROM c WHERE id = 1').pluck().get();
}

describe('the "key" option', () => {
  const bad = [
    ['a string of 32 characters', () => 'k'.repeat(32)],
    ['a 64-digit hex string', () => 'ab'.repeat(32)],
    ['an ArrayBuffer of 32 bytes', () => new ArrayBuffer(32)],
    ['a 31-byte Buffer', () => Buffer.alloc(31, 1)],
    ['a 33-byte Buffer', () => Buffer.alloc(33, 1)],
    ['an empty Buffer', () => Buffer.alloc(0)],
    ['an array of 32 numbers', () => new Array(32).fill(1)],
    ['a Uint16Array of 32 bytes', () => new Uint16Array(16)],
    ['a DataView of 32 bytes', () => new DataView(new ArrayBuffer(32))],
    ['a number', () => 42],
    ['true', () => true],
    ['an object', () => ({ length: 32 })],
  ];
  for (const [what, make] of bad) {
    it(`rejects ${what} with a TypeError naming "key", creating no file`, () => {
      const f = file('badkey');
      const err = throwsType(() => new Database(f, { key: make() }), /"key"/);
      assert.ok(!fs.existsSync(f), 'the database file must not be created');
      assert.deepEqual(
        fs.readdirSync(dir).filter((x) => x.startsWith(path.basename(f))),
        [],
      );
      if (typeof make() === 'string') assert.ok(!err.message.includes(make()), 'the key must not be echoed');
    });
  }

  it('rejects a bad key even with fileMustExist/readonly, before touching an existing file', () => {
    const f = file('existing');
    const db = new Database(f, { key: newKey() });
    db.exec('CREATE TABLE t(x)');
    db.close();
    const before = fs.readFileSync(f);
    throwsType(() => new Database(f, { key: Buffer.alloc(31), fileMustExist: true }), /"key"/);
    throwsType(() => new Database(f, { key: 'x'.repeat(32), readonly: true }), /"key"/);
    assert.deepEqual(fs.readFileSync(f), before);
  });

  for (const [what, args] of [
    [':memory:', () => [':memory:']],
    ["''", () => ['']],
    ['no filename', () => [undefined]],
    ['a serialized Buffer', () => [new Database(':memory:').serialize()]],
  ]) {
    it(`rejects a key for ${what} with a TypeError naming "key"`, () => {
      const [name] = args();
      throwsType(() => new Database(name, { key: newKey() }), /"key"/);
    });
  }

  it('accepts a Uint8Array and a Buffer that is a view into a larger buffer (its own 32 bytes)', () => {
    const key = newKey();
    const f = file('views');
    const db = new Database(f, { key: new Uint8Array(key) });
    db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('via-uint8array')");
    db.close();
    const big = Buffer.alloc(96, 0xee);
    key.copy(big, 40);
    const view = big.subarray(40, 72);
    const db2 = new Database(f, { key: view });
    assert.equal(db2.prepare('SELECT x FROM t').pluck().get(), 'via-uint8array');
    db2.close();
    const offByOne = big.subarray(41, 73);
    throwsSqlite(() => new Database(f, { key: offByOne }).prepare('SELECT x FROM t').get(), 'SQLITE_NOTADB');
  });

  it("copies the key: changing the caller's buffer afterwards does not change the key", () => {
    const key = newKey();
    const copy = Buffer.from(key);
    const f = file('copied');
    const db = new Database(f, { key });
    key.fill(0);
    db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('kept')");
    db.close();
    const db2 = new Database(f, { key: copy });
    assert.equal(db2.prepare('SELECT x FROM t').pluck().get(), 'kept');
    db2.close();
  });
});

describe('the "cipherLayout" option', () => {
  for (const value of ['SQLCipher', 'sqlite3MC', 'legacy4', '', 4, null, true]) {
    it(`rejects ${JSON.stringify(value)} with a TypeError naming "cipherLayout", creating no file`, () => {
      const f = file('badlayout');
      throwsType(() => new Database(f, { key: newKey(), cipherLayout: value }), /"cipherLayout"/);
      assert.ok(!fs.existsSync(f));
    });
  }
  it('requires the key option', () => {
    const f = file('layoutnokey');
    throwsType(() => new Database(f, { cipherLayout: 'sqlcipher' }), /"cipherLayout".*"key"/);
    assert.ok(!fs.existsSync(f));
  });
});

describe('round trip and bytes on disk', () => {
  for (const layout of LAYOUTS) {
    it(`${layout}: writes, reopens with the same key, and nothing readable is on disk`, () => {
      const key = newKey();
      const f = file(layout);
      const text = canary(layout);
      const db = new Database(f, { key, cipherLayout: layout });
      assert.equal(db.pragma('journal_mode', { simple: true }), 'delete');
      writeCanary(db, text);
      db.close();

      const bytes = fs.readFileSync(f);
      assert.equal(bytes.length % PAGE, 0);
      assert.ok(bytes.length >= 4 * PAGE, `expected several pages, got ${bytes.length} bytes`);
      assert.ok(!bytes.subarray(0, 16).equals(SQLITE_MAGIC), 'no SQLite magic');
      assert.equal(bytes.indexOf(SQLITE_MAGIC), -1);
      assert.equal(bytes.indexOf(text), -1, 'the canary is not in the file');
      assert.equal(bytes.indexOf('filler-'), -1);
      assert.equal(bytes.indexOf('CREATE TABLE'), -1, 'the schema is not in the file');

      const db2 = new Database(f, { key });
      assert.equal(readCanary(db2), text);
      assert.equal(db2.prepare('SELECT count(*) FROM c').pluck().get(), 301);
      assert.equal(integrity(db2), 'ok');
      assert.equal(db2.pragma('page_size', { simple: true }), 4096);
      db2.close();
    });
  }

  it('sqlite3mc layout (the default): bytes 16..24 are the header in clear, HMAC over 24..4032', () => {
    const key = newKey();
    const f = file('mc');
    const db = new Database(f, { key });
    writeCanary(db, canary('mc'));
    db.close();
    const bytes = fs.readFileSync(f);
    assert.deepEqual(bytes.subarray(16, 24), MC_CLEAR_HEADER);
    assert.ok(pageHmacOk(bytes, 1, key, 24), 'page 1 HMAC over bytes 24..4032');
    assert.ok(!pageHmacOk(bytes, 1, key, 16), 'not the SQLCipher page 1');
    assert.ok(!pageHmacOk(bytes, 1, newKey(), 24), 'another key gives another HMAC');
  });

  it('sqlcipher layout: bytes 16..24 are ciphertext, page 1 decrypts from byte 16 to the SQLite header', () => {
    const key = newKey();
    const f = file('sc');
    const db = new Database(f, { key, cipherLayout: 'sqlcipher' });
    writeCanary(db, canary('sc'));
    db.close();
    const bytes = fs.readFileSync(f);
    assert.notDeepEqual(bytes.subarray(16, 24), MC_CLEAR_HEADER);
    assert.ok(pageHmacOk(bytes, 1, key, 16));
    assert.ok(!pageHmacOk(bytes, 1, key, 24));
    const plain = decryptPage(bytes, 1, key, 16); // plaintext bytes 16..4016
    assert.deepEqual(plain.subarray(0, 8), MC_CLEAR_HEADER, 'page size 4096, format 1/1, reserve 80, 64/32/32');
    assert.equal(plain.readUInt32BE(28 - 16), bytes.length / PAGE, 'header page count = file pages');
  });

  for (const layout of LAYOUTS) {
    it(`${layout}: every page is SQLCipher 4 (HMAC-SHA512 + AES-256-CBC), and the canary is inside`, () => {
      const key = newKey();
      const f = file(`pages-${layout}`);
      const text = canary('inside');
      const db = new Database(f, { key, cipherLayout: layout });
      writeCanary(db, text);
      db.close();
      const bytes = fs.readFileSync(f);
      const pages = bytes.length / PAGE;
      let found = 0;
      for (let p = 2; p <= pages; p++) {
        assert.ok(pageHmacOk(bytes, p, key), `page ${p} HMAC`);
        const plain = decryptPage(bytes, p, key);
        assert.ok([0x02, 0x05, 0x0a, 0x0d, 0x00].includes(plain[0]), `page ${p} type byte ${plain[0]}`);
        if (plain.includes(text)) found++;
      }
      assert.equal(found, 1, 'exactly one page holds the canary, in plaintext after decryption');
    });
  }

  it('the salt (bytes 0..16) is random per file and stays the same while the file is written', () => {
    const key = newKey();
    const a = file('salt');
    const b = file('salt');
    for (const f of [a, b]) {
      const db = new Database(f, { key });
      db.exec('CREATE TABLE t(x)');
      db.close();
    }
    const saltA = fs.readFileSync(a).subarray(0, 16);
    const saltB = fs.readFileSync(b).subarray(0, 16);
    assert.notDeepEqual(saltA, saltB);
    assert.notDeepEqual(saltA, Buffer.alloc(16));
    const db = new Database(a, { key });
    db.exec("INSERT INTO t VALUES (randomblob(5000)); CREATE TABLE u(y); INSERT INTO u VALUES ('later')");
    db.close();
    const after = fs.readFileSync(a);
    assert.deepEqual(after.subarray(0, 16), saltA);
    assert.ok(pageHmacOk(after, 1, key, 24));
  });

  it('rewriting a page with the same content gives new ciphertext (a fresh IV per write)', () => {
    const key = newKey();
    const f = file('iv');
    const db = new Database(f, { key, cipherLayout: 'sqlcipher' });
    db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('same')");
    const before = fs.readFileSync(f);
    db.exec("UPDATE t SET x = 'diff'");
    db.exec("UPDATE t SET x = 'same'");
    db.close();
    const after = fs.readFileSync(f);
    assert.equal(after.length, before.length);
    const page2 = (b) => b.subarray(PAGE, 2 * PAGE);
    assert.notDeepEqual(
      page2(after).subarray(PAGE - 80, PAGE - 64),
      page2(before).subarray(PAGE - 80, PAGE - 64),
      'new IV',
    );
    assert.notDeepEqual(page2(after).subarray(0, 64), page2(before).subarray(0, 64), 'new ciphertext');
    assert.deepEqual(decryptPage(after, 2, key), decryptPage(before, 2, key), 'same plaintext');
  });

  it('an existing file keeps its page-1 layout whatever cipherLayout says on reopening', () => {
    const key = newKey();
    const sc = file('keep-sc');
    const mc = file('keep-mc');
    new Database(sc, { key, cipherLayout: 'sqlcipher' }).exec('CREATE TABLE t(x)').close();
    new Database(mc, { key, cipherLayout: 'sqlite3mc' }).exec('CREATE TABLE t(x)').close();
    new Database(sc, { key, cipherLayout: 'sqlite3mc' }).exec("INSERT INTO t VALUES ('a'); CREATE TABLE u(y)").close();
    new Database(mc, { key, cipherLayout: 'sqlcipher' }).exec("INSERT INTO t VALUES ('b'); CREATE TABLE u(y)").close();
    const scBytes = fs.readFileSync(sc);
    const mcBytes = fs.readFileSync(mc);
    assert.ok(pageHmacOk(scBytes, 1, key, 16), 'still SQLCipher layout');
    assert.ok(pageHmacOk(mcBytes, 1, key, 24), 'still sqlite3mc layout');
    assert.deepEqual(mcBytes.subarray(16, 24), MC_CLEAR_HEADER);
    const db = new Database(sc, { key });
    assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), ['a']);
    db.close();
  });

  it('an empty existing file (0 bytes) becomes an encrypted database', () => {
    const key = newKey();
    const f = file('empty');
    fs.writeFileSync(f, '');
    const db = new Database(f, { key });
    db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('from-empty')");
    db.close();
    const bytes = fs.readFileSync(f);
    assert.ok(!bytes.subarray(0, 16).equals(SQLITE_MAGIC));
    assert.ok(pageHmacOk(bytes, 1, key, 24));
    assert.equal(new Database(f, { key }).prepare('SELECT x FROM t').pluck().get(), 'from-empty');
  });
});

describe('key pragmas fail with a SqliteError naming the constructor', () => {
  const pragmas = [
    "key = 'secret'",
    'KEY = "x\'2f689173cfee6654fdff9906c7e8152a011a630bb05c0e6106b661e48abb30b0\'"',
    "main.key = 'secret'",
    "rekey = 'other'",
    "hexkey = '00112233'",
    "hexrekey = '00112233'",
    'cipher_compatibility = 4',
    'cipher_compatibility',
    'cipher_page_size = 1024',
    'cipher_page_size',
    "cipher = 'sqlcipher'",
    'legacy = 4',
    'kdf_iter = 1',
    'cipher_version',
  ];
  const kinds = {
    plain: () => new Database(file('plain')),
    encrypted: () => new Database(file('enc'), { key: newKey() }),
    memory: () => new Database(':memory:'),
  };
  for (const [kind, open] of Object.entries(kinds)) {
    it(`${kind}: via prepare(), exec() and pragma()`, () => {
      const db = open();
      db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('still-here')");
      for (const p of pragmas) {
        throwsSqlite(() => db.prepare(`PRAGMA ${p}`), /^SQLITE_(AUTH|ERROR)$/, KEY_PRAGMA_MESSAGE);
        throwsSqlite(() => db.exec(`PRAGMA ${p}`), /^SQLITE_(AUTH|ERROR)$/, KEY_PRAGMA_MESSAGE);
        throwsSqlite(() => db.exec(`SELECT 1; PRAGMA ${p}; SELECT 2`), /^SQLITE_(AUTH|ERROR)$/, KEY_PRAGMA_MESSAGE);
        throwsSqlite(() => db.pragma(p), /^SQLITE_(AUTH|ERROR)$/, KEY_PRAGMA_MESSAGE);
        throwsSqlite(() => db.pragma(p, { simple: true }), /^SQLITE_(AUTH|ERROR)$/, KEY_PRAGMA_MESSAGE);
      }
      // The connection still works, and ordinary pragmas (even *key* ones) are not refused.
      assert.equal(db.prepare('SELECT x FROM t').pluck().get(), 'still-here');
      assert.equal(db.pragma('foreign_keys', { simple: true }), 1);
      assert.deepEqual(db.pragma('foreign_key_list(t)'), []);
      assert.deepEqual(db.pragma('foreign_key_check'), []);
      db.pragma('user_version = 7');
      assert.equal(db.pragma('user_version', { simple: true }), 7);
      // A normal SQLite error after a refused pragma keeps its own message.
      throwsSqlite(() => db.prepare('SELECT * FROM nope'), 'SQLITE_ERROR', 'no such table: nope');
      db.close();
    });
  }

  it('a refused rekey changes nothing: the file still opens with the old key only', () => {
    const key = newKey();
    const f = file('rekey');
    const db = new Database(f, { key });
    db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('old-key')");
    const before = fs.readFileSync(f);
    throwsSqlite(() => db.pragma("rekey = 'new'"), /^SQLITE_(AUTH|ERROR)$/, KEY_PRAGMA_MESSAGE);
    db.close();
    assert.deepEqual(fs.readFileSync(f), before);
    assert.equal(new Database(f, { key }).prepare('SELECT x FROM t').pluck().get(), 'old-key');
  });

  it('a refused PRAGMA key on a plain database leaves it plain', () => {
    const f = file('plainkey');
    const db = new Database(f);
    db.exec('CREATE TABLE t(x)');
    throwsSqlite(() => db.exec("PRAGMA key = 'secret'"), /^SQLITE_(AUTH|ERROR)$/, KEY_PRAGMA_MESSAGE);
    db.exec("INSERT INTO t VALUES ('plain')");
    db.close();
    assert.ok(fs.readFileSync(f).subarray(0, 16).equals(SQLITE_MAGIC));
  });
});

describe('WAL mode', () => {
  for (const layout of LAYOUTS) {
    it(`${layout}: round trip with a second connection reading, nothing readable in the WAL`, () => {
      const key = newKey();
      const f = file(`wal-${layout}`);
      const text = canary('wal');
      const w = new Database(f, { key, cipherLayout: layout });
      assert.equal(w.pragma('journal_mode = wal', { simple: true }), 'wal');
      w.pragma('wal_autocheckpoint = 0');
      writeCanary(w, text);
      w.exec("CREATE TABLE later(v); INSERT INTO later VALUES ('second-commit')");

      const r = new Database(f, { key });
      assert.equal(r.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(readCanary(r), text);
      assert.equal(r.prepare('SELECT v FROM later').pluck().get(), 'second-commit');
      // A reader with another key is refused and sees nothing.
      throwsSqlite(() => new Database(f, { key: newKey() }), 'SQLITE_NOTADB');

      const wal = fs.readFileSync(`${f}-wal`);
      assert.ok(wal.length > 32 + 24 + PAGE, 'the commits are in the WAL');
      assert.equal(wal.indexOf(text), -1);
      assert.equal(wal.indexOf('second-commit'), -1);
      assert.equal(wal.indexOf(SQLITE_MAGIC), -1);
      // The reader writes too, the writer sees it.
      r.exec("INSERT INTO later VALUES ('from-reader')");
      assert.deepEqual(w.prepare('SELECT v FROM later ORDER BY rowid').pluck().all(), ['second-commit', 'from-reader']);
      r.close();
      w.close();
      assert.ok(!fs.existsSync(`${f}-wal`), 'checkpointed and removed on close');

      const bytes = fs.readFileSync(f);
      assert.equal(bytes.indexOf(text), -1);
      if (layout === 'sqlite3mc') assert.deepEqual(bytes.subarray(16, 24), MC_CLEAR_HEADER_WAL);
      else assert.ok(pageHmacOk(bytes, 1, key, 16));
      const again = new Database(f, { key });
      assert.equal(readCanary(again), text);
      assert.equal(again.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(integrity(again), 'ok');
      again.close();
    });
  }
});

describe('backup, serialize, VACUUM INTO and ATTACH of an encrypted connection', () => {
  it('backup() writes an encrypted file that opens with the same key only', async () => {
    const key = newKey();
    const src = file('bsrc');
    const dest = file('bdest');
    const text = canary('backup');
    const db = new Database(src, { key });
    writeCanary(db, text);
    const result = await db.backup(dest);
    assert.equal(result.remainingPages, 0);
    db.close();
    const bytes = fs.readFileSync(dest);
    assert.ok(!bytes.subarray(0, 16).equals(SQLITE_MAGIC));
    assert.equal(bytes.indexOf(text), -1);
    assert.notDeepEqual(bytes.subarray(0, 16), fs.readFileSync(src).subarray(0, 16), 'its own salt');
    const copy = new Database(dest, { key });
    assert.equal(readCanary(copy), text);
    assert.equal(integrity(copy), 'ok');
    copy.close();
    throwsSqlite(() => new Database(dest).prepare('SELECT * FROM c').all(), 'SQLITE_NOTADB');
    throwsSqlite(() => new Database(dest, { key: newKey() }), 'SQLITE_NOTADB');
  });

  it('serialize() returns the plaintext image in memory, which new Database(buffer) opens', () => {
    // Documented behaviour: serialize() is an in-memory copy of the decrypted pages
    // (SQLite format 3, 80 reserved bytes per page); it never touches the disk.
    const key = newKey();
    const text = canary('serialize');
    const db = new Database(file('ser'), { key });
    writeCanary(db, text);
    const buf = db.serialize();
    db.close();
    assert.ok(buf.subarray(0, 16).equals(SQLITE_MAGIC));
    assert.equal(buf[20], 80, 'reserved bytes per page');
    assert.ok(buf.includes(text));
    const mem = new Database(buf);
    assert.equal(readCanary(mem), text);
    assert.equal(integrity(mem), 'ok');
    mem.close();
  });

  it('VACUUM INTO writes an encrypted copy with the same key', () => {
    const key = newKey();
    const text = canary('vacinto');
    const db = new Database(file('vsrc'), { key });
    writeCanary(db, text);
    const dest = file('vdest');
    db.exec(`VACUUM INTO '${dest}'`);
    db.close();
    const bytes = fs.readFileSync(dest);
    assert.ok(!bytes.subarray(0, 16).equals(SQLITE_MAGIC));
    assert.equal(bytes.indexOf(text), -1);
    assert.equal(readCanary(new Database(dest, { key })), text);
  });

  it('ATTACH of an existing file encrypted with the same key reads and writes it encrypted', () => {
    const key = newKey();
    const other = file('att-existing');
    new Database(other, { key }).exec("CREATE TABLE z(v); INSERT INTO z VALUES ('before')").close();
    const text = canary('attach');
    const db = new Database(file('att-main'), { key });
    db.exec(`ATTACH '${other}' AS o`);
    db.prepare('INSERT INTO o.z VALUES (?)').run(text);
    assert.deepEqual(db.prepare('SELECT v FROM o.z ORDER BY rowid').pluck().all(), ['before', text]);
    db.exec('DETACH o');
    db.close();
    const bytes = fs.readFileSync(other);
    assert.equal(bytes.indexOf(text), -1);
    assert.ok(pageHmacOk(bytes, 1, key, 24));
    assert.deepEqual(new Database(other, { key }).prepare('SELECT v FROM z ORDER BY rowid').pluck().all(), [
      'before',
      text,
    ]);
  });

  it('ATTACH of a new file from an encrypted connection creates it encrypted with the same key', () => {
    const key = newKey();
    const other = file('att-new');
    const text = canary('attach-new');
    const db = new Database(file('att-main2'), { key });
    db.exec(`ATTACH '${other}' AS o`);
    db.exec('CREATE TABLE o.z(v)');
    db.prepare('INSERT INTO o.z VALUES (?)').run(text);
    assert.equal(db.prepare('SELECT v FROM o.z').pluck().get(), text);
    db.close();
    const bytes = fs.readFileSync(other);
    assert.ok(bytes.length >= 2 * PAGE);
    assert.ok(!bytes.subarray(0, 16).equals(SQLITE_MAGIC));
    assert.equal(bytes.indexOf(text), -1);
    assert.ok(pageHmacOk(bytes, 1, key, 24));
    assert.equal(new Database(other, { key }).prepare('SELECT v FROM z').pluck().get(), text);
  });

  it('ATTACH of :memory: and of a temporary database works from an encrypted connection', () => {
    const db = new Database(file('att-mem'), { key: newKey() });
    db.exec("ATTACH ':memory:' AS m; ATTACH '' AS tmp");
    db.exec(
      "CREATE TABLE m.x(v); INSERT INTO m.x VALUES ('in-memory'); CREATE TABLE tmp.y(v); INSERT INTO tmp.y SELECT v FROM m.x",
    );
    assert.equal(db.prepare('SELECT v FROM tmp.y').pluck().get(), 'in-memory');
    db.close();
  });

  it('ATTACH of a plaintext file or one with another key fails with SQLITE_NOTADB and changes nothing', () => {
    const key = newKey();
    const plain = file('att-plain');
    new Database(plain).exec("CREATE TABLE p(v); INSERT INTO p VALUES ('plain')").close();
    const foreign = file('att-foreign');
    new Database(foreign, { key: newKey() }).exec('CREATE TABLE f(v)').close();
    const before = [fs.readFileSync(plain), fs.readFileSync(foreign)];
    const db = new Database(file('att-main3'), { key });
    throwsSqlite(() => db.exec(`ATTACH '${plain}' AS p`), 'SQLITE_NOTADB');
    throwsSqlite(() => db.exec(`ATTACH '${foreign}' AS f`), 'SQLITE_NOTADB');
    db.close();
    assert.deepEqual([fs.readFileSync(plain), fs.readFileSync(foreign)], before);
  });

  it('a connection without a key cannot ATTACH an encrypted file', () => {
    const enc = file('att-enc');
    new Database(enc, { key: newKey() }).exec('CREATE TABLE e(v)').close();
    const before = fs.readFileSync(enc);
    const db = new Database(file('att-plainmain'));
    throwsSqlite(() => {
      db.exec(`ATTACH '${enc}' AS e`);
      db.prepare('SELECT * FROM e.e').all();
    }, 'SQLITE_NOTADB');
    db.close();
    assert.deepEqual(fs.readFileSync(enc), before);
  });
});
