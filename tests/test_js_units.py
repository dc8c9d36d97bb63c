"""The page's JavaScript units, run by node's own test runner (`node --test tests/js/`), against what Python computes
for the same inputs: the quantiser (the page's bytes equal quantize_uint8's, ties included), flattenSearch (the beam
tree's node list equals BeamTree.set_data's), the cropping rule and the request limits (the page's runtime reads the
manifest's, the kernel seqviz.live.limits: the same characters kept, the same requests refused), the decoding loop's
NaN guard, each file's SHA-256 check, live groups kept per notebook, and the one seeded PRNG.

This test writes Python's side to a JSON file and runs node on tests/js/*.test.mjs with its path in
SEQVIZ_JS_FIXTURES; node alone runs the tests that need no Python (the comparisons are skipped)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "tests" / "js"
STATIC = ROOT / "src" / "seqviz" / "widgets" / "static"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (npm, and with it node, is a "
                                                     "requirement of make book)")

PROMPT = "ROMEO.\nBut, soft! what light through yonder window breaks?\nIt is the east"   # 73 characters
LONG_DATE = "Wednesday the 3rd of March 1999, Thursday the 4th of March 1999"                 # 63 characters


def quantiser_cases() -> list[dict]:
    """Values and ranges with their quantize_uint8 bytes: exact ties (k + 0.5 steps), 0.5/255, values outside the
    range, and float32 values as a widget's buffers hold them."""
    from seqviz.widgets._common import quantize_uint8

    rng = np.random.default_rng(0)
    cases = [(np.arange(255) + 0.5, 0.0, 255.0), ((np.arange(255) + 0.5) / 255, 0.0, 1.0),
             (np.array([0.5 / 255, 1.5 / 255, 2.5 / 255, 0.0, 1.0, -3.0, 7.0]), 0.0, 1.0),
             (2 * (np.arange(255) + 0.5) / 255 - 1, -1.0, 1.0),
             (rng.standard_normal(500).astype(np.float32).astype(np.float64), -2.0, 2.0),
             (rng.random(500).astype(np.float32).astype(np.float64) * 0.37, 0.0, 0.37)]
    out = []
    for values, lo, hi in cases:
        q = (np.clip(values, lo, hi) - lo) / (hi - lo) * 255.0
        out.append({"values": values.tolist(), "lo": lo, "hi": hi, "bytes": list(quantize_uint8(values, lo, hi)),
                    "ties": int((q - np.floor(q) == 0.5).sum())})
    return out


def beam_cases() -> list[dict]:
    """Beam searches in BeamTrace.to_dict()'s form (what the runtime's beamSearch returns) with the traits
    BeamTree.set_data sets for them: the shipped date model's on two dates and a toy model's, whose greedy path
    leaves the beam."""
    from seqviz.decode import ContextStepper, beam_search
    from seqviz.live import kernel
    from seqviz.widgets import BeamTree

    rng = np.random.default_rng(0)
    first, second = torch.tensor(2 * rng.standard_normal((12, 12))), torch.tensor(0.5 * rng.standard_normal((7, 12)))
    toy = ContextStepper(lambda ctx: first[ctx[-1]] + second[len(ctx) % 7])
    traces = [(kernel.dates_beam(d, 5)[2], kernel.dates().extra["tgt_itos"], "") for d in ("March 3, 1999",
                                                                                          "03-MAR-99")]
    traces += [(beam_search(toy, p, k, 8, stop_id=5, trace=True, with_greedy=True)[1], [f"t{i}" for i in range(12)],
                " ") for p, k in (([1], 3), ([5], 2), ([9, 1], 3), ([4], 1))]
    out = []
    for trace, itos, joiner in traces:
        w = BeamTree(trace, itos, joiner=joiner)
        want = {k: getattr(w, k) for k in ("vocab", "step_start", "greedy", "result", "beam_size", "length_penalty")}
        want.update({k: list(getattr(w, k)) for k in ("parent", "status", "logprob", "token")})
        out.append({"trace": trace.to_dict(), "itos": itos, "want": want})
    return out


