"""seqviz.widgets.BeamTree and AttentionSteps, Python side: what they send, that it is what the search / attention
computed, and clear errors for bad input. The browser side (drawing, controls, the JS numbers = these numbers) is
tested in tests/browser/test_widgets_browser.py and tests/browser/test_jupyterlab.py."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from seqviz.attention import attention, causal_mask
from seqviz.decode import BeamTrace, beam_search
from seqviz.widgets import AttentionSteps, BeamTree, prepare_beam, prepare_steps
from seqviz.widgets.beam_tree import FINISHED, GREEDY_ONLY, KEPT, PRUNED
from seqviz.worked_examples import SeedBeamScorer, we_wash_our_cats


def capture(widget):
    sent = []
    widget.comm.send = lambda data=None, metadata=None, buffers=None: sent.append((data, buffers or []))
    return sent


def stored_bytes(widget) -> int:
    """Bytes a page stores for the widget's data (state JSON + base64 buffers), its ES module and CSS left out."""
    import base64
    import json

    state = {k: v for k, v in widget.get_state().items() if k not in ("_esm", "_css")}
    bufs = {k: v for k, v in state.items() if isinstance(v, (bytes, memoryview))}
    return len(json.dumps({k: v for k, v in state.items() if k not in bufs})) + \
        sum(len(base64.b64encode(bytes(v))) for v in bufs.values())


# --------------------------------------------------------------------------------------------- BeamTree -----------


@pytest.fixture(scope="module")
def seed():
    toy = SeedBeamScorer()
    out, trace = beam_search(toy.next_token_logits, [toy.bos], 3, 6, stop_id=toy.eos, trace=True, with_greedy=True)
    return toy, out, trace


def test_beam_tree_of_the_seed_example(seed):
    toy, out, trace = seed
    w = BeamTree(trace, toy, title="seed 004")
    d = w.data
    n_cands = sum(len(s) for s in trace.steps)
    assert len(d.step) == 1 + n_cands                                        # greedy's path is in the tree here
    assert w.step == d.n_steps == len(trace.steps) == 5
    assert len(w.parent) == 4 * len(d.step) and len(w.status) == len(d.step) and len(w.logprob) == 8 * len(d.step)
    # the buffers decode to the flattened trace: parents one step back, log P = the parent's + the token's
    parent = np.frombuffer(w.parent, "<i4")
    status = np.frombuffer(w.status, np.uint8)
    logprob = np.frombuffer(w.logprob, "<f8")
    assert parent[0] == -1 and (d.step[1:] == d.step[parent[1:]] + 1).all()
    assert w.step_start == [0, 1] + [1 + sum(len(s) for s in trace.steps[:t + 1]) for t in range(5)]
    labels = [w.vocab[i] for i in np.frombuffer(w.token, "<u4")]
    assert labels == d.labels and labels[0] == "<s>"
    for t, cands in enumerate(trace.steps):
        nodes = range(w.step_start[t + 1], w.step_start[t + 2])
        assert sorted(int(status[n]) for n in nodes) == sorted({"kept": KEPT, "pruned": PRUNED,
                                                                "finished": FINISHED}[c.status] for c in cands)
        for i, c in enumerate(cands):                                        # every candidate is one node
            match = [n for n in nodes if d.text(n) == toy.decode(trace.ids(t, i))]
            assert len(match) == 1 and logprob[match[0]] == c.logprob
    # greedy: How will you </s>; the search returns How are you </s> first
    assert [d.text(n) for n in w.greedy] == ["How", "How will", "How will you", "How will you </s>"]
    assert [d.text(n) for n in w.result] == [toy.decode(ids) for ids, _ in out]
    assert d.text(w.result[0]) == "How are you </s>" and status[w.result[0]] == FINISHED
    assert stored_bytes(w) < 4_000                                          # 79 nodes


