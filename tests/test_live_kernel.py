"""seqviz.live.kernel: the live models where a kernel runs (the widgets' recorded examples, and every input in
JupyterLab/Colab) compute what the package's models compute, and check input as the page does, with the same
messages: the page's encodeText and formatNote (static/live.js, run here in node) say word for word what the kernel
says on the same inputs."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
import torch

from seqviz.live import kernel
from seqviz.live.kernel import LiveInputError, encode_text

STATIC = kernel.__file__.rsplit("/live/", 1)[0] + "/widgets/static"
STOI = {c: i for i, c in enumerate("abc \n")}


def test_encode_text_keeps_known_characters_in_order():
    e = encode_text("ab c\n", STOI)
    assert e.ids == [0, 1, 3, 2, 4] and e.chars == list("ab c\n") and e.notes == [] and e.cropped == 0


@pytest.mark.parametrize("text, kw, message, details", [
    ("", {}, "the text is empty: type at least one character", {"empty": True}),
    ("", {"what": "the prompt"}, "the prompt is empty: type at least one character", {"empty": True}),
    ("abx", {}, 'the model does not know the character "x" (not in its vocabulary): drop it or replace it',
     {"unknown": ["x"]}),
    ("xaüxé", {}, 'the model does not know the characters "x", "ü", "é" (not in its vocabulary): drop them or '
     "replace them", {"unknown": ["x", "ü", "é"]}),
    ("xy", {"drop": True}, "the text has no character the model knows", {"unknown": ["x", "y"], "empty": True}),
])
def test_encode_text_says_what_is_wrong(text, kw, message, details):
    with pytest.raises(LiveInputError) as e:
        encode_text(text, STOI, **kw)
    assert str(e.value) == message and e.value.details == details


def test_encode_text_drops_and_crops_with_notes():
    e = encode_text("axbyc", STOI, drop=True)
    assert e.chars == list("abc") and e.dropped == ["x", "y"] and e.notes == ['left out "x", "y": not in the model\'s '
                                                                               'vocabulary']
    e = encode_text("abcabc", STOI, max_len=4)
    assert e.chars == list("cabc") and e.cropped == 2
    assert e.notes == ["cropped to its last 4 characters (the model reads at most 4); 2 left out"]
    e = encode_text("abcabc", STOI, max_len=4, keep="start", why="the widget draws at most 4")
    assert e.chars == list("abca") and e.notes == ["cropped to its first 4 characters (the widget draws at most 4); 2 "
                                                   "left out"]
    with pytest.raises(LiveInputError, match="must be text"):
        encode_text(3, STOI)


# the same inputs through the page's encodeText and formatNote
PAGE_CHECKS = """
const out = {};
const stoi = new Map(Object.entries(STOI));
const call = (f) => { try { const e = f(); return { chars: e.chars, notes: e.notes }; }
                      catch (err) { return { error: err.message, details: err.details }; } };
