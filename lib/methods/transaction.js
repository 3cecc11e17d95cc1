'use strict';
// db.transaction(fn): wraps fn in BEGIN/COMMIT (or a savepoint when already inside a
// transaction) and rolls back when it throws — better-sqlite3's semantics.

const { kNative, kReader } = require('../util');

const controllersByDatabase = new WeakMap();
// better-sqlite3's savepoint name: visible in `verbose` logs and error messages.
const SAVEPOINT = '`\t_bs3.\t`';

/** The prepared statements one kind of transaction needs, cached per database. */
function controllersFor(db) {
  let controllers = controllersByDatabase.get(db);
  if (controllers === undefined) {
    const prepare = (sql) => db.prepare(sql);
    const shared = {
      commit: prepare('COMMIT'),
      rollback: prepare('ROLLBACK'),
      savepoint: prepare(`SAVEPOINT ${SAVEPOINT}`),
      release: prepare(`RELEASE ${SAVEPOINT}`),
      rollbackTo: prepare(`ROLLBACK TO ${SAVEPOINT}`),
    };
    controllers = {
      default: { begin: prepare('BEGIN'), ...shared },
      deferred: { begin: prepare('BEGIN DEFERRED'), ...shared },
      immediate: { begin: prepare('BEGIN IMMEDIATE'), ...shared },
      exclusive: { begin: prepare('BEGIN EXCLUSIVE'), ...shared },
    };
    controllersByDatabase.set(db, controllers);
  }
  return controllers;
}

function wrap(fn, id, fast, c) {
  return function sqliteTransaction(...args) {
    const nested = fast.inTransaction(id);
    const begin = nested ? c.savepoint : c.begin;
    const end = nested ? c.release : c.commit;
    const undo = nested ? c.rollbackTo : c.rollback;
    begin.run();
    try {
      const result = fn.apply(this, args);
      if (result && typeof result.then === 'function') {
        throw new TypeError('Transaction function cannot return a promise');
      }
      end.run();
      return result;
    } catch (err) {
      // The function (or SQLite, e.g. on a failed COMMIT) may have ended the
      // transaction already; only undo what is still open.
      if (fast.inTransaction(id)) {
        undo.run();
        if (nested) end.run();
      }
      throw err;
    }
  };
}

module.exports = function transaction(fn) {
  if (typeof fn !== 'function') throw new TypeError('Expected first argument to be a function');
  const native = this[kNative];
  const fast = native[kReader].fast;
  const id = native.id;
  const controllers = controllersFor(this);
  const variants = {
    default: wrap(fn, id, fast, controllers.default),
    deferred: wrap(fn, id, fast, controllers.deferred),
    immediate: wrap(fn, id, fast, controllers.immediate),
    exclusive: wrap(fn, id, fast, controllers.exclusive),
  };
  const properties = {
    default: { value: variants.default },
    deferred: { value: variants.deferred },
    immediate: { value: variants.immediate },
    exclusive: { value: variants.exclusive },
    database: { value: this, enumerable: true },
  };
  for (const variant of Object.values(variants)) Object.defineProperties(variant, properties);
  return variants.default;
};
