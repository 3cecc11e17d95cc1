'use strict';
// The one table printer of the benchmark programs: Markdown for reports (and for tables
// printed as Markdown), padded columns for the terminal.

/**
 * A Markdown table. `align[i] === 'r'` right-aligns column i; `|` inside a cell is escaped.
 * @param {string[]} header
 * @param {unknown[][]} rows
 * @param {string[]} [align]
 */
function markdownTable(header, rows, align) {
  const out = [
    `| ${header.join(' | ')} |`,
    `| ${header.map((_, i) => (align && align[i] === 'r' ? '---:' : '---')).join(' | ')} |`,
  ];
  for (const row of rows) out.push(`| ${row.map((c) => String(c ?? '').replace(/\|/g, '\\|')).join(' | ')} |`);
  return out.join('\n');
}

/**
 * A table for the terminal: columns padded to their widest cell, two spaces apart, and a
 * line of dashes under the header.
 * @param {string[]} header
 * @param {unknown[][]} rows
 */
function textTable(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? '').length)));
  return [header, widths.map((w) => '-'.repeat(w)), ...rows]
    .map((r) => r.map((c, i) => String(c ?? '').padEnd(widths[i])).join('  '))
    .join('\n');
}

module.exports = { markdownTable, textTable };
