'use strict';
// Deterministic test data and result checksums. Every stack gets byte-identical data from
// the same seed, so their results can be compared exactly.

const crypto = require('node:crypto');
const { seeded } = require('./random');

/** Uniform in [0, 1), reproducible from `seed` (Mulberry32, lib/random.js). */
const prng = seeded;

/** @returns {(n: number) => number} integer in [0, n) */
function intPrng(seed) {
  const next = prng(seed);
  return (n) => Math.floor(next() * n);
}

const ONES = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

/**
 * A number in English words the way SQLite's speed test writes them:
 * 13153 → "thirteen thousand one hundred fifty three" (no "and", no hyphens).
 * @param {number} n non-negative integer below 10^9
 */
function numberName(n) {
  if (n >= 1e6) return joinWords(numberName(Math.floor(n / 1e6)) + ' million', n % 1e6);
  if (n >= 1000) return joinWords(numberName(Math.floor(n / 1000)) + ' thousand', n % 1000);
  if (n >= 100) return joinWords(ONES[Math.floor(n / 100)] + ' hundred', n % 100);
  if (n >= 20) return n % 10 ? `${TENS[Math.floor(n / 10)]} ${ONES[n % 10]}` : TENS[n / 10];
  return ONES[n];
}

function joinWords(head, rest) {
  return rest ? `${head} ${numberName(rest)}` : head;
}

const FIRST = [
  'Olivia',
  'Liam',
  'Emma',
  'Noah',
  'Amelia',
  'Oliver',
  'Sophia',
  'Elijah',
  'Charlotte',
  'Mateo',
  'Isabella',
  'Lucas',
  'Mia',
  'Levi',
  'Evelyn',
  'Ezra',
  'Harper',
  'Asher',
  'Luna',
  'Leo',
  'Zoë',
  'Jakub',
  'Aiko',
  'Søren',
  'Priya',
  'Tomás',
  'Chloé',
  'Hiroshi',
  'Anaïs',
  'Björn',
];
const LAST = [
  'Smith',
  'Johnson',
  'Williams',
  'Brown',
  'Jones',
  'Garcia',
  'Miller',
  'Davis',
  'Rodriguez',
  'Martinez',
  'Hernandez',
  'Lopez',
  'Gonzalez',
  'Wilson',
  'Anderson',
  'Thomas',
  'Taylor',
  'Moore',
  'Jackson',
  'Martin',
  'Novák',
  'Müller',
  'Tanaka',
  'Kowalski',
  'Dubois',
  'Rossi',
  'Nguyen',
  'Silva',
];
const DOMAINS = ['example.com', 'mail.example.org', 'inbox.example.net', 'corp.example.com'];

/** ASCII local part of an e-mail address from a name ("Zoë" → "zoe"). */
function mailbox(s) {
  return s
    .normalize('NFD')
    .replace(/[^A-Za-z]/g, '')
    .toLowerCase();
}

/**
 * Rows for the driver workload: (id, name, email, score, created).
 * @returns {Array<[number, string, string, number, number]>}
 */
function userRows(count, seed) {
  const rand = prng(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const rows = new Array(count);
  const base = 1_700_000_000_000; // Nov 2023, in ms
  for (let i = 0; i < count; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    const id = i + 1;
    rows[i] = [
      id,
      `${first} ${last}`,
      `${mailbox(first)}.${mailbox(last)}${Math.floor(rand() * 1000)}@${pick(DOMAINS)}`,
      Math.round(rand() * 1_000_000) / 100 + 0.005, // REAL with a fraction, never integral
      base + Math.floor(rand() * 31_536_000_000), // within a year, integer ms
    ];
  }
  return rows;
}

/** A permutation of 1..n (Fisher–Yates). */
function shuffledIds(n, seed) {
  const rnd = intPrng(seed);
  const ids = Array.from({ length: n }, (_, i) => i + 1);
  for (let i = n - 1; i > 0; i--) {
    const j = rnd(i + 1);
    const t = ids[i];
    ids[i] = ids[j];
    ids[j] = t;
  }
  return ids;
}

// Numbers that aren't integers are compared at 12 significant digits, so that an avg()
// computed by two SQLite versions in a slightly different order still agrees.
function canonical(_key, value) {
  if (typeof value === 'number' && !Number.isInteger(value)) return Number(value.toPrecision(12));
  if (typeof value === 'bigint') return `${value}n`;
  if (value instanceof Uint8Array) return `x'${Buffer.from(value).toString('hex')}'`;
  return value;
}

/**
 * SHA-256 (first 16 hex digits) of rows as returned by a driver: objects (keys in column
 * order) or arrays. node:sqlite's null-prototype rows serialise the same as plain objects.
 */
function checksum(rows) {
  return crypto.createHash('sha256').update(JSON.stringify(rows, canonical)).digest('hex').slice(0, 16);
}

module.exports = { prng, intPrng, numberName, userRows, shuffledIds, checksum };
