'use strict';
// The shell's output modes (sqlite3's: list, column, box, table, markdown, csv, json, line),
// how a value is shown in each, and CSV in both directions (RFC 4180).

const MODES = ['list', 'column', 'box', 'table', 'markdown', 'csv', 'json', 'line'];

function blobHex(value) {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex').toUpperCase();
}

/** A REAL as SQLite prints it: `1.0`, not JS's `1`. Integers arrive as BigInt (safeIntegers). */
function realText(value) {
  if (Number.isNaN(value)) return '';
  if (value === Infinity) return 'Inf';
  if (value === -Infinity) return '-Inf';
  const text = String(value);
  return Number.isInteger(value) && !/e/.test(text) ? `${text}.0` : text;
}

/** A value as text for the text modes; null is the .nullvalue string. */
function text(value, nullValue) {
  if (value === null || value === undefined) return nullValue;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return realText(value);
  if (value instanceof Uint8Array) return `X'${blobHex(value)}'`;
  return String(value);
}

function csvField(value) {
  return /[",\r\n]/.test(value) || /^\s|\s$/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

function jsonValue(value) {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return Number.isFinite(value) ? realText(value) : 'null';
  if (value instanceof Uint8Array) return JSON.stringify(blobHex(value));
  return JSON.stringify(String(value));
}

/** Display width of a string: East Asian wide characters count two. Good enough for tables. */
function width(s) {
  let w = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    w +=
      cp >= 0x1100 &&
      (cp <= 0x115f ||
        (cp >= 0x2e80 && cp <= 0xa4cf) ||
        (cp >= 0xac00 && cp <= 0xd7a3) ||
        (cp >= 0xf900 && cp <= 0xfaff) ||
        (cp >= 0xfe30 && cp <= 0xfe4f) ||
        (cp >= 0xff00 && cp <= 0xff60) ||
        (cp >= 0xffe0 && cp <= 0xffe6) ||
        (cp >= 0x1f300 && cp <= 0x1faff) ||
        (cp >= 0x20000 && cp <= 0x3fffd))
        ? 2
        : 1;
  }
  return w;
}

const pad = (s, w, right) => (right ? ' '.repeat(w - width(s)) + s : s + ' '.repeat(w - width(s)));
// Cells of the padded modes stay on one line.
const oneLine = (s) => s.replace(/\r?\n/g, '\\n').replace(/\t/g, ' ');

/**
 * A result printer for one statement: row(values) for each row, then end(). write(text) gets
 * whole lines. settings: { mode, headers, nullValue }.
 */
function printer(columns, settings, write) {
  const { mode, headers, nullValue } = settings;
  const names = columns;
  let count = 0;
  const buffered = [];
  switch (mode) {
    case 'list':
      if (headers) write(names.join('|') + '\n');
      return {
        row: (r) => write(r.map((v) => text(v, nullValue)).join('|') + '\n'),
        end() {},
      };
    case 'csv':
      if (headers) write(names.map(csvField).join(',') + '\r\n');
      return {
        row: (r) => write(r.map((v) => csvField(text(v, nullValue))).join(',') + '\r\n'),
        end() {},
      };
    case 'json':
      return {
        row(r) {
          const fields = names.map((n, i) => `${JSON.stringify(n)}:${jsonValue(r[i])}`);
          write(`${count++ === 0 ? '[' : ',\n'}{${fields.join(',')}}`);
        },
        end() {
          if (count) write(']\n');
        },
      };
    case 'line': {
      const w = Math.max(0, ...names.map(width));
      return {
        row(r) {
          if (count++) write('\n');
          write(names.map((n, i) => `${pad(n, w, true)} = ${text(r[i], nullValue)}\n`).join(''));
        },
        end() {},
      };
    }
    default:
      return {
        row: (r) => buffered.push(r.map((v) => oneLine(text(v, nullValue)))),
        end: () => write(grid(mode, names.map(oneLine), buffered, headers)),
      };
  }
}

function grid(mode, names, rows, headers) {
  const widths = names.map((n, i) => Math.max(width(n), ...rows.map((r) => width(r[i]))));
  const right = names.map((_, i) => rows.length > 0 && rows.every((r) => r[i] === '' || /^-?[0-9.]+$/.test(r[i])));
  const cells = (r) => r.map((v, i) => pad(v, widths[i], right[i]));
  const out = [];
  if (mode === 'column') {
    if (headers) {
      out.push(cells(names).join('  ').trimEnd());
      out.push(widths.map((w) => '-'.repeat(w)).join('  '));
    }
    for (const r of rows) out.push(cells(r).join('  ').trimEnd());
  } else if (mode === 'markdown') {
    out.push(`| ${cells(names).join(' | ')} |`);
    out.push(`|${widths.map((w, i) => (right[i] ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|')}|`);
    for (const r of rows) out.push(`| ${cells(r).join(' | ')} |`);
  } else {
    const [h, v, tl, tm, tr, ml, mm, mr, bl, bm, br] =
      mode === 'box' ? '─│┌┬┐├┼┤└┴┘' : ['-', '|', '+', '+', '+', '+', '+', '+', '+', '+', '+'];
    const rule = (l, m, r) => l + widths.map((w) => h.repeat(w + 2)).join(m) + r;
    out.push(rule(tl, tm, tr));
    const center = (s, w) => {
      const left = Math.floor((w - width(s)) / 2);
      return ' '.repeat(left) + s + ' '.repeat(w - width(s) - left);
    };
    out.push(`${v} ${names.map((name, i) => center(name, widths[i])).join(` ${v} `)} ${v}`);
    out.push(rule(ml, mm, mr));
    for (const r of rows) out.push(`${v} ${cells(r).join(` ${v} `)} ${v}`);
    out.push(rule(bl, bm, br));
  }
  return out.map((l) => l + '\n').join('');
}

/**
 * Parses CSV text (RFC 4180: quoted fields may hold commas, doubled quotes and line breaks;
 * CRLF or LF line ends). Returns rows of strings, each with the line it starts on.
 * Throws on a quote left open.
 */
function parseCsv(input) {
  const rows = [];
  let row = [];
  let field = '';
  let line = 1;
  let rowLine = 1;
  let i = 0;
  let quoted = false; // inside a quoted field
  let any = false; // the current row has begun
  const n = input.length;
  const endField = () => {
    row.push(field);
    field = '';
  };
  const endRow = () => {
    endField();
    rows.push({ fields: row, line: rowLine });
    row = [];
    any = false;
  };
  if (input.charCodeAt(0) === 0xfeff) i = 1; // a byte-order mark
  while (i < n) {
    const c = input[i];
    if (quoted) {
      if (c === '"') {
        if (input[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      if (c === '\n') line++;
      field += c;
      i++;
      continue;
    }
    if (!any) {
      rowLine = line;
      any = true;
    }
    if (c === '"' && field === '') {
      quoted = true;
      i++;
    } else if (c === ',') {
      endField();
      i++;
    } else if (c === '\r' && input[i + 1] === '\n') {
      endRow();
      line++;
      i += 2;
    } else if (c === '\n') {
      endRow();
      line++;
      i++;
    } else {
      field += c;
      i++;
    }
  }
  if (quoted) throw new Error(`line ${rowLine}: a quoted field is not closed`);
  if (any) endRow();
  return rows;
}

module.exports = { MODES, printer, parseCsv, text, csvField, realText, blobHex };
