// beam_tree.js flattenSearch turns the runtime's beam search (BeamTrace.to_dict()'s form) into the node list
// BeamTree.set_data builds from the same trace: the same parents, statuses, log-probabilities, labels, steps, greedy
// path and result, byte for byte.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixtures, loadStatic, NO_FIXTURES } from "./load.mjs";

const F = fixtures();
const { flattenSearch } = await loadStatic(["beam_tree.js"], ["flattenSearch"]);
const bytes = (dv) => Array.from(new Uint8Array(dv.buffer, dv.byteOffset, dv.byteLength));

test("a one-step search: the root and its candidates, in proposal order", () => {
  const trace = { prompt_ids: [0], beam_size: 2, length_penalty: 0, stop_id: 2, max_new_tokens: 1,
    steps: [[[0, 1, -0.5, -0.5, "kept"], [0, 2, -1.0, -1.0, "finished"], [0, 3, -2.0, -2.0, "pruned"]]],
    hypotheses: [[[1], -0.5], [[2], -1.0]], greedy: [[1, -0.5]] };
  const t = flattenSearch(trace, ["<s>", "a", "</s>", "b"]);
  assert.deepEqual(t.step_start, [0, 1, 4]);
  assert.deepEqual(bytes(t.status), [0, 0, 2, 1]);
  assert.deepEqual(Array.from(new Int32Array(new Uint8Array(bytes(t.parent)).buffer)), [-1, 0, 0, 0]);
  assert.deepEqual(t.greedy, [1]);
  assert.deepEqual(t.result, [1, 2]);
  assert.deepEqual(t.vocab, ["<s>", "a", "</s>", "b"]);
});

test("the node list is BeamTree.set_data's", { skip: F ? false : NO_FIXTURES }, () => {
  for (const [n, c] of F.beams.entries()) {
    const t = flattenSearch(c.trace, c.itos);
    const got = { vocab: t.vocab, step_start: t.step_start, greedy: t.greedy, result: t.result,
      beam_size: t.beam_size, length_penalty: t.length_penalty, parent: bytes(t.parent), status: bytes(t.status),
      logprob: bytes(t.logprob), token: bytes(t.token) };
    assert.deepEqual(got, c.want, `search ${n}`);
  }
});
