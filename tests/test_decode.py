"""seqviz.decode: temperature, top-k, greedy, sampling and beam search over a score function."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqviz.decode import beam_search, generate, sample_next, softmax_with_temperature, top_k_filter

logit_lists = st.lists(st.floats(-20, 20, allow_nan=False), min_size=1, max_size=30)


@settings(max_examples=80, deadline=None)
@given(logit_lists, st.floats(0.05, 20))
def test_temperature_softmax_is_a_distribution_and_equals_p_pow(z, T):
    p = softmax_with_temperature(z, T)
    assert math.isclose(float(p.sum()), 1.0, abs_tol=1e-9) and (p >= 0).all()
    # the same as p^(1/T) renormalised, where p = softmax(z)
    base = torch.softmax(torch.tensor(z, dtype=torch.float64), 0)
    q = base ** (1 / T)
    if torch.isfinite(q).all() and q.sum() > 1e-200:
        assert torch.allclose(p, q / q.sum(), atol=1e-8)


def test_numpy_temperature_is_a_number():
    assert torch.allclose(softmax_with_temperature([1.0, 2.0], np.float32(0.5)), softmax_with_temperature([1.0, 2.0], 0.5))


def test_temperature_extremes():
    z = torch.tensor([1.0, 3.0, 2.0])
    assert softmax_with_temperature(z, 1e-3).argmax() == 1 and softmax_with_temperature(z, 1e-3).max() > 0.999
    flat = softmax_with_temperature(z, 1e4)
    assert torch.allclose(flat, torch.full((3,), 1 / 3, dtype=torch.float64), atol=1e-3)
    # log-probabilities and logits give the same distribution
    assert torch.allclose(softmax_with_temperature(torch.log_softmax(z, 0), 0.7), softmax_with_temperature(z, 0.7))


def test_top_k_keeps_k_best():
    z = np.array([0.1, 5.0, 3.0, -1.0, 4.0])
    f = top_k_filter(z, 2)
    assert torch.isfinite(f).tolist() == [False, True, False, False, True]
    assert torch.equal(top_k_filter(z, None), torch.as_tensor(z, dtype=torch.float64))
    assert torch.isfinite(top_k_filter(z, 10)).all()
    gen = torch.Generator().manual_seed(0)
    draws = {sample_next(z, 5.0, top_k=2, generator=gen) for _ in range(200)}
    assert draws == {1, 4}


def _bigram_score_fn():
    # a tiny deterministic "LM" over 4 tokens: after token i, token (i+1) % 4 is most likely
    table = torch.log(torch.tensor([[0.1, 0.6, 0.2, 0.1],
                                    [0.1, 0.1, 0.7, 0.1],
                                    [0.1, 0.1, 0.1, 0.7],
                                    [0.5, 0.2, 0.2, 0.1]]))
    return lambda ctx: table[ctx[-1]]


def test_greedy_is_the_temperature_zero_limit():
    f = _bigram_score_fn()
    greedy = generate(f, [0], 8, greedy=True)
    assert greedy == [1, 2, 3, 0, 1, 2, 3, 0]
    cold = generate(f, [0], 8, temperature=1e-4, seed=3)
    assert cold == greedy


def test_sampling_is_seeded_and_stops():
    f = _bigram_score_fn()
    a = generate(f, [0], 30, temperature=1.5, seed=11)
    b = generate(f, [0], 30, temperature=1.5, seed=11)
    assert a == b and len(a) == 30
    stopped = generate(f, [2], 50, greedy=True, stop_id=0)
    assert stopped == [3, 0]  # the stop token is kept, nothing after it
    assert generate(f, [0], 0) == []


def test_sampling_frequencies_follow_temperature():
    z = torch.log(torch.tensor([0.7, 0.2, 0.1]))
    gen = torch.Generator().manual_seed(0)
    counts = np.bincount([sample_next(z, 1.0, generator=gen) for _ in range(4000)], minlength=3) / 4000
    assert np.allclose(counts, [0.7, 0.2, 0.1], atol=0.03)


def test_beam_search_beats_greedy_when_greedy_is_myopic():
    # greedy takes token 1 (p=.5) then is stuck with a flat tail; token 2 (p=.4) leads to a sure continuation
    def f(ctx):
        if len(ctx) == 1:
            return torch.log(torch.tensor([0.05, 0.5, 0.4, 0.05]))
        if ctx[1] == 1:
            return torch.log(torch.tensor([0.3, 0.25, 0.25, 0.2]))
        return torch.log(torch.tensor([0.97, 0.01, 0.01, 0.01]))
    greedy = generate(f, [3], 2, greedy=True)
    best, lp = beam_search(f, [3], beam_size=2, max_new_tokens=2)[0]
    assert greedy[0] == 1 and best == [2, 0]
    assert math.isclose(lp, math.log(0.4) + math.log(0.97), rel_tol=1e-6)
    # beam size 1 is greedy
    assert beam_search(f, [3], beam_size=1, max_new_tokens=2)[0][0] == greedy


def test_beam_search_stops_at_stop_id():
    f = _bigram_score_fn()
    out = beam_search(f, [2], beam_size=3, max_new_tokens=6, stop_id=0)
    ids, lp = out[0]
    assert ids == [3, 0] and math.isclose(lp, math.log(0.7 * 0.5), rel_tol=1e-6)
    assert len(out) <= 3 and all(o[1] <= lp + 1e-12 for o in out)


@pytest.mark.parametrize("bad, err", [(0.0, ValueError), (-1.0, ValueError), (float("nan"), TypeError),
                                      ("hot", TypeError)])
def test_bad_temperature(bad, err):
    with pytest.raises(err, match="temperature"):
        softmax_with_temperature([1.0, 2.0], bad)


def test_bad_scores_and_arguments():
    with pytest.raises(ValueError, match=r"shape \(V,\)"):
        softmax_with_temperature([[1.0, 2.0]], 1.0)
    with pytest.raises(ValueError, match="empty"):
        softmax_with_temperature([], 1.0)
    with pytest.raises(ValueError, match="NaN"):
        softmax_with_temperature([1.0, float("nan")], 1.0)
    with pytest.raises(ValueError, match="-inf"):
        softmax_with_temperature([-math.inf, -math.inf], 1.0)
    with pytest.raises(ValueError, match="top_k"):
        top_k_filter([1.0, 2.0], 0)
    f = _bigram_score_fn()
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(f, [0], -1)
    with pytest.raises(ValueError, match="temperature"):
        generate(f, [0], 3, temperature=0)
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(f, [0], 0, 3)


# ---------------------------------------------------------------------------------------------------------------
# incremental, batched decoding: the stepper contract, checked against the full-prefix decoder it replaces

from seqviz.decode import ContextStepper, as_stepper  # noqa: E402


def _scores(z):
    return (z.detach() if torch.is_tensor(z) else torch.as_tensor(np.asarray(z))).to(torch.float64)


def _reference_generate(score_fn, prompt_ids, max_new_tokens, *, temperature=1.0, top_k=None, greedy=False,
                        stop_id=None, seed=None):
    """The decoder before incremental decoding: re-score the whole context for every new token."""
    context = [int(i) for i in prompt_ids]
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    new = []
    for _ in range(max_new_tokens):
        z = _scores(score_fn(context))
        nxt = int(torch.argmax(z).item()) if greedy else sample_next(z, temperature, top_k, gen)
        new.append(nxt)
        context.append(nxt)
        if stop_id is not None and nxt == stop_id:
            break
    return new


def _reference_beam(score_fn, prompt_ids, beam_size, max_new_tokens, stop_id=None, length_penalty=0.0):
    """The textbook beam, written independently of seqviz.decode: every hypothesis extended by *every* token (no
    per-row top-k), the candidates ranked, </s> endings finished and the others kept until ``beam_size`` are live;
    no early stop (it runs until nothing is live or max_new_tokens)."""
    prompt = [int(i) for i in prompt_ids]

    def rank(item):
        ids, lp = item
        return lp / (max(len(ids), 1) ** length_penalty)

    beams, finished = [([], 0.0)], []
    for _ in range(max_new_tokens):
        candidates = []
        for ids, lp in beams:
            logp = torch.log_softmax(_scores(score_fn(prompt + ids)), dim=0)
            candidates += [(ids + [i], lp + v) for i, v in enumerate(logp.tolist()) if v != -math.inf]
        candidates.sort(key=rank, reverse=True)
        beams = []
        for ids, lp in candidates:
            (finished if stop_id is not None and ids[-1] == stop_id else beams).append((ids, lp))
            if len(beams) == beam_size:
                break
        if not beams:
            break
    return sorted(finished + beams, key=rank, reverse=True)[:beam_size]


def _exhaustive(score_fn, prompt_ids, max_new_tokens, stop_id, length_penalty):
    """Every continuation: ended by stop_id or by max_new_tokens; ranked as the beam ranks them. Best first."""
    prompt, out = [int(i) for i in prompt_ids], []

    def grow(ids, lp):
        if (ids and ids[-1] == stop_id) or len(ids) == max_new_tokens:
            out.append((ids, lp))
            return
        logp = torch.log_softmax(_scores(score_fn(prompt + ids)), dim=0)
        for i, v in enumerate(logp.tolist()):
            if v != -math.inf:
                grow(ids + [i], lp + v)
    grow([], 0.0)
    return sorted(out, key=lambda h: h[1] / (max(len(h[0]), 1) ** length_penalty), reverse=True)


def _random_scorer(V=9, seed=0, blocked=None):
    """A deterministic LM over V tokens whose scores depend on the last two ids (and -inf for `blocked`)."""
    table = torch.randn(V, V, V, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 2

    def f(ctx):
        a, b = ([0, 0] + list(ctx))[-2:]
        z = table[a, b].clone()
        if blocked is not None:
            z[blocked] = -math.inf
        return z
    return f


def _same_beams(got, want):
    assert [ids for ids, _ in got] == [ids for ids, _ in want]
    assert all(math.isclose(a, b, rel_tol=0, abs_tol=1e-9) for (_, a), (_, b) in zip(got, want))


@pytest.mark.parametrize("beam_size", [1, 2, 4, 7])
@pytest.mark.parametrize("stop_id,length_penalty", [(None, 0.0), (3, 0.0), (3, 1.0), (5, 0.6)])
def test_batched_beam_equals_the_textbook_beam(beam_size, stop_id, length_penalty):
    for seed in range(3):
        f = _random_scorer(seed=seed, blocked=[8])                     # a token no hypothesis may take
        got = beam_search(f, [1, 2], beam_size, 8, stop_id=stop_id, length_penalty=length_penalty)
        _same_beams(got, _reference_beam(f, [1, 2], beam_size, 8, stop_id, length_penalty))
        assert all(8 not in ids for ids, _ in got)


@pytest.mark.parametrize("length_penalty", [0.0, 0.6, 1.0])
def test_a_beam_that_holds_every_hypothesis_is_exhaustive_search(length_penalty):
    """V = 4 tokens, 4 steps: a beam of width 4**4 never prunes, so it must return exhaustive search's ranking."""
    for seed in range(4):
        f = _random_scorer(V=4, seed=seed)
        want = _exhaustive(f, [1], 4, 3, length_penalty)
        got = beam_search(f, [1], 4 ** 4, 4, stop_id=3, length_penalty=length_penalty)
        _same_beams(got[:10], want[:10])


