"""The known wrong answers to every build-it check, in one place: each check's typical mistakes written as a student
would write them, and the words the check's message must hold for each.

Two readers: the unit tests (tests/test_exercises*.py, tests/test_lstm.py) assert that each check rejects each
mistake with its message; the graded assignments (scripts/assignments.py, ``make assignments``) give each question
one hidden test per known mistake of its check, named after it (:func:`hidden_test`), so an autograder's report says
which typical mistake a submission made, and a course sees how many students made each. A new check adds its
mistakes here (``MISTAKES[check name]``), and both pick them up.

    >>> from seqviz.exercises.mistakes import MISTAKES, hidden_test
    >>> [m.name for m in MISTAKES["check_elman_step"]][:2]
    ['no_activation', 'ignores_h_prev']

Each wrong answer is built from one implementation with a switch per mistake (``_mha``, ``_block``, ``_delta``,
``_mixture``): the mistakes are the point of this module, not the implementation they switch off.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

__all__ = ["Mistake", "MISTAKES", "known_mistakes", "hidden_test", "says_mistake"]

IGNORE = -100


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer to the check named ``check``: ``fn`` computes it (with the student function's
    signature), and the check's AssertionError message must hold ``says``. ``name`` is an identifier (the hidden
    test of an assignment is called ``test_<name>``); ``what`` says the mistake in a few words. ``named``: whether
    the check names this mistake (its message is about it alone); a mistake the check only reports in general terms
    ("differs from the package's", "raised", "should be a tensor") gets no hidden test of its own, since that test
    would fire for other mistakes too, and neither does a second form of a named mistake (the same in float32): the
    question's public check still fails them."""

    check: str
    name: str
    what: str
    fn: Callable
    says: str
    named: bool = True


def _m(check: str, name: str, what: str, fn: Callable, says: str, named: bool = True) -> Mistake:
    return Mistake(check, name, what, fn, says, named)


# ---- chapter 3: one Elman step (9.3) -------------------------------------------------------------------------------
_ELMAN = "check_elman_step"
_elman = [
    _m(_ELMAN, "no_activation", "the activation tanh left out",
       lambda x, h, W, U: h @ U.T + x @ W.T, "activation"),
    _m(_ELMAN, "ignores_h_prev", "no recurrence: h_(t-1) ignored",
       lambda x, h, W, U: torch.tanh(x @ W.T), "ignores h_{t-1}"),
    _m(_ELMAN, "U_not_transposed", "h_prev @ U instead of h_prev @ U.T",
       lambda x, h, W, U: torch.tanh(h @ U + x @ W.T), "differs", named=False),
    _m(_ELMAN, "column_vectors", "U h as for one column vector, not a batch of rows",
       lambda x, h, W, U: torch.tanh(U @ h + W @ x), "raised", named=False),
]


# ---- chapter 4: one GRU step with its traces -----------------------------------------------------------------------
_GRU = "check_gru_step"


def _lin(x, W, b):
    return x @ W.T + b


def _gru(cell, x, h, *, reset_first=False, tanh_gate=False, swap=False):
    act = torch.tanh if tanh_gate else torch.sigmoid
    r = act(_lin(h, cell.U_r, cell.b_U_r) + _lin(x, cell.W_r, cell.b_W_r))
    z = torch.sigmoid(_lin(h, cell.U_z, cell.b_U_z) + _lin(x, cell.W_z, cell.b_W_z))
    if reset_first:                                                        # Cho et al.'s placement
        n = torch.tanh(_lin(x, cell.W_n, cell.b_W_n) + _lin(r * h, cell.U_n, cell.b_U_n))
    else:
        n = torch.tanh(_lin(x, cell.W_n, cell.b_W_n) + r * _lin(h, cell.U_n, cell.b_U_n))
    h_t = z * n + (1 - z) * h if swap else (1 - z) * n + z * h
    return h_t, {"r": r, "z": z, "n": n}


