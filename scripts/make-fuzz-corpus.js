'use strict';
// Writes the seed corpus of the fuzz targets (fuzz/corpus/): real encrypted files made with
// the fuzz key ([0x5a; 32]) — a database alone, with a hot journal, with a WAL — as the
// open_files target reads its input (three files, each a 4-byte little-endian length then
// its bytes), and page images for page_codec. Run it after a change of the file formats.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const Database = require('..');

const KEY = Buffer.alloc(32, 0x5a);
const out = path.join(__dirname, '..', 'fuzz', 'corpus');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cipherlite-corpus-'));

function pack(files) {
  return Buffer.concat(
    files.flatMap((f) => {
      const len = Buffer.alloc(4);
      len.writeUInt32LE(f.length);
      return [len, f];
    }),
  );
}
const read = (p) => (fs.existsSync(p) ? fs.readFileSync(p) : Buffer.alloc(0));

// A child that commits, starts a transaction that spills pages, and exits without closing.
function leave(file, layout, mode) {
  const child = `
    const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
    const db = new Database(${JSON.stringify(file)}, { key: Buffer.alloc(32, 0x5a), cipherLayout: ${JSON.stringify(layout)} });
    db.pragma('journal_mode = ${mode}');
    db.pragma('wal_autocheckpoint = 0');
    db.exec("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t(b) VALUES ('one'), ('two'), ('three')");
    db.pragma('cache_size = 2');
    db.exec("BEGIN; INSERT INTO t(b) SELECT hex(randomblob(600)) FROM t; INSERT INTO t(b) SELECT b FROM t; INSERT INTO t(b) SELECT b FROM t;");
    process.exit(0);`;
  const r = spawnSync(process.execPath, ['-e', child], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('corpus child failed');
}

let n = 0;
for (const layout of ['sqlite3mc', 'sqlcipher']) {
  for (const mode of ['delete', 'wal']) {
    const file = path.join(tmp, `${layout}-${mode}.db`);
    leave(file, layout, mode);
    const seed = pack([read(file), read(`${file}-journal`), read(`${file}-wal`)]);
    fs.writeFileSync(path.join(out, 'open_files', `seed-${layout}-${mode}`), seed);
    const db = read(file);
    for (const pgno of [1, 2]) {
      const page = db.subarray((pgno - 1) * 4096, pgno * 4096);
      const head = Buffer.alloc(5);
      head.writeUInt32LE(pgno);
      head[4] = 3; // 4096-byte pages
      fs.writeFileSync(path.join(out, 'page_codec', `seed-${layout}-${mode}-${pgno}`), Buffer.concat([head, page]));
    }
    n++;
  }
}
// A clean database alone.
const clean = path.join(tmp, 'clean.db');
const db = new Database(clean, { key: KEY });
db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
db.close();
fs.writeFileSync(path.join(out, 'open_files', 'seed-clean'), pack([read(clean), Buffer.alloc(0), Buffer.alloc(0)]));
fs.rmSync(tmp, { recursive: true, force: true });
console.log(`wrote ${n * 3 + 1} seeds to ${path.relative(process.cwd(), out)}`);
