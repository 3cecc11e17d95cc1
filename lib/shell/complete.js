'use strict';
// When is a piece of SQL a complete statement? The answer of SQLite's sqlite3_complete()
// (src/complete.c), ported: the same tokens (quotes, [brackets], `backticks`, comments) and
// the same eight-state machine, so `CREATE TRIGGER ... BEGIN ...; ... END;` is one statement.
// splitStatements() uses the machine to cut a complete text into single statements.

const SEMI = 0;
const WS = 1;
const OTHER = 2;
const EXPLAIN = 3;
const CREATE = 4;
const TEMP = 5;
const TRIGGER = 6;
const END = 7;

// prettier-ignore
const TRANS = [
  /*               SEMI WS OTHER EXPLAIN CREATE TEMP TRIGGER END */
  /* 0 INVALID */ [1,   0, 2,    3,      4,     2,   2,      2],
  /* 1 START   */ [1,   1, 2,    3,      4,     2,   2,      2],
  /* 2 NORMAL  */ [1,   2, 2,    2,      2,     2,   2,      2],
  /* 3 EXPLAIN */ [1,   3, 3,    2,      4,     2,   2,      2],
  /* 4 CREATE  */ [1,   4, 2,    2,      2,     4,   5,      2],
  /* 5 TRIGGER */ [6,   5, 5,    5,      5,     5,   5,      5],
  /* 6 SEMI    */ [6,   6, 5,    5,      5,     5,   5,      7],
  /* 7 END     */ [1,   7, 5,    5,      5,     5,   5,      5],
];

const KEYWORDS = new Map([
  ['create', CREATE],
  ['trigger', TRIGGER],
  ['temp', TEMP],
  ['temporary', TEMP],
  ['end', END],
  ['explain', EXPLAIN],
]);

const isIdChar = (c) => /[A-Za-z0-9_$]/.test(c) || c.charCodeAt(0) >= 0x80;

/**
 * Calls onToken(token, start, end) for each token of sql; returns false if the text ends
 * inside a quote, bracket or block comment (it can't be complete then), true otherwise.
 */
function tokenize(sql, onToken) {
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i];
    const start = i;
    let token;
    if (c === ';') {
      token = SEMI;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f') {
      token = WS;
      i++;
    } else if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      if (close < 0) return false;
      i = close + 2;
      token = WS;
    } else if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? n : nl + 1;
      token = WS;
    } else if (c === '[') {
      const close = sql.indexOf(']', i + 1);
      if (close < 0) return false;
      i = close + 1;
      token = OTHER;
    } else if (c === '`' || c === '"' || c === "'") {
      // A doubled quote inside is two adjacent quoted tokens to this machine, as in SQLite.
      const close = sql.indexOf(c, i + 1);
      if (close < 0) return false;
      i = close + 1;
      token = OTHER;
    } else if (isIdChar(c)) {
      while (i < n && isIdChar(sql[i])) i++;
      token = KEYWORDS.get(sql.slice(start, i).toLowerCase()) ?? OTHER;
    } else {
      token = OTHER;
      i++;
    }
    onToken(token, start, i);
  }
  return true;
}

/** sqlite3_complete(): true when sql ends with a complete statement. */
function isComplete(sql) {
  let state = 0;
  const closed = tokenize(sql, (token) => {
    state = TRANS[state][token];
  });
  return closed && state === 1;
}

/**
 * The statements of sql, each { sql, offset } (offset: where its first token starts), empty
 * ones (only `;`, blanks and comments) left out. A trailing incomplete statement is returned
 * too, with incomplete: true.
 */
function splitStatements(sql) {
  const out = [];
  let state = 0;
  let begin = -1; // first token of the current statement
  const closed = tokenize(sql, (token, start, end) => {
    const next = TRANS[state][token];
    if (token !== WS && token !== SEMI && begin < 0) begin = start;
    if (token === SEMI && next === 1) {
      if (begin >= 0) out.push({ sql: sql.slice(begin, end), offset: begin });
      begin = -1;
    }
    state = next;
  });
  if (!closed && begin < 0) {
    // Text ending inside a quote or comment: find where it starts.
    const m = /\S/.exec(sql.slice(out.length ? out[out.length - 1].offset + out[out.length - 1].sql.length : 0));
    if (m) begin = (out.length ? out[out.length - 1].offset + out[out.length - 1].sql.length : 0) + m.index;
  }
  if (begin >= 0) {
    const rest = sql.slice(begin);
    // Only comments left (the tokenizer calls them blanks) is nothing to run.
    if (!closed || !isOnlyBlank(rest)) out.push({ sql: rest, offset: begin, incomplete: true });
  }
  return out;
}

function isOnlyBlank(sql) {
  let blank = true;
  tokenize(sql, (token) => {
    if (token !== WS && token !== SEMI) blank = false;
  });
  return blank;
}

module.exports = { isComplete, splitStatements, isOnlyBlank };
