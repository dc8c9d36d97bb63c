"""The recap's ladder at equal compute (seqviz.recap): every chapter's rung against its training FLOPs, counted from
the model's shapes and the tokens it read (6 × multiply-adds per token × tokens), so runs measured on different CPUs
compare; one curve per chapter, every series named in the legend, and a budget for every rung of the table."""
from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from seqviz import recap, results  # noqa: E402

RESULTS = {
    "ngram": {"published": {"KN 5-gram": 141.2},
              "rows": [{"model": "seqviz KN 3-gram", "fit_s": 0.6, "test": 148.3},
                       {"model": "seqviz KN 5-gram", "fit_s": 1.2, "test": 141.2},
                       {"model": "NLTK KN 5-gram", "fit_s": 100.0, "test": None}]},
    "window": {"published": {}, "rows": [
        {"name": "KN 5-gram (seqviz.ngram)", "minutes": 0.02, "valid": 148.0, "test": 141.2},   # a baseline
        {"name": "window LM, full", "minutes": 46.7, "epochs": 3.0, "valid": 151.9, "test": 141.3}]},  # no shapes
    "lstm": {"published": {}, "rows": [
        {"name": "seqviz LSTMLM `default`", "test": 208.7,
         "note": "1 x 128, tied, 868 steps, 5.2 min at 2,999 tok/s; valid PP 218.9; x"},
        {"name": "seqviz LSTMLM `full`", "test": 114.8,
         "note": "1 x 200, tied, dropout 0.2, 4340 steps, 36.3 min at 2,133 tok/s; valid PP 194.1 147.4 130.6 123.6 "
                 "120.8; x"}]},
    "transformer": {"published": {}, "rows": [
        {"name": "tuned-90", "final_val_loss": 1.6, "train_seconds": 90},                       # not PTB
        {"name": "seqviz TransformerLM `ptb`", "corpus": "PTB", "test": 100.0, "train_minutes": 60.0, "steps": 20,
         "recipe": {"model": {"num_layers": 2, "d_model": 64}, "batch_size": 4, "context": 32},
         "curve": [{"epoch": 1, "train_minutes": 30.0, "valid": 150.0, "test": 140.0},
                   {"epoch": 2, "train_minutes": 60.0, "valid": 110.0, "test": 100.0}]}]},
}
V = recap.PTB_VOCAB


# ---- the count -------------------------------------------------------------------------------------------------------
def test_multiply_adds_per_token_by_hand():
    """One small model of each family, counted by hand: every matrix a token passes through, rows × columns."""
    small = dict(V=5)
    assert recap.macs_per_token({"kind": "ngram", **small}) == 0                       # counting, no products
    # window: W (d_h × n·d) = 4 × (2·3), U (V × d_h) = 5 × 4
    assert recap.macs_per_token({"kind": "window", "n": 2, "d": 3, "d_h": 4, **small}) == 4 * 6 + 5 * 4
    # Elman: W (d_h × d_emb) = 4 × 3 and U (d_h × d_h) = 4 × 4 at every step, then the output 5 × 4
    elman = {"d_emb": 3, "d_h": 4, "layers": 1, **small}
    assert recap.macs_per_token({"kind": "elman", **elman}) == 4 * 3 + 4 * 4 + 5 * 4
    # GRU three, LSTM four such pairs (one per gate or candidate); a second LSTM layer reads d_h, not d_emb
    assert recap.macs_per_token({"kind": "gru", **elman}) == 3 * (4 * 3 + 4 * 4) + 5 * 4
    assert recap.macs_per_token({"kind": "lstm", **elman}) == 4 * (4 * 3 + 4 * 4) + 5 * 4
    assert recap.macs_per_token({"kind": "lstm", **{**elman, "layers": 2}}) == (4 * (4 * 3 + 4 * 4)
                                                                                 + 4 * (4 * 4 + 4 * 4) + 5 * 4)
    # transformer, one block of d = 4, d_ff = 16, window T = 3: W^Q, W^K, W^V, W^O (4 × 4 each), W_1 (16 × 4),
    # W_2 (4 × 16), q·k_j and α_j v_j for the T = 3 positions (4 each), then E^T (5 × 4)
    tf = {"kind": "transformer", "layers": 1, "d": 4, "d_ff": 16, "T": 3, **small}
    assert recap.macs_per_token(tf) == 4 * 16 + 16 * 4 + 4 * 16 + 3 * 4 + 3 * 4 + 5 * 4
    with pytest.raises(ValueError, match="no FLOP count for a model of kind 'cnn'"):
        recap.macs_per_token({"kind": "cnn", "V": 5})