def test_a_finished_hypothesis_does_not_cost_a_live_one():
    """</s> is the best first token, so a beam of 2 that expands only 2 tokens a row keeps 'a' alone and loses
    'b </s>', the best hypothesis under length normalisation (exhaustive search finds it)."""
    a, b, eos = 0, 1, 2
    table = {(): [0.35, 0.25, 0.40], (a,): [0.25, 0.25, 0.50], (b,): [0.025, 0.025, 0.95]}

    def f(ctx):
        probs = table.get(tuple(ctx[1:]), [0.1, 0.1, 0.8])
        return torch.log(torch.tensor(probs, dtype=torch.float64))

    best_ids, best_lp = _exhaustive(f, [9], 3, eos, 1.0)[0]
    assert best_ids == [b, eos]                                          # log(.25 * .95) / 2 = -0.72
    (ids, lp), _ = beam_search(f, [9], 2, 3, stop_id=eos, length_penalty=1.0)
    assert (ids, lp) == (best_ids, best_lp)
    assert beam_search(f, [9], 2, 3, stop_id=eos, length_penalty=0.0)[0][0] == [eos]   # plain sum: </s> at 0.40


def _stop_first_scorer():
    """Tokens a b c </s>: </s> is the likeliest first token (0.6), but 'a b c </s>' ranks best once the
    log-probability is divided by the length (log 0.281 / 4 = -0.317 against log 0.6 = -0.511)."""
    table = {(): [0.35, 0.03, 0.02, 0.60], (0,): [0.02, 0.90, 0.05, 0.03], (0, 1): [0.03, 0.01, 0.92, 0.04],
             (0, 1, 2): [0.012, 0.01, 0.008, 0.97]}                      # no ties: one ranking, whatever the sort

    def f(ctx):
        return torch.log(torch.tensor(table.get(tuple(ctx[1:]), [0.4, 0.3, 0.2, 0.1]), dtype=torch.float64))
    return f


