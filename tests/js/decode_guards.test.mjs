// live_decode.js refuses scores it cannot decode (NaN, every score -inf), as seqviz.decode does, before choosing a
// token; and its sampling draws from _random.js's one PRNG.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadStatic } from "./load.mjs";

const D = await loadStatic(["_random.js", "live_decode.js"], ["generate", "beamSearch", "seededRandom"]);

// A stepper whose every step scores `row` (a vocabulary of row.length tokens).
const constant = (row) => ({
  async step(rows) { return { logits: rows.map(() => Float32Array.from(row)), state: null }; },
  reorderState(state) { return state; },
});

test("NaN in the scores is an error, for greedy, sampling and beam search", async () => {
  const nan = constant([0.5, NaN, 1.0]);
  const message = /next-token scores contain NaN; check the model/;
  await assert.rejects(D.generate(nan, [0], 3, { greedy: true }), message);
  await assert.rejects(D.generate(nan, [0], 3, { seed: 1 }), message);
  await assert.rejects(D.beamSearch(nan, [0], 2, 3), message);
});

test("NaN only in a suppressed id is no error", async () => {
  assert.deepEqual(await D.generate(constant([0.5, NaN, 1.0]), [0], 2, { greedy: true, suppressIds: [1] }), [2, 2]);
});

test("every score -inf is an error", async () => {
  await assert.rejects(D.generate(constant([-Infinity, -Infinity]), [0], 2, { greedy: true }),
    /every next-token score is -inf/);
});

test("the PRNG repeats its seed and takes it as a 32-bit unsigned integer", () => {
  const draws = (seed) => { const r = D.seededRandom(seed); return Array.from({ length: 5 }, r); };
  assert.deepEqual(draws(7), draws(7));
  assert.notDeepEqual(draws(7), draws(8));
  assert.deepEqual(draws(2 ** 32 + 7), draws(7));
  assert.ok(draws(123).every((u) => u >= 0 && u < 1));
});
