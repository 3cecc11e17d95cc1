'use strict';
// Turns a finished run into the Markdown report, the text printed to stdout, and an SVG
// bar chart of the ratios (plain string building: no browser, no dependency).

const { markdownTable } = require('./table');

const PRAGMA_ORDER = [
  'page_size',
  'journal_mode',
  'synchronous',
  'cache_size',
  'temp_store',
  'mmap_size',
  'wal_autocheckpoint',
  'foreign_keys',
];
const COLORS = ['#2b6cb0', '#c05621', '#2f855a', '#6b46c1', '#b83280'];

function fmt(v) {
  if (!Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

function fmtRatio(r) {
  if (!r) return '–';
  return r.n > 1 ? `${r.median.toFixed(2)} (${r.min.toFixed(2)}–${r.max.toFixed(2)})` : r.median.toFixed(2);
}

function stacksTable(run) {
  const rows = run.stackOrder.map((name) => {
    const s = run.stacks[name];
    const i = s.info || {};
    const status = s.status === 'ok' ? (run.analysis.stackFailed[name] ? '**FAILED**' : 'ran') : s.status;
    const notes = [s.reason, i.note, s.flags && s.flags.length ? `node ${s.flags.join(' ')}` : null]
      .filter(Boolean)
      .join('; ');
    return [`\`${name}\``, status, i.version ?? '', i.node ?? '', i.sqlite ?? '', notes];
  });
  return markdownTable(['Stack', 'Status', 'Module version', 'Node', 'SQLite', 'Notes'], rows);
}

function pragmaTable(run) {
  const rows = [];
  for (const [wname, w] of Object.entries(run.analysis.workloads)) {
    for (const stack of run.activeStacks) {
      const p = w.pragmas[stack];
      if (!p) continue;
      rows.push([wname, `\`${stack}\``, ...PRAGMA_ORDER.map((k) => (k in p ? String(p[k]) : ''))]);
    }
  }
  return rows.length ? markdownTable(['Workload', 'Stack', ...PRAGMA_ORDER], rows) : '(no workload ran)';
}

function resultTable(run, w) {
  const base = run.analysis.baseline;
  const others = run.activeStacks.filter((s) => s !== base);
  const header = ['Operation', 'Unit', `\`${base}\``];
  for (const s of others) header.push(`\`${s}\``, `× ${base}`);
  const align = header.map((_, i) => (i >= 2 ? 'r' : 'l'));
  const rows = w.metrics.map((m) => {
    const cell = (s) => {
      if (w.failures[s]) return '✗ failed';
      const v = m.stacks[s];
      return v ? fmt(v.median) : '–';
    };
    const row = [m.label, m.unit, cell(base)];
    for (const s of others) row.push(cell(s), w.failures[s] || w.failures[base] ? '✗' : fmtRatio(m.stacks[s]?.ratio));
    return row;
  });
  return markdownTable(header, rows, align);
}

function failuresList(w) {
  const lines = [];
  for (const [stack, list] of Object.entries(w.failures)) {
    for (const f of list) {
      lines.push(
        `- \`${stack}\`, round${f.rounds.length > 1 ? 's' : ''} ${f.rounds.join(', ')}: ${f.message.replace(/\s*\n\s*/g, ' ')}`,
      );
    }
  }
  return lines.join('\n');
}

function resultsSection(run) {
  const parts = [];
  for (const w of Object.values(run.analysis.workloads)) {
    parts.push(`### ${w.title}\n`);
    parts.push(resultTable(run, w));
    const sizes = Object.entries(w.fileSizes || {})
      .filter(([, v]) => v)
      .map(
        ([stack, v]) =>
          `\`${stack}\` ${Object.values(v)
            .map((b) => `${(b / 1024).toFixed(0)} KiB`)
            .join(' + ')}`,
      );
    if (sizes.length) parts.push(`\nDatabase file size at the end: ${sizes.join(', ')}.`);
    const nm = Object.entries(w.notMeasured || {}).flatMap(([stack, keys]) =>
      Object.entries(keys).map(([key, why]) => `- \`${stack}\`, ${key}: ${why}`),
    );
    if (nm.length) parts.push(`\nNot measured (the stack's API has no way to do it):\n\n${nm.join('\n')}`);
    const en = Object.entries(w.engineNotes || {}).flatMap(([stack, keys]) =>
      Object.entries(keys).map(([key, why]) => `- \`${stack}\`, ${key} ${why}`),
    );
    if (en.length) parts.push(`\nSettings the stack's engine doesn't take:\n\n${en.join('\n')}`);
    const f = failuresList(w);
    if (f) parts.push(`\nFailures (these stacks' timings don't count):\n\n${f}`);
    parts.push('');
  }
  return parts.join('\n');
}

/** Issue 13's and issue 46's targets: paired ratios of time, with the bound each must meet. */
function targetsSection(run) {
  const list = run.analysis.targets || [];
  if (!list.length) return '(no pair of stacks for the targets ran)';
  const rows = list.map((t) => [
    t.group,
    `${t.workload}: ${t.label}`,
    `\`${t.num}\` ÷ \`${t.den}\``,
    fmtRatio(t.ratio),
    t.max == null ? '–' : `≤ ${t.max.toFixed(2)}${t.group === 'vs multiple-ciphers' ? ' (rate ≥ 1.5×)' : ''}`,
    t.met == null ? '' : t.met ? 'met' : '**missed**',
  ]);
  return markdownTable(['Group', 'Operation', 'Ratio of times', 'Paired ratio, median (min–max)', 'Target', ''], rows, [
    'l',
    'l',
    'l',
    'r',
    'r',
    'l',
  ]);
}

function machineTable(run) {
  const m = run.machine;
  const fsys = m.dbFilesystem
    ? `${m.dbFilesystem.type} (${m.dbFilesystem.device} on ${m.dbFilesystem.mount})`
    : 'unknown';
  return markdownTable(
    ['', ''],
    [
      ['CPU', m.cpu.model],
      ['CPU flags present', m.cpu.flagsPresent.join(' ') || '–'],
      ['CPU flags absent', m.cpu.flagsAbsent.join(' ') || '–'],
      ['Cores (logical)', `${m.cpu.logicalCores}`],
      ['Memory', `${m.memoryGiB} GiB`],
      ['OS', m.os],
      ['Kernel', m.kernel],
      ['Database files in', `${m.dbDir} — ${fsys}`],
      ['Load average at start (1, 5, 15 min)', run.load.start.join(', ')],
      ['Load average at end (1, 5, 15 min)', run.load.end.join(', ')],
      ['Runner', `Node ${run.runnerNode}; stacks run on ${run.nodeBin} (${run.childNode || 'unknown'})`],
      ['Started, duration', `${run.startedAt}, ${Math.round(run.durationMs / 1000)} s`],
    ],
  );
}

function method(run) {
  const o = run.options;
  return [
    `- Every stack runs every workload in a **fresh child process** (\`node ${run.baseFlags.join(' ')}\`), one per stack per workload per round. ` +
      (o.warmup
        ? `Round 1${o.warmup > 1 ? `–${o.warmup}` : ''} is a **warm-up that is discarded**; then `
        : 'No warm-up round; ') +
      `**${o.rounds} measured rounds**. ` +
      'Within a round the stacks run one after another, **interleaved round by round**, and the order rotates every round so that no stack always runs first.',
    "- Reported: the **median** over the measured rounds of each time, and the **ratio** of each stack's time to " +
      `\`${run.analysis.baseline}\`'s time **in the same round**: median (min–max) of those paired ratios. Below 1 is faster than \`${run.analysis.baseline}\`.`,
    '- Inside a child, each driver operation runs briefly untimed first (JIT warm-up), garbage is collected before each timed block, and the block is timed with `process.hrtime.bigint()`.',
    "- All databases are **files** in a fresh temporary directory per child; `cipherlite-encrypted` opens each with `{ key: crypto.randomBytes(32) }`, `mc-sqlcipher` (better-sqlite3-multiple-ciphers) with `PRAGMA cipher='sqlcipher'; PRAGMA legacy=4; PRAGMA key=\"x'<64 hex digits>'\"` (SQLCipher 4's scheme, a raw random key, no key derivation); their files are checked afterwards to hold no SQLite header and none of the plaintext written.",
    '- Every stack gets the **same PRAGMAs**, read back below. Data comes from a **seeded PRNG** (seed ' +
      o.seed +
      '), so every stack stores and returns the same rows; each run checks row counts and a **checksum of the returned rows** against the baseline, and a stack whose results differ is marked failed.',
    '- Workloads: *driver* (a 5-column `users` table: prepared single-row inserts in one transaction whose COMMIT is untimed, point selects by primary key, `.all()`, `.iterate()`, `.raw().all()`, 100-row `.all()`); ' +
      "*exec* (SQLite's classic speed comparison in wa-sqlite's 16 tests, as wa-sqlite runs them: each test's SQL text through **one `db.exec()`**, journal_mode=DELETE, synchronous=OFF); " +
      '*speedtest* (the same 16 tests through prepared statements with bound parameters); ' +
      '*write* (autocommit INSERT/UPDATE/DELETE, WAL, synchronous=NORMAL).',
    o.quick ? '- **`--quick` smoke run**: reduced sizes and rounds; the numbers only show that everything runs.' : null,
  ]
    .filter(Boolean)
    .join('\n');
}

function renderMarkdown(run, svgName) {
  const status = run.analysis.failed
    ? `**FAILED** — ${run.analysis.failureSummary.join('; ')}`
    : '**passed** — every stack that ran returned the same results';
  return [
    `# cipherlite benchmark — ${run.date}, ${run.machineName}, Node ${run.childNode || 'unknown'}${run.options.quick ? ' (quick)' : ''}`,
    '',
    `Status: ${status}`,
    '',
    `Command: \`${run.command}\`${run.options.commandNote ? `, ${run.options.commandNote}` : ''}`,
    '',
    '## Machine',
    '',
    machineTable(run),
    '',
    '## Stacks',
    '',
    stacksTable(run),
    '',
    '## Method',
    '',
    method(run),
    '',
    '## PRAGMAs, as read back',
    '',
    pragmaTable(run),
    '',
    `## Targets (issues 13 and 46), baseline \`${run.analysis.baseline}\``,
    '',
    targetsSection(run),
    '',
    '## Results',
    '',
    `Times are medians of ${run.options.rounds} rounds; ratios are per-round time ÷ \`${run.analysis.baseline}\`'s time, median (min–max).`,
    '',
    svgName ? `![Ratios to ${run.analysis.baseline}](${svgName})\n` : '',
    resultsSection(run),
  ].join('\n');
}

function renderText(run) {
  return [
    `cipherlite benchmark — ${run.date}, ${run.machineName}, Node ${run.childNode || 'unknown'}${run.options.quick ? ' (quick)' : ''}`,
    `CPU: ${run.machine.cpu.model} [${run.machine.cpu.flagsPresent.join(' ')}], ${run.machine.cpu.logicalCores} cores; load ${run.load.start.join(' ')} → ${run.load.end.join(' ')}`,
    '',
    stacksTable(run),
    '',
    'PRAGMAs read back:',
    pragmaTable(run),
    '',
    resultsSection(run),
    `Targets (issues 13 and 46), baseline ${run.analysis.baseline}:`,
    targetsSection(run),
    '',
    `Status: ${run.analysis.failed ? `FAILED — ${run.analysis.failureSummary.join('; ')}` : 'passed'}`,
  ].join('\n');
}

function xml(s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

// Tick values for a ratio axis; the ones that fit the domain and aren't crowded are drawn.
const RATIO_TICKS = [
  0.05, 0.1, 0.2, 0.25, 0.33, 0.5, 0.67, 0.75, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 4, 5, 8, 10, 20, 50, 100,
];

/**
 * Horizontal bars on a logarithmic axis (so 0.5× and 2× lie equally far from 1): for each
 * workload and operation, one bar per compared stack from 1 to its median paired ratio, a
 * whisker from the lowest to the highest round, and the baseline (1) as a dashed line.
 */
function renderSvg(run) {
  const base = run.analysis.baseline;
  const stacks = run.activeStacks.filter((s) => s !== base);
  const W = 980;
  const labelW = 380;
  const x0 = labelW + 45; // room for the value of a bar that ends at the far left
  const x1 = W - 50;
  const barH = 11;
  const top = 78;

  const rows = [];
  let lo = 0.8;
  let hi = 1.25;
  for (const w of Object.values(run.analysis.workloads)) {
    rows.push({ header: w.title });
    for (const m of w.metrics) {
      const bars = stacks.map((s, i) => {
        const failed = Boolean(w.failures[s] || w.failures[base]);
        const r = failed ? null : m.stacks[s]?.ratio;
        if (r) {
          lo = Math.min(lo, r.min);
          hi = Math.max(hi, r.max);
        }
        return { stack: s, color: COLORS[i % COLORS.length], ratio: r, failed };
      });
      rows.push({ label: m.label, bars });
    }
  }
  const l0 = Math.log(lo / 1.1);
  const l1 = Math.log(hi * 1.1);
  const sx = (v) => x0 + ((Math.log(v) - l0) / (l1 - l0)) * (x1 - x0);
  const ticks = [];
  for (const t of RATIO_TICKS) {
    if (t < lo / 1.1 || t > hi * 1.1) continue;
    if (t !== 1 && ticks.some((u) => Math.abs(sx(u) - sx(t)) < 30)) continue;
    if (t === 1) for (let i = ticks.length - 1; i >= 0 && sx(1) - sx(ticks[i]) < 30; i--) ticks.splice(i, 1);
    ticks.push(t);
  }

  const out = [];
  let y = top;
  const body = [];
  for (const row of rows) {
    if (row.header) {
      y += 8;
      body.push(`<text x="10" y="${y + 12}" font-weight="bold" font-size="13">${xml(row.header)}</text>`);
      y += 20;
      continue;
    }
    const h = Math.max(stacks.length, 1) * (barH + 2) + 6;
    body.push(
      `<text x="${labelW}" y="${y + h / 2 + 1}" text-anchor="end" dominant-baseline="middle" font-size="11">${xml(row.label)}</text>`,
    );
    row.bars.forEach((b, i) => {
      const by = y + 3 + i * (barH + 2);
      if (!b.ratio) {
        body.push(
          `<text x="${x0 + 4}" y="${by + barH - 2}" font-size="10" fill="#a00">${b.failed ? `${xml(b.stack)}: failed` : '–'}</text>`,
        );
        return;
      }
      const r = b.ratio;
      const a = Math.min(sx(1), sx(r.median));
      const width = Math.max(Math.abs(sx(r.median) - sx(1)), 1);
      body.push(
        `<rect x="${a.toFixed(1)}" y="${by}" width="${width.toFixed(1)}" height="${barH}" fill="${b.color}" fill-opacity="0.85"><title>${xml(`${b.stack}: ${r.median.toFixed(3)} (${r.min.toFixed(3)}–${r.max.toFixed(3)})`)}</title></rect>`,
      );
      const cy = by + barH / 2;
      body.push(
        `<path d="M${sx(r.min).toFixed(1)} ${cy}H${sx(r.max).toFixed(1)}M${sx(r.min).toFixed(1)} ${cy - 3}v6M${sx(r.max).toFixed(1)} ${cy - 3}v6" stroke="#222" stroke-width="1"/>`,
      );
      // The value goes beyond the bar's far end: right of a slower bar, left of a faster one.
      const label =
        r.median >= 1
          ? `<text x="${(Math.max(sx(r.max), sx(r.median)) + 4).toFixed(1)}" y="${by + barH - 2}" font-size="10">`
          : `<text x="${(Math.min(sx(r.min), sx(r.median)) - 4).toFixed(1)}" y="${by + barH - 2}" font-size="10" text-anchor="end">`;
      body.push(`${label}${r.median.toFixed(2)}×</text>`);
    });
    y += h;
  }
  const H = y + 30;

  out.push('<?xml version="1.0" encoding="UTF-8"?>');
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(
    `<text x="10" y="22" font-size="15" font-weight="bold">${xml(`Time relative to ${base} (median of ${run.options.rounds} paired rounds, log scale, whiskers min–max; below 1 is faster)`)}</text>`,
  );
  out.push(
    `<text x="10" y="40" font-size="11" fill="#444">${xml(`${run.date} · ${run.machine.cpu.model} · ${run.machine.cpu.logicalCores} cores · Node ${run.childNode || ''}${run.options.quick ? ' · --quick smoke run, not meaningful' : ''}`)}</text>`,
  );
  let lx = 10;
  stacks.forEach((s, i) => {
    out.push(
      `<rect x="${lx}" y="50" width="12" height="12" fill="${COLORS[i % COLORS.length]}"/><text x="${lx + 16}" y="60" font-size="11">${xml(s)}</text>`,
    );
    lx += 30 + s.length * 7;
  });
  if (stacks.length === 0)
    out.push(
      `<text x="10" y="60" font-size="11" fill="#a00">${xml(`no stack besides ${base} ran: nothing to compare`)}</text>`,
    );
  for (const v of ticks) {
    const x = sx(v).toFixed(1);
    out.push(`<line x1="${x}" y1="${top - 4}" x2="${x}" y2="${H - 24}" stroke="#ddd"/>`);
    out.push(`<text x="${x}" y="${H - 10}" text-anchor="middle" font-size="10" fill="#444">${v}×</text>`);
  }
  out.push(...body);
  out.push(
    `<line x1="${sx(1).toFixed(1)}" y1="${top - 4}" x2="${sx(1).toFixed(1)}" y2="${H - 24}" stroke="#000" stroke-width="1.5" stroke-dasharray="4 3"/>`,
  );
  out.push('</svg>');
  return out.join('\n') + '\n';
}

module.exports = { renderMarkdown, renderText, renderSvg };