@pytest.mark.parametrize("beam_size", [1, 2])
@pytest.mark.parametrize("length_penalty", [1.0, 1.5, 2.0])
def test_a_likely_early_stop_does_not_end_a_length_normalised_search(beam_size, length_penalty):
    """With length_penalty > 0 a live hypothesis's rank can still rise (its length grows faster than its log-prob
    falls), so a finished '</s>' that outranks it now must not stop the search: the bound is its log-prob over
    max_new_tokens ** length_penalty, not its rank now."""
    f = _stop_first_scorer()
    best = _exhaustive(f, [9], 4, 3, length_penalty)[0]
    assert best[0] == [0, 1, 2, 3]
    got = beam_search(f, [9], beam_size, 4, stop_id=3, length_penalty=length_penalty)
    assert got[0][0] == best[0] and math.isclose(got[0][1], best[1], abs_tol=1e-12)
    _same_beams(got, _reference_beam(f, [9], beam_size, 4, 3, length_penalty))
    for seed in range(6):                                                 # random LMs whose </s> is likely first
        g = _random_scorer(V=6, seed=seed)
        h = lambda ctx: g(ctx) + torch.tensor([0, 0, 0, 4.0, 0, 0], dtype=torch.float64) * (len(ctx) == 1)  # noqa
        _same_beams(beam_search(h, [1], beam_size, 6, stop_id=3, length_penalty=length_penalty),
                    _reference_beam(h, [1], beam_size, 6, 3, length_penalty))


