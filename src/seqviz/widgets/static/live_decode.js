// seqviz live decoding: greedy, sampling and beam search in the page, the same loop as seqviz.decode (decode.py),
// so the page chooses the tokens the package chooses on the same model. No imports: the live runtime's one ES module
// is _random.js (seededRandom), this file, then live.js (scripts/vendor_js.py); _random.js and this file also load
// alone, together (node tests).
//
// A stepper is what decode.py's is: `async step(rows, state) -> {logits, state}`, where rows is an array of B arrays
// of token ids to read after `state` (null: nothing read yet) and logits an array of B next-token score vectors
// (Float32Array or numbers), and `reorderState(state, index) -> state` keeps, duplicates or drops rows.
// Scores are turned into float64 log-probabilities here, as decode.py turns them into float64 tensors.
//
// Ties: greedy takes the first maximal token (torch.argmax does). A beam step proposes each row's 2k best tokens,
// best first and, between exactly equal log-probabilities, the lower id first (torch.topk leaves that order
// unspecified), then ranks all proposals with a stable sort (Python's sorted is stable). Sampling draws from the
// same distribution as decode.py's sample_next (softmax(top_k(z) / T)) with _random.js's seeded PRNG (mulberry32, the
// one the NextTokenDistribution widget uses): the same seed repeats the same draws, but they are not torch's draws.
// Top-level names: softmaxWithTemperature, topKFilter, logSoftmax, argmaxFirst, sampleNext,
// decodeSteps, generate, beamSearch (and the helpers scoreRows, checkCount, topPairs).

// softmax(z / T) as float64: T < 1 sharpens, T > 1 flattens (decode.softmax_with_temperature). -inf scores get 0.
function softmaxWithTemperature(z, T = 1) {
  if (!(T > 0) || !Number.isFinite(T)) throw new RangeError(`temperature must be a finite number > 0, got ${T}`);
  let max = -Infinity;
  for (const v of z) if (v > max) max = v;
  const p = new Float64Array(z.length);
  let total = 0;
  for (let i = 0; i < z.length; i++) { p[i] = Math.exp((z[i] - max) / T); total += p[i]; }
  for (let i = 0; i < z.length; i++) p[i] /= total;
  return p;
}

// Keep the k highest scores, the rest -inf; ties at the k-th score are kept (decode.top_k_filter). k null: all.
function topKFilter(z, k) {
  const out = Float64Array.from(z);
  if (k === null || k === undefined || k >= z.length) return out;
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`top_k must be a positive integer or null, got ${k}`);
  const kth = Array.from(out).sort((a, b) => b - a)[k - 1];
  for (let i = 0; i < out.length; i++) if (out[i] < kth) out[i] = -Infinity;
  return out;
}

// log_softmax over one row of scores, float64: z - max - log(sum(exp(z - max))).
function logSoftmax(z) {
  let max = -Infinity;
  for (const v of z) if (v > max) max = v;
  let total = 0;
  for (const v of z) total += Math.exp(v - max);
  const lse = max + Math.log(total);
  return Float64Array.from(z, (v) => v - lse);
}

// The index of the first maximal score (torch.argmax's rule).
function argmaxFirst(z) {
  let best = 0;
  for (let i = 1; i < z.length; i++) if (z[i] > z[best]) best = i;
  return best;
}

// One draw from softmax(top_k(z) / T) by the inverse of its cumulative distribution (decode.sample_next).
function sampleNext(z, temperature, topK, random) {
  const p = softmaxWithTemperature(topKFilter(z, topK), temperature);
  let u = random(), last = 0;
  for (let i = 0; i < p.length; i++) {
    if (p[i] <= 0) continue;
    last = i;
    if (u < p[i]) return i;
    u -= p[i];
  }
  return last; // rounding left u just above the total: the last token with probability > 0
}

