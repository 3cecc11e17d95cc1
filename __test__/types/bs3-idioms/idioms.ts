// Compiled (not run) by 60-typescript.test.js twice: against @types/better-sqlite3, which
// shows these are that package's idioms, and against cipherlite's index.d.ts (the import
// mapped to it, as `npm install better-sqlite3@npm:cipherlite` does), which shows they
// compile unchanged. Every name the @types `Database` namespace exports is used.
import Database from 'better-sqlite3';

interface Row { id: number; name: string }

// Database.Database, Database.Options
const options: Database.Options = { readonly: false, fileMustExist: false, timeout: 1000, verbose: console.log };
const db: Database.Database = new Database(':memory:', options);
const other = Database(':memory:');
other.close();

db.exec('CREATE TABLE cats (id INTEGER PRIMARY KEY, name TEXT)');

// Database.Statement with tuple and with object bind parameters
const insert: Database.Statement<[number, string]> = db.prepare('INSERT INTO cats VALUES (?, ?)');
const byId: Database.Statement<{ id: number }, Row> = db.prepare<{ id: number }, Row>('SELECT * FROM cats WHERE id = @id');
const all: Database.Statement<[], Row> = db.prepare<[], Row>('SELECT * FROM cats');
const untyped: Database.Statement = db.prepare('SELECT 1');
void untyped;

// Database.RunResult
const result: Database.RunResult = insert.run(1, 'Joey');
const id: number | bigint = result.lastInsertRowid;
const changes: number = result.changes;
void id; void changes;

const joey: Row | undefined = byId.get({ id: 1 });
const rows: Row[] = all.all();
for (const row of all.iterate()) row.name.toUpperCase();
void joey; void rows;

// Database.ColumnDefinition
const columns: Database.ColumnDefinition[] = all.columns();
void columns;

// Database.Transaction with no type argument, and with one
const insertMany: Database.Transaction = db.transaction((cats: Row[]) => {
  for (const cat of cats) insert.run(cat.id, cat.name);
});
insertMany([{ id: 2, name: 'Sally' }]);
const typed: Database.Transaction<(n: number) => number> = db.transaction((n: number) => n * 2);
const doubled: number = typed.immediate(2);
void doubled;
insertMany.deferred([]);
insertMany.exclusive([]);

// Database.PragmaOptions, Database.SerializeOptions, Database.RegistrationOptions
const pragmaOptions: Database.PragmaOptions = { simple: true };
const pageSize = db.pragma('page_size', pragmaOptions);
void pageSize;
const serializeOptions: Database.SerializeOptions = { attached: 'main' };
const bytes: Buffer = db.serialize(serializeOptions);
void bytes;
const registration: Database.RegistrationOptions = { deterministic: true, varargs: false };
db.function('twice', registration, (x: number) => x * 2);
db.function('hello', () => 'hello');

// Database.AggregateOptions
const sum: Database.AggregateOptions = { start: 0, step: (total, next) => total };
db.aggregate('sum2', sum);
db.aggregate('count2', { start: 0, step: (total: number) => total + 1 });

// Database.BackupOptions, Database.BackupMetadata
const backupOptions: Database.BackupOptions = { progress: (info: Database.BackupMetadata) => info.remainingPages > 0 ? 100 : 0 };
const done: Promise<Database.BackupMetadata> = db.backup('/tmp/never-written.db', backupOptions);
void done;

db.table('numbers', { columns: ['n'], *rows() { yield [1]; } });
db.defaultSafeIntegers(true).unsafeMode(false);
all.pluck().raw(false).expand(false).safeIntegers();
byId.bind({ id: 1 });

const flags: boolean[] = [db.memory, db.readonly, db.open, db.inTransaction, all.reader, all.readonly, all.busy];
const names: string[] = [db.name, all.source];
const owner: Database.Database = all.database;
void flags; void names; void owner;

// Database.SqliteError: the constructor's type
const SqliteErrorCtor: Database.SqliteError = Database.SqliteError;
const made = new SqliteErrorCtor('boom', 'SQLITE_ERROR');
const code: string = made.code;
void code;
class MyError extends Database.SqliteError {}
void new MyError('m', 'C');
function isSqliteError(e: unknown): e is InstanceType<Database.SqliteError> {
  return e instanceof Database.SqliteError;
}
try {
  db.exec('not sql');
} catch (e) {
  if (e instanceof Database.SqliteError) console.log(e.code, e.message);
  if (isSqliteError(e)) console.log(e.code);
}

function openDb(file: string): Database.Database {
  return new Database(file, { fileMustExist: true });
}
void openDb;

db.close();