class CountingStepper(ContextStepper):
    """The adapter, counting its step calls and the rows it scores."""

    def __init__(self, score_fn):
        super().__init__(score_fn)
        self.calls, self.rows = 0, []

    def step(self, ids, state):
        self.calls += 1
        self.rows.append(ids.shape[0])
        return super().step(ids, state)


def test_beam_scores_all_hypotheses_in_one_step_per_token():
    stepper = CountingStepper(_random_scorer(seed=4))
    out = beam_search(stepper, [1], beam_size=4, max_new_tokens=6)
    assert len(out) == 4 and all(len(ids) == 6 for ids, _ in out)
    assert stepper.calls == 6                                            # the prompt, then one batch per new token
    assert stepper.rows == [1, 4, 4, 4, 4, 4]


def test_beam_width_one_is_greedy():
    for seed in range(4):
        f = _random_scorer(seed=seed)
        assert beam_search(f, [2], 1, 10, stop_id=3)[0][0] == generate(f, [2], 10, greedy=True, stop_id=3)


def _tiny_rnn_lm(dropout=0.0):
    from seqviz import set_seed
    from seqviz.rnn import RNNLM, RNNLMConfig

    set_seed(0)
    model = RNNLM(RNNLMConfig.tiny(23, num_layers=2, dropout=dropout)).double()
    with torch.no_grad():
        model.E.weight.mul_(20)                                          # spread the logits: no near-ties
    return model


def _tiny_ngram():
    from seqviz.ngram import NGramConfig, NGramLM

    g = torch.Generator().manual_seed(0)
    words = "the a cat dog sat ran on mat here".split()
    sents = [[words[int(i)] for i in torch.randint(len(words), (int(n),), generator=g)]
             for n in torch.randint(2, 8, (60,), generator=g)]
    return NGramLM(NGramConfig(n=3)).fit(sents)