def test_drawing_order_groups_children_under_their_parent(seed):
    toy, _, trace = seed
    d = BeamTree(trace, toy).data
    for t in range(1, d.n_steps + 1):
        nodes = [n for n in range(len(d.step)) if d.step[n] == t and d.status[n] != GREEDY_ONLY]
        parents = [int(d.parent[n]) for n in nodes]
        assert parents == sorted(parents)                                   # grouped, in the parents' order
        for p in set(parents):                                              # best ranked first within a parent
            lps = [d.logprob[n] for n in nodes if d.parent[n] == p]
            assert lps == sorted(lps, reverse=True)


def test_beam_at_lists_the_beam_with_both_scores(seed):
    toy, out, trace = seed
    w = BeamTree(trace, toy, step=2)
    assert [r[0] for r in w.beam_at()] == ["How will", "How are", "How do"]
    rows = w.beam_at(5)
    assert rows[0][:2] == ("How are you </s>", out[0][1]) and rows[0][3] == "finished"
    w.normalise, w.alpha = True, 1.0
    rows = w.beam_at(5)
    assert rows[0][0] == "How do you do </s>"                               # -3.35 / 5 beats -2.81 / 4
    for text, lp, norm, _ in rows:
        assert math.isclose(norm, trace.rank(lp, len(text.split()), 1.0), rel_tol=1e-12)


def _parting_scorer():
    """Tokens a b c </s> <s>: 'a' is the best first token (greedy takes it), but after 'b' two tokens are likely,
    so a beam of 2 keeps 'b b' and 'b c' and prunes greedy's 'a a' at step 2."""
    table = {(): [0.34, 0.33, 0.33, 0.0], (0,): [0.26, 0.25, 0.25, 0.24], (1,): [0.01, 0.49, 0.49, 0.01]}

    def f(ctx):
        p = torch.tensor(table.get(tuple(ctx[1:]), [0.1, 0.1, 0.1, 0.7]) + [0.0], dtype=torch.float64)
        return torch.log(p)
    return f, ["a", "b", "c", "</s>", "<s>"]


def test_greedy_path_that_leaves_the_beam_gets_its_own_nodes():
    f, itos = _parting_scorer()
    w = BeamTree.from_search(f, [4], 2, 4, stop_id=3, tokens=itos)
    d = w.data
    texts = [d.text(n) for n in w.greedy]
    assert texts == ["a", "a a", "a a </s>"]
    st = [int(d.status[n]) for n in w.greedy]
    assert st == [KEPT, PRUNED, GREEDY_ONLY]                                # pruned at step 2, then on its own
    only = [n for n in range(len(d.step)) if d.status[n] == GREEDY_ONLY]
    assert only == [w.greedy[2]] and d.parent[only[0]] == w.greedy[1]
    assert only[0] == w.step_start[4] - 1                                   # last in its step
    assert math.isclose(d.logprob[only[0]], math.log(0.34 * 0.26 * 0.7), rel_tol=1e-12)


def test_beam_tree_traits_validated_and_sent(seed):
    toy, _, trace = seed
    w = BeamTree(trace, toy)
    sent = capture(w)
    w.step = 2
    w.show_pruned = False
    w.normalise = True
    assert [m["state"] for m, _ in sent] == [{"step": 2}, {"show_pruned": False}, {"normalise": True}]
    with pytest.raises(ValueError, match="step=6 is out of range; the search has steps 1 to 5"):
        w.step = 6
    with pytest.raises(ValueError, match="step=0"):
        w.step = 0
    with pytest.raises(ValueError, match="alpha"):
        w.alpha = float("nan")
    sent.clear()
    f, itos = _parting_scorer()
    _, tr2 = beam_search(f, [4], 2, 4, stop_id=3, trace=True)
    w.set_data(tr2, itos)
    assert len(sent) == 1 and {"parent", "status", "logprob", "token"} <= {p[0] for p in sent[0][0]["buffer_paths"]}
    assert w.step == 2 and w.greedy == []                                    # clamped to the new search's steps


