"""The page's decoding (widgets/static/live_decode.js, run by node) chooses the tokens seqviz.decode chooses.

Both sides decode from one toy model, a table of float64 scores that depend on the last token and the context's
length, read through a stepper that re-scores each row's context (decode.ContextStepper in Python, its twin in JS):
greedy generation, beam search with and without length normalisation, stop ids, suppressed ids and the full beam
trace. Sampling cannot draw torch's numbers; it draws from the same distribution, and the same seed repeats.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from seqviz.decode import ContextStepper, beam_search, generate, softmax_with_temperature, top_k_filter

STATIC = Path(__file__).resolve().parents[1] / "src" / "seqviz" / "widgets" / "static"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (npm, and with it node, is a "
                                                     "requirement of make book)")
V, PERIOD = 12, 7

DRIVER = """
import * as D from "./live_decode.mjs";
const { table, period, cases } = JSON.parse(await new Promise((ok) => {
  let s = ""; process.stdin.on("data", (d) => { s += d; }); process.stdin.on("end", () => ok(s));
}));
const score = (ctx) => table.first[ctx[ctx.length - 1]].map((v, i) => v + table.second[ctx.length % period][i]);
const stepper = {
  async step(rows, state) {
    const ctx = rows.map((r, b) => (state ? state[b] : []).concat(r));
    return { logits: ctx.map(score), state: ctx };
  },
  reorderState(state, index) { return index.map((i) => state[i].slice()); },
};
const out = [];
for (const c of cases) {
  try {
    if (c.kind === "generate") out.push(await D.generate(stepper, c.prompt, c.n, c.options));
    else if (c.kind === "beam") out.push(await D.beamSearch(stepper, c.prompt, c.k, c.n, c.options));
    else if (c.kind === "argmax") out.push(D.argmaxFirst(c.z));
    else if (c.kind === "probs") out.push(Array.from(D.softmaxWithTemperature(D.topKFilter(c.z, c.k), c.T)));
    else if (c.kind === "draws") {
      const random = D.seededRandom(c.seed);
      out.push(Array.from({ length: c.n }, () => D.sampleNext(c.z, c.T, c.k, random)));
    }
  } catch (e) { out.push({ error: e.name + ": " + e.message }); }
}
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    return {"first": (2 * rng.standard_normal((V, V))).tolist(),
            "second": (0.5 * rng.standard_normal((PERIOD, V))).tolist()}


