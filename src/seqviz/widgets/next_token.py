"""Next-token distribution with a temperature slider: softmax(z / T) over a vocabulary, computed in the browser.

Used by the n-gram and RNN chapters to show sampling with temperature (and top-k). Works for logits and for
log-probabilities alike (softmax of log p / T is p^(1/T) renormalised), as ``seqviz.decode`` does.
"""
from __future__ import annotations

import anywidget
import numpy as np
import traitlets

from ._common import Described, CSS, check_finite, check_nonempty, check_tokens, esm, plain, to_array
from ._live import LiveMode, count

__all__ = ["NextTokenDistribution", "prepare_logits", "T_MIN", "T_MAX", "K_MAX"]

T_MIN, T_MAX = 0.05, 5.0  # temperature slider range (log scale in the browser)
K_MAX = 100  # most bars the widget draws


def prepare_logits(logits, vocab_tokens) -> tuple[np.ndarray, list[str]]:
    """Check (V,) scores (logits or log-probs; -inf allowed for impossible tokens) and V token strings.

    ``vocab_tokens`` may be a list of strings or a ``seqviz.data.Vocab`` (its ``itos``).
    """
    z = to_array(logits, "logits")
    if z.ndim != 1:
        raise ValueError(f"logits must be the scores of one position, shape (V,); got {tuple(z.shape)}. From an LM's "
                         f"(B, T, V) output take e.g. logits[0, -1]")
    check_nonempty(z, "logits")
    check_finite(z, "logits", allow_neg_inf=True)
    if not np.isfinite(z).any():
        raise ValueError("every logit is -inf: the model gives no token any probability")
    if hasattr(vocab_tokens, "itos"):
        vocab_tokens = vocab_tokens.itos
    toks = check_tokens(vocab_tokens, z.shape[0], "vocab_tokens", "the number of logits V")
    return z, toks


def _check_temperature(t) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float, np.floating, np.integer)) or np.isnan(t):
        raise TypeError(f"temperature must be a number, got {t!r}")
    if t <= 0:
        raise ValueError(f"temperature must be > 0, got {t}; T -> 0 is greedy decoding (try {T_MIN})")
    if not T_MIN <= t <= T_MAX:
        raise ValueError(f"temperature {t} is outside the slider's range {T_MIN}..{T_MAX}")
    return float(t)