def _counted(model, x, y) -> int:
    """Floating-point operations torch counts for one training step's forward and backward pass."""
    with FlopCounterMode(display=False) as counter:
        _, loss = model(x, y)
        loss.backward()
    return counter.get_total_flops()


def test_the_count_is_what_torch_counts_for_a_training_step():
    """6 × multiply-adds × tokens is what torch's FlopCounterMode counts for a real forward and backward pass of each
    family's model (the recurrent ones in their step-by-step scratch form, so every product is a counted matmul)."""
    from seqviz.lstm import GRULM, LSTMLM, LSTMLMConfig
    from seqviz.rnn import RNNLM, RNNLMConfig
    from seqviz.transformer import TransformerConfig, TransformerLM
    from seqviz.window import WindowConfig, WindowLM

    torch.manual_seed(0)
    n_v, B, T = 50, 3, 7
    x, y = torch.randint(n_v, (B, T)), torch.randint(n_v, (B, T))
    window = WindowLM(WindowConfig(n_v, context=2, d_emb=3, d_h=4))
    shape = {"kind": "window", "V": n_v, "n": 2, "d": 3, "d_h": 4}
    assert _counted(window, x[:, :2], y[:, 0]) == 6 * recap.macs_per_token(shape) * B
    tf = TransformerLM(TransformerConfig(n_v, max_len=T, d_model=8, num_heads=2, num_layers=2, bias=False,
                                         impl="scratch"))
    shape = {"kind": "transformer", "V": n_v, "layers": 2, "d": 8, "d_ff": 32, "T": T}
    assert _counted(tf, x, y) == 6 * recap.macs_per_token(shape) * B * T
    for kind, model, config in (("elman", RNNLM, RNNLMConfig), ("gru", GRULM, LSTMLMConfig),
                                ("lstm", LSTMLM, LSTMLMConfig)):
        for layers in (1, 2):
            m = model(config(n_v, d_emb=6, d_h=6, num_layers=layers, impl="scratch"))
            shape = {"kind": kind, "V": n_v, "d_emb": 6, "d_h": 6, "layers": layers}
            # the one product torch skips: no gradient flows into the zero initial state h_0 (per gate and layer)
            skipped = 2 * recap.GATES[kind] * 6 * 6 * B * layers
            assert _counted(m, x, y) == 6 * recap.macs_per_token(shape) * B * T - skipped, (kind, layers)


# ---- the shapes and tokens of the recorded rungs ----------------------------------------------------------------------
def _parameters(row: dict) -> int | None:
    """The parameter count a recorded row states: ``size``, ``parameters`` or "N params" in its note."""
    for key in ("parameters", "size"):
        if isinstance(row.get(key), int):
            return row[key]
    m = re.search(r"([\d,]+) params", str(row.get("note", "")))
    return int(m.group(1).replace(",", "")) if m else None


def _built(shape: dict) -> int:
    """Parameters of the package's model of that shape for PTB."""
    from seqviz.lstm import GRULM, LSTMLM, LSTMLMConfig
    from seqviz.rnn import RNNLM, RNNLMConfig
    from seqviz.transformer import TransformerConfig, TransformerLM
    from seqviz.window import WindowConfig, WindowLM

    kind = shape["kind"]
    if kind == "window":
        return WindowLM(WindowConfig(V, context=shape["n"], d_emb=shape["d"], d_h=shape["d_h"])).num_parameters()
    if kind in recap.GATES:
        model, config = {"elman": (RNNLM, RNNLMConfig), "gru": (GRULM, LSTMLMConfig),
                         "lstm": (LSTMLM, LSTMLMConfig)}[kind]
        m = model(config(V, d_emb=shape["d_emb"], d_h=shape["d_h"], num_layers=shape["layers"]))
        return sum(p.numel() for p in m.parameters())
    return TransformerLM(TransformerConfig(V, max_len=shape["T"], d_model=shape["d"], num_heads=4, d_ff=shape["d_ff"],
                                           num_layers=shape["layers"], bias=False)).num_parameters()


