// The page's quantiser (_live.js quantized) gives the bytes seqviz.widgets._common.quantize_uint8 gives: one rule,
// rint((clip(v, lo, hi) - lo) / (hi - lo) * 255), ties to even.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixtures, loadStatic, NO_FIXTURES } from "./load.mjs";

const F = fixtures();
const { quantized, roundHalfEven } = await loadStatic(["_live.js"], ["quantized", "roundHalfEven"]);

test("ties go to the even byte", () => {
  assert.deepEqual([0.5, 1.5, 2.5, 3.5, 254.5, 253.5].map(roundHalfEven), [0, 2, 2, 4, 254, 254]);
  assert.deepEqual([0.49, 0.51, 1.2, 2.7, 0, 255].map(roundHalfEven), [0, 1, 1, 3, 0, 255]);
  assert.deepEqual(Array.from(quantized([0, 0.5, 1.5, 2.5, 255, 300, -4], 0, 255)), [0, 0, 2, 2, 255, 255, 0]);
});

test("writes into a larger buffer at an offset", () => {
  const out = new Uint8Array(6);
  quantized([0, 1], 0, 1, out, 3);
  assert.deepEqual(Array.from(out), [0, 0, 0, 0, 255, 0]);
});

test("the page's bytes are quantize_uint8's, ties included", { skip: F ? false : NO_FIXTURES }, () => {
  for (const c of F.quantiser) {
    const got = Array.from(quantized(Float64Array.from(c.values), c.lo, c.hi));
    assert.deepEqual(got, c.bytes, `range [${c.lo}, ${c.hi}] (${c.ties} ties)`);
  }
});

test("float32 values, as a model's outputs arrive, give the same bytes", { skip: F ? false : NO_FIXTURES }, () => {
  for (const c of F.quantiser.filter((q) => q.values.every((v) => Math.fround(v) === v))) {
    assert.deepEqual(Array.from(quantized(Float32Array.from(c.values), c.lo, c.hi)), c.bytes);
  }
});