class NextTokenDistribution(Described, anywidget.AnyWidget, LiveMode):
    """Top-k bars of softmax(z / T) with temperature and k sliders and a sampling button, all in the browser.

    ``NextTokenDistribution(logits, vocab_tokens, temperature=1.0, top_k=None, title=...)`` with logits (V,) and V
    token strings (or a ``Vocab``); ``top_k`` defaults to 20 bars (fewer for a smaller vocabulary).
    ``sample_top_k=True`` makes the button sample only among the k shown tokens.

    ``NextTokenDistribution.live("char_lm", prompt)``: the shipped character transformer's next character after
    ``prompt``, which the reader can replace by their own (see ``seqviz.widgets._live``); a click on a bar (or Enter)
    appends its character, and the live bar generates ``options={"n": 40}`` characters greedily or sampled at the
    widget's temperature (and top k, when sampling only from it) with its seed.
    """

    _live_models = {"char_lm": "the next character's distribution"}

    _esm = esm("next_token.js")  # the shared prelude + next_token.js
    _css = CSS

    logits = traitlets.Bytes(b"").tag(sync=True)  # float32 little-endian, sorted from highest to lowest
    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)  # in the same (sorted) order
    temperature = traitlets.Float(1.0).tag(sync=True)
    top_k = traitlets.Int(20).tag(sync=True)
    k_max = traitlets.Int(K_MAX).tag(sync=True)
    t_min = traitlets.Float(T_MIN).tag(sync=True)
    t_max = traitlets.Float(T_MAX).tag(sync=True)
    sample_top_k = traitlets.Bool(False).tag(sync=True)
    seed = traitlets.Int(0).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)

    def __init__(self, logits, vocab_tokens, temperature: float = 1.0, top_k: int | None = None, *, title: str = "",
                 sample_top_k: bool = False, seed: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.title, self.sample_top_k, self.seed = title, sample_top_k, seed
        self.set_data(logits, vocab_tokens)
        self.temperature = temperature
        self.top_k = min(20, self.k_max) if top_k is None else top_k

    def set_data(self, logits, vocab_tokens) -> None:
        """Replace the scores (e.g. after the next word of a prompt); the browser redraws."""
        z, toks = prepare_logits(logits, vocab_tokens)
        order = np.argsort(-z, kind="stable")  # highest first; ties keep vocabulary order
        self._z, self._tokens = z, toks
        with self.hold_sync():
            self.k_max = min(len(toks), K_MAX)
            self.logits = z[order].astype("<f4").tobytes()
            self.tokens = [toks[i] for i in order]
            self.top_k = min(self.top_k, self.k_max)

    @traitlets.validate("temperature")
    def _check_t(self, proposal):
        return _check_temperature(proposal["value"])

    @traitlets.validate("top_k")
    def _check_k(self, proposal):
        k = proposal["value"]
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"top_k must be an int, got {k!r}")
        if not 1 <= k <= self.k_max:
            raise ValueError(f"top_k must be between 1 and {self.k_max} (vocabulary size {len(self.tokens)}, at most "
                             f"{K_MAX} bars), got {k}")
        return int(k)

    @classmethod
    def _live_data(cls, spec, text, request):
        from seqviz.live.kernel import char_lm, char_lm_forward

        enc, f = char_lm_forward(text)
        return (f.logits[-1], char_lm().itos), {}, {"notes": enc.notes, "status": f"read {len(enc.ids)} characters"}

    def _live_generate(self, request: dict) -> dict:
        """The request's text followed by ``n`` generated characters (greedy, or sampled at the request's
        temperature, top k and seed: the view sends what it shows)."""
        from seqviz.live.kernel import generate_text
        from seqviz.live.limits import LIMITS

        n = count(request.get("n"), "n", *LIMITS["n"])
        greedy = request.get("greedy", True) is True
        top_k = request.get("top_k")
        top_k = None if top_k is None else count(top_k, "top_k", 1, self.k_max)
        enc, text = generate_text(request["text"], n, greedy=greedy,
                                  temperature=_check_temperature(request.get("temperature", self.temperature)),
                                  top_k=top_k, seed=count(request.get("seed", self.seed), "seed", *LIMITS["seed"]))
        return {"text": text, "notes": enc.notes}

    def probabilities(self, temperature: float | None = None) -> np.ndarray:
        """softmax(z / T) in vocabulary order, float64 (what the browser draws, from float32 scores)."""
        from ..decode import softmax_with_temperature

        t = self.temperature if temperature is None else _check_temperature(temperature)
        return softmax_with_temperature(self._z, t).numpy()

    def to_figure(self, temperatures=None):
        """Static rendering: top-k bars at the current temperature (or one panel per temperature given)."""
        from matplotlib.figure import Figure

        temps = [self.temperature] if temperatures is None else [_check_temperature(t) for t in temperatures]
        k = self.top_k
        fig = Figure(figsize=(3.6 * len(temps) + 0.6, 0.6 + 0.24 * k), layout="constrained")
        axes = fig.subplots(1, len(temps), squeeze=False)[0]
        for ax, t in zip(axes, temps):
            p = self.probabilities(t)
            top = np.argsort(-p, kind="stable")[:k]
            ax.barh(range(k), p[top], color="#3b528b")
            ax.set_yticks(range(k))
            ax.set_yticklabels([plain(self._tokens[i]) for i in top], fontsize=8)
            ax.invert_yaxis()
            ax.set_xlabel("probability")
            ax.set_title(f"T = {t:g}", fontsize=9)
        if self.title:
            fig.suptitle(self.title)
        return fig
