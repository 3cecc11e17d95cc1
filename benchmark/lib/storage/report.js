'use strict';
// The Evolu storage benchmark's checks and report: the stacks' level-independent results
// must agree in every round (and, at full size, equal docs/evolu-storage.md §8 V2), then one table of medians and
// paired speed-ups, printed and written as Markdown.

const os = require('node:os');
const { median, pairedRatios, summarize } = require('../stats');
const { machineInfo, loadAverage } = require('../machine');
const { V2 } = require('./data');
const { STACKS } = require('./stacks');
const { markdownTable, textTable } = require('../table');

// Evolu's reported speed-ups for its native version (before ÷ after), and the relay's
// bound on after ÷ before.
const TARGETS = { append: 1.5, prepend: 1.9, insert: 2.4, at: 5.5, ranges: 11 };
const RELAY_TARGET = 0.63;

const fmtMs = (v) => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) : '—');
const fmtX = (v) => (Number.isFinite(v) ? `${v >= 10 ? v.toFixed(1) : v.toFixed(2)}×` : '—');

/** What failed: runs that errored, stacks that disagree, values that differ from §8 V2. */
function checkResults(results, options) {
  // Checks: every round's level-independent results equal across stacks and rounds, and
  // (full size) §8 V2's values.
  const failures = [];
  for (const workload of options.only) {
    const all = [...results[workload].before, ...results[workload].after];
    const errors = all.filter((r) => r.error);
    for (const r of errors) failures.push(`${workload}: a run failed: ${r.error}`);
    const checks = all.filter((r) => !r.error).map((r) => JSON.stringify(r.check));
    if (new Set(checks).size > 1) failures.push(`${workload}: the stacks' level-independent results differ`);
    const first = all.find((r) => !r.error);
    if (first && !options.quick && ['append', 'prepend', 'insert'].includes(workload)) {
      const c = first.check;
      if (
        c.size !== V2.size ||
        c.fingerprint !== V2.fingerprint ||
        JSON.stringify(c.ranges.map((r) => r[1])) !== JSON.stringify(V2.ranges)
      ) {
        failures.push(`${workload}: results differ from §8 V2`);
      }
    }
    if (first && workload === 'at' && first.check.last !== first.check.expectedLast)
      failures.push('at: the last lookup is not the last timestamp');
  }

  return failures;
}

/** One row per timed value: medians, the paired speed-up, and the target if any. */
function tableRows(results, options) {
  // Table rows: one per timed value.
  const rows = [];
  for (const workload of options.only) {
    const before = results[workload].before.filter((r) => !r.error);
    const after = results[workload].after.filter((r) => !r.error);
    const names = Object.keys((before[0] || after[0] || { times: {} }).times);
    for (const name of names) {
      const b = before.map((r) => r.times[name]);
      const a = after.map((r) => r.times[name]);
      const perRound = results[workload].before.map((r, i) => [
        r.times?.[name],
        results[workload].after[i]?.times?.[name],
      ]);
      const speedups = pairedRatios(
        perRound.map(([x]) => x),
        perRound.map(([, y]) => y),
      );
      let target = '';
      let met = '';
      const s = summarize(speedups);
      if (workload === 'relay' && name === 'total') {
        const ratio = summarize(
          pairedRatios(
            perRound.map(([, y]) => y),
            perRound.map(([x]) => x),
          ),
        );
        target = `after ≤ ${RELAY_TARGET}× before`;
        met = ratio ? `${ratio.median.toFixed(2)}× ${ratio.median <= RELAY_TARGET ? 'met' : 'NOT met'}` : '';
      } else if (workload in TARGETS) {
        target = `${TARGETS[workload]}×`;
        met = s ? (s.median >= TARGETS[workload] ? 'met' : 'NOT met') : '';
      }
      rows.push({
        workload,
        name,
        before: median(b),
        after: median(a),
        speedup: s,
        target,
        met,
      });
    }
  }

  return rows;
}

/** The table as printed on the terminal, and the report as Markdown. */
function render({ rows, failures, options, size, versions, started, loadBefore, argv }) {
  const header = [
    'Workload',
    'Measure',
    'Before ms',
    'After ms',
    'Speed-up (before ÷ after), median (min–max)',
    'Target',
    '',
  ];
  const lines = rows.map((r) => [
    r.workload,
    r.name,
    fmtMs(r.before),
    fmtMs(r.after),
    r.speedup ? `${fmtX(r.speedup.median)} (${fmtX(r.speedup.min)}–${fmtX(r.speedup.max)})` : '—',
    r.target,
    r.met,
  ]);
  const table = textTable(header, lines);
  const text = [
    `\nEvolu storage: before = ${STACKS.before}\n               after  = ${STACKS.after}\n`,
    table,
    `\n${options.rounds} measured round(s) after ${options.warmup} warm-up; sizes: ${JSON.stringify(size)}`,
    failures.length
      ? `\nCHECKS FAILED:\n  ${failures.join('\n  ')}`
      : '\nChecks: both stacks returned the same level-independent results in every round' +
        (options.quick ? '.' : ', equal to §8 V2.'),
  ].join('\n');

  const machine = machineInfo(os.tmpdir());
  const date = started.toISOString().slice(0, 10);
  const md = [
    `# Evolu storage benchmark, ${date}${options.quick ? ' (quick)' : ''}`,
    '',
    'Printed by `' +
      ['node benchmark/storage.js', ...argv].join(' ') +
      '`' +
      (options.quick ? '' : ' (`npm run bench:storage` builds the release addon first)') +
      '.',
    '',
    `- **Before**: ${STACKS.before} — ${versions.before || '?'}; Evolu's own \`createSqlite\` over @evolu/nodejs's better-sqlite3 driver (benchmark/lib/evolu.js), in memory.`,
    `- **After**: ${STACKS.after} — ${versions.after || '?'}, in memory.`,
    `- Node ${process.version}; ${machine.cpu.model}, ${machine.cpu.logicalCores} logical cores, ${machine.memoryGiB} GiB; ${machine.os}; ${machine.kernel}.`,
    `- Load average at start ${loadBefore.join(', ')}, at end ${loadAverage().join(', ')}.`,
    `- ${options.rounds} measured round(s) after ${options.warmup} warm-up; a fresh process per stack, workload and round; stacks alternate order. Medians; speed-up is paired per round.`,
    `- Sizes: ${Object.entries(size)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}.`,
    '',
    markdownTable(header, lines),
    '',
    failures.length
      ? `**Checks failed:** ${failures.join('; ')}`
      : `Checks: both stacks returned the same level-independent results (sizes, fingerprints, upper bounds, timestamps, changes, stored bytes) in every round${options.quick ? '' : ', and the insert workloads equal §8 V2'}.`,
    '',
    "Targets are the speed-ups Evolu reported for its native version (relay: after's total at most 0.63× before's).",
    '',
  ].join('\n');
  return { text, md, date };
}

module.exports = { checkResults, tableRows, render, fmtMs };