@pytest.fixture(scope="module")
def node_run(tmp_path_factory, toy):
    folder = tmp_path_factory.mktemp("live-decode")
    (folder / "live_decode.mjs").write_text("\n".join((STATIC / n).read_text() for n in ("_random.js",
                                                                                      "live_decode.js")))
    (folder / "driver.mjs").write_text(DRIVER)

    def run(cases):
        done = subprocess.run([NODE, str(folder / "driver.mjs")], input=json.dumps({"table": toy, "period": PERIOD,
                              "cases": cases}), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return run


@pytest.fixture(scope="module")
def stepper(toy):
    first, second = torch.tensor(toy["first"], dtype=torch.float64), torch.tensor(toy["second"],
                                                                                  dtype=torch.float64)
    return ContextStepper(lambda ctx: first[ctx[-1]] + second[len(ctx) % PERIOD])


GENERATE = [([0], 30, {}), ([3, 1], 25, {"stopId": 5}), ([7], 20, {"suppressIds": [2, 9]}), ([4], 0, {}),
            ([11, 0, 2], 1, {"stopId": 0})]
BEAMS = [([0], 1, 12, {}), ([0], 3, 12, {"stopId": 5}), ([2], 4, 15, {"stopId": 5, "lengthPenalty": 0.7}),
         ([9, 1], 5, 10, {"stopId": 3, "lengthPenalty": 1.0}), ([6], 3, 8, {"stopId": 5, "suppressIds": [0, 1]}),
         ([1], 2, 1, {"stopId": 5}), ([8], 6, 20, {"stopId": 4, "lengthPenalty": -0.5})]


def test_greedy_generation_chooses_what_seqviz_decode_chooses(node_run, stepper):
    got = node_run([{"kind": "generate", "prompt": p, "n": n, "options": {**o, "greedy": True}}
                    for p, n, o in GENERATE])
    for (prompt, n, o), ids in zip(GENERATE, got):
        want = generate(stepper, prompt, n, greedy=True, stop_id=o.get("stopId"),
                        suppress_ids=o.get("suppressIds", ()))
        assert ids == want, (prompt, o)
    assert any(len(ids) < n for (_, n, _), ids in zip(GENERATE, got) if n)       # a stop id ended one early


def test_beam_search_and_its_trace_equal_seqviz_decode(node_run, stepper):
    got = node_run([{"kind": "beam", "prompt": p, "k": k, "n": n, "options": {**o, "trace": True,
                                                                               "withGreedy": True}}
                    for p, k, n, o in BEAMS])
    finished = 0
    for (prompt, k, n, o), res in zip(BEAMS, got):
        hyps, trace = beam_search(stepper, prompt, k, n, stop_id=o.get("stopId"),
                                  length_penalty=o.get("lengthPenalty", 0.0), suppress_ids=o.get("suppressIds", ()),
                                  trace=True, with_greedy=True)
        assert [h[0] for h in res["hypotheses"]] == [h[0] for h in hyps], (prompt, k, o)
        assert np.allclose([h[1] for h in res["hypotheses"]], [h[1] for h in hyps], rtol=0, atol=1e-9)
        want, page = trace.to_dict(), res["trace"]
        assert len(page["steps"]) == len(want["steps"]), (prompt, k, o)
        for a, b in zip(page["steps"], want["steps"]):                           # parent, token, ..., status
            assert [(c[0], c[1], c[4]) for c in a] == [(c[0], c[1], c[4]) for c in b]
            assert np.allclose([c[2:4] for c in a], [c[2:4] for c in b], rtol=0, atol=1e-9)
        assert [g[0] for g in page["greedy"]] == [g[0] for g in want["greedy"]]
        assert {k2: page[k2] for k2 in ("prompt_ids", "beam_size", "length_penalty", "stop_id", "max_new_tokens")} \
            == {k2: want[k2] for k2 in ("prompt_ids", "beam_size", "length_penalty", "stop_id", "max_new_tokens")}
        finished += sum(c[4] == "finished" for step in want["steps"] for c in step)
    assert finished >= 5                                                          # the stop rule was exercised


def test_sampling_draws_from_the_distribution_of_sample_next_and_repeats_with_its_seed(node_run):
    z = [2.0, 1.5, 1.5, 0.3, -1.0, -50.0, 0.9, -0.2]
    cases = [{"kind": "probs", "z": z, "k": k, "T": T} for k, T in ((None, 1.0), (3, 0.7), (5, 2.5), (1, 1.0))]
    cases += [{"kind": "draws", "z": z, "k": 2, "T": 0.7, "seed": s, "n": 20000} for s in (1, 1, 2)]
    cases += [{"kind": "generate", "prompt": [0], "n": 30, "options": {"temperature": 0.9, "topK": 4, "seed": s}}
              for s in (5, 5, 6)]
    got = node_run(cases)
    for case, p in zip(cases[:4], got[:4]):
        z64 = torch.tensor(z, dtype=torch.float64)
        want = softmax_with_temperature(top_k_filter(z64, case["k"]), case["T"]).numpy()
        assert np.allclose(p, want, rtol=0, atol=1e-12), case
    draws = got[4:7]
    assert draws[0] == draws[1] and draws[0] != draws[2]                          # the seed repeats them
    freq = np.bincount(draws[0], minlength=len(z)) / len(draws[0])
    want = softmax_with_temperature(top_k_filter(torch.tensor(z, dtype=torch.float64), 2), 0.7).numpy()
    assert np.abs(freq - want).max() < 0.015 and set(draws[0]) == {0, 1, 2}       # top 2 and the tie at the 2nd
    assert got[7] == got[8] and got[7] != got[9] and len(got[7]) == 30


def test_greedy_breaks_a_tie_as_torch_argmax_does(node_run):
    rows = [[1.0, 3.0, 3.0], [5.0, 5.0], [0.0, -1.0, 2.0, 2.0, 2.0]]
    got = node_run([{"kind": "argmax", "z": z} for z in rows])
    assert got == [int(torch.argmax(torch.tensor(z, dtype=torch.float64))) for z in rows] == [1, 0, 2]


def test_bad_arguments_get_clear_errors(node_run):
    got = node_run([{"kind": "generate", "prompt": [0], "n": 5, "options": {"temperature": 0}},
                    {"kind": "generate", "prompt": [0], "n": -1, "options": {}},
                    {"kind": "beam", "prompt": [0], "k": 0, "n": 5, "options": {}},
                    {"kind": "beam", "prompt": [0], "k": 2, "n": 5, "options": {"withGreedy": True}},
                    {"kind": "generate", "prompt": [0], "n": 5, "options": {"suppressIds": [V]}},
                    {"kind": "probs", "z": [1.0, 2.0], "k": 0, "T": 1.0}])
    assert got == [{"error": "RangeError: temperature must be a finite number > 0, got 0"},
                   {"error": "RangeError: max_new_tokens must be an integer >= 0, got -1"},
                   {"error": "RangeError: beam_size must be an integer >= 1, got 0"},
                   {"error": "Error: withGreedy adds greedy's path to the trace: pass trace: true too"},
                   {"error": f"RangeError: suppress id {V} is not a token id in [0, {V})"},
                   {"error": "RangeError: top_k must be a positive integer or null, got 0"}]