def _tiny_window_lm():
    from seqviz import set_seed
    from seqviz.window import WindowConfig, WindowLM

    set_seed(0)
    return WindowLM(WindowConfig.tiny(17, context=3)).double()


def test_rnn_incremental_decoding_equals_full_prefix_decoding():
    """RecurrentLM.step carries h: token for token what re-running the whole prefix gives, for every decoder."""
    model = _tiny_rnn_lm(dropout=0.3)
    model.train()
    full = model.next_token_logits                                       # re-runs the prefix from zeros
    prompt = [2, 5, 7]
    assert generate(model, prompt, 25, greedy=True) == _reference_generate(full, prompt, 25, greedy=True)
    for seed in range(3):
        assert (generate(model, prompt, 25, temperature=1.3, top_k=6, seed=seed)
                == _reference_generate(full, prompt, 25, temperature=1.3, top_k=6, seed=seed))
    stop = generate(model, prompt, 25, greedy=True)[4]
    assert generate(model, prompt, 25, greedy=True, stop_id=stop) == _reference_generate(full, prompt, 25,
                                                                                        greedy=True, stop_id=stop)
    for beam_size, lp in ((1, 0.0), (3, 0.0), (5, 0.7)):
        _same_beams(beam_search(model, prompt, beam_size, 8, stop_id=stop, length_penalty=lp),
                    _reference_beam(full, prompt, beam_size, 8, stop, lp))
    assert model.training                                                # the decoder restores the mode
    assert generate(model, prompt, 10, greedy=True) == generate(full, prompt, 10, greedy=True)


def test_rnn_step_and_reorder_state():
    model = _tiny_rnn_lm().eval()
    idx = torch.randint(23, (3, 6))
    whole, _ = model(idx)
    logits, state = model.step(idx[:, :2])
    assert logits.shape == (3, 23) and state.shape == (2, 3, 16)
    for t in range(2, 6):
        logits, state = model.step(idx[:, t:t + 1], state)
        assert torch.allclose(logits, whole[:, t], atol=1e-12)
    picked = model.reorder_state(state, torch.tensor([2, 0, 0, 1]))     # beams: keep, duplicate, drop rows
    assert picked.shape == (2, 4, 16) and torch.equal(picked[:, 1], state[:, 0]) and torch.equal(picked[:, 3],
                                                                                                 state[:, 1])


def test_ngram_and_window_decode_through_the_adapter_unchanged():
    ngram = _tiny_ngram()
    window = _tiny_window_lm()
    bos = ngram.vocab.bos_id
    for model, score_fn, prompt in ((ngram, ngram.next_token_logits, [bos]),
                                    (window, window.next_token_logits, [4, 9, 2])):
        stepper = as_stepper(model)
        assert isinstance(stepper, ContextStepper)
        assert generate(model, prompt, 12, greedy=True) == _reference_generate(score_fn, prompt, 12, greedy=True)
        assert (generate(score_fn, prompt, 12, temperature=0.8, seed=5)
                == _reference_generate(score_fn, prompt, 12, temperature=0.8, seed=5))
        _same_beams(beam_search(score_fn, prompt, 3, 6, stop_id=3), _reference_beam(score_fn, prompt, 3, 6, 3))
        assert beam_search(model, prompt, 1, 6)[0][0] == generate(model, prompt, 6, greedy=True)


class ToySeq2Seq(torch.nn.Module):
    """A stand-in for an encoder-decoder: its state is a dict holding the encoder outputs (B, S, d), the decoder's
    h (B, d) and a per-row list; reorder_state picks rows of all three."""

    def __init__(self, V=11, d=6):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.E = torch.nn.Parameter(torch.randn(V, d, generator=g, dtype=torch.float64))
        self.W = torch.nn.Parameter(torch.randn(d, d, generator=g, dtype=torch.float64))
        self.V = torch.nn.Parameter(torch.randn(V, d, generator=g, dtype=torch.float64) * 3)

    def encode(self, src):
        return {"enc": self.E[src], "h": torch.zeros(src.shape[0], self.E.shape[1], dtype=torch.float64),
                "read": [[] for _ in range(src.shape[0])]}

    def step(self, ids, state):
        h = state["h"]
        for t in range(ids.shape[1]):
            h = torch.tanh(self.E[ids[:, t]] + h @ self.W)
        context = (torch.softmax(state["enc"] @ h[:, :, None], 1) * state["enc"]).sum(1)   # (B, d) attention
        read = [r + row for r, row in zip(state["read"], ids.tolist())]
        return (h + context) @ self.V.T, {"enc": state["enc"], "h": h, "read": read}

    def reorder_state(self, state, index):
        return {"enc": state["enc"].index_select(0, index), "h": state["h"].index_select(0, index),
                "read": [list(state["read"][i]) for i in index.tolist()]}