def test_each_recorded_rung_s_shape_is_the_model_that_was_trained():
    """The shapes the count reads from a row or from the preset its name gives build, for PTB's vocabulary, a model
    with exactly the parameters the row recorded (a wrong preset or vocabulary would not)."""
    checked = []
    for bench in recap.CHAPTERS:
        for row in (results.read_results(bench) or {}).get("rows", []):
            shape = recap.model_shape(bench, row)
            stated = _parameters(row)
            if shape is None or shape["kind"] == "ngram" or stated is None:
                continue
            assert _built(shape) == stated, (bench, recap._name(row), shape)
            checked.append(bench)
    assert set(checked) == {"window", "rnn", "lstm", "transformer"}, checked


def test_the_rungs_training_flops():
    """The recorded rungs, counted: window 3 passes, Elman and LSTM (both d = 200, one layer, tied) 5 passes, the
    transformer the steps × batch × context it records; the LSTM's update costs more than the Elman's, as chapter 4
    says, and nothing of the CPU they ran on enters."""
    rows = {bench: {recap._name(r): r for r in results.read_results(bench)["rows"]} for bench in recap.CHAPTERS}
    flops = lambda bench, name: recap.training_flops(bench, rows[bench][name])  # noqa: E731
    assert flops("ngram", "seqviz KN 5-gram") == 0
    assert flops("window", "window LM, full (3 ep.)") == 6 * (5 * 128 * 256 + 256 * V) * 3 * recap.PTB_TRAIN_TOKENS
    elman = flops("rnn", "seqviz RNNLM `full`")
    lstm = flops("lstm", "seqviz LSTMLM `full`")
    assert elman == 6 * (200 * 200 + 200 * 200 + 200 * V) * 5 * recap.PTB_TRAIN_POSITIONS
    assert lstm == 6 * (4 * (200 * 200 + 200 * 200) + 200 * V) * 5 * recap.PTB_TRAIN_POSITIONS
    assert 1.1 < lstm / elman < 1.15                       # the LSTM costs more per token; the minutes said 2.5x less
    tf = flops("transformer", "seqviz TransformerLM `ptb`")
    assert tf == 6 * (4 * (4 * 256 ** 2 + 2 * 256 * 1024 + 2 * 128 * 256) + 256 * V) * 4740 * 16 * 128
    assert recap.format_flops(lstm) == "6.8 × 10¹³" and recap.format_flops(tf) == "3.5 × 10¹⁴"
    assert recap.format_flops(0) == "~0" and recap.format_flops(None) == "?" and recap.format_flops(9.96e12) == \
        "1.0 × 10¹³"


def test_ptb_sizes_are_the_corpus_s():
    """PTB_VOCAB, PTB_TRAIN_TOKENS and PTB_TRAIN_POSITIONS are what seqviz.data makes of PTB, as the benches read it."""
    from seqviz.data import Vocab, load_corpus, sentence_stream

    ptb = load_corpus("ptb")
    tokens = ptb.tokens("train", eos="</s>")
    vocab = Vocab.build(tokens)
    assert (len(vocab), len(tokens)) == (recap.PTB_VOCAB, recap.PTB_TRAIN_TOKENS)
    assert len(sentence_stream(ptb.sentences("train"), vocab)) == recap.PTB_TRAIN_POSITIONS


# ---- the curves, the plot and the table ------------------------------------------------------------------------------
def test_train_minutes_reads_each_bench_s_record():
    assert recap.train_minutes({"train_minutes": 12.5}) == 12.5
    assert recap.train_minutes({"minutes": 3.0}) == 3.0
    assert recap.train_minutes({"fit_s": 30}) == 0.5
    assert recap.train_minutes({"note": "d=200, 89.3 min at 867 tok/s"}) == 89.3
    assert recap.train_minutes({"note": "no time here"}) is None