def _replace_candidate(trace, t, i, **kw):
    steps = [list(s) for s in trace.steps]
    steps[t][i] = dataclasses.replace(steps[t][i], **kw)
    return dataclasses.replace(trace, steps=tuple(tuple(s) for s in steps))


@pytest.mark.parametrize("make, tokens, err, match", [
    (lambda tr: tr.steps, None, TypeError, "must be the BeamTrace"),
    (lambda tr: dataclasses.replace(tr, steps=()), None, ValueError, "no step"),
    (lambda tr: dataclasses.replace(tr, steps=(tr.steps[0], ())), None, ValueError, r"step 2 .* no candidates"),
    (lambda tr: dataclasses.replace(tr, steps=(tr.steps[0], [1, 2])), None, TypeError, "must be a BeamCandidate"),
    (lambda tr: _replace_candidate(tr, 1, 0, parent=7), None, ValueError,
     r"trace.steps\[1\]\[0\] has parent 7, but step 1 kept 3 hypotheses"),
    (lambda tr: _replace_candidate(tr, 0, 1, parent=1), None, ValueError, "the prompt is step 1's only parent"),
    (lambda tr: _replace_candidate(tr, 0, 0, status="alive"), None, ValueError, "status 'alive'"),
    (lambda tr: _replace_candidate(tr, 2, 3, logprob=float("nan")), None, ValueError, "NaN"),
    (lambda tr: _replace_candidate(tr, 2, 3, logprob=-math.inf), None, ValueError, "must be finite"),
    (lambda tr: _replace_candidate(tr, 2, 3, token_logprob=0.5), None, ValueError, "> 0: a log-probability"),
    (lambda tr: _replace_candidate(tr, 2, 3, logprob=-1.0), None, ValueError, "does not hold together"),
    (lambda tr: dataclasses.replace(tr, beam_size=2), None, ValueError, "keeps 3 hypotheses, more than beam_size=2"),
    (lambda tr: _replace_candidate(tr, 0, 0, token=True), None, TypeError, "int id"),
    (lambda tr: tr, ["<s>", "</s>", "How"], ValueError, r"token id \d+ .* is not in tokens \(3 entries\)"),
    (lambda tr: tr, "How are you", TypeError, "not one string"),
    (lambda tr: tr, [None] * 40, TypeError, r"tokens\[0\] is NoneType"),
    (lambda tr: dataclasses.replace(tr, stop_id=7), None, ValueError, "is finished but its token 1 is not stop_id 7"),
    (lambda tr: dataclasses.replace(tr, hypotheses=(((5, 5, 5), -1.0),)), None, ValueError,
     "not a kept or finished path"),
    (lambda tr: dataclasses.replace(tr, greedy=((2, float("nan")),)), None, ValueError, "NaN"),
    (lambda tr: dataclasses.replace(tr, greedy=((2,),)), None, ValueError, r"\(token, token_logprob\) pair"),
])
def test_beam_tree_bad_input_says_what_is_wrong(seed, make, tokens, err, match):
    toy, _, trace = seed
    with pytest.raises(err, match=match):
        BeamTree(make(trace), toy if tokens is None else tokens)


def test_a_duplicate_continuation_is_an_error(seed):
    toy, _, trace = seed
    steps = list(trace.steps)
    steps[0] = steps[0] + (dataclasses.replace(steps[0][3]),)
    with pytest.raises(ValueError, match="twice after the same hypothesis"):
        prepare_beam(dataclasses.replace(trace, steps=tuple(steps)), toy)


def test_beam_tree_static_figure(seed):
    toy, _, trace = seed
    w = BeamTree(trace, toy, step=3, root_label="$<s>$")
    fig = w.to_figure()
    assert isinstance(fig, Figure)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert len(texts) == 1 + sum(len(s) for s in trace.steps[:3])          # every node up to step 3
    assert any(t.startswith("are") for t in texts) and not any(t.startswith("doing") for t in texts)
    fig.canvas.draw()                                                       # "$" in a label is not mathtext
    assert len(w.to_figure(step=5, show_pruned=False).axes[0].texts) == 1 + sum(
        c.status != "pruned" for s in trace.steps for c in s)
    with pytest.raises(ValueError, match="step=9"):
        w.to_figure(step=9)