def test_beam_search_carries_any_state_the_model_reorders():
    model = ToySeq2Seq()
    src = torch.tensor([[3, 1, 4, 1, 5]])

    def full(ctx):                                                       # re-run the decoder over the whole prefix
        return model.step(torch.tensor([ctx]), model.encode(src))[0][0]

    for beam_size in (1, 3):
        _same_beams(beam_search(model, [0], beam_size, 7, stop_id=2, state=model.encode(src)),
                    _reference_beam(full, [0], beam_size, 7, 2))
    assert generate(model, [0], 7, greedy=True, state=model.encode(src)) == _reference_generate(full, [0], 7,
                                                                                               greedy=True)


def test_decoding_errors_say_what_to_give():
    with pytest.raises(TypeError, match="step\\(ids, state\\)"):
        generate(42, [0], 3)

    class Bad(ContextStepper):
        def step(self, ids, state):
            return torch.zeros(ids.shape[0], 2, 5), state                  # (B, T, V), not (B, V)

    with pytest.raises(ValueError, match=r"logits of shape \(B, V\)"):
        generate(Bad(lambda c: torch.zeros(5)), [0], 3)
    with pytest.raises(ValueError, match="NaN"):
        beam_search(lambda c: torch.tensor([0.0, float("nan")]), [0], 2, 3)
    with pytest.raises(ValueError, match="-inf"):
        beam_search(lambda c: torch.full((3,), -math.inf), [0], 2, 3)
    model = _tiny_rnn_lm()
    with pytest.raises(ValueError, match="empty batch"):
        generate(model, [], 3)                                           # an RNN needs at least <s>


def test_suppressed_tokens_are_never_generated():
    model = _tiny_rnn_lm()
    free = generate(model, [2], 30, greedy=True)
    banned = sorted(set(free))[:2]

    def masked(ctx):                                                     # the same, by hand over the whole context
        z = model.next_token_logits(ctx).clone()
        z[banned] = -math.inf
        return z

    out = generate(model, [2], 30, greedy=True, suppress_ids=banned)
    assert not set(out) & set(banned) and out == _reference_generate(masked, [2], 30, greedy=True)
    sampled = generate(model, [2], 30, temperature=2.0, seed=0, suppress_ids=banned)
    assert sampled == _reference_generate(masked, [2], 30, temperature=2.0, seed=0)
    _same_beams(beam_search(model, [2], 3, 6, suppress_ids=banned), _reference_beam(masked, [2], 3, 6))
    with pytest.raises(ValueError, match="suppress_ids"):
        generate(model, [2], 3, suppress_ids=[23])
    with pytest.raises(ValueError, match="leave no token"):
        generate(lambda c: torch.tensor([0.0, -math.inf]), [0], 3, suppress_ids=[0])


# ---------------------------------------------------------------------------------------------------------------
# beam_search(..., trace=True): every step's candidates, kept / pruned / finished, and greedy's path

from seqviz.decode import STATUSES, BeamTrace  # noqa: E402