def test_one_curve_per_chapter_at_its_flops_after_each_pass():
    curves = {c["bench"]: c for c in recap.training_curves(RESULTS)}
    assert list(curves) == ["ngram", "window", "lstm", "transformer"]          # chapter 3 has no results here
    assert [c["model"] for c in curves.values()] == ["seqviz KN 5-gram", "window LM, full", "seqviz LSTMLM `full`",
                                                     "seqviz TransformerLM `ptb`"]   # each rung's run, baselines out
    lstm = curves["lstm"]
    per_pass = 6 * (4 * (200 * 200 + 200 * 200) + 200 * V) * recap.PTB_TRAIN_POSITIONS
    assert [round(x / per_pass, 6) for x, _, _ in lstm["points"]] == [1, 2, 3, 4, 5]      # five equal passes
    assert [v for _, v, _ in lstm["points"]] == [194.1, 147.4, 130.6, 123.6, 120.8]
    assert [t for _, _, t in lstm["points"]] == [None] * 4 + [114.8]                    # the test figure at the end
    tf = 6 * (2 * (4 * 64 ** 2 + 2 * 64 * 256 + 2 * 32 * 64) + 64 * V) * 20 * 4 * 32
    assert curves["transformer"]["points"] == [(tf / 2, 150.0, 140.0), (tf, 110.0, 100.0)]
    window = 6 * (5 * 128 * 256 + 256 * V) * 3 * recap.PTB_TRAIN_TOKENS                   # WindowConfig.full's shapes
    assert curves["window"]["points"] == [(window, 151.9, 141.3)]
    assert curves["ngram"]["points"] == [(0.0, None, 141.2)]
    assert [c["bench"] for c in recap.training_curves(RESULTS, upto="window")] == ["ngram", "window"]


def test_plot_compute_names_every_series_it_draws():
    """One legend entry per chapter, and every line drawn (each chapter's passes and its test star, the n-gram's
    level) carries a label the legend shows: none unnamed, none named twice."""
    ax = recap.plot_compute(recap.training_curves(results.all_results()))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(legend) == len(set(legend)) == 5
    assert [t.split(",")[0].split(":")[0] for t in legend] == [f"ch. {c}" for c in recap.CHAPTERS.values()]
    drawn = [line.get_label() for line in ax.get_lines()]
    assert all(label in legend for label in drawn), drawn
    assert set(drawn) == set(legend)
    stars = [line for line in ax.get_lines() if line.get_marker() == "*"]
    assert len(stars) == 4                                                  # window, Elman, LSTM, transformer
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and "FLOPs" in ax.get_xlabel()
    width, _ = ax.figure.get_size_inches()
    assert width <= 7


def test_every_rung_says_its_budget():
    rungs = {r["chapter"]: r for r in recap.chapter_rungs(RESULTS)}
    assert rungs["1 n-gram"]["budget"] == "counts, ~0 FLOPs, 1 s"
    assert rungs["2 fixed window"]["budget"] == "4.6 × 10¹³ FLOPs, 47 min"
    assert rungs["4 LSTM"]["budget"] == "6.8 × 10¹³ FLOPs, 36 min"
    assert rungs["7 transformer"]["budget"].endswith(" FLOPs, 60 min") and rungs["7 transformer"]["perplexity"] == 100
    assert rungs["3 RNN"]["budget"] is None and rungs["3 RNN"]["perplexity"] is None   # not measured here
    assert "budget" in recap.RECAP_COLUMNS


def test_a_rung_with_no_shapes_is_not_drawn():
    """A row whose shapes neither it nor a preset gives is left off the plot, not placed at a guessed x."""
    odd = {**RESULTS, "window": {"published": {}, "rows": [{"name": "window LM <b>", "minutes": 3.0, "test": 150.0}]}}
    assert recap.model_shape("window", odd["window"]["rows"][0]) is None
    assert "window" not in {c["bench"] for c in recap.training_curves(odd)}
    assert recap.chapter_rungs(odd, upto="window")[1]["budget"] == "3 min"


def test_upto_must_be_a_chapter_bench():
    with pytest.raises(ValueError, match="upto must be one of"):
        recap.training_curves(RESULTS, upto="attention")
