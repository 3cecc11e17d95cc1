#!/usr/bin/env node
'use strict';
// Forward Email's PRAGMA configurations (lib/workloads/configs.js) on every stack and on
// every Node given: setup ms, insert/select/update/delete ops/s and file sizes, a table
// per Node version. See README.md beside this.
//
//   npm run bench:configs                       # the Node running this
//   node benchmark/configs.js --node "$(command -v node)" \
//     --node "$(node benchmark/get-node.js 22 --with-better-sqlite3)" \
//     --node "$(node benchmark/get-node.js 24 --with-better-sqlite3)"
//   node benchmark/configs.js --quick            # smoke run, report in results/tmp/
//
// Like run.js: a fresh child per (round, configuration, stack), stacks interleaved and
// rotated every round, medians of the measured rounds; results checked across stacks.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { STACK_NAMES } = require('./lib/stacks');
const { nameList, integerOption } = require('./lib/options');
const { CONFIGS } = require('./lib/workloads/configs');
const { machineInfo, loadAverage } = require('./lib/machine');
const { median } = require('./lib/stats');
const { runRounds } = require('./lib/rounds');
const { spawnChild, probeStacks, localDate, reportBase, rawPath, writeRaw } = require('./run');

const DEFAULT_STACKS = [
  'cipherlite',
  'cipherlite-encrypted',
  'better-sqlite3-13',
  'better-sqlite3',
  'mc-chacha20',
  'mc-sqlcipher',
];
// The stack whose results the others must equal: the first of these that runs.
const REFERENCE = ['better-sqlite3-13', 'better-sqlite3', 'cipherlite'];
const COLUMNS = [
  ['setup', 'Setup (ms)'],
  ['insert', 'Insert/s'],
  ['select', 'Select/s'],
  ['update', 'Update/s'],
  ['delete', 'Delete/s'],
  ['dbSize', 'DB (MiB)'],
  ['walSize', 'WAL (MiB)'],
  ['closedSize', 'File after close (MiB)'],
];

const USAGE = `usage: node benchmark/configs.js [options]

  --node PATH         a Node binary to run the stacks on; repeat for several (default: this one)
  --stacks a,b        stacks (default: ${DEFAULT_STACKS.join(', ')})
  --configs a,b       configurations (default: all ${Object.keys(CONFIGS).length}: ${Object.keys(CONFIGS).join(', ')})
  --rounds N          measured rounds (default 3; --quick: 1)
  --warmup N          discarded warm-up rounds (default 1; --quick: 0)
  --quick             smoke run: a fifth of the rows, report in results/tmp/
  --dir DIR           where the database files go (default: ${os.tmpdir()})
  --out DIR           report directory (default: benchmark/results, --quick: benchmark/results/tmp)
  --machine NAME      machine name in the report's file name (default: the host name)
  --help`;

function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      node: { type: 'string', multiple: true },
      stacks: { type: 'string' },
      configs: { type: 'string' },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      quick: { type: 'boolean', default: false },
      dir: { type: 'string' },
      out: { type: 'string' },
      machine: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  const nodes = (values.node && values.node.length ? values.node : [process.execPath]).map((p) => path.resolve(p));
  for (const n of nodes) if (!fs.existsSync(n)) throw new Error(`no Node binary at ${n}`);
  return {
    help: values.help,
    quick: values.quick,
    nodes,
    stacks: values.stacks ? nameList(values.stacks, STACK_NAMES, 'stack') : DEFAULT_STACKS,
    configs: values.configs ? nameList(values.configs, Object.keys(CONFIGS), 'configuration') : Object.keys(CONFIGS),
    rounds: integerOption('rounds', values.rounds, values.quick ? 1 : 3, 1),
    warmup: integerOption('warmup', values.warmup, values.quick ? 0 : 1, 0),
    dir: path.resolve(values.dir || os.tmpdir()),
    out: values.out ? path.resolve(values.out) : path.join(__dirname, 'results', ...(values.quick ? ['tmp'] : [])),
    machine: values.machine || os.hostname(),
  };
}

function progress(msg) {
  process.stderr.write(`${msg}\n`);
}