def _check_trace_against_the_scores(tr: BeamTrace, score_fn, prompt):
    """Recompute every candidate of the trace from the score function alone: parents, log-probs, the 2k per row,
    and the pruning rule (no pruned candidate outranks a kept or finished one of its step)."""
    k, a = tr.beam_size, tr.length_penalty
    live = [[]]                                                               # ids of the live hypotheses
    live_lp = [0.0]
    for t, cands in enumerate(tr.steps):
        assert cands and {c.status for c in cands} <= set(STATUSES)
        assert sum(c.status == "kept" for c in cands) <= k
        per_row = {}
        for c in cands:
            assert 0 <= c.parent < len(live)
            logp = torch.log_softmax(_scores(score_fn(prompt + live[c.parent])), 0)
            assert math.isclose(c.token_logprob, float(logp[c.token]), abs_tol=1e-9)
            assert math.isclose(c.logprob, live_lp[c.parent] + c.token_logprob, abs_tol=1e-9)
            per_row.setdefault(c.parent, []).append(c.token)
            assert (c.status == "finished") == (tr.stop_id is not None and c.token == tr.stop_id
                                                and c.status != "pruned")
        for row, toks in per_row.items():                                     # each row proposes its 2k best
            logp = torch.log_softmax(_scores(score_fn(prompt + live[row])), 0)
            best = torch.topk(logp, min(2 * k, len(logp))).values
            best = best[torch.isfinite(best)]                                 # a -inf token is never proposed
            assert len(toks) == len(best) and sorted(float(logp[i]) for i in toks) == sorted(best.tolist())
        ranks = [c.logprob / (t + 1) ** a for c in cands]
        assert ranks == sorted(ranks, reverse=True)                           # best ranked first
        reached = [r for r, c in zip(ranks, cands) if c.status != "pruned"]
        pruned = [r for r, c in zip(ranks, cands) if c.status == "pruned"]
        assert not pruned or min(reached) >= max(pruned)
        kept = [i for i, c in enumerate(cands) if c.status == "kept"]
        assert [tr.ids(t, i) for i in kept] == [live[cands[i].parent] + [cands[i].token] for i in kept]
        live = [live[cands[i].parent] + [cands[i].token] for i in kept]
        live_lp = [cands[i].logprob for i in kept]


@pytest.mark.parametrize("beam_size", [1, 2, 3, 5])
@pytest.mark.parametrize("stop_id,length_penalty", [(None, 0.0), (3, 0.0), (3, 1.0), (5, 0.6)])
def test_trace_records_the_search_and_changes_nothing(beam_size, stop_id, length_penalty):
    for seed in range(3):
        f = _random_scorer(seed=seed, blocked=[8])
        plain = beam_search(f, [1, 2], beam_size, 7, stop_id=stop_id, length_penalty=length_penalty)
        out, tr = beam_search(f, [1, 2], beam_size, 7, stop_id=stop_id, length_penalty=length_penalty, trace=True)
        _same_beams(out, plain)
        assert isinstance(tr, BeamTrace) and tr.hypotheses == tuple((tuple(i), lp) for i, lp in plain)
        assert (tr.prompt_ids, tr.beam_size, tr.stop_id, tr.max_new_tokens) == ((1, 2), beam_size, stop_id, 7)
        _check_trace_against_the_scores(tr, f, [1, 2])
        # every returned hypothesis is a kept or finished candidate of the trace (or kept at the last step)
        reached = {tuple(tr.ids(t, i)): c.logprob for t, cs in enumerate(tr.steps) for i, c in enumerate(cs)
                   if c.status != "pruned"}
        for ids, lp in plain:
            assert reached[tuple(ids)] == lp
            assert math.isclose(tr.rank(lp, len(ids)), lp / len(ids) ** length_penalty)


def test_trace_of_the_seed_example_shows_greedy_and_beam_part_ways():
    from seqviz.worked_examples import SeedBeamScorer

    toy = SeedBeamScorer()
    out, tr = beam_search(toy.next_token_logits, [toy.bos], 3, 6, stop_id=toy.eos, trace=True, with_greedy=True)
    assert toy.decode(out[0][0]) == "How are you </s>"
    greedy = [tok for tok, _ in tr.greedy]
    assert toy.decode(greedy) == "How will you </s>"
    assert greedy == generate(toy.next_token_logits, [toy.bos], 6, greedy=True, stop_id=toy.eos)
    assert math.isclose(math.exp(sum(lp for _, lp in tr.greedy)), 0.75 * 0.36 * 0.08 * 0.5, rel_tol=1e-12)
    # step 1 keeps How, What, You (75%, 3%, 1%); at step 2 the beam holds "How will", "How are", "How do"
    assert [toy.itos[c.token] for c in tr.kept(0)] == ["How", "What", "You"]
    assert [toy.decode(tr.ids(1, tr.steps[1].index(c))) for c in tr.kept(1)] == ["How will", "How are", "How do"]
    # "How are you </s>" finishes at step 4, with probability 6%
    fin = [(toy.decode(tr.ids(3, i)), math.exp(c.logprob)) for i, c in enumerate(tr.steps[3])
           if c.status == "finished"]
    assert fin[0][0] == "How are you </s>" and math.isclose(fin[0][1], 0.06048, rel_tol=1e-9)
    _check_trace_against_the_scores(tr, toy.next_token_logits, [toy.bos])