@pytest.mark.parametrize("length_penalty", [-0.5, 0.6, 6.0, 12])
def test_beam_tree_draws_a_search_with_any_length_penalty(length_penalty):
    # the widget's default alpha is the search's own exponent, so it takes every exponent beam_search takes
    f, itos = _parting_scorer()
    out, trace = beam_search(f, [4], 2, 4, stop_id=3, length_penalty=length_penalty, trace=True)
    w = BeamTree(trace, itos, normalise=True)
    assert w.alpha == w.length_penalty == length_penalty
    rows = w.beam_at(w.data.n_steps)                                        # ranked by log P / N^alpha
    assert rows[0][1] == out[0][1]                                          # the search's best comes first
    for text, lp, norm, _ in rows:
        assert math.isclose(norm, trace.rank(lp, len(text.split())), rel_tol=1e-12)
    w.alpha = -2                                                            # and any other finite exponent
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="alpha .* must be a finite number"):
            w.alpha = bad
    for bad in (float("nan"), float("inf"), True, "1"):
        with pytest.raises(ValueError, match="length_penalty .* must be a finite number"):
            beam_search(f, [4], 2, 4, stop_id=3, length_penalty=bad)


def test_from_search_passes_the_search_and_the_widget_arguments():
    f, itos = _parting_scorer()
    w = BeamTree.from_search(f, [4], 2, 4, stop_id=3, length_penalty=0.5, tokens=itos, greedy=False, step=1,
                             joiner="", title="t")
    assert (w.beam_size, w.length_penalty, w.alpha, w.step, w.joiner, w.title) == (2, 0.5, 0.5, 1, "", "t")
    assert w.greedy == [] and w.trace.greedy is None and isinstance(w.trace, BeamTrace)
    assert w.data.text(w.result[0], "") in {"bb</s>", "bc</s>", "cb</s>", "cc</s>"}


# ---------------------------------------------------------------------------------------- AttentionSteps ----------


def _qkv(L=2, H=3, Tq=5, Tk=5, dk=4, dv=6, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(L, H, Tq, dk, generator=g, dtype=dtype) * 2, torch.randn(L, H, Tk, dk, generator=g,
                                                                                  dtype=dtype) * 2,
            torch.randn(L, H, Tk, dv, generator=g, dtype=dtype))


def toks(n, prefix="t"):
    return [f"{prefix}{i}" for i in range(n)]


@pytest.mark.parametrize("causal", [False, True])
def test_compute_equals_attention_for_every_query_layer_and_head(causal):
    q, k, v = _qkv()
    w = AttentionSteps(q, k, v, toks(5), causal=causal)
    assert w.dtype == "f4" and len(w.q) == 4 * q.numel()                    # float32 stays float32 (4 bytes)
    mask = torch.from_numpy(causal_mask(5)) if causal else None
    out, weights = attention(q.double(), k.double(), v.double(), mask)     # (L, H, T, d_v), (L, H, T, T)
    for l in range(2):
        for h in range(3):
            for i in range(5):
                r = w.compute(i, l, h)
                np.testing.assert_allclose(r.weights, weights[l, h, i].numpy(), atol=1e-12, rtol=0)
                np.testing.assert_allclose(r.output, out[l, h, i].numpy(), atol=1e-12, rtol=0)
                np.testing.assert_allclose(r.dots, (k[l, h].double() @ q[l, h, i].double()).numpy(), atol=1e-12)
                np.testing.assert_allclose(r.scaled, r.dots / 2.0, rtol=1e-15)   # d_k = 4
                np.testing.assert_allclose(r.weighted.sum(0), r.output, atol=1e-12)
                assert r.mask.tolist() == [not causal or j <= i for j in range(5)]
                assert (r.weights[~r.mask] == 0).all()


