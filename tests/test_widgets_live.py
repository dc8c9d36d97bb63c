"""The widgets' live mode, Python half (seqviz.widgets._live): ``.live(model, text)`` builds each widget from the
shipped model's own output on the recorded input and says so in ``live_spec``; where a kernel is attached the widget
answers the view's messages by running the package's model, showing the result (set_data) and replying with the
notes, or with a clear error. The browser half is tested in tests/browser/test_live_widgets.py (the built book) and
test_jupyterlab.py (a live kernel)."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from seqviz.live import kernel
from seqviz.widgets import AttentionHeatmap, AttentionSteps, BeamTree, LSTMGates, NextTokenDistribution
from seqviz.widgets.saved import widget_from_state

PROMPT = "ROMEO:\nBut, soft! what light"


def ask(widget, **content) -> list[dict]:
    """Send the widget a message as the view does; the replies it sent back."""
    replies = []
    widget.send = lambda msg, buffers=None: replies.append(msg)
    widget._on_live_msg(widget, {"type": "seqviz-live", "id": "t1", **content}, [])
    return replies


@pytest.fixture(scope="module")
def lm():
    m = kernel.char_lm()
    ids = torch.tensor([[m.stoi[c] for c in PROMPT]])
    with torch.no_grad():
        logits, _, attn = m.model(ids, return_attention=True)
    return m, logits[0], attn[0]


def test_next_token_live_starts_from_the_models_distribution(lm):
    m, logits, _ = lm
    w = NextTokenDistribution.live("char_lm", PROMPT, top_k=12, group="g")
    assert w.live_spec == {"model": "char_lm", "text": PROMPT, "group": "g", "input": "prompt", "multiline": True,
                           "limits": {"n": [1, 200], "seed": [0, 2**32 - 1]}}
    assert np.allclose(w.probabilities(), torch.softmax(logits[-1].double(), -1).numpy(), atol=1e-6)
    assert w.top_k == 12 and len(w.tokens) == len(m.itos)


def test_a_run_from_the_view_shows_the_models_output_and_replies_with_notes(lm):
    m, _, _ = lm
    w = NextTokenDistribution.live("char_lm", PROMPT)
    text = "x" * 70
    [reply] = ask(w, action="run", text=text)
    assert reply == {"type": "seqviz-live-reply", "id": "t1", "status": "read 64 characters",
                     "notes": ["cropped to its last 64 characters (the model reads at most 64); 6 left out"]}
    _, f = kernel.char_lm_forward(text)
    assert np.allclose(w.probabilities(), torch.softmax(f.logits[-1].double(), -1).numpy(), atol=1e-6)


def test_bad_input_from_the_view_gets_a_clear_error_and_changes_nothing():
    w = NextTokenDistribution.live("char_lm", PROMPT)
    before = bytes(w.logits)
    [reply] = ask(w, text="naïve café")
    assert reply["error"] == ('the model does not know the characters "ï", "é" (not in its vocabulary): drop them or '
                              'replace them') and reply["details"] == {"unknown": ["ï", "é"]}
    [reply] = ask(w, text="")
    assert reply["error"] == "the prompt is empty: type at least one character"
    [reply] = ask(w, text=3)
    assert reply["error"] == "the input must be text"
    [reply] = ask(w, action="dance", text="a")
    assert reply["error"].startswith("the kernel could not run the model: ValueError: unknown live action 'dance'")
    [reply] = ask(w, action="generate", text="ROMEO", n=0)
    assert "n must be a whole number from 1 to 200, got 0" in reply["error"]
    assert bytes(w.logits) == before
    assert ask(w, type="something else") == []                                   # not a live message: no reply
    plain = NextTokenDistribution(torch.zeros(3), ["a", "b", "c"])
    plain.on_msg(plain._on_live_msg)
    [reply] = ask(plain, text="a")
    assert "was not made with .live(...)" in reply["error"]


def test_generate_from_the_view_is_seqviz_decode_at_the_views_settings():
    w = NextTokenDistribution.live("char_lm", PROMPT)
    [greedy] = ask(w, action="generate", text="ROMEO.\n", n=20, greedy=True)
    assert greedy["text"] == kernel.generate_text("ROMEO.\n", 20)[1] and greedy["notes"] == []
    [a] = ask(w, action="generate", text="ROMEO.\n", n=20, greedy=False, temperature=0.7, top_k=5, seed=9)
    [b] = ask(w, action="generate", text="ROMEO.\n", n=20, greedy=False, temperature=0.7, top_k=5, seed=9)
    assert a == b and a["text"] == kernel.generate_text("ROMEO.\n", 20, greedy=False, temperature=0.7, top_k=5,
                                                        seed=9)[1]
    [bad] = ask(w, action="generate", text="ROMEO.\n", n=20, greedy=False, temperature=0, seed=9)
    assert "temperature must be > 0" in bad["error"]


def test_heatmap_live_char_lm_and_dates(lm):
    _, _, attn = lm
    w = AttentionHeatmap.live("char_lm", PROMPT, view="grid")
    assert w.shape == [4, 4, len(PROMPT), len(PROMPT)] and w.mask_shape == [1, 1, len(PROMPT), len(PROMPT)]
    assert np.abs(w.data.weights - attn.numpy()).max() < 1e-6 and w.query_tokens == list(PROMPT)
    d = AttentionHeatmap.live("dates", "3rd of March 1999", view="grid")
    assert d.query_tokens == list("1999-03-03") + ["</s>"] and d.key_tokens == list("3rd of March 1999")
    assert d.live_spec["input"] == "date" and d.live_spec["multiline"] is False
    [reply] = ask(d, text="2031-12-25")
    assert reply["status"] == f"greedy decoding: \u201c{''.join(d.query_tokens[:-1])}\u201d"
    assert reply["notes"] == [kernel.outside_formats_note("2031-12-25")]           # answered, and said
    _, ids, cross = kernel.dates_greedy("2031-12-25")
    assert np.abs(d.data.weights - cross.numpy()).max() < 1e-6 and d.mask_shape == []
    with pytest.raises(ValueError, match="AttentionHeatmap runs live with 'char_lm' or 'dates', not 'char_lstm'"):
        AttentionHeatmap.live("char_lstm", "x")


def test_steps_live_keeps_some_layers_of_the_recorded_example_and_runs_every_layer(lm):
    w = AttentionSteps.live("char_lm", PROMPT, layers=[0], head=1, query=len(PROMPT) - 1, causal=True)
    assert w.shape[:2] == [1, 4] and w.layer_ids == [0] and w.head == 1 and w.query == len(PROMPT) - 1
    _, f = kernel.char_lm_forward(PROMPT)
    assert np.allclose(w.data.q[0], f.q[0].numpy(), atol=1e-6)
    [reply] = ask(w, text="O Romeo")
    assert reply["status"] == "read 7 characters" and w.shape[:4] == [4, 4, 7, 7]
    assert (w.layer_ids[w.layer], w.head_ids[w.head], w.query, w.causal) == (0, 1, 6, True)   # the same head
    _, f = kernel.char_lm_forward("O Romeo")
    assert np.allclose(w.data.k, f.k.numpy(), atol=1e-6)


def test_lstm_live_shows_the_chosen_layer():
    m = kernel.char_lstm()
    w = LSTMGates.live("char_lstm", "ROMEO.\nBut", gate="c")
    assert w.live_spec["layer"] == 1 and w.live_spec["layers"] == 2 and w.live_spec["max_chars"] == 200
    traces = m.model.trace(torch.tensor([[m.stoi[c] for c in "ROMEO.\nBut"]]))
    assert np.allclose(w.data.values["c"], traces[1].c[0].numpy(), atol=1e-6)
    [reply] = ask(w, text="JULIET", layer=0)
    assert reply["status"] == "read 6 characters; layer 0 shown" and w.shape == [6, 384]
    traces = m.model.trace(torch.tensor([[m.stoi[c] for c in "JULIET"]]))
    assert np.allclose(w.data.values["f"], traces[0].f[0].numpy(), atol=1e-6)
    [bad] = ask(w, text="JULIET", layer=2)
    assert "layer must be a whole number from 0 to 1, got 2" in bad["error"]
    with pytest.raises(ValueError, match="layer must be"):
        LSTMGates.live("char_lstm", "x", options={"layer": 5})


def test_beam_tree_live_shows_the_whole_search():
    w = BeamTree.live("dates", "March 3, 1999", show_pruned=False)
    assert w.step == w.data.n_steps and w.joiner == "" and w.live_spec["beam_size"] == 5
    _, hyps, trace = kernel.dates_beam("March 3, 1999", 5)
    assert w.trace == trace
    w.step = 2
    [reply] = ask(w, text="Wednesday the 3rd of March 1999")
    assert reply["status"] == "beam of 5: \u201c1999-03-03\u201d; greedy: \u201c1999-03-03\u201d"
    assert w.step == w.data.n_steps and w.trace == kernel.dates_beam("Wednesday the 3rd of March 1999", 5)[2]
    with pytest.raises(ValueError, match="beam_size must be a whole number from 1 to 16"):
        BeamTree.live("dates", "x", options={"beam_size": 0})


def test_live_spec_is_checked():
    with pytest.raises(TypeError, match="the recorded input must be non-empty text"):
        NextTokenDistribution.live("char_lm", "")
    with pytest.raises(TypeError, match="group must be a name"):
        NextTokenDistribution.live("char_lm", "a", group=" ")
    with pytest.raises(ValueError, match="should be read as it is: cropped to its last 64"):
        NextTokenDistribution.live("char_lm", "a" * 70)
    with pytest.raises(Exception, match='does not know the character "ï"'):
        NextTokenDistribution.live("char_lm", "ï")


def test_a_saved_live_widget_prints_its_recorded_example():
    """The PDF rebuilds each widget from its saved state and prints .to_figure(): a live widget prints the recorded
    example, as it did before it had a live mode."""
    w = AttentionHeatmap.live("dates", "3rd of March 1999", view="grid")
    rebuilt = widget_from_state(w.get_state())
    assert rebuilt.query_tokens == w.query_tokens and rebuilt.view == "grid"
    assert rebuilt.to_figure() is not None


@pytest.mark.parametrize("value, shown", [(float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan"),
                                          (np.float64("nan"), "np.float64(nan)"), (2.5, "2.5"), (True, "True"),
                                          ("3", "'3'")])
def test_a_count_that_is_not_a_whole_number_gets_the_functions_message(value, shown):
    """NaN and the infinities are refused with the same words as any other bad count, not with int()'s
    OverflowError or ValueError."""
    from seqviz.widgets._live import count

    with pytest.raises(ValueError, match=rf"^beam_size must be a whole number from 1 to 16, got {re.escape(shown)}$"):
        BeamTree.live("dates", "03-MAR-99", options={"beam_size": value})
    with pytest.raises(ValueError, match=rf"^seed must be a whole number from 0 to 9, got {re.escape(shown)}$"):
        count(value, "seed", 0, 9)
    w = NextTokenDistribution.live("char_lm", PROMPT)
    [reply] = ask(w, action="generate", text="ROMEO", n=value)
    assert reply["error"] == f"the kernel could not run the model: ValueError: n must be a whole number from 1 to " \
                             f"200, got {shown}"


@pytest.mark.parametrize("key", ["text", "model", "group", "input", "multiline", "limits"])
def test_options_may_not_overwrite_the_specs_own_keys(key):
    """The recorded example is .live()'s text: options={"text": ...} would store a spec whose text the widget was not
    computed from (and the "Recorded example" button would run it)."""
    with pytest.raises(ValueError, match=rf"options may not set '{key}': it is the live spec's own"):
        NextTokenDistribution.live("char_lm", "ROMEO.\n", options={key: "JULIET.\n"})
    with pytest.raises(ValueError, match="options may not set 'text', 'model': they are the live spec's own"):
        BeamTree.live("dates", "03-MAR-99", options={"text": "x", "model": "char_lm"})


def test_the_kernel_and_the_view_read_one_set_of_limits():
    """The limits a view clamps to (live_spec["limits"]) are the ones the kernel applies and the export writes for the
    page's runtime (seqviz.live.limits; tests/test_js_units.py runs the page's side on them)."""
    from seqviz.live import export as live_export
    from seqviz.live.limits import LIMITS, limits

    w = NextTokenDistribution.live("char_lm", PROMPT)
    assert w.live_spec["limits"] == limits() == {k: list(v) for k, v in LIMITS.items()}
    assert live_export.make_manifest({})["limits"] == limits()
    (n_lo, n_hi), (s_lo, s_hi) = LIMITS["n"], LIMITS["seed"]
    for n, seed in ((n_hi + 1, 0), (n_lo - 1, 0), (1, s_hi + 1), (1, s_lo - 1)):
        [reply] = ask(w, action="generate", text="ROMEO", n=n, greedy=False, seed=seed)
        assert "must be a whole number" in reply["error"], (n, seed)
    [ok] = ask(w, action="generate", text="ROMEO", n=2, greedy=False, seed=s_hi)
    assert "error" not in ok and len(ok["text"]) == len("ROMEO") + 2