def test_trace_through_a_stateful_model_equals_the_score_function_trace():
    model = _tiny_rnn_lm(dropout=0.3).train()
    before = dict(vars(model))
    out, tr = beam_search(model, [2, 5], 3, 6, stop_id=7, length_penalty=0.7, trace=True, with_greedy=True)
    out2, tr2 = beam_search(model.next_token_logits, [2, 5], 3, 6, stop_id=7, length_penalty=0.7, trace=True,
                            with_greedy=True)
    _same_beams(out, out2)
    assert [[(c.parent, c.token, c.status) for c in s] for s in tr.steps] == \
        [[(c.parent, c.token, c.status) for c in s] for s in tr2.steps]
    assert [t for t, _ in tr.greedy] == generate(model, [2, 5], 6, greedy=True, stop_id=7)
    assert model.training and vars(model).keys() == before.keys()              # returned, never stashed


def test_trace_arguments():
    f = _bigram_score_fn()
    with pytest.raises(ValueError, match="with_greedy=True .* trace=True"):
        beam_search(f, [0], 2, 3, with_greedy=True)
    out, tr = beam_search(f, [0], 2, 3, trace=True)
    assert tr.greedy is None and len(tr.steps) == 3 and isinstance(out, list)


def test_a_trace_survives_json_and_renumbering():
    """What bench_attention.py stores for chapter 5's BeamTree of the translator: the trace through JSON, with its
    token ids renumbered to the labels it uses, reads back as the same search."""
    import json

    from seqviz.worked_examples import SeedBeamScorer

    toy = SeedBeamScorer()
    _, tr = beam_search(toy.next_token_logits, [toy.bos], 3, 6, stop_id=toy.eos, length_penalty=1.0, trace=True,
                        with_greedy=True)
    assert BeamTrace.from_dict(json.loads(json.dumps(tr.to_dict()))) == tr              # ids kept: exactly equal
    used = tr.token_ids()
    assert toy.eos in used and toy.bos in used and len(used) < len(toy.itos)
    back = BeamTrace.from_dict(json.loads(json.dumps(tr.to_dict(used))))
    labels = [toy.itos[i] for i in used]
    # the renumbered trace names the same tokens: the same texts, log-probabilities and statuses at every step
    for t, (a, b) in enumerate(zip(tr.steps, back.steps)):
        assert [(c.parent, toy.itos[c.token], c.logprob, c.status) for c in a] == \
            [(c.parent, labels[c.token], c.logprob, c.status) for c in b]
    assert [labels[i] for i in back.hypotheses[0][0]] == toy.decode(tr.hypotheses[0][0]).split()
    assert [labels[t] for t, _ in back.greedy] == toy.decode([t for t, _ in tr.greedy]).split()
    assert labels[back.stop_id] == "</s>"


def test_a_stored_trace_that_is_wrong_says_what():
    f = _bigram_score_fn()
    _, tr = beam_search(f, [0], 2, 3, trace=True)
    d = tr.to_dict()
    with pytest.raises(ValueError, match=r"lacks token ids \[.*\] that the trace uses"):
        tr.to_dict([0])
    with pytest.raises(TypeError, match="is a dict"):
        BeamTrace.from_dict([d])
    with pytest.raises(ValueError, match=r"lacks \['steps'\]"):
        BeamTrace.from_dict({k: v for k, v in d.items() if k != "steps"})
    with pytest.raises(ValueError, match="malformed .* \\[parent, token, token_logprob, logprob, status\\]"):
        BeamTrace.from_dict({**d, "steps": [[[0, 1, 0.5]]]})
    with pytest.raises(ValueError, match="unknown candidate status 'lost'"):
        BeamTrace.from_dict({**d, "steps": [[[0, 1, -0.5, -0.5, "lost"]]]})