out.encode = CASES.map(([text, kw]) => call(() => encodeText(text, stoi, kw)));
const m = new EncoderDecoder(ENTRY, { encoder: null, decoder: null });
out.notes = DATES.map((d) => m.formatNote(d));
console.log(JSON.stringify(out));
"""
CASES = [["", {}], ["abx", {}], ["xaüxé", {"what": "the prompt"}], ["xy", {"drop": True}],
         ["axbyc", {"drop": True}], ["abcabc", {"max": 4}], ["abcabc", {"max": 4, "keep": "start", "why": "w"}],
         ["ab\n", {}]]
DATES = ["3rd of March 1999", "March 3, 1999", "03-MAR-99", "Wednesday the 3rd of March 1999", "12/25/2031",
         "2031-12-25", "3 März 1999", "1999/03/03", "the 3rd of march, 1999"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_page_checks_input_with_the_kernels_words(tmp_path):
    from seqviz.live import export as live_export

    entry = live_export._built("dates")[1]                                        # the manifest's entry
    js = "".join(open(f"{STATIC}/{n}", encoding="utf-8").read() for n in ("_random.js", "live_decode.js", "live.js"))
    js = re.sub(r"^export \{", "void {", js, flags=re.M)                           # one script, run as is
    setup = (f"const STOI = {json.dumps(STOI)};\nfor (const k in STOI) STOI[k] = Number(STOI[k]);\n"
             f"const CASES = {json.dumps(CASES)};\nconst DATES = {json.dumps(DATES)};\n"
             f"const ENTRY = {json.dumps(entry)};\n")
    f = tmp_path / "check.mjs"
    f.write_text(js + setup + PAGE_CHECKS, encoding="utf-8")
    r = subprocess.run(["node", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    page = json.loads(r.stdout)
    for (text, kw), got in zip(CASES, page["encode"]):
        py_kw = {("max_len" if k == "max" else k): v for k, v in kw.items()}
        try:
            e = encode_text(text, STOI, **py_kw)
            want = {"chars": e.chars, "notes": e.notes}
        except LiveInputError as err:
            want = {"error": str(err), "details": err.details}
        assert got == want, (text, kw)
    want = [None if kernel.date_format(t) else kernel.outside_formats_note(t) for t in DATES]
    assert page["notes"] == want
    assert page["notes"][:5] == [None] * 5 and all(page["notes"][5:8]) and page["notes"][8] is None


def test_date_forms_are_the_tasks():
    from seqviz.data.tasks import DATE_FORMATS

    assert kernel.date_format("Wednesday the 3rd of March 1999") == "weekday_the_dth_of_month_y"
    assert kernel.date_format("2031-12-25") is None
    assert len(DATE_FORMATS) == 13 and "13 forms" in kernel.outside_formats_note("x")


# ---- the models ------------------------------------------------------------------------------------------------------
PROMPT = "ROMEO.\nBut, soft! what light through yonder window breaks?\nIt is the east"   # 73 characters


def test_char_lm_forward_is_the_models_over_the_last_64_characters():
    from seqviz.transformer import load_char_lm
    from seqviz.transformer.inspect import queries_keys_values

    model, itos, _ = load_char_lm()
    enc, f = kernel.char_lm_forward(PROMPT)
    assert enc.chars == list(PROMPT[-64:]) and enc.cropped == 9 and len(enc.notes) == 1
    ids = torch.tensor([[itos.index(c) for c in PROMPT[-64:]]])
    with torch.no_grad():
        logits, _, attn = model(ids, return_attention=True)
    qkv = queries_keys_values(model, ids[0])
    assert torch.equal(f.logits, logits[0]) and torch.equal(f.attention, attn[0])
    assert all(torch.equal(getattr(f, n), getattr(qkv, n)) for n in "qkv")
    with pytest.raises(LiveInputError, match="the prompt is empty"):
        kernel.char_lm_forward("")


def test_generate_text_is_seqviz_decode_generate():
    from seqviz.decode import generate

    m = kernel.char_lm()
    ids = [m.stoi[c] for c in "ROMEO.\n"]
    _, text = kernel.generate_text("ROMEO.\n", 30)
    assert text == "ROMEO.\n" + "".join(m.itos[i] for i in generate(m.model, ids, 30, greedy=True))
    _, a = kernel.generate_text("ROMEO.\n", 30, greedy=False, temperature=0.8, top_k=10, seed=3)
    _, b = kernel.generate_text("ROMEO.\n", 30, greedy=False, temperature=0.8, top_k=10, seed=3)
    assert a == b and a == "ROMEO.\n" + "".join(m.itos[i] for i in generate(m.model, ids, 30, temperature=0.8,
                                                                               top_k=10, seed=3))
    _, long = kernel.generate_text(PROMPT, 5)                                     # longer than the context: kept
    assert long.startswith(PROMPT) and len(long) == len(PROMPT) + 5


def test_char_lstm_trace_is_the_models_and_crops_at_what_the_widget_draws():
    m = kernel.char_lstm()
    enc, traces = kernel.char_lstm_trace(PROMPT[:30])
    want = m.model.trace(torch.tensor([[m.stoi[c] for c in PROMPT[:30]]]))
    assert len(traces) == 2 and all(torch.equal(a.c, b.c) and torch.equal(a.f, b.f) for a, b in zip(traces, want))
    enc, traces = kernel.char_lstm_trace("ab" * 150)
    assert len(enc.ids) == kernel.LSTM_MAX_CHARS == traces[0].h.shape[1]
    assert enc.notes == ["cropped to its first 200 characters (the widget draws at most 200); 100 left out"]


def test_dates_greedy_and_beam_are_the_models():
    from seqviz.decode import beam_search

    m = kernel.dates()
    src = torch.tensor([[m.stoi[c] for c in "03-MAR-99"]])
    enc, ids, cross = kernel.dates_greedy("03-MAR-99")
    want_ids, want_cross = m.model.greedy(src, return_attention=True)
    assert ids == want_ids[0] and torch.equal(cross, want_cross[0]) and enc.notes == []
    assert "".join(m.extra["tgt_itos"][i] for i in ids) == "1999-03-03</s>"
    enc, hyps, trace = kernel.dates_beam("2031-12-25", 5, 0.6)
    c = m.model.config
    want, want_trace = beam_search(m.model.bind(torch.tensor([[m.stoi[ch] for ch in "2031-12-25"]])), [c.bos_id], 5,
                                   c.max_len, stop_id=c.eos_id, length_penalty=0.6, trace=True, with_greedy=True)
    assert hyps == want and trace == want_trace
    assert enc.notes == [kernel.outside_formats_note("2031-12-25")]               # answered, and said
