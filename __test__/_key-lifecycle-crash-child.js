'use strict';
// Child process for 83-key-lifecycle-crash: runs one key-lifecycle operation on a file
// and prints DONE. The parent SIGKILLs it on the way — at a named step (the env variable
// CIPHERLITE_CRASH_TEST_PAUSE makes the library stop there, see crates/core/src/key_lifecycle) or at a
// random time. Config: env CIPHERLITE_KEYS_CRASH_CONFIG = { op, file, key, newKey, layout,
// destination } (op: encrypt, rekey or decrypt).
const path = require('node:path');
const Database = require(path.join(__dirname, '..'));

const config = JSON.parse(process.env.CIPHERLITE_KEYS_CRASH_CONFIG);
const hex = (h) => Buffer.from(h, 'hex');
if (config.op === 'encrypt') {
  Database.encrypt(config.file, hex(config.newKey), { cipherLayout: config.layout });
} else if (config.op === 'decrypt') {
  Database.decrypt(config.file, hex(config.key), config.destination);
} else {
  const db = new Database(config.file, { key: hex(config.key) });
  db.rekey(hex(config.newKey), { cipherLayout: config.layout });
  db.close();
}
process.stdout.write('DONE\n');
