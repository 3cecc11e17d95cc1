'use strict';
// The few statistics the report uses: medians of rounds, and paired per-round ratios.

/** Median of a list of numbers (mean of the middle two for an even count); NaN if empty. */
function median(values) {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * Ratios of a stack's time to the baseline's time in the same round, for every round in
 * which both have a value. Pairing by round cancels what a round shares (the machine's
 * load at that moment) better than a ratio of two medians would.
 * @param {Array<number|undefined>} values per round
 * @param {Array<number|undefined>} baseline per round
 */
function pairedRatios(values, baseline) {
  const out = [];
  for (let r = 0; r < values.length; r++) {
    if (Number.isFinite(values[r]) && Number.isFinite(baseline[r]) && baseline[r] > 0)
      out.push(values[r] / baseline[r]);
  }
  return out;
}

function summarize(values) {
  if (values.length === 0) return null;
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

module.exports = { median, pairedRatios, summarize };
