'use strict';
// SqliteError: what every SQLite failure is thrown as, with `.code` set to the extended
// result code name (e.g. SQLITE_CONSTRAINT_UNIQUE).
//
// It satisfies both better-sqlite3 12 and 13:
//  - callable with or without `new` (12's function; 13's class needs `new`);
//  - every instance is a real Error object, built by the Error constructor itself
//    (13's `class extends Error`): `Error.isError(err)`, `util.types.isNativeError(err)`,
//    `Object.prototype.toString.call(err) === '[object Error]'` and structuredClone() see
//    an error, in this realm and in others (vm contexts, test runners' sandboxes), where
//    12's `Error.call(this)` made an ordinary object with Error.prototype in its chain;
//  - subclasses work as 13's do (`new MyError()` is a MyError).

function SqliteError(message, code) {
  if (new.target === undefined) return new SqliteError(message, code);
  if (typeof code !== 'string') throw new TypeError('Expected second argument to be a string');
  // The Error constructor gives the object its error internal slot and an own,
  // non-enumerable `message`; `new.target` gives it the subclass's prototype.
  const error = Reflect.construct(Error, ['' + message], new.target);
  if (typeof Error.captureStackTrace === 'function') Error.captureStackTrace(error, new.target);
  error.code = code;
  return error;
}
Object.setPrototypeOf(SqliteError, Error);
Object.setPrototypeOf(SqliteError.prototype, Error.prototype);
Object.defineProperty(SqliteError.prototype, 'name', {
  value: 'SqliteError',
  writable: true,
  enumerable: false,
  configurable: true,
});

module.exports = SqliteError;