def crop_cases() -> dict:
    """Each model's manifest entry (what the export writes) and what the kernel reads of a long input."""
    from seqviz.live import export as live_export
    from seqviz.live import kernel

    entries = {name: live_export._built(name)[1] for name in live_export.MODELS}
    lm, _ = kernel.char_lm_forward(PROMPT)
    lstm, _ = kernel.char_lstm_trace(PROMPT * 4)
    date, _, _ = kernel.dates_greedy(LONG_DATE)
    seen = {"char_lm": (PROMPT, lm), "char_lstm": (PROMPT * 4, lstm), "dates": (LONG_DATE, date)}
    return {"entries": entries, "cases": {name: {"text": text, "chars": e.chars, "notes": e.notes}
                                          for name, (text, e) in seen.items()}}


def limit_cases() -> dict:
    """The limits and the kernel's answer (the value it takes, or its message) for requests at and past them."""
    from seqviz.live.limits import limits
    from seqviz.widgets._live import count

    lim = limits()
    asks = [("n", 0), ("n", 1), ("n", 200), ("n", 201), ("n", 500), ("seed", -1), ("seed", 0), ("seed", 2**32 - 1),
            ("seed", 2**32), ("n", 2.5)]
    answers = []
    for name, value in asks:
        try:
            answers.append({"name": name, "value": value, "ok": count(value, name, *lim[name])})
        except ValueError as e:
            answers.append({"name": name, "value": value, "error": str(e)})
    return {"limits": lim, "asks": answers}


def file_cases() -> list[dict]:
    data = bytes(range(256)) * 3
    return [{"bytes": list(data), "sha256": hashlib.sha256(data).hexdigest()}]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    from seqviz.live import export as live_export

    data = {"quantiser": quantiser_cases(), "beams": beam_cases(), "crop": crop_cases(), "limits": limit_cases(),
            "files": file_cases(), "format": live_export.FORMAT}
    path = tmp_path_factory.mktemp("js-units") / "fixtures.json"
    path.write_text(json.dumps(data, ensure_ascii=False))
    return path, data


def test_the_python_side_holds_what_the_units_check(fixtures):
    """The fixtures exercise what they claim to: exact ties, greedy-only nodes, crops from the start and the end."""
    _, data = fixtures
    assert sum(c["ties"] for c in data["quantiser"]) >= 100
    assert any(3 in b["want"]["status"] for b in data["beams"])                   # greedy left the beam
    cases = data["crop"]["cases"]
    assert cases["char_lm"]["chars"] == list(PROMPT[-64:])                         # the last 64: what it predicts from
    assert cases["dates"]["chars"] == list(LONG_DATE[:40])                         # the first 40: where a date starts
    assert cases["char_lstm"]["chars"] == list((PROMPT * 4)[:200])                 # the first 200 steps drawn
    assert sum("error" in a for a in data["limits"]["asks"]) == 6


def test_node_unit_tests_pass(fixtures):
    path, _ = fixtures
    files = sorted(str(p) for p in JS.glob("*.test.mjs"))
    assert len(files) >= 5
    r = subprocess.run([NODE, "--test", *files], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "SEQVIZ_JS_FIXTURES": str(path)})
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert re.search(r"^# fail 0$", r.stdout, re.M) and re.search(r"^# skipped 0$", r.stdout, re.M), r.stdout[-3000:]
    passed = int(re.search(r"^# pass (\d+)$", r.stdout, re.M).group(1))
    assert passed >= 15, r.stdout[-3000:]


def test_one_seeded_prng():
    """mulberry32 is written once (_random.js), in the runtime's module and in every live widget's."""
    import sys

    from seqviz.widgets._common import LIVE_WIDGETS, esm

    sys.path.insert(0, str(ROOT / "scripts"))
    import vendor_js

    holders = [p.name for p in STATIC.glob("*.js") if "0x6d2b79f5" in p.read_text()]
    assert holders == ["_random.js"]
    assert vendor_js.live_module().count("function seededRandom") == 1
    assert all(esm(name).count("function seededRandom") == 1 for name in LIVE_WIDGETS)
