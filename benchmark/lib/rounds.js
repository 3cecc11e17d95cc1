'use strict';
// The round loop that run.js and configs.js share: the warm-up rounds (discarded), then
// the measured ones; in each round every item (a workload, a configuration) runs once on
// every stack, and the stacks' order rotates by one each round, so that slow drifts in the
// machine's load hit all stacks alike and no stack always runs first or last.

/**
 * @param {{ warmup: number, rounds: number }} opts
 * @param {string[]} items workloads or configurations
 * @param {string[]} stacks the stacks that loaded
 * @param {(item: string, stack: string, tag: string) => object} runOne runs one child
 *   process and returns its result; `tag` names the round for progress lines
 * @param {(tag: string) => void} [afterRound] called once a round is done
 * @returns {Record<string, Record<string, object[]>>} results[item][stack][round], warm-ups
 *   included (round < opts.warmup)
 */
function runRounds(opts, items, stacks, runOne, afterRound = () => {}) {
  const results = {};
  for (const item of items) results[item] = Object.fromEntries(stacks.map((s) => [s, []]));
  const total = opts.warmup + opts.rounds;
  for (let round = 0; round < total; round++) {
    const tag = round < opts.warmup ? 'warm-up' : `round ${round - opts.warmup + 1}/${opts.rounds}`;
    for (const item of items) {
      const order = stacks.map((_, i) => stacks[(i + round) % stacks.length]);
      for (const stack of order) results[item][stack][round] = runOne(item, stack, tag);
    }
    afterRound(tag);
  }
  return results;
}

module.exports = { runRounds };
