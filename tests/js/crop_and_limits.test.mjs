// The page's runtime (live.js) crops a long input by the rule the export writes into each model's manifest entry
// (seqviz.live.limits), keeping what the kernel keeps with the same note, and refuses the requests the kernel
// refuses, with the kernel's words; the views clamp what a reader types into the same limits (_live.js withinLimit).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixtures, loadStatic, NO_FIXTURES } from "./load.mjs";

const F = fixtures();
const R = await loadStatic(["_random.js", "live_decode.js", "live.js"],
  ["CharLM", "CharLSTM", "EncoderDecoder", "checkLimit", "LIVE_FORMAT"]);
const { withinLimit } = await loadStatic(["_live.js"], ["withinLimit"]);
const skip = F ? false : NO_FIXTURES;

function models() {
  const e = F.crop.entries, limits = F.limits.limits;
  return { char_lm: new R.CharLM(e.char_lm, { lm: null }, limits),
    char_lstm: new R.CharLSTM(e.char_lstm, { step: null }, limits),
    dates: new R.EncoderDecoder(e.dates, { encoder: null, decoder: null }) };
}

test("the runtime reads the manifest format the exporter writes", { skip }, () => {
  assert.equal(R.LIVE_FORMAT, F.format);
});

test("each model crops a long input as the kernel does: the same characters, the same note", { skip }, () => {
  const m = models();
  for (const [name, want] of Object.entries(F.crop.cases)) {
    const e = m[name].encode(want.text);
    const note = name === "dates" ? m.dates.formatNote(e.chars.join("")) : null; // as the dates widgets add it
    assert.deepEqual({ chars: e.chars, notes: note ? e.notes.concat([note]) : e.notes },
      { chars: want.chars, notes: want.notes }, name);
  }
});

test("a date is cropped from its start, a prompt from its end", { skip }, () => {
  const m = models();
  const date = F.crop.cases.dates.text, prompt = F.crop.cases.char_lm.text;
  assert.equal(m.dates.encode(date).chars.join(""), date.slice(0, m.dates.crop.max));
  assert.equal(m.char_lm.encode(prompt).chars.join(""), prompt.slice(-m.char_lm.crop.max));
  assert.equal(m.char_lm.encode(prompt, { max: null }).chars.join(""), prompt); // generation reads it all
});

test("a model without a cropping rule in its entry is refused", { skip }, () => {
  const { crop, ...entry } = F.crop.entries.dates;
  assert.throws(() => new R.EncoderDecoder(entry, {}), /no cropping rule .* make live-models/);
});

test("the runtime refuses what the kernel refuses, in its words", { skip }, () => {
  for (const a of F.limits.asks) {
    if ("ok" in a) assert.equal(R.checkLimit(a.value, a.name, F.limits.limits[a.name]), a.ok);
    else assert.throws(() => R.checkLimit(a.value, a.name, F.limits.limits[a.name]), { message: a.error });
  }
});

test("generation past the limits is refused before the model runs", { skip }, async () => {
  const lm = models().char_lm, [, nMax] = F.limits.limits.n, [, seedMax] = F.limits.limits.seed;
  const kernel = (name, value) => F.limits.asks.find((a) => a.name === name && a.value === value).error;
  await assert.rejects(lm.generate([1, 2], nMax + 1, { greedy: true }), { name: "LiveInputError",
    message: kernel("n", nMax + 1) });
  await assert.rejects(lm.generate([1, 2], 5, { seed: seedMax + 1 }), { message: kernel("seed", seedMax + 1) });
});

test("what a view clamps a typed number to, the kernel accepts", { skip }, () => {
  const { n, seed } = F.limits.limits;
  assert.deepEqual([withinLimit("500", n), withinLimit(0, n), withinLimit("abc", n), withinLimit(7.9, n)],
    [n[1], n[0], n[0], 7]);
  assert.deepEqual([withinLimit(1e12, seed), withinLimit(-5, seed), withinLimit("12", seed)], [seed[1], 0, 12]);
  const accepted = new Set(F.limits.asks.filter((a) => "ok" in a).map((a) => `${a.name}=${a.value}`));
  for (const [name, value] of [["n", withinLimit(1e9, n)], ["seed", withinLimit(1e20, seed)],
    ["seed", withinLimit(-1, seed)]]) {
    assert.ok(accepted.has(`${name}=${value}`), `${name}=${value}`);
  }
});
