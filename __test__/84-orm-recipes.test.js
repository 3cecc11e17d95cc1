'use strict';
// The README's recipes for passing { key } through query builders and ORMs, run as
// written: each makes an encrypted file (checked on disk and by opening it with and
// without the key). kysely and drizzle take a Database instance; knex, TypeORM and
// MikroORM construct it themselves, so they get a Database class that adds the key.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Database, SQLITE_MAGIC, newKey, tempDir, removeDir, throwsSqlite } = require('./_helpers-encryption');

let root;
let n = 0;
const fresh = () => path.join(root, `orm${++n}.db`);
before(() => {
  root = tempDir('orm');
});
after(() => {
  removeDir(root);
});

/** The README's helper: a Database class for libraries that call `new Driver(file, options)`. */
function keyedDatabase(key) {
  return class KeyedDatabase extends Database {
    constructor(filename, options) {
      super(filename, { ...options, key });
    }
  };
}

/** The file is encrypted with `key` and holds `expected` rows in `table`. */
function checkEncrypted(file, key, table, expected) {
  assert.ok(!fs.readFileSync(file).subarray(0, 16).equals(SQLITE_MAGIC), 'no plaintext header on disk');
  const db = new Database(file, { key });
  assert.deepEqual(db.prepare(`SELECT * FROM ${table} ORDER BY 1`).all(), expected);
  db.close();
  const plain = new Database(file);
  throwsSqlite(() => plain.prepare(`SELECT * FROM ${table}`).all(), 'SQLITE_NOTADB');
  plain.close();
}

describe('ORM recipes from the README', () => {
  it('kysely: pass an instance', async () => {
    const { Kysely, SqliteDialect } = require('kysely');
    const file = fresh();
    const key = newKey();
    const db = new Kysely({ dialect: new SqliteDialect({ database: new Database(file, { key }) }) });
    await db.schema
      .createTable('person')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('name', 'text')
      .execute();
    await db.insertInto('person').values({ id: 1, name: 'Ada' }).execute();
    assert.deepEqual(await db.selectFrom('person').selectAll().execute(), [{ id: 1, name: 'Ada' }]);
    await db.destroy();
    checkEncrypted(file, key, 'person', [{ id: 1, name: 'Ada' }]);
  });

  it('drizzle: pass an instance', () => {
    const { drizzle } = require('drizzle-orm/better-sqlite3');
    const { sqliteTable, integer, text } = require('drizzle-orm/sqlite-core');
    const file = fresh();
    const key = newKey();
    const sqlite = new Database(file, { key });
    const db = drizzle(sqlite);
    const person = sqliteTable('person', { id: integer('id').primaryKey(), name: text('name') });
    sqlite.exec('CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT)');
    db.insert(person).values({ id: 1, name: 'Grace' }).run();
    assert.deepEqual(db.select().from(person).all(), [{ id: 1, name: 'Grace' }]);
    sqlite.close();
    checkEncrypted(file, key, 'person', [{ id: 1, name: 'Grace' }]);
  });

  it('knex: a client whose driver adds the key', async () => {
    const knex = require('knex');
    const Client_BetterSQLite3 = require('knex/lib/dialects/better-sqlite3');
    const file = fresh();
    const key = newKey();
    class CipherliteClient extends Client_BetterSQLite3 {
      _driver() {
        return keyedDatabase(key);
      }
    }
    const db = knex({ client: CipherliteClient, connection: { filename: file }, useNullAsDefault: true });
    await db.schema.createTable('person', (t) => {
      t.integer('id').primary();
      t.string('name');
    });
    await db('person').insert({ id: 1, name: 'Linus' });
    assert.deepEqual(await db('person').select(), [{ id: 1, name: 'Linus' }]);
    await db.destroy();
    checkEncrypted(file, key, 'person', [{ id: 1, name: 'Linus' }]);
  });

  it('TypeORM: its `driver` option, not its `key` option (which runs PRAGMA key)', async () => {
    require('reflect-metadata');
    const { DataSource, EntitySchema } = require('typeorm');
    const file = fresh();
    const key = newKey();
    const Person = new EntitySchema({
      name: 'person',
      columns: { id: { type: Number, primary: true }, name: { type: String } },
    });
    const ds = new DataSource({
      type: 'better-sqlite3',
      database: file,
      driver: keyedDatabase(key),
      entities: [Person],
      synchronize: true,
    });
    await ds.initialize();
    await ds.getRepository('person').save({ id: 1, name: 'Barbara' });
    assert.deepEqual(await ds.getRepository('person').find(), [{ id: 1, name: 'Barbara' }]);
    await ds.destroy();
    checkEncrypted(file, key, 'person', [{ id: 1, name: 'Barbara' }]);

    // TypeORM's own `key` option is refused, with a message that says what to do.
    const wrong = new DataSource({
      type: 'better-sqlite3',
      database: fresh(),
      driver: Database,
      key: 'secret',
      entities: [Person],
    });
    await assert.rejects(
      wrong.initialize(),
      /PRAGMA key\/rekey\/cipher settings are not supported: cipherlite takes the key only as new Database\(path, \{ key \}\)/,
    );
  });

  it('MikroORM: a knex dialect whose driver adds the key, as driverOptions.client', async () => {
    const { MikroORM } = require('@mikro-orm/better-sqlite');
    const { BetterSqliteKnexDialect } = require('@mikro-orm/knex');
    const { EntitySchema } = require('@mikro-orm/core');
    const file = fresh();
    const key = newKey();
    class CipherliteDialect extends BetterSqliteKnexDialect {
      _driver() {
        return keyedDatabase(key);
      }
    }
    const Person = new EntitySchema({
      name: 'Person',
      tableName: 'person',
      properties: { id: { type: 'number', primary: true }, name: { type: 'string' } },
    });
    const orm = await MikroORM.init({
      dbName: file,
      entities: [Person],
      driverOptions: { client: CipherliteDialect },
      allowGlobalContext: true,
      debug: false,
    });
    await orm.schema.createSchema();
    const em = orm.em.fork();
    em.create('Person', { id: 1, name: 'Margaret' });
    await em.flush();
    assert.deepEqual(
      (await orm.em.fork().find('Person', {})).map((p) => ({ id: p.id, name: p.name })),
      [{ id: 1, name: 'Margaret' }],
    );
    await orm.close();
    checkEncrypted(file, key, 'person', [{ id: 1, name: 'Margaret' }]);
  });
});
