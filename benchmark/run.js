#!/usr/bin/env node
'use strict';
// cipherlite's benchmark against better-sqlite3 and node:sqlite (see README.md beside this).
//
//   npm run bench                       # full run: 1 warm-up + 5 measured rounds
//   node benchmark/run.js --quick       # smoke run, written to benchmark/results/tmp/
//   node benchmark/run.js --node "$(node benchmark/get-node.js 24)" --stacks better-sqlite3,node:sqlite
//
// This process only orchestrates: every measurement runs in a fresh child (child.js).
// On a Node older than 22 (better-sqlite3 13 and node:sqlite need 22), a full run without
// --node then runs again on the current LTS (see NEEDS_NODE_22 below).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { STACK_NAMES, DEFAULT_STACKS, FLAG_CHOICES } = require('./lib/stacks');
const { nameList, integerOption } = require('./lib/options');
const { machineInfo, loadAverage } = require('./lib/machine');
const { median, pairedRatios, summarize } = require('./lib/stats');
const { renderMarkdown, renderText, renderSvg } = require('./lib/report');
const { runRounds } = require('./lib/rounds');

const CHILD = path.join(__dirname, 'child.js');
const WORKLOADS = {
  driver: 'Driver workload',
  exec: "SQLite's speed test (wa-sqlite's Tests 1–16), one db.exec() per test",
  speedtest: "SQLite's speed test (wa-sqlite's Tests 1–16), prepared statements",
  write: 'Write-heavy (autocommit, WAL, synchronous=NORMAL)',
  bigdb: 'Beyond the page cache (cache_size −1600) and a Turso-style mix as the table grows',
};
// The baseline of every ratio: better-sqlite3 13 where it runs (Node >= 22), else the
// devDependency better-sqlite3 12 (Node 20), else the first stack that ran.
const BASELINES = ['better-sqlite3-13', 'better-sqlite3'];
// Every child gets the same flags: gc() between timed blocks; node:sqlite's
// ExperimentalWarning (Node 22) kept off stderr.
const BASE_FLAGS = ['--expose-gc', '--no-warnings'];
// The stacks that need Node >= 22: on an older Node they are skipped. What users pick today
// is the current LTS with better-sqlite3 13 or node:sqlite, so a full run on such a Node
// without --node (`npm run bench` where the machine's Node is 20) fetches the LTS the way
// the tests do (get-node.js, with the peers from get-peers.js) and runs its stacks there
// too, less better-sqlite3 12 (its classic addon is built for the first Node), in a second
// report; --no-lts leaves it out.
const NEEDS_NODE_22 = ['better-sqlite3-13', 'node:sqlite'];
const LTS_PASS_BELOW = 22;

const USAGE = `usage: node benchmark/run.js [options]

  --quick             smoke run: small sizes, 1 warm-up + 2 rounds, report in results/tmp/
  --node PATH         run the stacks on this Node binary (default: the one running this)
  --stacks a,b        stacks to run (default: ${DEFAULT_STACKS.join(', ')}; also: ${STACK_NAMES.filter((s) => !DEFAULT_STACKS.includes(s)).join(', ')})
  --baseline NAME     the stack every ratio divides by (default: the first of ${BASELINES.join(', ')} that runs)
  --only w[,w]        workloads to run: ${Object.keys(WORKLOADS).join(', ')} (default: all)
  --rounds N          measured rounds (default 5; --quick: 2)
  --warmup N          discarded warm-up rounds (default 1)
  --dir DIR           where the database files go (default: ${os.tmpdir()})
  --seed N            PRNG seed for the data (default 20261129)
  --out DIR           report directory (default: benchmark/results, --quick: benchmark/results/tmp)
  --machine NAME      machine name in the report's file name (default: the host name)
  --cipherlite PATH   load cipherlite from PATH instead of the repository root
  --no-lts            on Node < ${LTS_PASS_BELOW} without --node: don't run again on the current LTS
  --help`;

