"""The widgets the layout, accessibility and keyboard tests render, each shaped like one the chapters show, made here
from seeded random numbers (no notebook, no model): the tests check the package's current widget JS whatever the
notebooks stored. ``MAIN_CONTROL`` says which control of each is its main one and how a keyboard drives it."""
from __future__ import annotations

import numpy as np
import torch

from seqviz.widgets import AttentionHeatmap, AttentionSteps, BeamTree, LSTMGates, NextTokenDistribution, PositionalMatrix

WORDS = ("the company said its shares fell sharply after the report on tuesday while analysts expected a small gain "
         "in the third quarter as sales of new cars rose in europe and asia").split()


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _words(n: int, offset: int = 0) -> list[str]:
    return [WORDS[(i + offset) % len(WORDS)] for i in range(n)]


def widgets() -> dict:
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    text = "What light through yonder window breaks? It is the east, and Juliet is the sun."[:48]
    chars = list(text)
    T = len(chars)
    causal = np.tril(np.ones((T, T), bool))
    w_self = _softmax(np.where(causal, rng.normal(0, 2, (2, 4, T, T)), -np.inf))          # (L, H, T, T)
    headline, article = [f"{w} p_gen={p:.2f}" for w, p in zip(_words(6, 3), rng.uniform(0, 1, 6))], _words(120)
    w_copy = _softmax(rng.normal(0, 2, (6, 120)))                                         # (T_out, S) copy trace
    w_cross = _softmax(rng.normal(0, 2, (3, 4, 11, 30)))                                  # (L, H, T_out, S)
    lstm = {n: torch.sigmoid(torch.randn(180, 128)) for n in "fio"} | {"g": torch.tanh(torch.randn(180, 128))}
    lstm["c"] = torch.randn(180, 128) * 2
    lstm["h"] = lstm["o"] * torch.tanh(lstm["c"])
    passage = list(("Enter KING RICHARD, attended.\n\nKING RICHARD:\nNow is the winter of our discontent made glorious "
                    "summer by this sun of York; and all the clouds that lour'd upon our house in the deep bosom of "
                    "the ocean buried.")[:180])
    q4, k4, v4 = (torch.randn(4, 64, dtype=torch.float64) for _ in range(3))
    qc, kc, vc = (torch.randn(1, 4, 40, 16) for _ in range(3))
    vocab = ["<s>", "How", "are", "you", "will", "</s>"]
    date_src, date_out = list("Thursday the 2nd of August 1979"), list("1979-08-02") + ["</s>"]
    w_date = _softmax(rng.normal(0, 2, (len(date_out), len(date_src))))          # (T_out, S) the date model's cross
    digits = ["<s>"] + list("0123456789-") + ["</s>"]
    date_ids = [digits.index(c) for c in "1979-08-02"] + [len(digits) - 1]

    def dates(ctx):  # a date model's next-character scores: the right character likelier, </s> only at the end
        n = len(ctx) - 1
        x = np.random.default_rng([7, *ctx]).normal(0, 1.2, len(digits))
        x[date_ids[min(n, len(date_ids) - 1)]] += 2.5
        x[0] = -1e9
        if n < len(date_ids) - 1:
            x[-1] = -1e9
        return torch.log_softmax(torch.tensor(x), 0)

    def toy(ctx):
        return torch.log_softmax(torch.tensor([0.0, 1.0, 2.0, 1.5, 1.8, 0.5]) * ((len(ctx) % 3) + 1), 0)

    return {
        "heatmap-chars": AttentionHeatmap(w_self, chars, mask="causal",
                                          title="Every head of a character LM on held-out text"),
        "heatmap-grid": AttentionHeatmap(w_cross, _words(11), _words(30, 5), view="grid",
                                         title="Cross-attention, every decoder layer and head"),
        "heatmap-copy": AttentionHeatmap(w_copy, headline, article, query_label="headline word",
                                         key_label="article word", value_label="copy attention",
                                         title="Copy attention of each headline word over the article"),
        # chapter 8's figure: the first 30 article words, so cells are wide and labels drawn at 13 px
        "heatmap-copy-30": AttentionHeatmap(w_copy[:, :30] / w_copy[:, :30].sum(-1, keepdims=True), headline,
                                            article[:30], query_label="headline word", key_label="article word",
                                            value_label="copy attention", title="Copy attention, 30 article words"),
        "heatmap-dates": AttentionHeatmap(w_date, date_out, date_src, title="Date model: encoder-decoder attention"),
        "lstm": LSTMGates(lstm, passage, gate="c", step=20, title="Character LSTM on a held-out passage"),
        "positional": PositionalMatrix(d_model=512, max_len=100, dims=[100, 101, 4, 5], positions=[22, 60],
                                       title="Sinusoidal positions"),
        "next-token": NextTokenDistribution(torch.randn(500) * 3, [f"token{i}" for i in range(500)], top_k=15,
                                            title="P(w | the stock)"),
        "steps-we": AttentionSteps(q4, k4, v4, ["We", "wash", "our", "cats"], index_base=1, causal=True,
                                   title="Every query of \u201cWe wash our cats\u201d"),
        "steps-chars": AttentionSteps(qc, kc, vc, list("What light through yonder window breaks?"), query=29,
                                      causal=True, title="One query of a character LM, step by step"),
        "beam": BeamTree.from_search(toy, [0], 3, 6, stop_id=5, tokens=vocab, title="A beam of 3"),
        # the date model's beam: at each step most nodes kept there lead nowhere by the last step
        "beam-dates": BeamTree.from_search(dates, [0], 5, 11, stop_id=len(digits) - 1, tokens=digits, joiner="",
                                           title="The date model's beam of 5"),
    }


# name -> (CSS selector of the main control inside the widget, keys that change it, data attribute that follows it)
MAIN_CONTROL = {
    "heatmap-chars": ("select.sv-head", ["ArrowDown"], "head"),
    "heatmap-grid": ("select.sv-layer", ["ArrowDown"], "layer"),
    "heatmap-copy": ("canvas.sv-heat", ["ArrowRight", "ArrowRight", "ArrowDown"], "cursor"),
    "heatmap-copy-30": ("canvas.sv-heat", ["ArrowRight", "ArrowDown"], "cursor"),
    "heatmap-dates": ("canvas.sv-heat", ["ArrowDown", "ArrowRight"], "cursor"),
    "lstm": ("input.sv-step", ["ArrowRight", "ArrowRight"], "step"),
    "positional": ("input.sv-d-model", ["ArrowLeft"], "dModel"),
    "next-token": ("input.sv-temperature", ["ArrowLeft", "ArrowLeft", "ArrowLeft"], "temperature"),
    "steps-we": ("button.sv-choice[aria-checked=true]", ["ArrowRight"], "query"),
    "steps-chars": ("button.sv-choice[aria-checked=true]", ["End"], "query"),
    "beam": ("input.sv-step", ["ArrowLeft"], "step"),
    "beam-dates": ("input.sv-step", ["ArrowLeft"], "step"),
}
