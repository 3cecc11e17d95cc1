'use strict';
// Helpers shared by the 5x encryption test files: keys, temp dirs, file snapshots, an
// independent SQLCipher 4 page checker built on node:crypto, the testdata location and
// the crash child process. Assertions about behaviour live in the test files.
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Database } = require('./_module');
// The generic helpers, re-exported for the 5x and 8x tests (temp dirs tagged `enc`).
const helpers = require('./_helpers');
const { removeDir, throwsSqlite, throwsType } = helpers;
const tempDir = (tag = 'enc') => helpers.tempDir(tag);

const PAGE = 4096;
const RESERVE = 80;
const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
/** Page-1 bytes 16..24 of a rollback-mode database, stored in clear by the sqlite3mc layout. */
const MC_CLEAR_HEADER = Buffer.from('1000010150402020', 'hex');
/** The same bytes in WAL mode (file format versions 2/2). */
const MC_CLEAR_HEADER_WAL = Buffer.from('1000020250402020', 'hex');

/** A fresh random 32-byte key. */
function newKey() {
  return crypto.randomBytes(32);
}

/** { name: sha256 } of every regular file in `dir` (sorted names). */
function snapshotDir(dir) {
  const out = {};
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    const st = fs.statSync(p);
    if (!st.isFile()) continue;
    out[name] = `${st.size}:${crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex')}`;
  }
  return out;
}

// ---- the README's BASE content ---------------------------------------------------------

const BASE_SQL = `CREATE TABLE t(a INTEGER, b TEXT);
INSERT INTO t(a, b) WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 100)
  SELECT x, 'row-' || x FROM s;`;

/** What a database holds, in a form deepEqual can compare. */
function contentOf(db) {
  return {
    tables: db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all(),
    count: db.prepare('SELECT count(*) FROM t').pluck().get(),
    sum: db.prepare('SELECT sum(a) FROM t').pluck().get(),
    wrong: db.prepare("SELECT count(*) FROM t WHERE b IS NOT 'row-' || a").pluck().get(),
  };
}
const BASE_CONTENT = { tables: ['t'], count: 100, sum: 5050, wrong: 0 };

function integrity(db) {
  return db.pragma('integrity_check', { simple: true });
}

// ---- an independent SQLCipher 4 page checker (node:crypto only) ------------------------

/** The HMAC key SQLCipher derives from a raw key and the file's salt (docs/sqlcipher4-format.md §2). */
function hmacKeyFor(key, salt) {
  const hsalt = Buffer.from(salt.map((b) => b ^ 0x3a));
  return crypto.pbkdf2Sync(key, hsalt, 2, 32, 'sha512');
}

/**
 * Checks page `pgno` (1-based) of a file image against the format: HMAC-SHA512 over
 * ciphertext ‖ IV ‖ LE32(pgno) with the derived key. For page 1 `offset` is 16 (SQLCipher
 * layout) or 24 (sqlite3mc). Returns whether the HMAC matches.
 */
function pageHmacOk(file, pgno, key, offset = 0) {
  const page = file.subarray((pgno - 1) * PAGE, pgno * PAGE);
  const salt = file.subarray(0, 16);
  const h = crypto.createHmac('sha512', hmacKeyFor(key, salt));
  h.update(page.subarray(offset, PAGE - 64));
  const le = Buffer.alloc(4);
  le.writeUInt32LE(pgno);
  h.update(le);
  return h.digest().equals(page.subarray(PAGE - 64));
}

/** Decrypts page `pgno` > 1 (or page 1 in the SQLCipher layout, offset 16) with AES-256-CBC. */
function decryptPage(file, pgno, key, offset = 0) {
  const page = file.subarray((pgno - 1) * PAGE, pgno * PAGE);
  const iv = page.subarray(PAGE - RESERVE, PAGE - RESERVE + 16);
  const d = crypto.createDecipheriv('aes-256-cbc', key, iv);
  d.setAutoPadding(false);
  return Buffer.concat([d.update(page.subarray(offset, PAGE - RESERVE)), d.final()]);
}

