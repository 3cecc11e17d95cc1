'use strict';
// Command-line values shared by the benchmark scripts (run.js, configs.js, storage.js):
// checked once here, so each refuses a bad value with the same message.

/** The comma-separated names of `value`, each one of `allowed`, without repeats, in order.
 * `what` names them in the error for unknown ones ("stack", "workload"…). */
function nameList(value, allowed, what) {
  const items = value
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  const bad = items.filter((x) => !allowed.includes(x));
  if (bad.length) throw new Error(`unknown ${what}: ${bad.join(', ')} (known: ${allowed.join(', ')})`);
  return [...new Set(items)];
}

/** Option `--name`'s `value` as an integer of at least `min`; `fallback` when not given. */
function integerOption(name, value, fallback, min) {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min) {
    throw new Error(`--${name}: expected an integer ≥ ${min}, got ${JSON.stringify(value)}`);
  }
  return n;
}

module.exports = { nameList, integerOption };
