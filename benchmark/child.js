'use strict';
// One measurement: a fresh process that loads one stack and runs one workload (or, with
// mode "probe", only reports what the stack is). Started by run.js; prints one line
// "@@RESULT@@<json>" on stdout. Not meant to be run by hand, though it can be:
//
//   node --expose-gc benchmark/child.js '{"mode":"run","stack":"better-sqlite3","workload":"driver","quick":true}'

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { loadStack, ENCRYPTED } = require('./lib/stacks');

const WORKLOADS = {
  driver: require('./lib/workloads/driver'),
  speedtest: require('./lib/workloads/speedtest'),
  exec: require('./lib/workloads/exec'),
  configs: require('./lib/workloads/configs'),
  bigdb: require('./lib/workloads/bigdb'),
  write: require('./lib/workloads/write'),
};

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
// Strings that the workloads write; none may appear in an encrypted file.
const PLAINTEXT_MARKERS = ['example.com', 'thousand', 'Mozilla'].map((s) => Buffer.from(s));

// Written synchronously, then the process exits at once (see main()).
function emit(result) {
  fs.writeSync(1, `\n@@RESULT@@${JSON.stringify(result)}\n`);
}

function probe(stack) {
  const db = stack.open(':memory:');
  const sqlite = db.prepare('SELECT sqlite_version() AS v').get().v;
  const compileOptions = db
    .prepare('PRAGMA compile_options')
    .all()
    .map((r) => Object.values(r)[0]);
  db.close();
  return {
    ok: true,
    stack: stack.name,
    version: stack.version ?? null,
    note: stack.note ?? null,
    node: process.version,
    abi: process.versions.modules,
    v8: process.versions.v8,
    sqlite,
    compileOptions,
  };
}

/**
 * Checks the files a workload left, after it closed them: an encrypted stack's file must
 * not start with SQLite's magic nor contain any of the plaintext it stored; a plain one
 * must be an ordinary SQLite file. Returns the problems found (none: []).
 */
function checkFiles(stackName, files) {
  const problems = [];
  const sizes = {};
  for (const file of files) {
    const bytes = fs.readFileSync(file);
    sizes[path.basename(file)] = bytes.length;
    const plainHeader = bytes.subarray(0, 16).equals(SQLITE_MAGIC);
    if (ENCRYPTED[stackName]) {
      if (plainHeader) problems.push(`${path.basename(file)} starts with SQLite's plaintext header`);
      const leak = PLAINTEXT_MARKERS.find((m) => bytes.includes(m));
      if (leak) problems.push(`${path.basename(file)} contains plaintext "${leak}"`);
    } else if (!plainHeader) {
      problems.push(`${path.basename(file)} is not a plain SQLite file`);
    }
  }
  // A WAL left beside a closed database (Turso doesn't checkpoint on close) holds pages
  // too: checked for plaintext like the file, and counted in its size.
  const wals = files.map((f) => `${f}-wal`).filter((f) => fs.existsSync(f) && fs.statSync(f).size > 0);
  for (const wal of wals) {
    const bytes = fs.readFileSync(wal);
    sizes[path.basename(wal)] = bytes.length;
    const leak = ENCRYPTED[stackName] && PLAINTEXT_MARKERS.find((m) => bytes.includes(m));
    if (leak) problems.push(`${path.basename(wal)} contains plaintext "${leak}"`);
  }
  return { problems, sizes };
}

function runWorkload(stack, cfg) {
  const workload = WORKLOADS[cfg.workload];
  if (!workload) throw new Error(`unknown workload ${cfg.workload}`);
  const base = cfg.dir || os.tmpdir();
  const dir = fs.mkdtempSync(path.join(base, 'cipherlite-bench-'));
  try {
    const ctx = {
      stack,
      dir,
      quick: Boolean(cfg.quick),
      seed: cfg.seed ?? 20261129,
      gc: typeof global.gc === 'function' ? global.gc : () => {},
      config: cfg.config, // configs.js: which PRAGMA configuration
    };
    const out = workload.run(ctx);
    const { problems, sizes } = checkFiles(stack.name, out.files);
    return {
      ok: problems.length === 0,
      error: problems.length ? problems.join('; ') : undefined,
      metrics: out.metrics,
      checks: out.checks,
      pragmas: out.pragmas,
      notMeasured: out.notMeasured,
      enginePragmas: stack.enginePragmas,
      fileSizes: sizes,
      gcExposed: typeof global.gc === 'function',
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function main() {
  const cfg = JSON.parse(process.argv[2] || '{}');
  let stack;
  try {
    stack = loadStack(cfg.stack);
  } catch (e) {
    emit({ ok: false, skipped: true, reason: e.message });
    return;
  }
  try {
    emit(cfg.mode === 'probe' ? probe(stack) : runWorkload(stack, cfg));
  } catch (e) {
    // The message and the innermost frames are enough to find the cause.
    emit({
      ok: false,
      error: String((e && e.stack) || e)
        .split('\n')
        .slice(0, 4)
        .map((l) => l.trim())
        .join(' '),
    });
  }
}

main();
// process.exit() skips the environment teardown, where a garbage-collected better-sqlite3
// object can abort Node 24 (see lib/stacks.js); the result is already written.
process.exit(0);