/** Runs every configuration on every stack that loads on `node`; returns that Node's part of the report. */
function runOnNode(opts, node) {
  const nodeOpts = { ...opts, node };
  const stacks = probeStacks(nodeOpts);
  const active = opts.stacks.filter((s) => stacks[s].status === 'ok');
  const results = runRounds(
    opts,
    opts.configs,
    active,
    (config, stack, tag) => {
      const res = spawnChild(nodeOpts, stacks[stack].flags, {
        mode: 'run',
        stack,
        workload: 'configs',
        config,
        quick: opts.quick,
        dir: opts.dir,
      });
      if (!res.ok) progress(`[${tag}] ${config} ${stack}: FAILED: ${res.error || res.reason}`);
      return res;
    },
    (tag) => progress(`[${tag.padEnd(11)}] ${opts.configs.length} configurations × ${active.length} stacks done`),
  );

  const reference = REFERENCE.find((s) => active.includes(s)) || active[0];
  const table = {};
  const failures = [];
  for (const config of opts.configs) {
    table[config] = {};
    const ref = (results[config][reference] || []).find((r) => r && r.ok);
    for (const stack of active) {
      const runs = results[config][stack].slice(opts.warmup);
      const bad = results[config][stack].find(
        (r) => !r.ok || (ref && JSON.stringify(r.checks) !== JSON.stringify(ref.checks)),
      );
      if (bad) {
        failures.push(
          `${config} on ${stack}: ${bad.ok ? `results differ from ${reference}'s` : bad.error || bad.reason}`,
        );
        table[config][stack] = { failed: true };
        continue;
      }
      const metrics = {};
      for (const [key] of COLUMNS)
        metrics[key] = median(runs.map((r) => r.metrics[key]?.value).filter(Number.isFinite));
      // After close the WAL has been checkpointed into the database file (child.js measures it).
      metrics.closedSize = median(runs.map((r) => r.fileSizes?.['configs.db'] / 2 ** 20).filter(Number.isFinite));
      const pragmas = runs[0].pragmas;
      const differs = ref ? Object.keys(pragmas).filter((k) => String(pragmas[k]) !== String(ref.pragmas[k])) : [];
      table[config][stack] = {
        metrics,
        pragmas,
        pragmaNotes: differs.map((k) => `${k}=${pragmas[k]} (${reference}: ${ref.pragmas[k]})`),
      };
    }
  }
  const childNode = active.length ? stacks[active[0]].info.node : node;
  return { node, childNode, stacks, active, reference, table, failures };
}