_gru_mistakes = [
    _m(_GRU, "z_swapped", "z_t and 1 - z_t swapped", lambda c, x, h: _gru(c, x, h, swap=True), "swapped"),
    _m(_GRU, "reset_before_U_n", "the reset gate applied before U_n (Cho et al.)",
       lambda c, x, h: _gru(c, x, h, reset_first=True), "before U_n"),
    _m(_GRU, "tanh_gate", "a gate squashed by tanh, not the sigmoid",
       lambda c, x, h: _gru(c, x, h, tanh_gate=True), "sigmoid"),
    _m(_GRU, "no_traces", "h_t returned without the traces",
       lambda c, x, h: _gru(c, x, h)[0], "pair (h_t, traces)"),
    _m(_GRU, "traces_missing", "traces without z and n",
       lambda c, x, h: (_gru(c, x, h)[0], {"r": 0}), "no z, n"),
]


# ---- chapter 5: one step of beam search ----------------------------------------------------------------------------
_BEAM = "check_beam_step"


def _beam(scores, logp, k, *, probabilities=False, history=True):
    if probabilities:
        total = (scores.exp()[:, None] + logp.exp()).flatten()
    else:
        total = ((scores if history else torch.zeros_like(scores))[:, None] + logp).flatten()
    return [(int(i) // logp.shape[1], int(i) % logp.shape[1]) for i in torch.topk(total, k).indices]


def _beam_per_row(scores, logp, k):                  # each hypothesis's best token (when there are k of them)
    if len(scores) < k:
        return _beam(scores, logp, k)
    best = [(n, int(logp[n].argmax())) for n in range(len(scores))]
    return sorted(best, key=lambda c: -float(scores[c[0]] + logp[c]))[:k]


_beam_mistakes = [
    _m(_BEAM, "added_probabilities", "probabilities added, not log-probabilities",
       lambda s, l, k: _beam(s, l, k, probabilities=True), "log-probabilities"),
    _m(_BEAM, "no_history", "the hypotheses' scores so far left out",
       lambda s, l, k: _beam(s, l, k, history=False), "scores so far"),
    _m(_BEAM, "best_per_row", "each hypothesis's best token kept", _beam_per_row, "all N x V"),
    _m(_BEAM, "worst_first", "the right continuations, worst first", lambda s, l, k: _beam(s, l, k)[::-1], "order"),
    _m(_BEAM, "not_a_list", "not a list of (row, token)", lambda s, l, k: 7, "list of (row, token)"),
]


# ---- chapter 6: the causal mask, multi-head attention, the post-norm block -----------------------------------------
_MASK = "check_causal_mask"
_mask_mistakes = [
    _m(_MASK, "transposed", "the upper triangle", lambda T: torch.ones(T, T).triu().bool(), "transposed"),
    _m(_MASK, "diagonal_masked", "the diagonal masked", lambda T: torch.ones(T, T).tril(-1).bool(), "diagonal"),
    _m(_MASK, "not_bool", "a float mask", lambda T: torch.ones(T, T).tril(), "dtype"),
    _m(_MASK, "swapped", "True and False swapped", lambda T: ~torch.ones(T, T).tril().bool(), "swapped"),
    _m(_MASK, "wrong_shape", "(T, T + 1)", lambda T: torch.ones(T, T + 1).bool(), "shape"),
]

_MHA = "check_multi_head_attention"


def _mha(X, W_Q, W_K, W_V, W_O, H, causal, *, split="right", merge="right", scale=True, dim=-1, use_W_O=True,
         mask="right"):
    """Multi-head attention from scratch, with one switch per usual mistake."""
    B, T, d = X.shape
    d_k = d // H

    def heads(M):
        return M.view(B, T, H, d_k).transpose(1, 2) if split == "right" else M.reshape(B, H, T, d_k)

    Q, K, V = heads(X @ W_Q), heads(X @ W_K), heads(X @ W_V)
    scores = Q @ K.transpose(-1, -2) / (math.sqrt(d_k) if scale is True else scale)
    if causal and mask != "none":
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(future.T if mask == "transposed" else future, float("-inf"))
    out = torch.softmax(scores, dim=dim) @ V
    concat = out.transpose(1, 2).reshape(B, T, d) if merge == "right" else out.reshape(B, T, d)
    return concat @ W_O if use_W_O else concat


def _float32(*a):
    return tuple(t.float() if torch.is_tensor(t) and t.is_floating_point() else t for t in a)


_mha_mistakes = [
    _m(_MHA, "no_W_O", "the output projection W^O left out", lambda *a: _mha(*a, use_W_O=False), "W^O is missing"),
    _m(_MHA, "not_scaled", "scores not divided by √d_k", lambda *a: _mha(*a, scale=1.0), "not scaled"),
    _m(_MHA, "softmax_wrong_axis", "softmax over the queries", lambda *a: _mha(*a, dim=-2), "wrong axis"),
    _m(_MHA, "no_causal_mask", "the causal mask left out", lambda *a: _mha(*a, mask="none"),
       "causal mask is missing"),
    _m(_MHA, "mask_transposed", "the causal mask transposed", lambda *a: _mha(*a, mask="transposed"),
       "causal mask is transposed"),
    _m(_MHA, "split_by_view", "heads split by a bare reshape", lambda *a: _mha(*a, split="view"),
       "not split correctly"),
    _m(_MHA, "merged_by_view", "heads merged by a bare reshape", lambda *a: _mha(*a, merge="view"),
       "not merged correctly"),
    _m(_MHA, "scaled_by_d_model", "scores divided by √d_model",
       lambda X, *a: _mha(X, *a, scale=math.sqrt(X.shape[-1])), "√d_model"),
    _m(_MHA, "weights_transposed", "W @ X instead of X @ W",
       lambda X, Q, K, V, O, H, c: _mha(X, Q.T, K.T, V.T, O.T, H, c), "transposed"),
    _m(_MHA, "last_position_only", "only the last position returned", lambda X, *a: _mha(X, *a)[:, -1], "shape"),
    _m(_MHA, "off_by_a_thousandth", "a result off by 1e-3", lambda X, *a: _mha(X, *a) + 1e-3,
       "differs from the package's", named=False),
    _m(_MHA, "not_a_tensor", "a string returned", lambda X, *a: "Y", "should be a tensor", named=False),
    _m(_MHA, "raises", "an AttributeError", lambda X, *a: X.foo(), "raised AttributeError", named=False),
    _m(_MHA, "no_W_O_float32", "W^O left out, in float32", lambda *a: _mha(*_float32(*a), use_W_O=False),
       "W^O is missing", named=False),                                  # no_W_O's hidden test tells it
    _m(_MHA, "near_miss_float32", "off by 1e-4 in float32", lambda *a: _mha(*_float32(*a)) + 1e-4,
       "differs from the package's by up to 0.0001", named=False),
]

_BLOCK = "check_transformer_block"


def _block(x, b, *, residual=(True, True), where="post", act=torch.relu, swap=False):
    """SLP's post-norm block from the parts of ``b``, with one switch per usual mistake."""
    ln1, ln2 = (b.ln2, b.ln1) if swap else (b.ln1, b.ln2)
    ffn = lambda h: b.ffn.W_2(act(b.ffn.W_1(h)))                        # noqa: E731
    if where == "pre":
        z = x + b.attn(ln1(x)).y
        return z + ffn(ln2(z))
    a = b.attn(x).y
    z = ln1(x + a) if residual[0] else ln1(a)                           # (9.40)
    return ln2(z + ffn(z)) if residual[1] else ln2(ffn(z))              # (9.41)


def _no_layernorm(x, b):
    z = x + b.attn(x).y
    return z + b.ffn(z)


def _ffn_of_x(x, b):
    z = b.ln1(x + b.attn(x).y)
    return b.ln2(z + b.ffn(x))


def _block_float32(x, b, **mistake):
    import copy

    return _block(x.float(), copy.deepcopy(b).float(), **mistake)


_block_mistakes = [
    _m(_BLOCK, "no_residuals", "both residual connections left out",
       lambda x, b: _block(x, b, residual=(False, False)), "residual connections are missing"),
    _m(_BLOCK, "no_attention_residual", "no residual around self-attention",
       lambda x, b: _block(x, b, residual=(False, True)), "around self-attention is missing"),
    _m(_BLOCK, "no_ffn_residual", "no residual around the feed-forward layer",
       lambda x, b: _block(x, b, residual=(True, False)), "around the feed-forward layer is missing"),
    _m(_BLOCK, "pre_norm", "LayerNorm before the sublayers (pre-norm)", lambda x, b: _block(x, b, where="pre"),
       "LayerNorm is in the wrong place"),
    _m(_BLOCK, "layernorms_swapped", "ln1 and ln2 swapped", lambda x, b: _block(x, b, swap=True),
       "LayerNorms are swapped"),
    _m(_BLOCK, "no_nonlinearity", "no ReLU in the feed-forward layer", lambda x, b: _block(x, b, act=lambda h: h),
       "no nonlinearity"),
    _m(_BLOCK, "gelu", "GELU instead of ReLU", lambda x, b: _block(x, b, act=F.gelu), "GELU"),
    _m(_BLOCK, "no_layernorm", "no LayerNorm at all", _no_layernorm, "LayerNorms are missing"),
    _m(_BLOCK, "ffn_of_x", "the feed-forward layer reads x, not z", _ffn_of_x, "reads x"),
    _m(_BLOCK, "mean_over_time", "the positions averaged", lambda x, b: _block(x, b).mean(1), "shape"),
    _m(_BLOCK, "one_percent_off", "a result 1% off", lambda x, b: _block(x, b) * 1.01,
       "differs from the package's", named=False),
    _m(_BLOCK, "no_attention_residual_float32", "no residual around self-attention, in float32",
       lambda x, b: _block_float32(x, b, residual=(False, True)), "around self-attention is missing",
       named=False),                                                    # no_attention_residual's hidden test tells it
]


# ---- chapter 8: the δ training sequence, the copy mixture ----------------------------------------------------------
_DELTA = "check_delta_sequence"


def _delta(article, summary, delim_id, eos_id, *, use_delim=True, use_eos=True, mask="right", shift=True,
           x_has_eos=False):
    """A δ example (SLP §9.9), with one switch per usual mistake."""
    s = list(article) + ([delim_id] if use_delim else []) + list(summary) + ([eos_id] if use_eos else [])
    m = len(article)
    x = s if x_has_eos else s[:-1]
    y = s[1:] if shift else s[:-1]
    if mask == "right":
        start = m if use_delim else m - 1                                   # the position that predicts y_1
        y = [IGNORE] * start + y[start:]
    elif mask == "late":
        y = [IGNORE] * (m + 1) + y[m + 1:]
    elif mask == "early":
        y = [IGNORE] * (m - 1) + y[m - 1:]
    return x, y


_delta_mistakes = [
    _m(_DELTA, "loss_on_article", "no mask: the loss on the article too", lambda *a: _delta(*a, mask="none"),
       "the loss is on the article too"),
    _m(_DELTA, "no_delimiter", "δ left out", lambda *a: _delta(*a, use_delim=False), "δ is missing"),
    _m(_DELTA, "no_eos", "</s> left out", lambda *a: _delta(*a, use_eos=False), "</s> is missing"),
    _m(_DELTA, "mask_one_late", "the mask one position too long", lambda *a: _delta(*a, mask="late"), "off by one"),
    _m(_DELTA, "mask_one_early", "the mask one position too short", lambda *a: _delta(*a, mask="early"),
       "off by one"),
    _m(_DELTA, "not_shifted", "targets not shifted", lambda *a: _delta(*a, shift=False), "not shifted"),
    _m(_DELTA, "eos_in_input", "</s> in the input", lambda *a: _delta(*a, x_has_eos=True),
       "the input holds </s> too"),
    _m(_DELTA, "no_pair", "only the input returned", lambda *a: _delta(*a)[0], "return the pair (x, y)"),
    _m(_DELTA, "strings", "tokens as strings", lambda *a: ([str(i) for i in _delta(*a)[0]], _delta(*a)[1]),
       "list of token ids"),
    _m(_DELTA, "summary_first", "the summary before the article", lambda a, s, d, e: _delta(s, a, d, e),
       "first difference", named=False),
    _m(_DELTA, "raises", "a ZeroDivisionError", lambda *a: 1 / 0, "raised ZeroDivisionError", named=False),
]

_COPY = "check_copy_distribution"


def _mixture(p_vocab, a, p_gen, src_ext, n_ext, *, swap=False, summed=True, ext=True, weigh_vocab=True):
    """The pointer-generator's mixture over the extended vocabulary, with one switch per usual mistake."""
    B, T, V = p_vocab.shape
    g = 1 - p_gen if swap else p_gen
    p = torch.zeros(B, T, V + n_ext, dtype=p_vocab.dtype)
    p[..., :V] = g[..., None] * p_vocab if weigh_vocab else p_vocab
    copy = (1 - g)[..., None] * a                                           # (B, T, S)
    idx = src_ext[:, None, :].expand(B, T, src_ext.shape[1])
    if not ext:
        copy = copy * (idx < V)
    if summed:
        p.scatter_add_(2, idx, copy)
    else:                                                                   # one position's weight per word
        p = p + torch.zeros_like(p).scatter_(2, idx, copy)
    return p


def _smoothed(*args, eps=1e-4):
    """A near miss: p smoothed so that log p is never -inf (eps added to every id, then renormalised). Still a
    distribution, within 1e-3 of the right p everywhere, but not p."""
    p = _mixture(*args) + eps
    return p / p.sum(-1, keepdim=True)


_copy_mistakes = [
    _m(_COPY, "p_gen_swapped", "p_gen and 1 - p_gen swapped", lambda *a: _mixture(*a, swap=True),
       "p_gen and 1 - p_gen are swapped"),
    _m(_COPY, "not_summed", "repeated words' attention not summed (scatter_)", lambda *a: _mixture(*a, summed=False),
       "not summed over repeated words"),
    _m(_COPY, "extended_ids_dropped", "article-only words' attention dropped", lambda *a: _mixture(*a, ext=False),
       "extended ids are dropped"),
    _m(_COPY, "vocab_not_weighed", "P_vocab not weighed by p_gen", lambda *a: _mixture(*a, weigh_vocab=False),
       "not a distribution"),
    _m(_COPY, "cropped_to_V", "p cropped to the vocabulary", lambda pv, *a: _mixture(pv, *a)[..., :pv.shape[-1]],
       "extended ids are dropped"),
    _m(_COPY, "softmax_again", "a softmax over p", lambda *a: _mixture(*a).softmax(-1),
       "differs from the package's", named=False),
    _m(_COPY, "last_step_only", "only the last step", lambda *a: _mixture(*a)[:, -1], "expected (B, T, V + n_ext)"),
    _m(_COPY, "a_list", "a nested list", lambda *a: _mixture(*a).tolist(), "should be a tensor", named=False),
    _m(_COPY, "smoothed", "p smoothed by 1e-4 (a near miss)", _smoothed,
       "close, but more than float64 rounding explains", named=False),
    _m(_COPY, "smoothed_float32", "p smoothed by 1e-4, in float32", lambda *a: _smoothed(*_float32(*a)),
       "float32 rounding", named=False),
]


# ---- chapter 7: the distribution that sampling with a temperature and top-k draws from -----------------------------
_SAMPLE = "check_sampling_distribution"


def _sampling(z, T, k, *, divide="logits", renormalise=True, keep=0, cut=True, lowest=False):
    """softmax(top_k(z) / T) with one switch per usual mistake (``keep``: tokens kept beyond k)."""
    idx = torch.topk(z, k + keep, largest=not lowest).indices
    if divide == "probabilities":
        p = torch.softmax(z, 0) / T
    elif divide == "multiplied":
        p = torch.softmax(z * T, 0)
    else:
        p = torch.softmax(z / T, 0)
    if cut:
        kept = torch.zeros_like(p)
        kept[idx] = p[idx]
        p = kept / kept.sum() if renormalise else kept
    return p


_sampling_mistakes = [
    _m(_SAMPLE, "probabilities_divided_by_T", "the probabilities divided by T, not the logits",
       lambda z, T, k: _sampling(z, T, k, divide="probabilities", renormalise=False),
       "the probabilities are divided by T"),
    _m(_SAMPLE, "temperature_undone", "the probabilities divided by T, then renormalised",
       lambda z, T, k: _sampling(z, T, k, divide="probabilities"), "the temperature has no effect"),
    _m(_SAMPLE, "multiplied_by_T", "the logits multiplied by T", lambda z, T, k: _sampling(z, T, k, divide="multiplied"),
       "multiplied by T"),
    _m(_SAMPLE, "one_too_few", "k - 1 tokens kept", lambda z, T, k: _sampling(z, T, k, keep=-1), "one too few"),
    _m(_SAMPLE, "one_too_many", "k + 1 tokens kept", lambda z, T, k: _sampling(z, T, k, keep=1), "one too many"),
    _m(_SAMPLE, "not_renormalised", "not renormalised after the cut",
       lambda z, T, k: _sampling(z, T, k, renormalise=False), "not renormalised after the cut"),
    _m(_SAMPLE, "no_cut", "no top-k cut: the full distribution", lambda z, T, k: _sampling(z, T, k, cut=False),
       "samples from the full distribution"),
    _m(_SAMPLE, "lowest_k", "the k lowest logits kept", lambda z, T, k: _sampling(z, T, k, lowest=True),
       "lowest logits are kept"),
    _m(_SAMPLE, "only_k_returned", "only the kept probabilities returned",
       lambda z, T, k: torch.softmax(z / T, 0)[:k], "p has shape"),
    _m(_SAMPLE, "logits_returned", "z / T returned, not probabilities", lambda z, T, k: z / T, "not a distribution"),
    _m(_SAMPLE, "a_list", "a list", lambda z, T, k: _sampling(z, T, k).tolist(), "should be a tensor", named=False),
    _m(_SAMPLE, "T_a_little_off", "T off by 1%", lambda z, T, k: _sampling(z, T * 1.01, k),
       "differs from the package's", named=False),
]


#: check name -> its known mistakes, in the order the check's tests and an assignment's hidden tests list them
MISTAKES: dict[str, tuple[Mistake, ...]] = {
    _ELMAN: tuple(_elman), _GRU: tuple(_gru_mistakes), _BEAM: tuple(_beam_mistakes), _MASK: tuple(_mask_mistakes),
    _MHA: tuple(_mha_mistakes), _BLOCK: tuple(_block_mistakes), _DELTA: tuple(_delta_mistakes),
    _COPY: tuple(_copy_mistakes), _SAMPLE: tuple(_sampling_mistakes),
}
for _check, _ms in MISTAKES.items():                   # names are test names: unique per check, identifiers
    assert len({m.name for m in _ms}) == len(_ms) and all(m.check == _check and m.name.isidentifier() for m in _ms), \
        _check


def known_mistakes(check: str) -> tuple[Mistake, ...]:
    """The known mistakes of the check named ``check`` (e.g. "check_elman_step"); () for a check with none yet."""
    if not isinstance(check, str) or not check.startswith("check_"):
        raise ValueError(f"known_mistakes takes a check's name such as 'check_elman_step', got {check!r}")
    return MISTAKES.get(check, ())


def _check_fn(check: str) -> Callable:
    import importlib
    from pathlib import Path

    import seqviz.exercises as ex

    if hasattr(ex, check):
        return getattr(ex, check)
    for mod in sorted(p.stem for p in Path(ex.__file__).parent.glob("ch*.py")):
        module = importlib.import_module(f"seqviz.exercises.{mod}")
        if hasattr(module, check):
            return getattr(module, check)
    raise ValueError(f"no check named {check!r} in seqviz.exercises")


def says_mistake(check: str, fn: Callable) -> tuple[bool, str]:
    """Run the check named ``check`` on ``fn``: (True, its message) when it accepts ``fn``, (False, the message)
    when it rejects it (AssertionError), (False, "not written yet") when ``fn`` still raises NotImplementedError."""
    import contextlib
    import io

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            ok = _check_fn(check)(fn)
    except AssertionError as e:
        return False, str(e)
    return bool(ok), out.getvalue().strip().removeprefix("✓ ").removeprefix("✗ ")


def hidden_test(check: str, name: str, fn: Callable) -> None:
    """An assignment's hidden test: raise AssertionError when the check named ``check`` rejects ``fn`` for the known
    mistake ``name`` (its message holds that mistake's ``says``); pass otherwise (a function that is right, not
    written yet, or wrong in another way passes this test: the question's public test judges those)."""
    mistake = next((m for m in known_mistakes(check) if m.name == name), None)
    if mistake is None:
        raise ValueError(f"{check} has no known mistake {name!r}: see seqviz.exercises.mistakes.MISTAKES")
    ok, message = says_mistake(check, fn)
    if not ok and mistake.says in message:
        raise AssertionError(f"{mistake.what}: {message}")


# ---- chapter 1: Kneser-Ney's continuation probability; chapter 2: the fixed-window forward pass --------------------
def _ch1_ch2() -> dict[str, tuple[Mistake, ...]]:
    from seqviz.exercises import ch1, ch2

    cont, win = "check_continuation_prob", "check_window_forward"
    f = ch2.window_forward
    return {
        cont: (
            _m(cont, "frequency", "the word's frequency C(w) / N instead of its distinct contexts", ch1._frequency,
               "the MLE unigram"),
            _m(cont, "following_words", "distinct words after w, N1+(w .), instead of before it", ch1._following,
               "*follow* w"),
            _m(cont, "zero_counts_seen", "bigrams with count 0 counted as seen", ch1._with_zeros, "count 0"),
            _m(cont, "divided_by_words", "N1+(. w) divided by the number of words instead of bigram types",
               lambda c: {w: n * len(ch1.continuation_prob(c)) / len({v for v, _ in c}) / len(ch1.continuation_prob(c))
                          for w, n in ch1.continuation_prob(c).items()}, "sum to"),
        ),
        win: (
            _m(win, "logits", "the logits returned, no softmax", lambda *a: f(*a, softmax=False), "logits"),
            _m(win, "softmax_over_batch", "softmax over the batch axis", lambda *a: f(*a, dim=0), "over the batch"),
            _m(win, "summed_embeddings", "the window's embeddings summed, not concatenated",
               lambda *a: f(*a, concat=False), "raised", named=False),          # (B, d) @ W.T: a shape error
            _m(win, "newest_first", "the window concatenated newest word first", lambda *a: f(*a, reverse=True),
               "newest first"),
            _m(win, "no_nonlinearity", "h = W e + b1 with no tanh", lambda *a: f(*a, act=lambda x: x),
               "no nonlinearity"),
            _m(win, "sigmoid", "the sigmoid as f", lambda *a: f(*a, act=torch.sigmoid), "the sigmoid"),
            _m(win, "no_b1", "the hidden bias b1 left out", lambda *a: f(*a, use_b1=False), "b1"),
        ),
    }


MISTAKES.update(_ch1_ch2())