// A step's scores as float64 rows, checked as decode.py checks them, with the suppressed ids set to -inf.
function scoreRows(logits, n, suppress) {
  if (!Array.isArray(logits) || logits.length !== n) {
    throw new Error(`step must return ${n} rows of next-token scores, got ${logits && logits.length}`);
  }
  return logits.map((row) => {
    const z = Float64Array.from(row);
    if (z.length === 0) throw new Error("next-token scores are empty: the vocabulary has no tokens");
    for (const id of suppress) {
      if (!(id >= 0 && id < z.length)) throw new RangeError(`suppress id ${id} is not a token id in [0, ${z.length})`);
      z[id] = -Infinity;
    }
    if (z.some(Number.isNaN)) throw new Error("next-token scores contain NaN; check the model");
    if (!z.some(Number.isFinite)) throw new Error("every next-token score is -inf: no token is left to choose");
    return z;
  });
}

// The one decoding loop (decode._decode): grow up to `width` hypotheses from one prompt, all scored in one batch per
// step; returns [[ids, logprob], ...] best first. `expand(z, live)` proposes [row, token, logprob] continuations in
// preference order; going down that list a continuation ending in stopId is finished, the others stay live, until
// `width` are live. Ranking divides the log-probability by len ** lengthPenalty. The loop stops at maxNew tokens,
// when nothing is live, or when the width-th best finished hypothesis ranks at least as high as the best any live
// one could still reach. `record`, an array the caller owns, gets every step's [row, token, logprob, status].
async function decodeSteps(stepper, promptIds, maxNew, width, expand, stopId, lengthPenalty, state = null,
  suppressIds = [], record = null) {
  const rank = ([ids, lp]) => lp / Math.pow(Math.max(ids.length, 1), lengthPenalty);
  const bestReachable = (live) => lengthPenalty <= 0 ? Math.max(...live.map(rank))
    : Math.max(...live.map(([, lp]) => lp / Math.pow(maxNew, lengthPenalty)));
  let { logits, state: st } = await stepper.step([promptIds.slice()], state);
  let live = [[[], 0]];
  const finished = [];
  for (let t = 0; t < maxNew; t++) {
    const z = scoreRows(logits, live.length, suppressIds);
    const chosen = expand(z, live);
    const rows = [], newLive = [];
    let seen = 0;
    for (const [row, token, lp] of chosen) {
      seen += 1;
      const ids = live[row][0].concat([token]);
      if (stopId !== null && token === stopId) finished.push([ids, lp]);
      else { rows.push(row); newLive.push([ids, lp]); }
      if (newLive.length === width) break;
    }
    if (record !== null) {
      record.push(chosen.map(([row, token, lp], n) => [row, token, lp, n >= seen ? "pruned"
        : stopId !== null && token === stopId ? "finished" : "kept"]));
    }
    live = newLive;
    if (live.length === 0) break;
    if (finished.length >= width && finished.map(rank).sort((a, b) => b - a)[width - 1] >= bestReachable(live)) break;
    if (t + 1 === maxNew) break;
    ({ logits, state: st } = await stepper.step(live.map(([ids]) => [ids[ids.length - 1]]),
      stepper.reorderState(st, rows)));
  }
  return finished.concat(live).map((h) => [h, rank(h)]).sort((a, b) => b[1] - a[1]).slice(0, width).map(([h]) => h);
}

function checkCount(n, what, min) {
  if (!Number.isInteger(n) || n < min) throw new RangeError(`${what} must be an integer >= ${min}, got ${n}`);
}

// Extend promptIds one token at a time (decode.generate): greedy (arg-max) or sampled from softmax(top_k(z) / T)
// with `seed` (null: a random seed); stops after stopId (kept) or maxNew tokens. Returns the new ids only.
async function generate(stepper, promptIds, maxNew, { temperature = 1, topK = null, greedy = false, stopId = null,
  seed = null, state = null, suppressIds = [] } = {}) {
  checkCount(maxNew, "max_new_tokens", 0);
  if (!greedy) softmaxWithTemperature([0], temperature); // checks the temperature before any work
  if (maxNew === 0) return [];
  const random = seededRandom(seed === null ? Math.floor(Math.random() * 4294967296) : seed);
  const expand = (z, live) => z.map((row, r) => {
    const next = greedy ? argmaxFirst(row) : sampleNext(row, temperature, topK, random);
    return [r, next, live[r][1] + logSoftmax(row)[next]];
  });
  const [[ids]] = await decodeSteps(stepper, promptIds, maxNew, 1, expand, stopId, 0, state, suppressIds);
  return ids;
}

