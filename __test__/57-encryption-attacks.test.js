'use strict';
// Attacks on an encrypted database by someone who can read and write its files but has no
// key: forged journals and WALs, checksums that would reveal plaintext, an edited -shm,
// key-less connections meeting crash leftovers, keys that aren't what they seem. Each test
// reproduces the attack from outside and asserts the error and that nothing was lost.
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const {
  Database,
  PAGE,
  RESERVE,
  BASE_SQL,
  BASE_CONTENT,
  newKey,
  tempDir,
  removeDir,
  snapshotDir,
  throwsSqlite,
  throwsType,
  contentOf,
  integrity,
  crashChild,
  decryptPage,
  copySample,
  sampleKey,
  runInteropEngines,
  INTEROP_PYTHON,
} = require('./_helpers-encryption');

const FRAME = 24 + PAGE;
// On Windows (scripts/test-windows.js) the checks that need a Linux tool or a POSIX
// facility are skipped, each saying why; every other check runs there too.
const WINDOWS = process.platform === 'win32';
// The key-less SQLite must be a stock one: cipherlite without a key refuses an encrypted
// file at open, before SQLite would roll a hot journal back or recover a WAL.
const NO_PYTHON_SQLITE = WINDOWS && "the key-less stock SQLite is Python's sqlite3 module, a Linux python3 here";
const NO_INTEROP = WINDOWS && 'SQLCipher and SQLite3 Multiple Ciphers come from Linux Python wheels (.venv-interop)';
/** An uncommitted transaction big enough to spill pages into the database file or the WAL. */
const BIG_UNCOMMITTED = [
  "UPDATE t SET b = 'CHANGED-' || a WHERE a % 2 = 0",
  "INSERT INTO t SELECT a + 100, 'CHANGED-' || hex(randomblob(400)) FROM t",
  "INSERT INTO t SELECT a + 200, 'CHANGED-' || hex(randomblob(400)) FROM t",
  "INSERT INTO t SELECT a + 400, 'CHANGED-' || hex(randomblob(400)) FROM t",
];
const JOURNAL_MAGIC = Buffer.from('d9d505f920a163d7', 'hex');

/** SQLite's WAL checksum (s1, s2) over `data`, 32-bit words read little- or big-endian. */
function walChecksum(bigEndian, [s1, s2], data) {
  for (let i = 0; i < data.length; i += 8) {
    const w0 = bigEndian ? data.readUInt32BE(i) : data.readUInt32LE(i);
    const w1 = bigEndian ? data.readUInt32BE(i + 4) : data.readUInt32LE(i + 4);
    s1 = (s1 + w0 + s2) >>> 0;
    s2 = (s2 + w1 + s1) >>> 0;
  }
  return [s1, s2];
}

/** SQLite's journal record checksum: the nonce plus every 200th byte counting down. */
function journalChecksum(nonce, page) {
  let sum = nonce;
  for (let i = page.length - 200; i > 0; i -= 200) sum = (sum + page[i]) >>> 0;
  return sum;
}

/** Decrypts one encrypted page image (pgno > 1) with AES-256-CBC and zeroes its reserve. */
function plaintextOf(image, pgno, key, salt) {
  const file = Buffer.alloc(pgno * PAGE);
  image.copy(file, (pgno - 1) * PAGE);
  salt.copy(file, 0);
  const body = decryptPage(file, pgno, key);
  return Buffer.concat([body, Buffer.alloc(RESERVE)]);
}

// The page formats each attack on the files runs against: SQLCipher 4's and SQLite3
// Multiple Ciphers' AEGIS-256 (docs/aegis-format.md). An attack that concerns the file
// format must fail for both; the VFS's rules (geometry, checksums over the ciphertext, the
// private wal-index) do not depend on the codec, and the tests that are about something
// else (the API, another OS user, the stack) run once.
const CIPHERS = [
  { cipher: 'sqlcipher', options: {} },
  { cipher: 'aegis', options: { cipher: 'aegis' } },
];
const AEGIS_RESERVE = 64; // 32-byte tag + 32-byte nonce (docs/aegis-format.md §2)
/** SQLCipher's own page-1 layout where the test needs it (AEGIS files have one layout). */
const layoutFor = (cipher) => (cipher === 'sqlcipher' ? { cipherLayout: 'sqlcipher' } : {});
/** A plaintext database image cut into pages. */
const pagesOf = (image) =>
  Array.from({ length: image.length / PAGE }, (_, i) => image.subarray(i * PAGE, (i + 1) * PAGE));
/** A plaintext page as it is, and with its reserve zeroed: either could feed a checksum. */
const withAndWithoutReserve = (page, reserve) => [
  page,
  Buffer.concat([page.subarray(0, PAGE - reserve), Buffer.alloc(reserve)]),
];

