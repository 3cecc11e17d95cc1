'use strict';
// One thin adapter per stack, so the workloads are written once against the
// better-sqlite3 API. An adapter only opens databases and switches a statement to raw
// (array) rows; statements are the stack's own objects, never wrapped, so the hot loops
// call the driver directly: `db.prepare(sql)`, `stmt.run/get/all/iterate(...positional)`,
// `db.exec(sql)`, `db.close()` mean the same in all of them.
//
// Loaded in the child process only (`child.js`); `load()` throws an Error whose message
// says why a stack can't run, which the parent reports as "skipped".

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');

/** The start of an error message on one line, for a "skipped" reason. */
function firstLine(e) {
  const text = String((e && e.message) || e)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(0, 3)
    .join(' ');
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

function packageVersion(dir) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

/** An adapter for a module with better-sqlite3's API (better-sqlite3 itself, cipherlite). */
function betterSqlite3Like({
  name,
  Database,
  version,
  baseOptions = {},
  fileOptions = () => ({}),
  note,
  retain = false,
}) {
  return {
    name,
    version,
    note,
    /** @param {string} file a path, or ':memory:' */
    open(file) {
      const options = file === ':memory:' ? { ...baseOptions } : { ...baseOptions, ...fileOptions() };
      const db = new Database(file, options);
      if (retain) {
        RETAINED.push(db);
        const prepare = Database.prototype.prepare;
        db.prepare = function retainedPrepare(sql) {
          const stmt = prepare.call(this, sql);
          RETAINED.push(stmt);
          return stmt;
        };
      }
      return db;
    },
    raw(stmt) {
      return stmt.raw(true);
    },
  };
}

// better-sqlite3 12.x on Node 24 aborts the process ("Assertion failed: (env) != nullptr" in
// node::RemoveEnvironmentCleanupHook, from ~Database/~Statement) when the garbage collector
// finalises one of its objects at certain moments — in a scavenge early in a run here, and
// at exit (an upstream bug, reported against 12.11.1 + Node 24.19.0). There, every Database
// and Statement is kept reachable until the child ends, and child.js ends with
// process.exit(), which tears nothing down. Retaining them costs nothing measurable (a few
// dozen objects) and `prepare` is never called inside a timed loop.
const RETAINED = [];
const RETAIN_BETTER_SQLITE3 = Number(process.versions.node.split('.')[0]) >= 24;

/** better-sqlite3, from node_modules (or NODE_PATH). */
function loadBetterSqlite3() {
  let Database;
  let pkgDir;
  try {
    Database = require('better-sqlite3');
    pkgDir = path.dirname(require.resolve('better-sqlite3/package.json'));
  } catch (e) {
    throw new Error(`better-sqlite3 is not installed: ${firstLine(e)}`, { cause: e });
  }
  const version = packageVersion(pkgDir);
  const baseOptions = {};
  let note;
  try {
    RETAINED.push(new Database(':memory:').close()); // the addon is loaded lazily, by the first open
  } catch (e) {
    // A classic addon is built for one Node ABI. get-node.js --with-better-sqlite3 builds
    // the same sources for another Node's ABI into .cache; use that copy if it is there.
    const built = path.join(
      ROOT,
      '.cache',
      'better-sqlite3',
      String(version),
      `node-v${process.versions.modules}`,
      'better_sqlite3.node',
    );
    if (!fs.existsSync(built)) {
      throw new Error(
        `better-sqlite3 ${version} cannot load on Node ${process.version} (ABI ${process.versions.modules}): ` +
          `${firstLine(e)} — build it for this Node with: node benchmark/get-node.js ${process.versions.node.split('.')[0]} --with-better-sqlite3`,
        { cause: e },
      );
    }
    baseOptions.nativeBinding = built;
    RETAINED.push(new Database(':memory:', baseOptions).close());
    note = `addon rebuilt for ABI ${process.versions.modules} (.cache/better-sqlite3)`;
  }
  if (RETAIN_BETTER_SQLITE3)
    note = [note, 'objects kept alive until exit (upstream GC abort on Node 24)'].filter(Boolean).join('; ');
  return betterSqlite3Like({
    name: 'better-sqlite3',
    Database,
    version,
    baseOptions,
    note,
    retain: RETAIN_BETTER_SQLITE3,
  });
}

/**
 * A peer installed by get-peers.js into .cache/peers (better-sqlite3 13, or
 * better-sqlite3-multiple-ciphers): `require`d from there, by its package name.
 */
function requirePeer(pkg, what) {
  const { peerDirForThisNode } = require('../get-peers');
  const dir = peerDirForThisNode();
  const major = Number(process.versions.node.split('.')[0]);
  const hint =
    major >= 22
      ? `node benchmark/get-peers.js --node "$(node benchmark/get-node.js ${major})"`
      : 'node benchmark/get-peers.js';
  let Database;
  let pkgDir;
  try {
    pkgDir = path.dirname(require.resolve(`${pkg}/package.json`, { paths: [dir] }));
    Database = require(pkgDir);
    new Database(':memory:').close();
  } catch (e) {
    throw new Error(
      `${what} is not installed for Node ${process.version} in ${path.relative(ROOT, dir)}: ${firstLine(e)} — install it with: ${hint}`,
      { cause: e },
    );
  }
  return { Database, version: packageVersion(pkgDir) };
}

/** better-sqlite3 13 (Node >= 22 only), from .cache/peers (get-peers.js). */
function loadBetterSqlite3v13() {
  if (Number(process.versions.node.split('.')[0]) < 22) {
    throw new Error(
      `better-sqlite3 13 needs Node >= 22 (this is ${process.version}); better-sqlite3 12 is the baseline here`,
    );
  }
  const { Database, version } = requirePeer('better-sqlite3-13', 'better-sqlite3 13');
  return betterSqlite3Like({ name: 'better-sqlite3-13', Database, version, note: 'Node-API build, .cache/peers' });
}

// better-sqlite3-multiple-ciphers, encrypted in SQLCipher 4's scheme with a raw 32-byte
// key (no key derivation, like cipherlite's `key` option), or in its default scheme
// (ChaCha20-Poly1305, with a passphrase through its key derivation — how Forward Email
// runs it).
const MC_SQLCIPHER = (hex) => [`PRAGMA cipher = 'sqlcipher'`, 'PRAGMA legacy = 4', `PRAGMA key = "x'${hex}'"`];
const MC_CHACHA20 = (hex) => [`PRAGMA cipher = 'chacha20'`, `PRAGMA key = '${hex}'`];
// Its AEGIS scheme (algorithm aegis-256, its default) with a raw 32-byte key: the format
// cipherlite writes with `cipher: 'aegis'`.
const MC_AEGIS = (hex) => [`PRAGMA cipher = 'aegis'`, `PRAGMA key = "x'${hex}'"`];

function loadMultipleCiphers(name, keyPragmas, note) {
  const { Database, version } = requirePeer('better-sqlite3-multiple-ciphers', 'better-sqlite3-multiple-ciphers');
  const retain = RETAIN_BETTER_SQLITE3 && Number(version.split('.')[0]) < 13;
  const adapter = betterSqlite3Like({ name, Database, version, note, retain });
  const open = adapter.open;
  adapter.open = function openKeyed(file) {
    const db = open.call(this, file);
    // The key goes first, before anything reads the file; memory databases stay plain.
    if (file !== ':memory:') for (const sql of keyPragmas(crypto.randomBytes(32).toString('hex'))) db.exec(sql);
    return db;
  };
  return adapter;
}

/** A peer's module from .cache/peers (get-peers.js), by specifier; its package directory too. */
function requirePeerModule(pkg, subpath, what) {
  const { peerDirForThisNode } = require('../get-peers');
  const dir = peerDirForThisNode();
  const major = Number(process.versions.node.split('.')[0]);
  const hint =
    major >= 22
      ? `node benchmark/get-peers.js --node "$(node benchmark/get-node.js ${major})"`
      : 'node benchmark/get-peers.js';
  try {
    // Neither exports its package.json: it is read from where get-peers.js put it.
    const pkgDir = path.join(dir, 'node_modules', ...pkg.split('/'));
    // Both are ES modules: require() loads them on Node 20.19+ and 22.12+.
    const mod = require(require.resolve(`${pkg}${subpath}`, { paths: [dir] }));
    return { mod, version: packageVersion(pkgDir) };
  } catch (e) {
    throw new Error(
      `${what} is not installed for Node ${process.version} in ${path.relative(ROOT, dir)}: ${firstLine(e)} — install it with: ${hint}`,
      { cause: e },
    );
  }
}

// Turso (@tursodatabase/database), a rewrite of SQLite in Rust, through its synchronous
// better-sqlite3-compatible entry `@tursodatabase/database/compat` (same prepare / run /
// get / all / iterate / raw / exec / close). Encrypted: its AEGIS-256 (`cipher:
// 'aegis256'`) with a random 32-byte key as hex, a format of its own (a "Turso" header,
// not SQLite's). Memory databases stay plain.
function loadTurso(encrypted) {
  const { mod, version } = requirePeerModule('@tursodatabase/database', '/compat', '@tursodatabase/database');
  const Database = mod.Database;
  new Database(':memory:').close();
  const stack = betterSqlite3Like({
    name: encrypted ? 'turso-aegis' : 'turso',
    Database,
    version,
    fileOptions: encrypted
      ? () => ({ encryption: { cipher: 'aegis256', hexkey: crypto.randomBytes(32).toString('hex') } })
      : () => ({}),
    note: encrypted
      ? "@tursodatabase/database/compat: encryption { cipher: 'aegis256' }, random 32-byte key"
      : '@tursodatabase/database/compat (Turso, SQLite rewritten in Rust)',
  });
  // Workload PRAGMAs Turso 0.7 doesn't take (read back as it runs): run.js reports them.
  stack.enginePragmas = {
    journal_mode: 'Turso runs WAL only',
    mmap_size: 'not a PRAGMA of Turso',
    wal_autocheckpoint: 'not a PRAGMA of Turso (nor does it checkpoint on close: the WAL stays)',
    cache_size: "Turso's page cache has a floor of 200 pages",
  };
  return stack;
}

// Signal's SQLCipher binding (@signalapp/sqlcipher), the driver of Signal Desktop: SQLCipher
// 4 at its defaults (4 KiB pages, HMAC-SHA512), keyed with a raw 32-byte key by PRAGMA key
// = "x'…'" (no key derivation, like cipherlite's `key` and mc-sqlcipher). Its statements
// take their parameters as one array (`run([a, b])`), not positionally, and it has neither
// `.iterate()` nor array rows: its statements are wrapped in an object whose run / get /
// all pass the arguments on as that array — the array a caller of its own API builds —
// and the driver workload's `.iterate()` and `.raw()` are not measured on it (`lacks`).
function loadSignal() {
  const { mod, version } = requirePeerModule('@signalapp/sqlcipher', '', '@signalapp/sqlcipher');
  const Database = mod.default || mod.Database;
  new Database(':memory:').close();
  const wrapStatement = (stmt) => ({
    run: (...params) => stmt.run(params),
    get: (...params) => stmt.get(params),
    all: (...params) => stmt.all(params),
  });
  return {
    name: 'signal-sqlcipher',
    version,
    note: `@signalapp/sqlcipher: SQLCipher 4 defaults, raw 32-byte key x'…'; statements wrapped for positional parameters`,
    lacks: {
      iterate: 'no .iterate() in @signalapp/sqlcipher',
      raw: 'no array rows in @signalapp/sqlcipher (only pluck)',
    },
    open(file) {
      const db = new Database(file);
      // The key goes first, before anything reads the file; memory databases stay plain.
      if (file !== ':memory:') db.exec(`PRAGMA key = "x'${crypto.randomBytes(32).toString('hex')}'"`);
      return {
        exec: (sql) => db.exec(sql),
        prepare: (sql) => wrapStatement(db.prepare(sql)),
        close: () => db.close(),
      };
    },
    raw() {
      throw new Error('@signalapp/sqlcipher has no array rows');
    },
  };
}

/** cipherlite from the repository root, or from CIPHERLITE_PATH, or from `where`. */
function loadCipherlite(
  encrypted,
  pageSize,
  where = process.env.CIPHERLITE_PATH ? path.resolve(process.env.CIPHERLITE_PATH) : ROOT,
  cipher = undefined,
) {
  let Database;
  try {
    Database = require(where);
    new Database(':memory:').close();
  } catch (e) {
    throw new Error(`cipherlite does not load from ${where}: ${firstLine(e)}`, { cause: e });
  }
  const stack = betterSqlite3Like({
    name: cipher
      ? `cipherlite-${cipher}`
      : encrypted
        ? `cipherlite-encrypted${pageSize ? `-${pageSize / 1024}k` : ''}`
        : 'cipherlite',
    Database,
    version: packageVersion(where),
    // A fresh random 32-byte key for every database file; memory databases aren't encrypted.
    fileOptions: encrypted
      ? () => ({ key: crypto.randomBytes(32), ...(pageSize ? { pageSize } : {}), ...(cipher ? { cipher } : {}) })
      : () => ({}),
    note: cipher
      ? `SQLite3 Multiple Ciphers' ${cipher} scheme (AEGIS-256), random 32-byte key`
      : encrypted
        ? `SQLCipher 4 pages${pageSize ? ` of ${pageSize} bytes` : ''}, random 32-byte key`
        : undefined,
  });
  // Its page size is the open option's: the workloads' PRAGMA page_size is left out.
  if (pageSize) stack.pageSize = pageSize;
  return stack;
}

/** node:sqlite's DatabaseSync (Node 22.5+; experimental on 22, stable on 24). */
function loadNodeSqlite() {
  let DatabaseSync;
  try {
    ({ DatabaseSync } = require('node:sqlite'));
  } catch (e) {
    throw new Error(`node:sqlite is not available on Node ${process.version}: ${firstLine(e)}`, { cause: e });
  }
  const probe = new DatabaseSync(':memory:');
  const stmt = probe.prepare('SELECT 1 AS one');
  const missing = ['iterate', 'setReturnArrays'].filter((m) => typeof stmt[m] !== 'function');
  probe.close();
  if (missing.length)
    throw new Error(`node:sqlite on Node ${process.version} lacks StatementSync#${missing.join(', #')}`);
  return {
    name: 'node:sqlite',
    version: process.versions.node,
    note: undefined,
    open(file) {
      // Its defaults match what the workloads need: numbers (not BigInt) for integers,
      // objects for rows, positional `?` parameters.
      return new DatabaseSync(file);
    },
    raw(stmt) {
      stmt.setReturnArrays(true);
      return stmt;
    },
  };
}

const STACKS = {
  cipherlite: () => loadCipherlite(false),
  'cipherlite-encrypted': () => loadCipherlite(true),
  // SQLCipher's cipher_page_size 8192 (Evolu's web databases use 8 KiB pages).
  'cipherlite-encrypted-8k': () => loadCipherlite(true, 8192),
  // SQLite3 Multiple Ciphers' AEGIS-256 scheme (`cipher: 'aegis'`).
  'cipherlite-aegis': () => loadCipherlite(true, undefined, undefined, 'aegis'),
  'better-sqlite3': loadBetterSqlite3,
  'better-sqlite3-13': loadBetterSqlite3v13,
  'node:sqlite': loadNodeSqlite,
  'mc-sqlcipher': () =>
    loadMultipleCiphers(
      'mc-sqlcipher',
      MC_SQLCIPHER,
      "better-sqlite3-multiple-ciphers: cipher='sqlcipher', legacy=4, raw 32-byte key x'…'",
    ),
  'mc-chacha20': () =>
    loadMultipleCiphers(
      'mc-chacha20',
      MC_CHACHA20,
      'better-sqlite3-multiple-ciphers: its default ChaCha20-Poly1305, passphrase key',
    ),
  'mc-aegis': () =>
    loadMultipleCiphers(
      'mc-aegis',
      MC_AEGIS,
      "better-sqlite3-multiple-ciphers: cipher='aegis' (AEGIS-256), raw 32-byte key x'…'",
    ),
  turso: () => loadTurso(false),
  'turso-aegis': () => loadTurso(true),
  'signal-sqlcipher': loadSignal,
};

/** Whether a stack's database files must be encrypted (checked on the file after close). */
const ENCRYPTED = {
  'cipherlite-encrypted': true,
  'cipherlite-encrypted-8k': true,
  'cipherlite-aegis': true,
  'mc-sqlcipher': true,
  'mc-aegis': true,
  'mc-chacha20': true,
  'turso-aegis': true,
  'signal-sqlcipher': true,
};

// Extra Node flags a stack may need, tried in order by the parent's probe: node:sqlite was
// behind --experimental-sqlite before Node 22.13.
const FLAG_CHOICES = {
  'node:sqlite': [[], ['--experimental-sqlite']],
};

function loadStack(name) {
  const load = STACKS[name];
  if (!load) throw new Error(`unknown stack ${name}`);
  return load();
}

// What run.js runs unless told otherwise (mc-chacha20 is for configs.js; mc-aegis and a
// plain turso on request).
const DEFAULT_STACKS = [
  'cipherlite',
  'cipherlite-encrypted',
  'cipherlite-aegis',
  'better-sqlite3-13',
  'better-sqlite3',
  'node:sqlite',
  'mc-sqlcipher',
  'turso-aegis',
  'signal-sqlcipher',
];

/** Plain cipherlite from another checkout (or a directory with its lib/, index.js,
 * package.json and built addon): micro.js's `--against`. */
const loadCipherliteAt = (where) => loadCipherlite(false, undefined, path.resolve(where));

module.exports = {
  STACK_NAMES: Object.keys(STACKS),
  DEFAULT_STACKS,
  ENCRYPTED,
  FLAG_CHOICES,
  loadStack,
  loadCipherliteAt,
  firstLine,
};