// The 2k best [logprob, token] of one row of log-probabilities: best first, the lower id first among equals.
function topPairs(logp, k) {
  const order = Array.from(logp.keys()).sort((a, b) => logp[b] - logp[a] || a - b);
  return order.slice(0, k).map((i) => [logp[i], i]);
}

// Beam search (decode.beam_search): keep the beamSize best continuations by log-probability, ranked by
// logprob / len ** lengthPenalty; returns {hypotheses: [[ids, logprob], ...] best first, trace} where trace (with
// trace: true) is BeamTrace.to_dict()'s form: prompt_ids, beam_size, length_penalty, stop_id, max_new_tokens, steps
// ([parent, token, token_logprob, logprob, status] per candidate), hypotheses and greedy (withGreedy: greedy's
// [token, token_logprob] path from the same prompt).
async function beamSearch(stepper, promptIds, beamSize, maxNew, { stopId = null, lengthPenalty = 0, state = null,
  suppressIds = [], trace = false, withGreedy = false } = {}) {
  checkCount(beamSize, "beam_size", 1);
  checkCount(maxNew, "max_new_tokens", 1);
  if (withGreedy && !trace) throw new Error("withGreedy adds greedy's path to the trace: pass trace: true too");
  const expand = (z, live) => {
    const n = live[0][0].length + 1; // every candidate's length
    const candidates = [];
    z.forEach((row, r) => {
      for (const [v, i] of topPairs(logSoftmax(row), Math.min(2 * beamSize, row.length))) {
        if (v !== -Infinity) candidates.push([r, i, live[r][1] + v]);
      }
    });
    const rank = (lp) => lp / Math.pow(n, lengthPenalty);
    return candidates.map((c) => [c, rank(c[2])]).sort((a, b) => b[1] - a[1]).map(([c]) => c);
  };
  const record = trace ? [] : null;
  const hypotheses = await decodeSteps(stepper, promptIds, maxNew, beamSize, expand, stopId, lengthPenalty, state,
    suppressIds, record);
  if (!trace) return { hypotheses, trace: null };
  let greedy = null;
  if (withGreedy) {
    const path = [];
    const greedyExpand = (z, live) => z.map((row, r) => {
      const logp = logSoftmax(row);
      const best = argmaxFirst(logp);
      return [r, best, live[r][1] + logp[best]];
    });
    await decodeSteps(stepper, promptIds, maxNew, 1, greedyExpand, stopId, 0, state, suppressIds, path);
    let prev = 0;
    greedy = path.map(([[, token, lp]]) => { const step = [token, lp - prev]; prev = lp; return step; });
  }
  const steps = [];
  let parents = [0]; // the prompt: log P = 0
  for (const cands of record) {
    const step = cands.map(([row, token, lp, status]) => [row, token, lp - parents[row], lp, status]);
    steps.push(step);
    parents = step.filter((c) => c[4] === "kept").map((c) => c[3]);
  }
  return {
    hypotheses,
    trace: { prompt_ids: promptIds.slice(), beam_size: beamSize, length_penalty: lengthPenalty, stop_id: stopId,
      max_new_tokens: maxNew, steps, hypotheses: hypotheses.map(([ids, lp]) => [ids.slice(), lp]), greedy },
  };
}

export { softmaxWithTemperature, topKFilter, logSoftmax, argmaxFirst, seededRandom, sampleNext, decodeSteps, generate,
  beamSearch };