/** Runs Python's own sqlite3 (a key-less, stock SQLite) on `file`: it opens, tries a query, closes. */
function plainSqliteTouches(file) {
  const script = [
    'import sqlite3, sys',
    'c = sqlite3.connect(sys.argv[1])',
    'try:',
    '    c.execute("select count(*) from sqlite_master").fetchall()',
    '    print("opened")',
    'except sqlite3.DatabaseError as e:',
    '    print("refused:", e)',
    'c.close()',
  ].join('\n');
  const r = spawnSync('python3', ['-c', script, file], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

/** A plain SQLite database (no key) built by the attacker with `pageSize`-byte pages, left in WAL mode with its -wal. */
function attackerWal(dir, pageSize) {
  const file = path.join(dir, `forged-${pageSize}.db`);
  const db = new Database(file);
  db.pragma(`page_size = ${pageSize}`);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec("CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (666, 'FORGED');");
  const wal = fs.readFileSync(`${file}-wal`);
  db.close();
  return wal;
}

/** What the WAL crashes below commit by default: the base table, then 100 more rows (200). */
const WAL_COMMITTED = [BASE_SQL, 'INSERT INTO t SELECT a + 100, b FROM t'];

/**
 * The WAL a process killed mid-transaction leaves beside `file`: `committed` committed, then
 * `uncommitted` (by default BIG_UNCOMMITTED, which spills into the WAL) in a transaction it
 * never ends.
 */
function crashInWal(file, key, cipher, { committed = WAL_COMMITTED, uncommitted = BIG_UNCOMMITTED } = {}) {
  return crashChild({ file, key, cipher, journalMode: 'wal', committed, uncommitted });
}

/** What the owner reads once it reopens `file` after a crash: each query's value, with
 * integrity_check's verdict as `integrity`. */
function ownerReads(file, options, queries) {
  const owner = new Database(file, options);
  try {
    const read = Object.fromEntries(Object.entries(queries).map(([k, sql]) => [k, owner.prepare(sql).pluck().get()]));
    return { ...read, integrity: integrity(owner) };
  } finally {
    owner.close();
  }
}

for (const { cipher, options: format } of CIPHERS) {
  describe(`attacks without the key (${cipher})`, () => {
    let dir;
    beforeEach(() => {
      dir = tempDir('attack');
    });
    afterEach(() => removeDir(dir));

    for (const mode of ['delete', 'wal']) {
      for (const pageSize of [1024, 2048]) {
        it(`a planted -wal of ${pageSize}-byte pages is refused (${mode} mode) and changes nothing`, () => {
          const key = newKey();
          const file = path.join(dir, 'victim.db');
          const db = new Database(file, { key, ...format });
          db.pragma(`journal_mode = ${mode}`);
          db.exec(BASE_SQL);
          db.close();
          fs.writeFileSync(`${file}-wal`, attackerWal(dir, pageSize));
          const before = snapshotDir(dir);
          const victim = new Database(file, { key, ...format });
          throwsSqlite(() => victim.prepare('SELECT count(*) FROM t').pluck().get(), /^SQLITE_(CORRUPT|NOTADB)/);
          victim.close();
          assert.deepEqual(snapshotDir(dir)['victim.db'], before['victim.db']);
          fs.rmSync(`${file}-wal`);
          fs.rmSync(`${file}-shm`, { force: true });
          const owner = new Database(file, { key, ...format });
          assert.deepEqual(contentOf(owner), BASE_CONTENT);
          owner.close();
        });
      }
    }

    it('a planted hot journal of another page size is refused before SQLite truncates the database', () => {
      const key = newKey();
      const file = path.join(dir, 'victim.db');
      const db = new Database(file, { key, ...format });
      db.exec(BASE_SQL);
      db.close();
      // A well-formed journal header for 1024-byte pages saying the database had 1 page.
      const header = Buffer.alloc(512);
      JOURNAL_MAGIC.copy(header, 0);
      header.writeUInt32BE(1, 8); // one record
      header.writeUInt32BE(0x1234, 12); // nonce
      header.writeUInt32BE(1, 16); // original size: 1 page
      header.writeUInt32BE(512, 20); // sector size
      header.writeUInt32BE(1024, 24); // page size
      const record = Buffer.alloc(4 + 1024 + 4);
      record.writeUInt32BE(2, 0);
      fs.writeFileSync(`${file}-journal`, Buffer.concat([header, record]));
      const before = snapshotDir(dir);
      const victim = new Database(file, { key, ...format });
      throwsSqlite(() => victim.prepare('SELECT count(*) FROM t').pluck().get(), /^SQLITE_(CORRUPT|NOTADB)/);
      victim.close();
      assert.deepEqual(snapshotDir(dir), before, 'no byte changed');
      fs.rmSync(`${file}-journal`);
      const owner = new Database(file, { key, ...format });
      assert.deepEqual(contentOf(owner), BASE_CONTENT);
      owner.close();
    });

    it('no WAL checksum on disk can be recomputed from the plaintext: every frame chains over the ciphertext', () => {
      const key = newKey();
      const file = path.join(dir, 'wal.db');
      const db = new Database(file, { key, ...format, ...layoutFor(cipher) });
      db.pragma('journal_mode = WAL');
      db.pragma('wal_autocheckpoint = 0');
      db.exec(BASE_SQL);
      db.exec("CREATE TABLE secret(pin TEXT); INSERT INTO secret VALUES ('4711');");
      for (let i = 0; i < 20; i++) db.prepare('INSERT INTO t VALUES (?, ?)').run(1000 + i, `later-${i}`);
      const wal = fs.readFileSync(`${file}-wal`);
      const salt = fs.readFileSync(file).subarray(0, 16);
      const plainPages = pagesOf(db.serialize());
      db.close();
      const lastFrameOf = new Map();
      for (let off = 32; off + FRAME <= wal.length; off += FRAME) lastFrameOf.set(wal.readUInt32BE(off), off);
      const bigEndian = (wal.readUInt32BE(0) & 1) === 1;
      let chain = [wal.readUInt32BE(24), wal.readUInt32BE(28)];
      let frames = 0;
      let compared = 0;
      let plainMatches = 0;
      for (let off = 32; off + FRAME <= wal.length; off += FRAME) {
        const head = wal.subarray(off, off + 24);
        const image = wal.subarray(off + 24, off + FRAME);
        const stored = [head.readUInt32BE(16), head.readUInt32BE(20)];
        const pgno = head.readUInt32BE(0);
        const cipherSum = walChecksum(bigEndian, walChecksum(bigEndian, chain, head.subarray(0, 8)), image);
        assert.deepEqual(stored, cipherSum, `frame ${frames + 1}: checksum over the ciphertext`);
        // The frame's plaintext: decrypted here for SQLCipher 4 (every frame); for AEGIS (no
        // AEGIS-256 in Node's crypto) the database's image, which is each page's last frame.
        const plains =
          pgno <= 1
            ? []
            : cipher === 'sqlcipher'
              ? [plaintextOf(image, pgno, key, salt)]
              : lastFrameOf.get(pgno) === off
                ? withAndWithoutReserve(plainPages[pgno - 1], AEGIS_RESERVE)
                : [];
        for (const plain of plains) {
          const sum = walChecksum(bigEndian, walChecksum(bigEndian, chain, head.subarray(0, 8)), plain);
          if (sum[0] === stored[0] && sum[1] === stored[1]) plainMatches++;
          compared++;
        }
        chain = stored;
        frames++;
      }
      assert.ok(frames >= 20, `${frames} frames`);
      assert.ok(compared >= 3, `${compared} frames compared with their plaintext`);
      assert.equal(plainMatches, 0, 'no stored checksum equals one over the plaintext');
    });

    it('no journal checksum on disk is a sum of plaintext bytes: records are checksummed over the ciphertext', async () => {
      const key = newKey();
      const file = path.join(dir, 'hot.db');
      await crashChild({
        file,
        key,
        cipher,
        layout: layoutFor(cipher).cipherLayout,
        committed: [BASE_SQL, 'INSERT INTO t SELECT a + 1000, hex(randomblob(400)) FROM t'],
        uncommitted: ["UPDATE t SET b = 'CHANGED-' || a", ...BIG_UNCOMMITTED],
      });
      const journal = fs.readFileSync(`${file}-journal`);
      const salt = fs.readFileSync(file).subarray(0, 16);
      // The journal holds the committed pages; the owner's reopen rolls it back, and its
      // image is their plaintext (the AEGIS pages' plaintext, which Node cannot decrypt).
      const owner = new Database(file, { key, ...format });
      const plainPages = pagesOf(owner.serialize());
      owner.close();
      assert.ok(journal.subarray(0, 8).equals(JOURNAL_MAGIC), 'a synced hot journal');
      const nonce = journal.readUInt32BE(12);
      const sector = journal.readUInt32BE(20);
      let records = 0;
      for (let off = sector; off + PAGE + 8 <= journal.length; off += PAGE + 8) {
        const pgno = journal.readUInt32BE(off);
        if (pgno === 0) break;
        const image = journal.subarray(off + 4, off + 4 + PAGE);
        const stored = journal.readUInt32BE(off + 4 + PAGE);
        assert.equal(stored, journalChecksum(nonce, image), `record ${records + 1} checksummed over the ciphertext`);
        if (pgno > 1) {
          const plains =
            cipher === 'sqlcipher'
              ? [plaintextOf(image, pgno, key, salt)]
              : withAndWithoutReserve(plainPages[pgno - 1], AEGIS_RESERVE);
          for (const plain of plains) assert.notEqual(stored, journalChecksum(nonce, plain), `record ${records + 1}`);
        }
        records++;
      }
      assert.ok(records >= 2, `${records} records`);
    });

    for (const journalMode of ['delete', 'truncate', 'persist']) {
      it(
        `a key-less SQLite rolling back a hot journal (${journalMode}) restores the ciphertext exactly`,
        { skip: NO_PYTHON_SQLITE },
        async () => {
          const key = newKey();
          const file = path.join(dir, 'hot.db');
          const db = new Database(file, { key, ...format });
          db.pragma(`journal_mode = ${journalMode}`);
          db.exec(BASE_SQL);
          db.exec(
            'INSERT INTO t SELECT a + 1000, hex(randomblob(400)) FROM t; INSERT INTO t SELECT a + 2000, b FROM t;',
          );
          const committed = contentOf(db);
          db.close();
          const before = fs.readFileSync(file);
          // Every original page changed and spilled, the database grown.
          const { info } = await crashChild({
            file,
            key,
            cipher,
            journalMode,
            uncommitted: ["UPDATE t SET b = 'CHANGED-' || a", ...BIG_UNCOMMITTED],
          });
          assert.ok(info.journal > 0, 'a hot journal');
          assert.ok(
            !fs.readFileSync(file).subarray(0, before.length).equals(before),
            'the crash left changed pages in the database',
          );
          assert.match(plainSqliteTouches(file), /^refused: file is not a database/);
          // SQLite rolled back what it could check: the journal's ciphertext images (fresh
          // IVs, so not the same bytes as before), and truncated the growth away.
          assert.equal(
            fs.existsSync(`${file}-journal`) && fs.statSync(`${file}-journal`).size > 0 && journalMode !== 'persist',
            false,
          );
          assert.equal(fs.statSync(file).size, before.length);
          const owner = new Database(file, { key, ...format });
          assert.deepEqual(contentOf(owner), committed);
          assert.equal(integrity(owner), 'ok');
          owner.close();
        },
      );
    }

    const committedOnly = { rows: 'SELECT count(*) FROM t', changed: "SELECT count(*) FROM t WHERE b LIKE 'CHANGED%'" };

    it(
      'a key-less SQLite meeting a WAL with committed transactions keeps every one of them',
      { skip: NO_PYTHON_SQLITE },
      async () => {
        const key = newKey();
        const file = path.join(dir, 'wal.db');
        await crashInWal(file, key, cipher);
        assert.ok(fs.statSync(`${file}-wal`).size > 0);
        assert.match(plainSqliteTouches(file), /^refused: file is not a database/);
        assert.deepEqual(ownerReads(file, { key, ...format }, committedOnly), {
          rows: 200,
          changed: 0,
          integrity: 'ok',
        });
      },
    );

    it('ATTACH of the encrypted file from a plain connection, across a crash, loses nothing', async () => {
      const key = newKey();
      const file = path.join(dir, 'wal.db');
      await crashInWal(file, key, cipher);
      const plain = new Database(':memory:');
      throwsSqlite(() => plain.exec(`ATTACH '${file}' AS enc`), 'SQLITE_NOTADB');
      plain.close();
      assert.deepEqual(ownerReads(file, { key, ...format }, committedOnly), {
        rows: 200,
        changed: 0,
        integrity: 'ok',
      });
    });

    // A WAL SQLCipher itself wrote: SQLCipher 4's format only (SQLite3MC's AEGIS WAL is
    // recovered in 88.3), so not defined for AEGIS.
    if (cipher === 'sqlcipher')
      it('a transaction committed on top of a SQLCipher WAL, with checksums rewritten, survives a crash', async () => {
        const file = copySample('wal-sqlcipher-4.12.0.sqlite', dir);
        const key = sampleKey();
        const rows = 3000;
        await crashInWal(file, key, cipher, {
          committed: [
            'PRAGMA cache_size = 5',
            'CREATE TABLE IF NOT EXISTS big(x INTEGER PRIMARY KEY, y TEXT)',
            // The first page this transaction writes (t's) is spilled to the WAL as the
            // transaction's first frame, then written again: SQLite rewrites the frames'
            // checksums from there, seeded by SQLCipher's last frame.
            `BEGIN; UPDATE t SET b = 'first' WHERE a = 1;
				 INSERT INTO big(y) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${rows}) SELECT printf('%0100d', i) FROM s;
				 UPDATE t SET b = 'second' WHERE a = 1; UPDATE big SET y = 'u' || y; COMMIT;`,
          ],
          uncommitted: [],
        });
        assert.deepEqual(
          ownerReads(
            file,
            { key, ...format },
            {
              big: 'SELECT count(*) FROM big',
              updated: "SELECT count(*) FROM big WHERE y LIKE 'u%'",
              t: 'SELECT count(*) FROM t',
              first: 'SELECT b FROM t WHERE a = 1',
            },
          ),
          { big: rows, updated: rows, t: 110, first: 'second', integrity: 'ok' },
        );
      });
  });
}

// SQLCipher 4's format: the samples are SQLite3MC's SQLCipher-scheme leftovers. Its AEGIS
// hot journal (checksums over the plaintext too) is refused and rolled back the same way in 88.4.
describe('checksums over the plaintext are not accepted unless the owner asks', () => {
  let dir;
  beforeEach(() => {
    dir = tempDir('plainsum');
  });
  afterEach(() => removeDir(dir));

  it('57.5.1 a hot journal checksummed over the plaintext (SQLite3MC’s) is refused with the option named, changing nothing; the option rolls it back', () => {
    for (const name of ['hot-sqlite3mc-2.6.1-legacy0.sqlite', 'hot-sqlite3mc-2.6.1-legacy4.sqlite']) {
      const file = copySample(name, dir);
      const files = snapshotDir(dir);
      const db = new Database(file, { key: sampleKey() });
      throwsSqlite(
        () => db.prepare('SELECT count(*) FROM t').pluck().get(),
        'SQLITE_CORRUPT',
        /not over the ciphertext.*"acceptPlaintextJournalChecksums" option/,
      );
      db.close();
      assert.deepEqual(snapshotDir(dir), files, `${name}: the refusal changed a file`);
      const once = new Database(file, { key: sampleKey(), acceptPlaintextJournalChecksums: true });
      assert.deepEqual(contentOf(once), BASE_CONTENT);
      once.close();
      assert.equal(fs.existsSync(`${file}-journal`), false, `${name}: rolled back`);
      const after = new Database(file, { key: sampleKey() });
      assert.deepEqual(contentOf(after), BASE_CONTENT);
      after.close();
    }
    throwsType(
      () => new Database(path.join(dir, 'plain.db'), { acceptPlaintextJournalChecksums: true }),
      /"acceptPlaintextJournalChecksums" option requires the "key" or "passphrase" option/,
    );
    throwsType(
      () => new Database(path.join(dir, 'x.db'), { key: newKey(), acceptPlaintextJournalChecksums: 1 }),
      /"acceptPlaintextJournalChecksums" option to be a boolean/,
    );
  });
});

// The -shm fence is the VFS's, whatever the codec: 57.6.1 and 57.6.2 show it for both
// formats; the race (57.6.3), two processes (57.6.4) and the renames of 57.9 run on SQLCipher 4's.
describe('the wal-index (-shm) is out of the attacker’s reach', () => {
  let dir;
  beforeEach(() => {
    dir = tempDir('shm');
  });
  afterEach(() => removeDir(dir));

  /** An encrypted WAL database with two tables on their own pages, both changed in the WAL. */
  function twoTables(file, key, format = {}) {
    const writer = key ? new Database(file, { key, ...format }) : new Database(file);
    writer.pragma('journal_mode = WAL');
    writer.pragma('wal_autocheckpoint = 0');
    writer.exec(
      "CREATE TABLE t1(x TEXT); CREATE TABLE t2(x TEXT); INSERT INTO t1 VALUES ('one'); INSERT INTO t2 VALUES ('two');",
    );
    writer.pragma('wal_checkpoint(TRUNCATE)');
    writer.exec("UPDATE t1 SET x = 'secret-one'; UPDATE t2 SET x = 'public-two';");
    return writer;
  }

  const shmBytes = (file) => (fs.existsSync(`${file}-shm`) ? fs.readFileSync(`${file}-shm`) : Buffer.alloc(0));

  for (const { cipher, options: format } of CIPHERS) {
    it(`57.6.1 nothing in the -shm of an open encrypted WAL database is derived from the plaintext (${cipher})`, () => {
      const key = newKey();
      const file = path.join(dir, 'oracle.db');
      const db = new Database(file, { key, ...format });
      db.pragma('journal_mode = WAL');
      db.pragma('wal_autocheckpoint = 0');
      db.exec("CREATE TABLE s(pin TEXT); INSERT INTO s VALUES ('4711')");
      const other = new Database(file, { key, ...format });
      assert.equal(other.prepare('SELECT pin FROM s').pluck().get(), '4711');
      // What a backup or a synced folder copies while the app runs: SQLite's wal-index
      // header (mxFrame, the running checksum over the plaintext) would be at its start.
      const shm = shmBytes(file);
      assert.equal(
        shm.filter((b) => b !== 0).length,
        0,
        `the -shm holds ${shm.length} bytes, some not zero: a wal-index beside the database`,
      );
      other.close();
      db.close();
    });

    it(`57.6.2 a forged wal-index in the -shm, one page mapped to another's frame, changes nothing an encrypted connection reads, writes or checkpoints (${cipher})`, () => {
      const key = newKey();
      const file = path.join(dir, 'edited.db');
      const writer = twoTables(file, key, format);
      const reader = new Database(file, { key, ...format });
      assert.equal(reader.prepare('SELECT x FROM t1').pluck().get(), 'secret-one');
      // The attacker's wal-index: SQLite's own, built by a plaintext twin that made the same
      // frames (same statements), with the two root pages' frames swapped in aPgno and in
      // the hash table — what SQLite would follow to read t1 from t2's frame.
      const twinFile = path.join(dir, 'twin.db');
      const twin = twoTables(twinFile, undefined);
      const roots = twin.prepare("SELECT name, rootpage FROM sqlite_master WHERE type = 'table'").all();
      const pageOf = Object.fromEntries(roots.map((r) => [r.name, r.rootpage]));
      const wal = fs.readFileSync(`${twinFile}-wal`);
      const frameOf = {};
      for (let off = 32, i = 1; off + FRAME <= wal.length; off += FRAME, i++) frameOf[wal.readUInt32BE(off)] = i;
      const [f1, f2] = [frameOf[pageOf.t1], frameOf[pageOf.t2]];
      assert.ok(f1 && f2, 'both root pages are in the WAL');
      const shm = fs.readFileSync(`${twinFile}-shm`);
      twin.close();
      const apgno = (i) => 136 + (i - 1) * 4;
      const [a, b] = [shm.readUInt32LE(apgno(f1)), shm.readUInt32LE(apgno(f2))];
      shm.writeUInt32LE(b, apgno(f1));
      shm.writeUInt32LE(a, apgno(f2));
      const hashAt = 136 + 4062 * 4;
      let [s1, s2] = [-1, -1];
      for (let s = 0; s < 8192; s++) {
        const v = shm.readUInt16LE(hashAt + s * 2);
        if (v === f1) s1 = s;
        if (v === f2) s2 = s;
      }
      assert.ok(s1 >= 0 && s2 >= 0);
      shm.writeUInt16LE(f2, hashAt + s1 * 2);
      shm.writeUInt16LE(f1, hashAt + s2 * 2);
      fs.writeFileSync(`${file}-shm`, shm);
      for (const db of [reader, writer]) {
        assert.equal(db.prepare('SELECT x FROM t1').pluck().get(), 'secret-one');
        assert.equal(db.prepare('SELECT x FROM t2').pluck().get(), 'public-two');
      }
      writer.exec("UPDATE t1 SET x = 'written-after-the-edit'");
      assert.equal(reader.prepare('SELECT x FROM t1').pluck().get(), 'written-after-the-edit');
      writer.pragma('wal_checkpoint(TRUNCATE)');
      reader.close();
      writer.close();
      const check = new Database(file, { key, ...format });
      assert.equal(check.prepare('SELECT x FROM t1').pluck().get(), 'written-after-the-edit');
      assert.equal(check.prepare('SELECT x FROM t2').pluck().get(), 'public-two');
      assert.equal(integrity(check), 'ok');
      check.close();
    });
  }

  // How long the race runs (ms): `node scripts/sweeps.js shm --seconds N` runs it longer.
  const RACE_MS = Number(process.env.CIPHERLITE_SHM_RACE_MS) || 1500;

  it('57.6.3 a process racing edits of the -shm cannot steer reads, in-place rewrites or a checkpoint to another page', async () => {
    const key = newKey();
    const file = path.join(dir, 'race.db');
    const writer = twoTables(file, key);
    writer.exec(
      "CREATE TABLE big(k INTEGER PRIMARY KEY, v TEXT); WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 400) INSERT INTO big SELECT i, 'v0-' || i FROM s",
    );
    writer.pragma('cache_size = 2'); // its transactions spill, and pages written twice are rewritten in place
    // Writes words of the -shm (header, page numbers, hash tables) between values for as
    // long as the reads and writes below run, then stops by itself.
    const flipper = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); const f = process.argv[1]; const end = Date.now() + Number(process.argv[2]) + 1500;
         const fd = fs.openSync(f, 'r+'); const words = [Buffer.alloc(4), Buffer.alloc(4, 0xff), Buffer.from([2, 0, 0, 0]), Buffer.from([3, 0, 0, 0])];
         process.stdout.write('go\\n');
         for (let i = 0; Date.now() < end; i++) { fs.writeSync(fd, words[i % 4], 0, 4, (i * 2654435761 >>> 0) % 32768 & ~3); }`,
        `${file}-shm`,
        String(RACE_MS),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise((resolve) => flipper.stdout.once('data', resolve));
    const reader = new Database(file, { key });
    const deadline = Date.now() + RACE_MS;
    let rounds = 0;
    while (Date.now() < deadline) {
      rounds++;
      assert.equal(reader.prepare('SELECT x FROM t1').pluck().get(), 'secret-one');
      assert.equal(reader.prepare('SELECT x FROM t2').pluck().get(), 'public-two');
      writer.transaction(() => {
        writer.prepare("UPDATE big SET v = 'v' || ? || '-' || k").run(rounds);
        writer.prepare("UPDATE big SET v = v || '!' WHERE k % 7 = 0").run();
      })();
      assert.equal(reader.prepare("SELECT count(*) FROM big WHERE v LIKE 'v' || ? || '-%'").pluck().get(rounds), 400);
    }
    assert.ok(rounds > 3, `only ${rounds} rounds`);
    writer.pragma('wal_checkpoint(TRUNCATE)');
    await new Promise((resolve) => flipper.once('exit', resolve));
    reader.close();
    writer.close();
    const check = new Database(file, { key });
    assert.deepEqual(check.prepare('SELECT (SELECT x FROM t1) a, (SELECT x FROM t2) b').get(), {
      a: 'secret-one',
      b: 'public-two',
    });
    assert.equal(
      check
        .prepare("SELECT count(*) FROM big WHERE v = 'v' || ? || '-' || k || iif(k % 7 = 0, '!', '')")
        .pluck()
        .get(rounds),
      400,
    );
    assert.equal(integrity(check), 'ok');
    check.close();
  });

  it('57.6.4 two cipherlite processes share the WAL: a reader in one sees the other’s commits', () => {
    const key = newKey();
    const file = path.join(dir, 'two.db');
    const db = twoTables(file, key);
    const child = spawnSync(
      process.execPath,
      [
        '-e',
        `const Database = require(${JSON.stringify(require.resolve('./_module.js'))}).Database;
         const db = new Database(process.argv[1], { key: Buffer.from(process.argv[2], 'hex') });
         const before = db.prepare('SELECT x FROM t1').pluck().get();
         db.exec("UPDATE t2 SET x = 'from-the-child'");
         console.log(before); db.close();`,
        file,
        Buffer.from(key).toString('hex'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout.trim(), 'secret-one');
    assert.equal(db.prepare('SELECT x FROM t2').pluck().get(), 'from-the-child');
    db.close();
  });
});

describe('the fence on the -shm holds when the files are renamed, linked or removed', () => {
  let dir;
  beforeEach(() => {
    dir = tempDir('fence');
  });
  afterEach(() => removeDir(dir));

  const countIn = (file, key, sql = 'SELECT count(*) FROM t') => {
    const db = new Database(file, { key });
    try {
      return db.prepare(sql).pluck().get();
    } finally {
      db.close();
    }
  };
  /** A cipherlite process of this user: opens `file`, inserts `rows` rows as `who`, prints the count it sees. */
  const childInserts = (file, key, who, rows) => {
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        `const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
         const db = new Database(process.argv[1], { key: Buffer.from(process.argv[2], 'hex') });
         const insert = db.prepare('INSERT INTO t(who) VALUES (?)');
         for (let i = 0; i < Number(process.argv[4]); i++) insert.run(process.argv[3]);
         console.log(db.prepare('SELECT count(*) FROM t').pluck().get()); db.close();`,
        file,
        Buffer.from(key).toString('hex'),
        who,
        String(rows),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    return Number(r.stdout.trim());
  };

  // Windows refuses to rename or remove the open database and its -shm (SQLite's handles
  // and the fence's don't share delete access), and symbolic links need a privilege there;
  // 46-windows checks the fence and the wal-index directory instead.
  const HELD_FILES_STAY =
    WINDOWS &&
    'renames and removes files held open, which Windows refuses (no handle shares delete access): 46-windows checks the fence instead';

  it(
    '57.9.1 the database renamed and a link put in its place while open: the two processes share one wal-index or refuse, no commit lost',
    { skip: HELD_FILES_STAY },
    () => {
      const key = newKey();
      const file = path.join(dir, 'app.db');
      const a = new Database(file, { key });
      a.pragma('journal_mode = WAL');
      a.pragma('wal_autocheckpoint = 0');
      a.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, who TEXT)');
      const insertA = a.prepare('INSERT INTO t(who) VALUES (?)');
      for (let i = 0; i < 10; i++) insertA.run('A');
      for (const suffix of ['', '-wal', '-shm']) fs.renameSync(`${file}${suffix}`, path.join(dir, `app2.db${suffix}`));
      fs.symlinkSync(path.join(dir, 'app2.db'), file);
      // Another process of the app opens the database by its usual name.
      assert.equal(childInserts(file, key, 'B', 20), 30, "B sees A's commits");
      let refusedA = 0;
      for (let i = 0; i < 10; i++) {
        try {
          insertA.run('A');
        } catch (e) {
          assert.equal(e.code, 'SQLITE_BUSY_RECOVERY');
          assert.match(e.message, /-shm file was removed or replaced/);
          refusedA++;
        }
      }
      a.close();
      const committedA = 10 + (10 - refusedA);
      assert.equal(countIn(file, key, "SELECT count(*) FROM t WHERE who = 'A'"), committedA, 'every commit of A kept');
      assert.equal(countIn(file, key, "SELECT count(*) FROM t WHERE who = 'B'"), 20, 'every commit of B kept');
    },
  );

  it(
    '57.9.2 a second connection opened and closed under another name of the file keeps the first one’s fence',
    { skip: HELD_FILES_STAY || NO_INTEROP },
    () => {
      const key = newKey();
      const file = path.join(dir, 'a.db');
      const a = new Database(file, { key, cipherLayout: 'sqlcipher' });
      a.pragma('journal_mode = WAL');
      a.exec("CREATE TABLE t(id INTEGER PRIMARY KEY, who TEXT); INSERT INTO t(who) VALUES ('A')");
      // The files renamed under the open connection, a link left at the old name.
      const moved = path.join(dir, 'b.db');
      for (const suffix of ['', '-wal', '-shm']) fs.renameSync(`${file}${suffix}`, `${moved}${suffix}`);
      fs.symlinkSync(moved, file);
      const b = new Database(file, { key });
      assert.equal(b.prepare('SELECT count(*) FROM t').pluck().get(), 1);
      b.close();
      // a's fence still keeps another engine off the WAL.
      const sqlcipher = runInteropEngines(key, [
        { id: 'w', engine: 'sqlcipher', file: moved, exec: ["INSERT INTO t(who) VALUES ('S')"] },
      ]);
      assert.equal(sqlcipher.results.w.ok, false, 'SQLCipher wrote beside a wal-index it cannot see');
      assert.match(sqlcipher.results.w.error, /locking protocol|locked|busy/i);
      a.close();
      assert.deepEqual(countIn(moved, key, 'SELECT group_concat(who) FROM t'), 'A');
    },
  );

  it(
    '57.9.3 the -shm removed while open: no write or checkpoint goes on, and what another engine committed meanwhile is kept',
    { skip: HELD_FILES_STAY || NO_INTEROP },
    () => {
      const key = newKey();
      const file = path.join(dir, 'gone.db');
      const a = new Database(file, { key, cipherLayout: 'sqlcipher', timeout: 0 });
      a.pragma('journal_mode = WAL');
      a.pragma('wal_autocheckpoint = 0');
      a.exec("CREATE TABLE t(id INTEGER PRIMARY KEY, who TEXT); INSERT INTO t(who) VALUES ('A')");
      fs.rmSync(`${file}-shm`);
      const sqlcipher = runInteropEngines(key, [
        {
          id: 'w',
          engine: 'sqlcipher',
          file,
          exec: ["INSERT INTO t(who) VALUES ('S')"],
          queries: { n: 'SELECT count(*) FROM t' },
        },
      ]);
      assert.ok(sqlcipher.results.w.ok, sqlcipher.results.w.error);
      assert.deepEqual(sqlcipher.results.w.rows.n, [[2]]);
      throwsSqlite(
        () => a.exec("INSERT INTO t(who) VALUES ('A2')"),
        'SQLITE_BUSY_RECOVERY',
        /-shm file was removed or replaced/,
      );
      a.close();
      assert.deepEqual(new Database(file, { key }).prepare('SELECT who FROM t ORDER BY id').pluck().all(), ['A', 'S']);
    },
  );
});

// The wal-index's private directory and the users who may enter it are the VFS's, not the
// codec's: the same for both formats, run on SQLCipher 4's.
describe('another OS user and the WAL of an encrypted database', () => {
  let dir;
  beforeEach(() => {
    dir = tempDir('otheruser');
  });
  afterEach(() => removeDir(dir));

  // Running a process as another user needs root; CI runs as root.
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

  it(
    '57.8.1 a cipherlite process of another OS user is refused while this one has the WAL open, and works once it closed',
    {
      skip:
        (WINDOWS &&
          "runs a child as user nobody with setpriv (POSIX uids); on Windows the wal-index directory is this user's by its DACL, which 46-windows checks") ||
        (!asRoot && 'needs root to run a child as the user nobody'),
    },
    (t) => {
      // nobody must be able to run this Node with this checkout (one in a directory closed
      // to other users can't be): otherwise there is nothing to test here.
      const probe = spawnSync('setpriv', [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        process.execPath,
        '-e',
        `require(${JSON.stringify(path.join(__dirname, '..'))})`,
      ]);
      if (probe.status !== 0) return t.skip(`user nobody cannot run ${process.execPath} with this checkout`);
      const key = newKey();
      fs.chmodSync(dir, 0o777);
      const file = path.join(dir, 'shared.db');
      const db = new Database(file, { key });
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1), (2)');
      for (const f of fs.readdirSync(dir)) fs.chmodSync(path.join(dir, f), 0o666);
      const other = () =>
        spawnSync(
          'setpriv',
          [
            '--reuid=65534',
            '--regid=65534',
            '--clear-groups',
            process.execPath,
            '-e',
            `const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
           try {
             const db = new Database(process.argv[1], { key: Buffer.from(process.argv[2], 'hex'), timeout: 0 });
             console.log(JSON.stringify({ rows: db.prepare('SELECT count(*) FROM t').pluck().get() }));
             db.close();
           } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`,
            file,
            Buffer.from(key).toString('hex'),
          ],
          { encoding: 'utf8' },
        );
      const before = fs.readFileSync(file);
      const refused = other();
      assert.equal(refused.status, 0, refused.stderr);
      const seen = JSON.parse(refused.stdout);
      assert.equal(seen.code, 'SQLITE_BUSY_RECOVERY', refused.stdout);
      assert.match(seen.message, /another OS user's cipherlite process/);
      assert.ok(fs.readFileSync(file).equals(before), 'the refused process changed the database');
      db.exec('INSERT INTO t VALUES (3)');
      db.close();
      const later = other();
      assert.equal(later.status, 0, later.stderr);
      assert.deepEqual(JSON.parse(later.stdout), { rows: 3 });
    },
  );
});

// As above: the VFS's private wal-index, whatever the format.
describe('another /dev/shm and the WAL of an encrypted database', () => {
  let dir;
  beforeEach(() => {
    dir = tempDir('otherns');
  });
  afterEach(() => removeDir(dir));

  // A mount namespace of its own (as a container has) needs root; CI runs as root.
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

  it(
    '57.10.1 a process of this user with another /dev/shm (another container) is refused while the WAL is open, and loses nothing',
    {
      skip:
        (WINDOWS && 'a mount namespace with its own /dev/shm is Linux’s (unshare, mount)') ||
        (!asRoot && 'needs root for a mount namespace'),
    },
    () => {
      const key = newKey();
      const file = path.join(dir, 'ns.db');
      const db = new Database(file, { key });
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1), (2)');
      const script = `const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
      try {
        const db = new Database(process.argv[1], { key: Buffer.from(process.argv[2], 'hex'), timeout: 0 });
        db.exec('INSERT INTO t VALUES (10)');
        console.log(JSON.stringify({ rows: db.prepare('SELECT count(*) FROM t').pluck().get() }));
        db.close();
      } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
      const inOwnShm = () =>
        spawnSync(
          'unshare',
          [
            '-m',
            'sh',
            '-c',
            'mount -t tmpfs none /dev/shm && exec "$0" "$@"',
            process.execPath,
            '-e',
            script,
            file,
            Buffer.from(key).toString('hex'),
          ],
          { encoding: 'utf8' },
        );
      const refused = inOwnShm();
      assert.equal(refused.status, 0, refused.stderr);
      const seen = JSON.parse(refused.stdout);
      assert.equal(seen.code, 'SQLITE_BUSY_RECOVERY', refused.stdout);
      assert.match(seen.message, /another wal-index directory/);
      db.exec('INSERT INTO t VALUES (3)');
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
      db.close();
      const later = inOwnShm();
      assert.deepEqual(JSON.parse(later.stdout), { rows: 4 });
    },
  );
});

// SQLite3 Multiple Ciphers is the other engine for both formats: its SQLCipher scheme
// (legacy = 0, engines.py's 'mc0') and its AEGIS scheme ('aegis').
for (const { cipher, options: format } of CIPHERS) {
  const mcEngine = cipher === 'aegis' ? 'aegis' : 'mc0';
  const mcCipherPragmas =
    cipher === 'aegis'
      ? `c.execute("PRAGMA cipher = 'aegis'")`
      : `c.execute("PRAGMA cipher = 'sqlcipher'"); c.execute("PRAGMA legacy = 0")`;
  describe(`another SQLite library and the WAL of an encrypted database (${cipher})`, () => {
    let dir;
    beforeEach(() => {
      dir = tempDir('foreign');
    });
    afterEach(() => removeDir(dir));

    it(
      '57.7.1 SQLite3MC cannot use the WAL while cipherlite has it open, and reads everything once it closed',
      { skip: NO_INTEROP },
      () => {
        const key = newKey();
        const file = path.join(dir, 'mc.db');
        const db = new Database(file, { key, ...format });
        db.pragma('journal_mode = WAL');
        db.exec('CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1), (2), (3)');
        const before = fs.readFileSync(file);
        const during = runInteropEngines(key, [
          { id: 'r', engine: mcEngine, file, queries: { n: 'SELECT count(*) FROM t' } },
        ]);
        assert.equal(during.results.r.ok, false, 'SQLite3MC read the WAL beside a wal-index it cannot see');
        assert.match(during.results.r.error, /locking protocol|locked|busy/i);
        assert.ok(fs.readFileSync(file).equals(before), 'the refused engine changed the database file');
        db.exec('INSERT INTO t VALUES (4)');
        db.close();
        const after = runInteropEngines(key, [
          { id: 'r', engine: mcEngine, file, queries: { n: 'SELECT count(*) FROM t' } },
        ]);
        assert.ok(after.results.r.ok, after.results.r.error);
        assert.deepEqual(after.results.r.rows.n, [[4]]);
      },
    );

    it(
      '57.7.2 cipherlite refuses a WAL that SQLite3MC has open, with the reason, changing no byte',
      { skip: NO_INTEROP },
      async () => {
        const key = newKey();
        const file = path.join(dir, 'held.db');
        const db = new Database(file, { key, ...format });
        db.pragma('journal_mode = WAL');
        db.exec('CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1)');
        db.close();
        // SQLite3MC holds the WAL open (a read done) until told to stop.
        const holder = spawn(
          INTEROP_PYTHON,
          [
            '-c',
            `import apsw, sys
c = apsw.Connection(sys.argv[1])
${mcCipherPragmas}
c.execute("PRAGMA key = \\"x'%s'\\"" % sys.argv[2])
c.execute("PRAGMA journal_mode = WAL"); c.execute("INSERT INTO t VALUES (2)")
print(c.execute("SELECT count(*) FROM t").fetchall()[0][0], flush=True)
sys.stdin.read()`,
            file,
            Buffer.from(key).toString('hex'),
          ],
          { stdio: ['pipe', 'pipe', 'inherit'] },
        );
        const exited = new Promise((resolve) => holder.once('exit', resolve));
        try {
          const count = await new Promise((resolve) => holder.stdout.once('data', (d) => resolve(String(d).trim())));
          assert.equal(count, '2');
          const files = snapshotDir(dir);
          throwsSqlite(
            () => new Database(file, { key, ...format, timeout: 0 }),
            'SQLITE_BUSY_RECOVERY',
            /open in WAL mode in another SQLite library/,
          );
          assert.deepEqual(snapshotDir(dir), files, 'the refused open changed a file');
        } finally {
          holder.stdin.end();
          await exited;
        }
        const again = new Database(file, { key, ...format });
        assert.equal(again.prepare('SELECT count(*) FROM t').pluck().get(), 2);
        again.close();
      },
    );
  });
}

// The API's refusals (ATTACH ... KEY, page_size, backup), checked before any page is read:
// nothing here depends on the format.
describe('clear errors instead of silent or generic ones', () => {
  let dir;
  beforeEach(() => {
    dir = tempDir('clear');
  });
  afterEach(() => removeDir(dir));

  it('ATTACH ... KEY fails, on encrypted and plain connections, and creates no file', () => {
    const key = newKey();
    for (const db of [new Database(path.join(dir, 'enc.db'), { key }), new Database(':memory:')]) {
      for (const clause of ["KEY 'secret'", "KEY x'00112233'", 'KEY ?']) {
        const target = path.join(dir, 'other.db');
        throwsSqlite(
          () => db.prepare(`ATTACH '${target}' AS other ${clause}`),
          'SQLITE_ERROR',
          /ATTACH \.\.\. KEY is not supported: an attached database is opened with the connection's own key/,
        );
        assert.equal(fs.existsSync(target), false);
        // exec() prepares its statements on its own path: refused there too, and the
        // statements before it in the script have run, the ones after it have not.
        if (clause !== 'KEY ?') {
          db.exec('CREATE TABLE IF NOT EXISTS before_attach(x)');
          throwsSqlite(
            () =>
              db.exec(`DROP TABLE before_attach; ATTACH '${target}' AS other ${clause}; CREATE TABLE after_attach(x)`),
            'SQLITE_ERROR',
            /ATTACH \.\.\. KEY is not supported/,
          );
          assert.equal(fs.existsSync(target), false);
          assert.equal(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'after_attach'").pluck().get(), 0);
          assert.deepEqual(
            db
              .prepare('PRAGMA database_list')
              .all()
              .map((r) => r.name),
            ['main'],
          );
        }
      }
      // Without the clause, and with a schema named "key", ATTACH works as before.
      db.exec(`ATTACH '${path.join(dir, 'k.db')}' AS key`);
      db.exec('DETACH key');
      db.close();
    }
  });

  it('PRAGMA page_size other than 4096 on an encrypted database names the problem', () => {
    const db = new Database(path.join(dir, 'ps.db'), { key: newKey() });
    for (const size of [1024, 8192, 65536]) {
      throwsSqlite(
        () => db.pragma(`page_size = ${size}`),
        'SQLITE_AUTH',
        /PRAGMA page_size cannot change an encrypted database's page size/,
      );
    }
    db.pragma('page_size = 4096');
    assert.equal(db.pragma('page_size', { simple: true }), 4096);
    db.exec('CREATE TABLE t(x)');
    db.close();
    const plain = new Database(path.join(dir, 'plain.db'));
    plain.pragma('page_size = 1024');
    plain.exec('CREATE TABLE t(x)');
    assert.equal(plain.pragma('page_size', { simple: true }), 1024);
    plain.close();
  });

  it('backup() of an empty encrypted database gives an empty encrypted copy', async () => {
    const key = newKey();
    const db = new Database(path.join(dir, 'empty.db'), { key });
    const copy = path.join(dir, 'copy.db');
    await db.backup(copy);
    db.close();
    const bytes = fs.readFileSync(copy);
    assert.ok(!bytes.subarray(0, 16).equals(Buffer.from('SQLite format 3\0', 'latin1')), 'not plaintext');
    const reopened = new Database(copy, { key });
    assert.deepEqual(reopened.prepare('SELECT name FROM sqlite_master').all(), []);
    assert.equal(integrity(reopened), 'ok');
    reopened.close();
  });
});

describe('key material after close', () => {
  // Both formats: the raw key is the AES-256 key (SQLCipher 4's page key derivation) or
  // the AEGIS-256 key that makes each page's one-time key; either half is a needle.
  for (const { cipher } of CIPHERS) {
    it(
      `no copy of the key (or of its AES schedule) is left on the stack by the page passes, nor after close() (${cipher})`,
      {
        skip: WINDOWS && "reads the thread's stack through /proc/self/maps and /proc/self/mem (Linux)",
      },
      () => {
        const dir = tempDir('residue');
        try {
          const key = newKey();
          const r = spawnSync(process.execPath, [path.join(__dirname, '_key-residue-child.js')], {
            encoding: 'utf8',
            env: {
              ...process.env,
              CIPHERLITE_RESIDUE_KEY: key.toString('hex'),
              CIPHERLITE_RESIDUE_FILE: path.join(dir, 'r.db'),
              CIPHERLITE_RESIDUE_CIPHER: cipher,
            },
          });
          assert.equal(r.status, 0, r.stderr);
          const { hits, hitsOpen, scanned } = JSON.parse(r.stdout);
          assert.ok(scanned > 64 * 1024, `scanned ${scanned} bytes of stack`);
          assert.equal(hitsOpen, 0, 'key bytes found on the stack while the connection is open');
          assert.equal(hits, 0, 'key bytes found on the stack after close()');
        } finally {
          removeDir(dir);
        }
      },
    );
  }
});

// The key argument's checks, before any format is chosen.
describe('keys that are not what they seem', () => {
  let dir;
  beforeEach(() => {
    dir = tempDir('fakekey');
  });
  afterEach(() => removeDir(dir));
  const real = crypto.randomBytes(32);
  const shapes = {
    'a plain object with Uint8Array.prototype': () => Object.setPrototypeOf({ length: 32 }, Uint8Array.prototype),
    'Object.create(Buffer.prototype, { length: 32 })': () => Object.create(Buffer.prototype, { length: { value: 32 } }),
    'a Proxy of a real Uint8Array': () => new Proxy(new Uint8Array(real), {}),
    'a Proxy of a Buffer': () => new Proxy(Buffer.from(real), {}),
  };
  for (const [name, make] of Object.entries(shapes)) {
    it(`${name} is a TypeError and no file is created`, () => {
      const file = path.join(dir, 'x.db');
      const key = make();
      assert.ok(key instanceof Uint8Array, 'passes an instanceof check');
      throwsType(() => new Database(file, { key }), /"key" option/);
      assert.equal(fs.existsSync(file), false);
    });
    it(`${name} given to the native constructor directly is a TypeError too`, () => {
      const addon = require('../lib/native-binding').loadNativeBinding();
      const file = path.join(dir, 'y.db');
      const options = { filename: file, readonly: false, fileMustExist: false, timeout: 0 };
      throwsType(
        () => new addon.Database(options, Database.SqliteError, new ArrayBuffer(64 * 1024), null, make()),
        /"key" option/,
      );
      assert.equal(fs.existsSync(file), false);
    });
  }
  it('a real key of the wrong size, and a DataView, are TypeErrors at the native constructor', () => {
    const addon = require('../lib/native-binding').loadNativeBinding();
    const file = path.join(dir, 'z.db');
    const options = { filename: file, readonly: false, fileMustExist: false, timeout: 0 };
    for (const key of [Buffer.alloc(31), new DataView(new ArrayBuffer(32)), new Uint16Array(16), 'x'.repeat(32), {}]) {
      throwsType(
        () => new addon.Database(options, Database.SqliteError, new ArrayBuffer(64 * 1024), null, key),
        /"key" option/,
      );
    }
    assert.equal(fs.existsSync(file), false);
  });
});