function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      node: { type: 'string' },
      stacks: { type: 'string' },
      baseline: { type: 'string' },
      only: { type: 'string' },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      dir: { type: 'string' },
      seed: { type: 'string' },
      out: { type: 'string' },
      machine: { type: 'string' },
      cipherlite: { type: 'string' },
      'no-lts': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  const stacks = values.stacks ? nameList(values.stacks, STACK_NAMES, 'stack') : DEFAULT_STACKS;
  return {
    help: values.help,
    quick: values.quick,
    node: values.node ? path.resolve(values.node) : process.execPath,
    stacks,
    baseline: values.baseline ? nameList(values.baseline, STACK_NAMES, 'stack')[0] : undefined,
    workloads: values.only ? nameList(values.only, Object.keys(WORKLOADS), 'workload') : Object.keys(WORKLOADS),
    rounds: integerOption('rounds', values.rounds, values.quick ? 2 : 5, 1),
    warmup: integerOption('warmup', values.warmup, 1, 0),
    dir: path.resolve(values.dir || os.tmpdir()),
    seed: integerOption('seed', values.seed, 20261129, 0),
    out: values.out ? path.resolve(values.out) : path.join(__dirname, 'results', ...(values.quick ? ['tmp'] : [])),
    machine: values.machine || os.hostname(),
    cipherlite: values.cipherlite ? path.resolve(values.cipherlite) : undefined,
    ltsPass: wantsLtsPass(values, stacks, Number(process.versions.node.split('.')[0])),
  };
}

/**
 * Whether a run with these parsed flags (`values`) and stacks, on a Node of this major
 * version, runs again on the current LTS: a full run (not --quick), on a Node where some of
 * the stacks can't run, with no Node chosen (--node) and not turned off (--no-lts).
 */
function wantsLtsPass(values, stacks, major) {
  return (
    !values.quick &&
    !values['no-lts'] &&
    !values.node &&
    major < LTS_PASS_BELOW &&
    stacks.some((s) => NEEDS_NODE_22.includes(s))
  );
}

function progress(msg) {
  process.stderr.write(`${msg}\n`);
}

/** Runs child.js once; returns its result object (or an error result). */
function spawnChild(opts, flags, cfg) {
  const env = { ...process.env };
  if (opts.cipherlite) env.CIPHERLITE_PATH = opts.cipherlite;
  const t0 = Date.now();
  const minutes = opts.quick ? 5 : 30;
  const r = spawnSync(opts.node, [...BASE_FLAGS, ...flags, CHILD, JSON.stringify(cfg)], {
    encoding: 'utf8',
    env,
    maxBuffer: 64 * 1024 * 1024,
    timeout: minutes * 60 * 1000,
  });
  const wallMs = Date.now() - t0;
  if (r.error && r.error.code === 'ETIMEDOUT') return { ok: false, error: `killed after ${minutes} minutes`, wallMs };
  if (r.error) return { ok: false, error: `could not run ${opts.node}: ${r.error.message}`, wallMs };
  const line = (r.stdout || '')
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('@@RESULT@@'));
  if (!line) {
    const tail = (r.stderr || r.stdout || '').trim().split('\n').slice(-6).join(' / ');
    return { ok: false, error: `child exited with ${r.status ?? r.signal} and no result: ${tail}`, wallMs };
  }
  const result = JSON.parse(line.slice('@@RESULT@@'.length));
  result.wallMs = wallMs;
  return result;
}

/** Finds out which stacks load (and with which extra Node flags), and their versions. */
function probeStacks(opts) {
  const stacks = {};
  for (const name of opts.stacks) {
    let first;
    for (const flags of FLAG_CHOICES[name] || [[]]) {
      const res = spawnChild(opts, flags, { mode: 'probe', stack: name });
      if (res.ok) {
        stacks[name] = { status: 'ok', flags, info: res };
        break;
      }
      first = first || res;
    }
    if (!stacks[name]) {
      stacks[name] = first.skipped
        ? { status: 'skipped', reason: first.reason }
        : { status: 'failed', reason: first.error };
    }
    const s = stacks[name];
    progress(
      `stack ${name.padEnd(22)} ${s.status === 'ok' ? `SQLite ${s.info.sqlite}, Node ${s.info.node}${s.flags.length ? ` (${s.flags.join(' ')})` : ''}` : `${s.status}: ${s.reason}`}`,
    );
  }
  return stacks;
}

/** Which top-level keys of two check objects differ. */
function differingKeys(a, b) {
  const keys = new Set([...Object.keys(a || {}), ...Object.keys(b || {})]);
  return [...keys].filter((k) => JSON.stringify(a?.[k]) !== JSON.stringify(b?.[k]));
}

