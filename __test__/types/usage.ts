// Compiled (not run) by 60-typescript.test.js: the public API as a TypeScript user writes it.
import Database = require('../..');
import { randomBytes } from 'crypto';

const db: Database.Database = new Database(':memory:', { timeout: 1000, verbose: null });
const encrypted = new Database('/tmp/never-opened.db', { key: randomBytes(32), cipherLayout: 'sqlcipher' });
void encrypted;

db.exec('create table t(a integer primary key, b text)');
const insert = db.prepare<[number, string]>('insert into t values (?, ?)');
const info: Database.RunResult = insert.run(1, 'one');
const rowid: number | bigint = info.lastInsertRowid;
void rowid;

interface Row { a: number; b: string }
const select = db.prepare<[number], Row>('select a, b from t where a = ?');
const row: Row | undefined = select.get(1);
const rows: Row[] = select.all(1);
for (const r of select.iterate(1)) r.b.toUpperCase();
void row; void rows;

const named = db.prepare<{ a: number }, Row>('select a, b from t where a = @a');
named.get({ a: 1 });

const columns: Database.ColumnDefinition[] = select.columns();
void columns;
select.pluck().raw(false).expand(false).safeIntegers();

const many = db.transaction((items: Array<[number, string]>) => {
  for (const [a, b] of items) insert.run(a, b);
  return items.length;
});
const count: number = many.immediate([[2, 'two']]);
void count;

db.function('twice', { deterministic: true }, (x: number) => x * 2);
db.aggregate('total', { start: 0, step: (acc: number, x: number) => acc + x });
db.table('series', {
  columns: ['value'],
  parameters: ['n'],
  *rows(n: number) { for (let i = 0; i < n; i++) yield [i]; },
});
const size = db.pragma('page_size', { simple: true });
void size;
const bytes: Buffer = db.serialize();
void bytes;
const pending: Promise<Database.BackupMetadata> = db.backup('/tmp/x.db', { progress: () => 100 });
void pending;

try {
  db.exec('bad sql');
} catch (e) {
  if (e instanceof Database.SqliteError) {
    const code: string = e.code;
    void code;
  }
}
// better-sqlite3 13
const program: unknown[] = db.explain('SELECT * FROM t WHERE a = ?');
const plan: unknown[] = db.explain('QUERY PLAN SELECT * FROM t WHERE a = ?', 1);
void program; void plan;
const sql: string = select.toString();
const coerced: string = `${select}`;
void sql; void coerced;
const ErrorClass: Database.SqliteError = Database.SqliteError;
const instance: Database.SqliteErrorInstance = new ErrorClass('m', 'C');
void instance;
const fromFd = new Database(3, { journalFd: 4, readonly: true });
void fromFd;
db.close();

// @ts-expect-error: a descriptor needs its journal's
new Database(3);
// @ts-expect-error: the key option is not a string
new Database('/tmp/y.db', { key: 'secret' });
// @ts-expect-error: unknown layout
new Database('/tmp/y.db', { key: randomBytes(32), cipherLayout: 'aes' });
// SQLite3 Multiple Ciphers' AEGIS algorithms and Argon2 costs.
const algorithm: Database.AegisAlgorithm = 'aegis-128l';
void new Database('/tmp/never-opened-aegis.db', { key: randomBytes(16), cipher: 'aegis', algorithm });
const aegisOptions: Database.Options = { cipher: 'aegis', algorithm: 'aegis-256x4', tcost: 3, mcost: 65536, pcost: 2 };
void aegisOptions;
// @ts-expect-error: no such AEGIS algorithm
new Database('/tmp/y.db', { key: randomBytes(32), cipher: 'aegis', algorithm: 'aegis-512' });

// The key lifecycle.
function lifecycle(file: string): void {
  const key = randomBytes(32);
  Database.encrypt(file, key, { cipherLayout: 'sqlite3mc', progress: (done: number, total: number) => void (done / total) });
  const keyed = new Database(file, { key });
  keyed.rekey(randomBytes(32), { progress: () => {} }).pragma('user_version');
  const report: Database.VerifyReport = keyed.verify();
  const bad: number | null = report.firstBadPage;
  const digest: string | null = report.contentDigest;
  void bad; void digest;
  void keyed.backup(`${file}.copy`, { key: randomBytes(32) });
  void keyed.backup(`${file}.plain`, { key: null });
  void keyed.backup(`${file}.aegis`, { key: randomBytes(16), cipher: 'aegis', algorithm: 'aegis-128x2' });
  keyed.rekey(randomBytes(32), { cipher: 'aegis', algorithm: 'aegis-256x2' });
  Database.encrypt(`${file}.b`, randomBytes(16), { cipher: 'aegis', algorithm: 'aegis-128x4' });
  Database.decrypt(`${file}.b`, key, `${file}.b.plain`, { cipher: 'aegis', algorithm: 'aegis-128x4' });
  Database.decrypt(file, key, `${file}.plain2`);
  // @ts-expect-error: keys are bytes, not strings
  keyed.rekey('new secret');
  // @ts-expect-error: decrypt needs a destination
  Database.decrypt(file, key);
}
void lifecycle;
