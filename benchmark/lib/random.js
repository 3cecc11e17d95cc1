'use strict';
// The project's one seeded random source: the same numbers on every run and in every
// process, for the benchmark's data (lib/data.js, storage.js, relay-load.js) and, through
// __test__/_random.js, for the tests. With it the shuffle and Evolu's level draw.

/** Mulberry32: a small seeded generator of numbers in [0, 1). */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fisher–Yates shuffle of `items` in place with `random`; returns `items`. */
function shuffle(items, random) {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/**
 * A skiplist level drawn with `random`: Evolu's rule (randomSkiplistLevel,
 * docs/evolu-storage.md §3.2: one more level while random() <= 0.25, at most 10), or with
 * `uniform` any of 1..10 equally.
 */
function drawLevel(random, uniform = false) {
  if (uniform) return 1 + Math.floor(random() * 10);
  let level = 1;
  while (random() <= 0.25 && level < 10) level++;
  return level;
}

module.exports = { seeded, shuffle, drawLevel };