function clip(value, max = 160) {
  const text = JSON.stringify(value) ?? 'nothing';
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/**
 * Compares every result with the baseline's (row counts, checksums, PRAGMAs), then
 * computes medians and paired ratios over the measured rounds.
 */
function analyze(opts, active, results) {
  const baseline = [opts.baseline, ...BASELINES].find((s) => s && active.includes(s)) || active[0];
  const measured = (r) => r >= opts.warmup;
  const workloads = {};
  const stackFailed = {};
  const failureSummary = [];

  for (const wname of opts.workloads) {
    const perStack = results[wname];
    const failures = {};
    const notMeasured = {};
    const engineNotes = {};
    // failures[stack]: one entry per distinct problem, with the rounds it happened in.
    const fail = (stack, round, msg) => {
      const list = (failures[stack] = failures[stack] || []);
      const label = `${round + 1}${measured(round) ? '' : ' (warm-up)'}`;
      const same = list.find((f) => f.message === msg);
      if (same) same.rounds.push(label);
      else list.push({ rounds: [label], message: msg });
      stackFailed[stack] = true;
    };
    // The reference: the baseline's first good result, else any stack's.
    const refStack = [baseline, ...active].find((s) => perStack[s].some((r) => r && r.ok));
    const ref = refStack && perStack[refStack].find((r) => r && r.ok);
    for (const stack of active) {
      perStack[stack].forEach((res, round) => {
        if (!res.ok) return fail(stack, round, res.error || res.reason);
        // An operation the stack's API has no way to do is not measured, with the reason.
        for (const [key, why] of Object.entries(res.notMeasured || {})) {
          notMeasured[stack] = notMeasured[stack] || {};
          notMeasured[stack][key] = why;
        }
        const checks = differingKeys(res.checks, ref.checks).filter((k) => !res.notMeasured?.[k]);
        if (checks.length) {
          const detail = (k) => `${k} (${clip(res.checks?.[k])} vs ${clip(ref.checks[k])})`;
          fail(stack, round, `results differ from ${refStack}'s in ${checks.map(detail).join('; ')}`);
        }
        // A stack that opens with its own page size (cipherlite-encrypted-8k) differs
        // there by design. SQLCipher answers PRAGMA page_size on a keyed database with its
        // cipher_page_size, as text ('4096'): the same value. A setting the stack's engine
        // doesn't take (Turso: WAL only, no mmap_size) is a note with its reason, not a
        // failure; the PRAGMA table shows the value it ran with.
        const differing = differingKeys(res.pragmas, ref.pragmas).filter(
          (k) => !(k === 'page_size' && /-\d+k$/.test(stack)) && String(res.pragmas?.[k]) !== String(ref.pragmas?.[k]),
        );
        for (const k of differing.filter((k) => res.enginePragmas?.[k])) {
          engineNotes[stack] = engineNotes[stack] || {};
          engineNotes[stack][k] = `${res.pragmas[k]} (asked: ${ref.pragmas[k]}): ${res.enginePragmas[k]}`;
        }
        const pragmas = differing.filter((k) => !res.enginePragmas?.[k]);
        if (pragmas.length)
          fail(
            stack,
            round,
            `PRAGMAs differ from ${refStack}'s: ${pragmas.map((k) => `${k}=${res.pragmas[k]} vs ${ref.pragmas[k]}`).join(', ')}`,
          );
      });
    }
    for (const stack of Object.keys(failures)) failureSummary.push(`${stack} failed ${wname}`);

    const metricKeys = ref ? Object.keys(ref.metrics) : [];
    const metrics = metricKeys.map((key) => {
      const series = {};
      for (const stack of active) {
        series[stack] = perStack[stack].map((res, round) =>
          measured(round) && res.ok ? res.metrics[key]?.value : undefined,
        );
      }
      const stacks = {};
      for (const stack of active) {
        const values = series[stack].filter(Number.isFinite);
        if (!values.length) continue;
        stacks[stack] = {
          values: series[stack].slice(opts.warmup),
          median: median(values),
          ratio: stack === baseline ? null : summarize(pairedRatios(series[stack], series[baseline])),
        };
      }
      return { key, label: ref.metrics[key].label, unit: ref.metrics[key].unit, stacks };
    });

    const pragmas = {};
    const fileSizes = {};
    for (const stack of active) {
      const good = perStack[stack].find((r) => r && r.ok) || perStack[stack].find((r) => r && r.pragmas);
      if (good) {
        pragmas[stack] = good.pragmas;
        fileSizes[stack] = good.fileSizes;
      }
    }
    workloads[wname] = { title: WORKLOADS[wname], metrics, failures, notMeasured, engineNotes, pragmas, fileSizes };
  }
  return {
    baseline,
    workloads,
    stackFailed,
    failed: failureSummary.length > 0,
    failureSummary,
    targets: targets(baseline, workloads),
  };
}

// Issue 13's targets, as per-round paired ratios of time (numerator ÷ denominator, same
// round). `max`: the ratio must be at most this (a rate "≥ 1.5×" is a time ratio ≤ 1/1.5).
const TARGETS = [
  ...[
    ['insert', 0.6],
    ['get', 0.85],
    ['all', 0.6],
    ['all100', 0.6],
    ['iterate', 0.7],
    ['raw', null],
  ].map(([metric, max]) => ({
    group: 'vs baseline',
    num: 'cipherlite',
    den: 'BASELINE',
    workload: 'driver',
    metric,
    max,
  })),
  { group: 'vs baseline', num: 'cipherlite', den: 'BASELINE', workload: 'exec', metric: 'total', max: 1.0 },
  { group: 'vs baseline', num: 'cipherlite', den: 'BASELINE', workload: 'speedtest', metric: 'total', max: null },
  {
    group: 'encrypted ÷ plain',
    num: 'cipherlite-encrypted',
    den: 'cipherlite',
    workload: 'exec',
    metric: 'total',
    max: 1.1,
  },
  {
    group: 'encrypted ÷ plain',
    num: 'cipherlite-encrypted',
    den: 'cipherlite',
    workload: 'speedtest',
    metric: 'total',
    max: 1.1,
  },
  ...['insert', 'get', 'all', 'all100', 'iterate', 'raw'].map((metric) => ({
    group: 'encrypted ÷ plain',
    num: 'cipherlite-encrypted',
    den: 'cipherlite',
    workload: 'driver',
    metric,
    max: 1.05,
  })),
  ...['insert', 'update', 'delete'].map((metric) => ({
    group: 'encrypted ÷ plain',
    num: 'cipherlite-encrypted',
    den: 'cipherlite',
    workload: 'write',
    metric,
    max: 2.0,
  })),
  {
    group: 'encrypted ÷ plain',
    num: 'cipherlite-encrypted',
    den: 'cipherlite',
    workload: 'bigdb',
    metric: 'scan',
    max: 2.0,
  },
  {
    group: 'encrypted ÷ plain',
    num: 'cipherlite-encrypted',
    den: 'cipherlite',
    workload: 'bigdb',
    metric: 'point',
    max: 3.0,
  },
  ...['mix100k', 'mix300k', 'mix1M', 'mix5k', 'mix10k', 'mix20k'].map((metric) => ({
    group: 'encrypted ÷ plain',
    num: 'cipherlite-encrypted',
    den: 'cipherlite',
    workload: 'bigdb',
    metric,
    max: null,
  })),
  ...['insert', 'update', 'delete'].map((metric) => ({
    group: 'vs multiple-ciphers',
    num: 'cipherlite-encrypted',
    den: 'mc-sqlcipher',
    workload: 'write',
    metric,
    max: 1 / 1.5,
  })),
  ...['insert', 'get', 'all', 'all100', 'iterate', 'raw'].map((metric) => ({
    group: 'vs multiple-ciphers',
    num: 'cipherlite-encrypted',
    den: 'mc-sqlcipher',
    workload: 'driver',
    metric,
    max: null,
  })),
  {
    group: 'vs multiple-ciphers',
    num: 'cipherlite-encrypted',
    den: 'mc-sqlcipher',
    workload: 'exec',
    metric: 'total',
    max: null,
  },
  // Issue 46: the AEGIS-256 format (`cipher: 'aegis'`) against plain cipherlite, and
  // against Turso's AEGIS-256 where a `turso-aegis` stack ran (every metric of every
  // workload: cipherlite's time must be the smaller).
  ...['insert', 'get', 'all', 'all100', 'iterate', 'raw'].map((metric) => ({
    group: 'AEGIS ÷ plain',
    num: 'cipherlite-aegis',
    den: 'cipherlite',
    workload: 'driver',
    metric,
    max: 1.03,
  })),
  ...['insert', 'update', 'delete'].map((metric) => ({
    group: 'AEGIS ÷ plain',
    num: 'cipherlite-aegis',
    den: 'cipherlite',
    workload: 'write',
    metric,
    max: 1.2,
  })),
  { group: 'AEGIS ÷ plain', num: 'cipherlite-aegis', den: 'cipherlite', workload: 'bigdb', metric: 'scan', max: 1.15 },
  { group: 'AEGIS ÷ plain', num: 'cipherlite-aegis', den: 'cipherlite', workload: 'bigdb', metric: 'point', max: 1.3 },
  ...['exec', 'speedtest'].map((workload) => ({
    group: 'AEGIS ÷ plain',
    num: 'cipherlite-aegis',
    den: 'cipherlite',
    workload,
    metric: 'total',
    max: null,
  })),
  // Beside SQLCipher's format: no bound, for reading the two side by side.
  ...['scan', 'point'].map((metric) => ({
    group: 'AEGIS ÷ SQLCipher',
    num: 'cipherlite-aegis',
    den: 'cipherlite-encrypted',
    workload: 'bigdb',
    metric,
    max: null,
  })),
  { group: 'vs Turso AEGIS-256', num: 'cipherlite-aegis', den: 'turso-aegis', workload: '*', metric: '*', max: 1.0 },
  // Turso's own cost of its encryption, where a plain `turso` stack ran too: no bound, for
  // reading beside cipherlite's AEGIS ÷ plain.
  { group: 'Turso AEGIS ÷ plain', num: 'turso-aegis', den: 'turso', workload: '*', metric: '*', max: null },
];

/** The targets that this run can say something about, with their paired ratios. A
 * target with workload and metric `*` stands for every metric of every workload. */
function targets(baseline, workloads) {
  const out = [];
  const expanded = TARGETS.flatMap((t) =>
    t.workload !== '*'
      ? [t]
      : Object.entries(workloads).flatMap(([workload, w]) => w.metrics.map((m) => ({ ...t, workload, metric: m.key }))),
  );
  for (const t of expanded) {
    const den = t.den === 'BASELINE' ? baseline : t.den;
    const w = workloads[t.workload];
    const m = w && w.metrics.find((x) => x.key === t.metric);
    if (!m || den === t.num || !m.stacks[t.num] || !m.stacks[den] || w.failures[t.num] || w.failures[den]) continue;
    const ratio = summarize(pairedRatios(m.stacks[t.num].values, m.stacks[den].values));
    if (!ratio) continue;
    out.push({ ...t, den, label: m.label, ratio, met: t.max == null ? null : ratio.median <= t.max });
  }
  return out;
}

/** The newest `bench:storage` report in `dir` (benchmark/storage.js writes
 * `<date>-storage.md`), included in this report with its headings one level down. */
function storageSection(dir, quick) {
  if (quick) return '';
  let files;
  try {
    files = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('-storage.md'))
      .sort();
  } catch {
    return '';
  }
  if (files.length === 0) return '';
  const latest = files[files.length - 1];
  const body = fs.readFileSync(path.join(dir, latest), 'utf8').replace(/^(#+) /gm, '#$1 ');
  return `\n## Evolu storage (from ${latest}, \`npm run bench:storage\`)\n\n${body}`;
}

function reportBase(dir, date, machine) {
  const stem = `${date}-${machine}`;
  for (let i = 1; ; i++) {
    const base = path.join(dir, i === 1 ? stem : `${stem}-${i}`);
    if (!fs.existsSync(`${base}.md`) && !fs.existsSync(rawPath(base))) return base;
  }
}

/**
 * Where a report's raw numbers go: `raw/` beside it, which git ignores. Every round of
 * every stack is a megabyte a run; the report's medians and ratios are what is kept.
 */
function rawPath(base) {
  return path.join(path.dirname(base), 'raw', `${path.basename(base)}.json`);
}

function writeRaw(base, run) {
  fs.mkdirSync(path.dirname(rawPath(base)), { recursive: true });
  fs.writeFileSync(rawPath(base), `${JSON.stringify(run, null, 2)}\n`);
}

function localDate(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

function main(argv) {
  let opts;
  try {
    opts = parseOptions(argv);
  } catch (e) {
    console.error(`${e.message}\n\n${USAGE}`);
    return 2;
  }
  if (opts.help) {
    console.log(USAGE);
    return 0;
  }
  if (!fs.existsSync(opts.node)) {
    console.error(`no Node binary at ${opts.node}`);
    return 2;
  }
  const code = runOn(opts, argv);
  if (!opts.ltsPass) return code;
  const lts = ltsOptions(opts);
  if (!lts) return code;
  progress(`\nAgain on the current LTS, Node ${lts.version} (${lts.node}): ${lts.opts.stacks.join(', ')}`);
  return Math.max(code, runOn(lts.opts, argv));
}

/** The options of the pass on the current LTS, or undefined (and why, on stderr) if it can't be had. */
function ltsOptions(opts) {
  const { fetchNode, RELEASES, LTS } = require('./get-node');
  let node;
  try {
    node = path.join(fetchNode(LTS), 'bin', 'node');
  } catch (e) {
    progress(`No run on the current LTS (Node ${LTS}): ${e.message}`);
    return undefined;
  }
  try {
    require('./get-peers').install(node);
  } catch (e) {
    progress(`warning: ${e.message}; the run on Node ${LTS} will list those stacks as skipped`);
  }
  const machine = `${opts.machine}-node${LTS}`;
  const stacks = opts.stacks.filter((s) => s !== 'better-sqlite3');
  const { version } = RELEASES[LTS];
  const commandNote = `its second run, on the current LTS (Node ${version})`;
  return { version, node, opts: { ...opts, node, machine, stacks, ltsPass: false, commandNote } };
}

/** One run of every round on `opts.node`, its report written and printed; the exit code. */
function runOn(opts, argv) {
  const started = new Date();
  const loadStart = loadAverage();
  const machine = machineInfo(opts.dir);
  progress(
    `cipherlite benchmark${opts.quick ? ' (--quick)' : ''}: ${opts.warmup} warm-up + ${opts.rounds} rounds, workloads ${opts.workloads.join(', ')}; load ${loadStart.join(' ')}`,
  );

  const stacks = probeStacks(opts);
  const active = opts.stacks.filter((s) => stacks[s].status === 'ok');
  const results = runRounds(opts, opts.workloads, active, (w, stack, tag) => {
    const res = spawnChild(opts, stacks[stack].flags, {
      mode: 'run',
      stack,
      workload: w,
      quick: opts.quick,
      seed: opts.seed,
      dir: opts.dir,
    });
    progress(
      `[${tag.padEnd(11)}] ${w.padEnd(9)} ${stack.padEnd(22)} ${(res.wallMs / 1000).toFixed(1).padStart(5)} s  ${res.ok ? 'ok' : `FAILED: ${res.error || res.reason}`}`,
    );
    return res;
  });

  const analysis = analyze(opts, active, results);
  const finished = new Date();
  const childNode = active.length ? stacks[active[0]].info.node : undefined;
  const run = {
    date: localDate(started),
    machineName: opts.machine.toLowerCase().replace(/[^a-z0-9._-]+/g, '-'),
    command: ['node benchmark/run.js', ...argv].join(' '),
    options: opts,
    startedAt: started.toISOString(),
    durationMs: finished - started,
    runnerNode: process.version,
    nodeBin: opts.node,
    childNode,
    baseFlags: BASE_FLAGS,
    machine,
    load: { start: loadStart, end: loadAverage() },
    stackOrder: opts.stacks,
    stacks,
    activeStacks: active,
    analysis,
    results,
  };

  fs.mkdirSync(opts.out, { recursive: true });
  const base = reportBase(opts.out, run.date, run.machineName);
  const svgName = `${path.basename(base)}.svg`;
  fs.writeFileSync(`${base}.svg`, renderSvg(run));
  fs.writeFileSync(`${base}.md`, renderMarkdown(run, svgName) + storageSection(opts.out, run.options.quick));
  writeRaw(base, run);

  console.log(renderText(run));
  console.log(
    `\nReport: ${path.relative(process.cwd(), base)}.md (.svg; raw rounds: ${path.relative(process.cwd(), rawPath(base))})`,
  );
  return analysis.failed ? 1 : 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));

// For configs.js, which runs its children the same way.
module.exports = {
  spawnChild,
  probeStacks,
  localDate,
  reportBase,
  rawPath,
  writeRaw,
  targets,
  analyze,
  wantsLtsPass,
  BASE_FLAGS,
};