function fmt(v, unit) {
  if (!Number.isFinite(v)) return '–';
  if (unit === 'MiB') return v.toFixed(2);
  if (v >= 1000) return Math.round(v).toLocaleString('en-US');
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function mdTable(header, rows, align) {
  const out = [
    `| ${header.join(' | ')} |`,
    `| ${header.map((_, i) => (align[i] === 'r' ? '---:' : '---')).join(' | ')} |`,
  ];
  for (const r of rows) out.push(`| ${r.join(' | ')} |`);
  return out.join('\n');
}

function renderNode(run, part) {
  const lines = [];
  lines.push(`## Node ${part.childNode}`, '');
  if (part.svg) lines.push(`![Inserts and updates per second, Node ${part.childNode}](${part.svg})`, '');
  const stackRows = run.options.stacks.map((name) => {
    const s = part.stacks[name];
    const i = s.info || {};
    return [
      `\`${name}\``,
      s.status === 'ok' ? 'ran' : s.status,
      i.version ?? '',
      i.sqlite ?? '',
      [s.reason, i.note].filter(Boolean).join('; '),
    ];
  });
  lines.push(mdTable(['Stack', 'Status', 'Version', 'SQLite', 'Notes'], stackRows, []), '');
  const rows = [];
  const notes = [];
  for (const config of run.options.configs) {
    for (const stack of part.active) {
      const cell = part.table[config][stack];
      if (cell.failed) {
        rows.push([config, `\`${stack}\``, ...COLUMNS.map(() => '✗')]);
        continue;
      }
      rows.push([
        config,
        `\`${stack}\``,
        ...COLUMNS.map(([k]) => fmt(cell.metrics[k], k.endsWith('Size') ? 'MiB' : '')),
      ]);
      if (cell.pragmaNotes.length) notes.push(`- ${config}, \`${stack}\` reads back ${cell.pragmaNotes.join(', ')}`);
    }
  }
  lines.push(
    mdTable(['Configuration', 'Stack', ...COLUMNS.map((c) => c[1])], rows, ['l', 'l', ...COLUMNS.map(() => 'r')]),
    '',
  );
  // Insert and update rates side by side: the columns a configuration changes most.
  for (const [key, title] of [
    ['insert', 'Autocommit inserts per second'],
    ['update', 'Autocommit updates per second'],
  ]) {
    const header = ['Configuration', ...part.active.map((s) => `\`${s}\``)];
    const body = run.options.configs.map((config) => [
      config,
      ...part.active.map((s) => {
        const cell = part.table[config][s];
        return cell.failed ? '✗' : fmt(cell.metrics[key], '');
      }),
    ]);
    lines.push(`${title}:`, '', mdTable(header, body, ['l', ...part.active.map(() => 'r')]), '');
  }
  if (notes.length) lines.push(`PRAGMAs read back that differ from \`${part.reference}\`'s:`, '', ...notes, '');
  if (part.failures.length)
    lines.push('Failures (not shown as results):', '', ...part.failures.map((f) => `- ${f}`), '');
  return lines.join('\n');
}

const COLORS = ['#2b6cb0', '#c05621', '#2f855a', '#6b46c1', '#b83280', '#718096'];

function xml(v) {
  return String(v).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * One chart per Node version: for every configuration, a bar per stack for autocommit
 * inserts/s and one for updates/s (two panels side by side, linear scale, higher is better).
 */
function renderSvg(run, part) {
  const stacks = part.active;
  const configs = run.options.configs;
  const panels = [
    ['insert', 'Autocommit inserts/s'],
    ['update', 'Autocommit updates/s'],
  ];
  const labelW = 170;
  const panelW = 360;
  const barH = 7;
  const groupH = stacks.length * barH + 8;
  const top = 70;
  const W = labelW + panels.length * (panelW + 30) + 20;
  const H = top + configs.length * groupH + 30;
  const out = [];
  out.push('<?xml version="1.0" encoding="UTF-8"?>');
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(
    `<text x="10" y="20" font-size="14" font-weight="bold">${xml(`Forward Email's PRAGMA configurations, Node ${part.childNode} (median of ${run.options.rounds} rounds; higher is better)`)}</text>`,
  );
  let lx = 10;
  stacks.forEach((st, i) => {
    out.push(
      `<rect x="${lx}" y="30" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/><text x="${lx + 14}" y="39" font-size="11">${xml(st)}</text>`,
    );
    lx += 24 + st.length * 6.5;
  });
  panels.forEach(([key, title], p) => {
    const x0 = labelW + p * (panelW + 30);
    let max = 0;
    for (const c of configs) for (const st of stacks) max = Math.max(max, part.table[c][st].metrics?.[key] || 0);
    out.push(
      `<text x="${x0}" y="${top - 8}" font-size="12" font-weight="bold">${xml(title)} (max ${fmt(max, '')})</text>`,
    );
    configs.forEach((c, ci) => {
      const y = top + ci * groupH;
      if (p === 0)
        out.push(
          `<text x="${labelW - 6}" y="${y + groupH / 2}" text-anchor="end" dominant-baseline="middle" font-size="11">${xml(c)}</text>`,
        );
      stacks.forEach((st, si) => {
        const v = part.table[c][st].metrics?.[key];
        if (!Number.isFinite(v) || max <= 0) return;
        const w = Math.max((v / max) * panelW, 1);
        out.push(
          `<rect x="${x0}" y="${y + 2 + si * barH}" width="${w.toFixed(1)}" height="${barH - 1}" fill="${COLORS[si % COLORS.length]}"><title>${xml(`${c}, ${st}: ${fmt(v, '')}/s`)}</title></rect>`,
        );
      });
    });
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function renderMarkdown(run) {
  const o = run.options;
  const m = run.machine;
  const lines = [
    `# Forward Email's PRAGMA configurations — ${run.date}, ${run.machineName}${o.quick ? ' (quick)' : ''}`,
    '',
    `Command: \`${run.command}\``,
    '',
    `Machine: ${m.cpu.model} [${m.cpu.flagsPresent.join(' ')}], ${m.cpu.logicalCores} logical cores, ${m.memoryGiB} GiB, ${m.os}, kernel ${m.kernel}; database files in ${m.dbDir}${m.dbFilesystem ? ` (${m.dbFilesystem.type})` : ''}. Load average ${run.load.start.join(' ')} at the start, ${run.load.end.join(' ')} at the end; ${Math.round(run.durationMs / 1000)} s.`,
    '',
    '## Method',
    '',
    "- The workload has the shape of Forward Email's public SQLite benchmark (forwardemail/sqlite-benchmarks): " +
      'setup = open (and key), the PRAGMAs, the mail schema (mailboxes, messages, 3 indexes) and 1,000 messages of ~3.5 KB in one transaction, timed whole; ' +
      '100 autocommit INSERTs; 1,000 `.all()` of the 50 newest messages; 100 autocommit UPDATEs by id; one DELETE of the newest half (reported as 1 ÷ its time, as Forward Email does); the database and WAL sizes just before close (as Forward Email measures them: in WAL mode the rows are still in the WAL), and the database file after close.',
    `- Production PRAGMAs, in this order: ${require('./lib/workloads/configs')
      .PRODUCTION.map(([k, v]) => `${k}=${v}`)
      .join(
        ', ',
      )}; every other configuration changes the ones its name says ("all optimisations": cache 64 MB + mmap 256 MB + temp_store MEMORY; "baseline": no PRAGMAs at all, each stack's defaults).`,
    "- Stacks: `cipherlite` plain; `cipherlite-encrypted` (SQLCipher 4 pages, a random raw 32-byte key); better-sqlite3 13 (Node ≥ 22) and 12; better-sqlite3-multiple-ciphers as Forward Email runs it (`mc-chacha20`: `PRAGMA cipher='chacha20'` and a passphrase, so setup includes its key derivation) and in SQLCipher's scheme with a raw key (`mc-sqlcipher`: `cipher='sqlcipher'`, `legacy=4`, `key=\"x'…'\"`, no key derivation).",
    '- `temp_store=1` (FILE) in the production set: cipherlite is compiled with `SQLITE_TEMP_STORE=3`, so its temporary files (sorts, temporary tables and indexes, statement journals) always stay in memory, whatever the PRAGMA says (it reads back 1) — an encrypted database never writes plaintext temporary files; better-sqlite3 and multiple-ciphers are compiled with `SQLITE_TEMP_STORE=1`, where `temp_store=1` puts them in files on disk. The `temp_store MEMORY` row shows what that choice costs them.',
    `- A fresh child process per (round, configuration, stack); ${o.warmup} discarded warm-up round${o.warmup === 1 ? '' : 's'}, then ${o.rounds} measured; stacks interleaved and rotated every round; the **median** of the measured rounds is shown. Row counts and checksums after every step must equal \`${run.parts[0]?.reference ?? 'the reference'}\`'s, or the cell shows ✗. Rates are per second (higher is better); sizes in MiB.`,
    o.quick
      ? '- **`--quick` smoke run**: a fifth of the rows, 1 round; the numbers only show that everything runs.'
      : null,
    '',
  ].filter((l) => l !== null);
  for (const part of run.parts) lines.push(renderNode(run, part));
  return `${lines.join('\n')}\n`;
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
  const started = new Date();
  const loadStart = loadAverage();
  const machine = machineInfo(opts.dir);
  const parts = [];
  for (const node of opts.nodes) {
    progress(`configs: ${node}`);
    parts.push(runOnNode(opts, node));
  }
  const run = {
    date: localDate(started),
    machineName: opts.machine.toLowerCase().replace(/[^a-z0-9._-]+/g, '-'),
    command: ['node benchmark/configs.js', ...argv].join(' '),
    options: opts,
    startedAt: started.toISOString(),
    durationMs: Date.now() - started,
    machine,
    load: { start: loadStart, end: loadAverage() },
    parts,
  };
  fs.mkdirSync(opts.out, { recursive: true });
  const base = reportBase(opts.out, run.date, `${run.machineName}-configs`);
  for (const part of parts) {
    part.svg = `${path.basename(base)}-node${String(part.childNode).replace(/^v/, '').split('.')[0]}.svg`;
    fs.writeFileSync(path.join(opts.out, part.svg), renderSvg(run, part));
  }
  const md = renderMarkdown(run);
  fs.writeFileSync(`${base}.md`, md);
  writeRaw(base, run);
  console.log(md);
  console.log(
    `Report: ${path.relative(process.cwd(), base)}.md (raw rounds: ${path.relative(process.cwd(), rawPath(base))})`,
  );
  return parts.some((p) => p.failures.length) ? 1 : 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