// ---- testdata ---------------------------------------------------------------------------

function testdataDir() {
  const dir = process.env.CIPHERLITE_TESTDATA || path.join(__dirname, '../testdata/sqlcipher4');
  assert.ok(
    fs.existsSync(path.join(dir, 'KEY.hex')),
    `SQLCipher 4 sample files not found in ${dir} (set CIPHERLITE_TESTDATA to a copy of the repository's testdata/sqlcipher4)`,
  );
  return dir;
}

function sampleKey() {
  return Buffer.from(fs.readFileSync(path.join(testdataDir(), 'KEY.hex'), 'utf8').trim(), 'hex');
}

/** Copies sample `name` (and its -journal/-wal, keeping the names) into `dir`, writable. */
function copySample(name, dir) {
  const src = testdataDir();
  const copied = [];
  for (const suffix of ['', '-journal', '-wal']) {
    const from = path.join(src, name + suffix);
    if (!fs.existsSync(from)) continue;
    const to = path.join(dir, name + suffix);
    fs.writeFileSync(to, fs.readFileSync(from));
    copied.push(name + suffix);
  }
  assert.ok(copied.length > 0, `no sample ${name}`);
  return path.join(dir, name);
}

// ---- the real engines (SQLCipher, SQLite3MC) -------------------------------------------

const INTEROP_PYTHON =
  process.env.CIPHERLITE_INTEROP_PYTHON || path.join(__dirname, '..', '.venv-interop', 'bin', 'python');
const ENGINES_PY = path.join(__dirname, 'interop', 'engines.py');
const INTEROP_HINT =
  'run `bash scripts/setup-interop.sh` (needs PyPI) to install SQLCipher (sqlcipher3-binary) and SQLite3MC (apsw-sqlite3mc) into .venv-interop/';

/** Runs __test__/interop/engines.py with `jobs` (its docstring says what a job is) keyed with `key`; returns { engines, results }. */
function runInteropEngines(key, jobs, exitWithoutClosing = false) {
  assert.ok(fs.existsSync(INTEROP_PYTHON), `interop Python not found at ${INTEROP_PYTHON}: ${INTEROP_HINT}`);
  const r = require('node:child_process').spawnSync(INTEROP_PYTHON, [ENGINES_PY], {
    input: JSON.stringify({ key: Buffer.from(key).toString('hex'), jobs, exit_without_closing: exitWithoutClosing }),
    encoding: 'utf8',
    timeout: 60000,
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(r.error, undefined, `engines.py did not run: ${r.error}`);
  assert.equal(r.status, 0, `engines.py failed (${INTEROP_HINT}):\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

// ---- crash child --------------------------------------------------------------------------

const CHILD = path.join(__dirname, '_encryption-crash-child.js');

/**
 * Runs _encryption-crash-child.js with `config` and SIGKILLs it as soon as it reports
 * READY (in the middle of an open transaction). Resolves to { ready, signal, stderr }.
 * config: { file, key (Buffer|null), layout, cipher, journalMode, committed: [sql], uncommitted: [sql], cacheSize }
 */
function crashChild(config, timeoutMs = 20000) {
  const payload = JSON.stringify({ ...config, key: config.key ? Buffer.from(config.key).toString('hex') : null });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CIPHERLITE_CRASH_CONFIG: payload },
    });
    let stdout = '';
    let stderr = '';
    let ready = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`crash child timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.stdout.on('data', (d) => {
      stdout += d;
      if (!ready && stdout.includes('READY\n')) {
        ready = true;
        child.kill('SIGKILL');
      }
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`crash child exited (${code}, ${signal}) before READY: ${stderr}`));
      else {
        const line = stdout.split('\n').find((l) => l.startsWith('INFO '));
        resolve({ ready, signal, stderr, info: line ? JSON.parse(line.slice(5)) : {} });
      }
    });
  });
}

// ---- a read-only directory ------------------------------------------------------------------