def test_the_seed_example_numbers(tmp_path):
    v = torch.randn(4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ex = we_wash_our_cats(v)
    q = torch.zeros(1, 64, dtype=torch.float64)
    q[0, 0] = 1.0                                                           # q_1 = e_1, as the example builds it
    k = torch.zeros(4, 64, dtype=torch.float64)
    k[:, 0] = ex.raw
    w = AttentionSteps(q, k, v, ["We"], key_tokens=list(ex.tokens), query_positions=[0])
    assert w.dtype == "f8" and w.shape == [1, 1, 1, 4, 64, 4]
    r = w.compute()
    np.testing.assert_array_equal(r.dots, [13, 24, 20, 12])
    np.testing.assert_array_equal(r.scaled, [1.625, 3.0, 2.5, 1.5])
    np.testing.assert_allclose(r.weights, ex.weights.numpy(), atol=1e-15)
    np.testing.assert_allclose(r.output, ex.output.numpy(), atol=1e-15)
    np.testing.assert_allclose(w.compute(causal=True).weights, ex.causal_weights.numpy(), atol=1e-15)
    assert w.compute(causal=True).weights.tolist() == [1.0, 0.0, 0.0, 0.0]  # "We" sees only itself
    fig = w.to_figure(causal=True)
    assert isinstance(fig, Figure) and len(fig.axes) == 4                   # 3 panels + a colour bar
    fig.savefig(tmp_path / "steps.png")


def test_from_model_reads_every_layer_and_head():
    from seqviz.transformer import TransformerConfig, TransformerLM

    torch.manual_seed(0)
    model = TransformerLM(TransformerConfig.tiny(23, num_layers=3))
    ids = torch.randint(23, (9,), generator=torch.Generator().manual_seed(1))
    w = AttentionSteps.from_model(model, ids, toks(9))
    assert w.shape == [3, 2, 9, 9, 16, 16] and w.causal and w.query == 8 and w.dtype == "f4"
    want = model.attention_weights(ids)                                     # (L, H, T, T) the model's own
    for l in range(3):
        for h in range(2):
            for i in (0, 4, 8):
                np.testing.assert_allclose(w.compute(i, l, h).weights, want[l, h, i].numpy(), atol=1e-6, rtol=0)
    part = AttentionSteps.from_model(model, ids, toks(9), layers=[2], heads=1, query=3, causal=False)
    assert part.shape[:2] == [1, 1] and (part.layer_ids, part.head_ids) == ([2], [1]) and not part.causal
    np.testing.assert_array_equal(part.data.q[0, 0], w.data.q[2, 1])
    with pytest.raises(ValueError, match="layers entry=3 is out of range"):
        AttentionSteps.from_model(model, ids, toks(9), layers=[3])
    with pytest.raises(ValueError, match="distinct"):
        AttentionSteps.from_model(model, ids, toks(9), heads=[0, 0])


def test_query_causal_layer_head_validated_and_sent():
    q, k, v = _qkv()
    w = AttentionSteps(q, k, v, toks(5))
    sent = capture(w)
    w.query = 4
    w.causal = True
    w.layer = 1
    w.head = 2
    assert [m["state"] for m, _ in sent] == [{"query": 4}, {"causal": True}, {"layer": 1}, {"head": 2}]
    for trait, value, match in [("query", 5, "query=5 is out of range.*0 and 4"), ("query", -1, "query=-1"),
                                ("layer", 2, "layer=2"), ("head", 3, "head=3")]:
        with pytest.raises(ValueError, match=match):
            setattr(w, trait, value)
    with pytest.raises(ValueError, match="query=7 is out of range"):
        AttentionSteps(q, k, v, toks(5), query=7)
    sent.clear()
    w.set_data(*(x[0, 0, :3] for x in _qkv(seed=1)), toks(3, "x"))
    assert len(sent) == 1 and (w.query, w.layer, w.head) == (2, 0, 0) and w.shape == [1, 1, 3, 3, 4, 6]


@pytest.mark.parametrize("args, kw, err, match", [
    (_qkv(Tq=3, Tk=5), {}, ValueError, "3 queries and 5 keys .* key_tokens is needed"),
    (_qkv(), {"key_tokens": toks(4)}, ValueError, "key_tokens has 4 entries but the number of keys T_k is 5"),
    (_qkv(Tq=3, Tk=5), {"key_tokens": toks(5), "query_positions": [0, 1, 5]}, ValueError,
     r"query_positions\[2\]=5 is out of range"),
    (_qkv(Tq=3, Tk=5), {"key_tokens": toks(5), "query_positions": [0, 1]}, ValueError, "has 2 entries but .* 3"),
    ((*_qkv()[:2], _qkv(Tk=4)[2]), {}, ValueError, r"one value per key\): k has 5 positions, v has 4"),
    ((_qkv(dk=3)[0], *_qkv()[1:]), {}, ValueError, "same width d_k .* q has d_k = 3, k has 4"),
    ((_qkv(H=2)[0], *_qkv()[1:]), {}, ValueError, r"same \(layers, heads\) axes"),
    ((torch.zeros(1, 1, 1, 5, 4), *_qkv()[1:]), {}, ValueError, "got rank 5.*pick one example"),
    ((torch.zeros(4), *_qkv()[1:]), {}, ValueError, "got rank 1"),
    ((_qkv()[0].masked_fill(torch.rand(2, 3, 5, 4) < 0.1, float("nan")), *_qkv()[1:]), {}, ValueError,
     "q contains NaN"),
    ((*_qkv()[:2], _qkv()[2] * float("inf")), {}, ValueError, "v contains an infinite value"),
    (("q", *_qkv()[1:]), {}, TypeError, "q must be a tensor"),
    ((torch.zeros(2, 3, 0, 4), *_qkv()[1:]), {}, ValueError, "q is empty"),
    ((_qkv()[0].to(torch.complex64), *_qkv()[1:]), {}, TypeError, "real numbers"),
    (_qkv(L=40, H=8, Tq=40, Tk=40, dk=16, dv=16), {}, ValueError, "more than the widget sends"),
])
def test_attention_steps_bad_input_says_what_is_wrong(args, kw, err, match):
    with pytest.raises(err, match=match):
        AttentionSteps(*args, toks(args[0].shape[-2]) if isinstance(args[0], torch.Tensor) and args[0].dim() > 1
                       else toks(5), **kw)


def test_prepare_steps_keeps_float64_exact_and_rounds_float32_as_sent():
    q, k, v = _qkv(dtype=torch.float64)
    d = prepare_steps(q, k, v, toks(5))
    assert d.dtype == "f8" and np.array_equal(d.q, q.numpy())
    d32 = prepare_steps(q.float(), k.numpy().astype(np.float32), v.float(), toks(5))
    assert d32.dtype == "f4" and np.array_equal(d32.k, k.numpy().astype(np.float32).astype(np.float64))
    mixed = prepare_steps(q, k.float(), v, toks(5))                         # any float32 input: all travel as f4
    assert mixed.dtype == "f4" and np.array_equal(mixed.q, q.float().double().numpy())
    w = AttentionSteps(q, k, v, toks(5))
    assert np.frombuffer(w.v, "<f8").reshape(v.shape).tolist() == v.tolist()


def test_attention_steps_payload_is_compact():
    q, k, v = _qkv(L=4, H=4, Tq=40, Tk=40, dk=40, dv=40)                   # the chapter 7 char model's size
    w = AttentionSteps(q, k, v, toks(40))
    assert stored_bytes(w) < 1.05 * (4 / 3) * 4 * q.numel() * 3 + 2_000     # float32 bytes, base64, little JSON
