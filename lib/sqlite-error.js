'use strict';
// SqliteError: what every SQLite failure is thrown as. Same shape as better-sqlite3's:
// a function callable with or without `new`, inheriting from Error, with `.code` set to
// the extended result code name (e.g. SQLITE_CONSTRAINT_UNIQUE).

const nameDescriptor = { value: 'SqliteError', writable: true, enumerable: false, configurable: true };

function SqliteError(message, code) {
  if (new.target !== SqliteError) return new SqliteError(message, code);
  if (typeof code !== 'string') throw new TypeError('Expected second argument to be a string');
  Error.call(this, message);
  Object.defineProperty(this, 'message', { value: String(message), writable: true, enumerable: false, configurable: true });
  Error.captureStackTrace(this, SqliteError);
  this.code = code;
}
Object.setPrototypeOf(SqliteError, Error);
Object.setPrototypeOf(SqliteError.prototype, Error.prototype);
Object.defineProperty(SqliteError.prototype, 'name', nameDescriptor);

module.exports = SqliteError;
