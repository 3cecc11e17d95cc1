'use strict';
// The cipherlite CLI, run as a child process the way a shell user runs it: exit codes,
// messages, keys from files and the environment only, --json, no progress bar off a TTY.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const {
  Database,
  SQLITE_MAGIC,
  newKey,
  tempDir,
  removeDir,
  snapshotDir,
  runInReadOnlyDir,
  betterSqlite3OrPlain,
} = require('./_helpers-encryption');

// better-sqlite3 itself where its build loads on this Node (see the helper).
const { Plain: BetterSqlite3 } = betterSqlite3OrPlain();

const CLI = path.join(__dirname, '..', 'bin', 'cipherlite.js');
const pkg = require('../package.json');

let root;
let n = 0;
const fresh = () => {
  const d = path.join(root, `c${++n}`);
  fs.mkdirSync(d);
  return d;
};
before(() => {
  root = tempDir('cli');
});
after(() => {
  removeDir(root);
});

function cli(args, { env = {}, cwd } = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    cwd,
    env: { ...process.env, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function makePlain(file, rows = 3000) {
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = wal');
  db.exec(`CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);
		WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < ${rows})
		INSERT INTO t SELECT x, hex(randomblob(40)) FROM s;`);
  db.close();
}

function keyFile(dir, name, key = newKey(), text) {
  const f = path.join(dir, name);
  fs.writeFileSync(f, text !== undefined ? text : `${key.toString('hex')}\n`, { mode: 0o600 });
  return { file: f, key };
}

describe('cipherlite CLI', () => {
  it('is the package bin and documents itself', () => {
    assert.deepEqual(pkg.bin, { cipherlite: 'bin/cipherlite.js' });
    assert.ok(pkg.files.includes('bin/'));
    assert.ok(!pkg.scripts.install && !pkg.scripts.postinstall && !pkg.scripts.preinstall);
    assert.match(fs.readFileSync(CLI, 'utf8'), /^#!\/usr\/bin\/env node\n/);
    const help = cli(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /cipherlite encrypt <db>/);
    assert.match(help.stdout, /Exit codes:/);
    assert.equal(cli(['--version']).stdout.trim(), pkg.version);
  });

  it('encrypt → verify → rekey → verify --json → decrypt, digests equal throughout', () => {
    const dir = fresh();
    const db = path.join(dir, 'app.db');
    makePlain(db);
    const plainReport = cli(['verify', db, '--json']);
    assert.equal(plainReport.code, 0, plainReport.stderr);
    const digest = JSON.parse(plainReport.stdout).contentDigest;

    const k1 = keyFile(dir, 'k1.hex');
    const enc = cli(['encrypt', db, '--key-file', k1.file]);
    assert.equal(enc.code, 0, enc.stderr);
    assert.equal(enc.stdout, `encrypted ${db}\n`);
    assert.equal(enc.stderr, '', 'no progress bar when stderr is not a terminal');
    assert.ok(!fs.readFileSync(db).subarray(0, 16).equals(SQLITE_MAGIC));

    const v1 = cli(['verify', db, '--key-env', 'APP_KEY'], { env: { APP_KEY: k1.key.toString('hex') } });
    assert.equal(v1.code, 0, v1.stderr);
    assert.match(
      v1.stdout,
      /^ok: \d+ pages and \d+ WAL frames authenticated; integrity ok\ncontent digest [0-9a-f]{64}\n$/,
    );
    assert.ok(v1.stdout.includes(digest));

    const k2 = newKey();
    const rk = cli(['rekey', db, '--key-file', k1.file, '--new-key-env', 'NEW_KEY'], {
      env: { NEW_KEY: k2.toString('hex').toUpperCase() },
    });
    assert.equal(rk.code, 0, rk.stderr);
    assert.equal(rk.stdout, `rekeyed ${db}\n`);

    const v2 = cli(['verify', db, '--json', '--key-env', 'K'], { env: { K: k2.toString('hex') } });
    assert.equal(v2.code, 0, v2.stderr);
    const report = JSON.parse(v2.stdout);
    assert.equal(report.ok, true);
    assert.equal(report.encrypted, true);
    assert.equal(report.firstBadPage, null);
    assert.equal(report.integrity, 'ok');
    assert.equal(report.contentDigest, digest);

    const old = cli(['verify', db, '--key-file', k1.file]);
    assert.equal(old.code, 3, 'the old key no longer opens it');
    assert.equal(
      old.stderr,
      'cipherlite: file is not a database (wrong key, or a plaintext database given a key, or an encrypted one given none)\n',
    );

    const out = path.join(dir, 'plain.db');
    const dec = cli(['decrypt', db, '--out', out, '--key-env', 'K'], { env: { K: k2.toString('hex') } });
    assert.equal(dec.code, 0, dec.stderr);
    assert.equal(dec.stdout, `wrote a plaintext copy of ${db} to ${out}\n`);
    const plain = new BetterSqlite3(out, { readonly: true });
    assert.equal(plain.prepare('SELECT count(*) FROM t').pluck().get(), 3000);
    plain.close();
    assert.equal(JSON.parse(cli(['verify', out, '--json']).stdout).contentDigest, digest);
  });

  it('never takes a key from the command line; bad key files and usage errors exit 2', () => {
    const dir = fresh();
    const db = path.join(dir, 'app.db');
    makePlain(db, 10);
    const before = snapshotDir(dir);
    const hex = newKey().toString('hex');
    const cases = [
      [['encrypt', db, '--key', hex], /keys are not accepted on the command line/],
      [['encrypt', db, `--key=${hex}`], /keys are not accepted on the command line/],
      [['encrypt', db], /a key is needed: --key-file FILE or --key-env NAME/],
      [['encrypt', db, '--key-env', 'NOT_SET_ANYWHERE'], /the environment variable NOT_SET_ANYWHERE is not set/],
      [['encrypt', db, '--key-file', path.join(dir, 'none.hex')], /cannot read the key file .*none\.hex: no such file/],
      [
        ['encrypt', db, '--key-file', keyFile(dir, 'short.hex', undefined, 'abcd').file],
        /must hold exactly 64 hex digits/,
      ],
      [
        ['encrypt', db, '--key-file', keyFile(dir, 'bad.hex', undefined, 'zz'.repeat(32)).file],
        /must hold exactly 64 hex digits/,
      ],
      [['encrypt', db, '--key-env', 'A', '--key-file', 'x'], /either --key-file or --key-env, not both/],
      [['rekey', db, '--key-env', 'HOME'], /(64 hex digits|a new key is needed)/],
      [['frobnicate', db], /unknown command frobnicate/],
      [[], /no command given/],
      [['verify'], /verify needs a database file/],
      [['verify', db, '--out', 'x'], /--out does not apply to verify/],
      [['decrypt', db, '--key-env', 'K'], /decrypt needs --out FILE/],
      [['encrypt', db, '--key-env', 'K', '--layout', 'rot13'], /--layout must be sqlite3mc or sqlcipher/],
      [['verify', db, '--frob'], /unknown option --frob/],
    ];
    for (const [args, message] of cases) {
      const r = cli(args, { env: { K: hex } });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.ok(!r.stderr.includes(hex) && !r.stdout.includes(hex), 'the key is never echoed');
    }
    for (const f of ['short.hex', 'bad.hex']) fs.rmSync(path.join(dir, f));
    assert.deepEqual(snapshotDir(dir), before, 'nothing changed');
  });

  it('exit codes a script can rely on: 3 wrong key / already encrypted, 4 in use, 5 file errors, 1 verify failed', () => {
    const dir = fresh();
    const db = path.join(dir, 'app.db');
    makePlain(db);
    const k = keyFile(dir, 'k.hex');
    const other = keyFile(dir, 'other.hex');

    const missing = cli(['encrypt', path.join(dir, 'missing.db'), '--key-file', k.file]);
    assert.equal(missing.code, 5);
    assert.match(missing.stderr, /missing\.db: no such file/);

    // In use by another connection (a cipherlite connection in this process holds it
    // open in WAL mode; the CLI is another process).
    const holder = new Database(db);
    holder.prepare('SELECT count(*) FROM t').get();
    const busy = cli(['encrypt', db, '--key-file', k.file]);
    assert.equal(busy.code, 4, busy.stderr);
    assert.match(busy.stderr, /another connection has the database open/);
    holder.close();

    assert.equal(cli(['encrypt', db, '--key-file', k.file]).code, 0);
    const again = cli(['encrypt', db, '--key-file', k.file]);
    assert.equal(again.code, 3);
    assert.match(again.stderr, /is not a plaintext SQLite database \(is it encrypted already\?\)/);
    assert.equal(cli(['verify', db, '--key-file', other.file]).code, 3);
    assert.equal(cli(['decrypt', db, '--out', path.join(dir, 'o.db'), '--key-file', other.file]).code, 3);
    assert.ok(!fs.existsSync(path.join(dir, 'o.db')));

    const exists = path.join(dir, 'exists.db');
    fs.writeFileSync(exists, 'x');
    const clobber = cli(['decrypt', db, '--out', exists, '--key-file', k.file]);
    assert.equal(clobber.code, 5);
    assert.match(clobber.stderr, /exists\.db: it already exists/);
    assert.equal(fs.readFileSync(exists, 'utf8'), 'x');

    // A damaged page: verify says which and exits 1.
    const bytes = fs.readFileSync(db);
    bytes[4096 * 3 + 10] ^= 1;
    fs.writeFileSync(db, bytes);
    const bad = cli(['verify', db, '--key-file', k.file]);
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stdout, /^FAILED: page 4 does not authenticate; integrity: /);
    const badJson = JSON.parse(cli(['verify', db, '--json', '--key-file', k.file]).stdout);
    assert.equal(badJson.ok, false);
    assert.equal(badJson.firstBadPage, 4);
  });

  it('a file with other names (hard links) exits 5 with the reason, nothing changed', () => {
    const dir = fresh();
    const db = path.join(dir, 'app.db');
    makePlain(db, 100);
    fs.linkSync(db, path.join(dir, 'second-name.db'));
    const before = fs.readFileSync(db);
    const k = keyFile(dir, 'k.hex');
    const r = cli(['encrypt', db, '--key-file', k.file]);
    assert.equal(r.code, 5, r.stderr);
    assert.match(r.stderr, /the file has 2 names \(hard links\), and the others would keep the old content/);
    assert.deepEqual(fs.readFileSync(db), before);
  });

  it('a read-only directory exits 5 with the reason', () => {
    const dir = tempDir('cli-ro');
    try {
      const db = path.join(dir, 'ro.db');
      makePlain(db, 50);
      const k = newKey().toString('hex');
      const before = snapshotDir(dir);
      const out = runInReadOnlyDir(
        dir,
        `
				const r = require('node:child_process').spawnSync(process.execPath, [args.cli, 'encrypt', 'ro.db', '--key-env', 'K'],
					{ encoding: 'utf8', env: { ...process.env, K: args.k } });
				return { code: r.status, stderr: r.stderr };`,
        { cli: CLI, k },
      );
      assert.equal(out.result.code, 5, JSON.stringify(out));
      assert.match(out.result.stderr, /^cipherlite: cannot write a copy in the directory .*: permission denied\n$/);
      assert.deepEqual(snapshotDir(dir), before);
    } finally {
      removeDir(dir);
    }
  });

  it('draws a progress bar for a big file when stderr is a terminal', () => {
    // A pseudo-terminal from util-linux `script`, when the machine has it.
    const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
    assert.ok(hasScript, 'util-linux script(1) is needed to give the CLI a terminal');
    const dir = fresh();
    const db = path.join(dir, 'big.db');
    const big = new BetterSqlite3(db);
    big.exec(`CREATE TABLE t(v BLOB);
			WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 6000)
			INSERT INTO t SELECT randomblob(1000) FROM s;`);
    big.close();
    assert.ok(fs.statSync(db).size > 4 * 1024 * 1024);
    const k = newKey().toString('hex');
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} encrypt ${JSON.stringify(db)} --key-env K`;
    const r = spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', env: { ...process.env, K: k } });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /encrypting \[#{30}\] 100%/);
    assert.match(r.stdout, /encrypted .*big\.db/);
  });
});