/**
 * Runs `script` (CommonJS source; `Database` is in scope, `env.ARGS` parsed as JSON is
 * `args`) in a child Node whose working directory `dir` is read-only: the directory is
 * made mode 0555 and, when the tests run as root (which ignores permissions), either the
 * child runs as user/group 65534 (nobody) — when that user can run this Node binary — or
 * the directory is made immutable (`chattr +i`, which binds root too). Files in `dir` are
 * made writable by everyone, so only the directory is read-only. Resolves to what the
 * script printed as JSON.
 */
function runInReadOnlyDir(dir, script, args = {}) {
  const { spawnSync } = require('node:child_process');
  for (const name of fs.readdirSync(dir)) fs.chmodSync(path.join(dir, name), 0o666);
  fs.chmodSync(dir, 0o555);
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  let asNobody = false;
  let immutable = false;
  const modulePath = JSON.stringify(path.join(__dirname, '..'));
  if (root) {
    // As user nobody when nobody can load the package (a checkout under a private
    // directory, as `mktemp -d` makes, it can't); else the directory made immutable.
    asNobody = spawnSync(process.execPath, ['-e', `require(${modulePath})`], { uid: 65534, gid: 65534 }).status === 0;
    if (!asNobody) immutable = spawnSync('chattr', ['+i', dir]).status === 0;
    assert.ok(
      asNobody || immutable,
      `running as root: user nobody cannot load cipherlite from ${modulePath} and chattr +i failed, so no directory can be made read-only for this test`,
    );
  }
  const source = `const Database = require(${modulePath});
const args = JSON.parse(process.env.ARGS);
const out = (v) => process.stdout.write(JSON.stringify(v));
try { out({ result: (() => { ${script} })() ?? null }); }
catch (err) { out({ error: { name: err.constructor.name, code: err.code, message: err.message } }); }`;
  let r;
  try {
    r = spawnSync(process.execPath, ['-e', source], {
      cwd: dir,
      env: { ...process.env, ARGS: JSON.stringify(args) },
      encoding: 'utf8',
      ...(asNobody ? { uid: 65534, gid: 65534 } : {}),
    });
  } finally {
    if (immutable) spawnSync('chattr', ['-i', dir]);
    fs.chmodSync(dir, 0o755);
  }
  assert.equal(r.status, 0, `child failed: ${r.error || r.stderr}`);
  return JSON.parse(r.stdout);
}

// ---- files as better-sqlite3 makes them ---------------------------------------------------

/**
 * The module that makes "a better-sqlite3 database" in the key-lifecycle tests:
 * better-sqlite3 itself where its native build loads (the Node it was built for), else
 * cipherlite without a key, which writes the same SQLite file format (say so once).
 * Returns { Plain, modulePath }.
 */
let plainModule;
function betterSqlite3OrPlain() {
  if (plainModule) return plainModule;
  try {
    const Plain = require('better-sqlite3');
    new Plain(':memory:').close();
    plainModule = { Plain, modulePath: require.resolve('better-sqlite3'), real: true };
  } catch (err) {
    if (!/NODE_MODULE_VERSION|ERR_DLOPEN_FAILED|Could not locate the bindings/.test(`${err.code} ${err.message}`))
      throw err;
    process.stderr.write(
      `# better-sqlite3's native build does not load on Node ${process.version}; plaintext files are made by cipherlite without a key\n`,
    );
    plainModule = { Plain: Database, modulePath: path.join(__dirname, '..'), real: false };
  }
  return plainModule;
}

module.exports = {
  betterSqlite3OrPlain,
  runInReadOnlyDir,
  Database,
  PAGE,
  RESERVE,
  SQLITE_MAGIC,
  MC_CLEAR_HEADER,
  MC_CLEAR_HEADER_WAL,
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
  hmacKeyFor,
  pageHmacOk,
  decryptPage,
  testdataDir,
  sampleKey,
  copySample,
  crashChild,
  runInteropEngines,
  INTEROP_PYTHON,
};
