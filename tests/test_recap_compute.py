"""The recap's ladder at equal cost (seqviz.recap): every run's per-epoch figures against its training minutes, read
from what the benches record (a ``curve`` list, or the ``valid PP`` and minutes of a row's note), and a budget for
every rung of the table."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from seqviz import recap  # noqa: E402

RESULTS = {
    "ngram": {"published": {"KN 5-gram": 141.2},
              "rows": [{"model": "seqviz KN 3-gram", "fit_s": 0.6, "test": 148.3},
                       {"model": "seqviz KN 5-gram", "fit_s": 1.2, "test": 141.2},
                       {"model": "NLTK KN 5-gram", "fit_s": 100.0, "test": None}]},
    "window": {"published": {}, "rows": [
        {"name": "KN 5-gram (seqviz.ngram)", "minutes": 0.02, "valid": 148.0, "test": 141.2},   # a baseline
        {"name": "window LM, full", "minutes": 46.7, "valid": 151.9, "test": 141.3}]},
    "lstm": {"published": {}, "rows": [
        {"name": "seqviz LSTMLM `full`", "test": 114.8,
         "note": "1 x 200, tied, 4340 steps, 36.3 min at 2,133 tok/s; valid PP 194.1 147.4 130.6 123.6 120.8; x"}]},
    "transformer": {"published": {}, "rows": [
        {"name": "tuned-90", "final_val_loss": 1.6, "train_seconds": 90},                       # not PTB
        {"name": "seqviz TransformerLM `ptb`", "corpus": "PTB", "test": 100.0, "train_minutes": 60.0,
         "curve": [{"epoch": 1, "train_minutes": 30.0, "valid": 150.0, "test": 140.0},
                   {"epoch": 2, "train_minutes": 60.0, "valid": 110.0, "test": 100.0}]}]},
}


def test_train_minutes_reads_each_bench_s_record():
    assert recap.train_minutes({"train_minutes": 12.5}) == 12.5
    assert recap.train_minutes({"minutes": 3.0}) == 3.0
    assert recap.train_minutes({"fit_s": 30}) == 0.5
    assert recap.train_minutes({"note": "d=200, 89.3 min at 867 tok/s"}) == 89.3
    assert recap.train_minutes({"note": "no time here"}) is None


def test_training_curves_take_every_epoch_at_its_minutes():
    curves = {c["model"]: c for c in recap.training_curves(RESULTS)}
    assert set(curves) == {"seqviz KN 5-gram", "window LM, full", "seqviz LSTMLM `full`",
                           "seqviz TransformerLM `ptb`"}                   # baselines and non-PTB rows left out
    lstm = curves["seqviz LSTMLM `full`"]["points"]
    assert [round(m, 2) for m, _, _ in lstm] == [7.26, 14.52, 21.78, 29.04, 36.3]   # five equal epochs
    assert [v for _, v, _ in lstm] == [194.1, 147.4, 130.6, 123.6, 120.8]
    assert [t for _, _, t in lstm] == [None] * 4 + [114.8]                 # the test figure at the end only
    assert curves["seqviz TransformerLM `ptb`"]["points"] == [(30.0, 150.0, 140.0), (60.0, 110.0, 100.0)]
    assert curves["seqviz KN 5-gram"]["points"] == [(0.02, None, 141.2)]
    assert {c["bench"] for c in recap.training_curves(RESULTS, upto="window")} == {"ngram", "window"}


def test_every_rung_says_its_budget():
    rungs = {r["chapter"]: r for r in recap.chapter_rungs(RESULTS)}
    assert rungs["1 n-gram"]["budget"] == "1 s"
    assert rungs["2 fixed window"]["budget"] == "47 min"
    assert rungs["4 LSTM"]["budget"] == "36 min"
    assert rungs["7 transformer"]["budget"] == "60 min" and rungs["7 transformer"]["perplexity"] == 100.0
    assert rungs["3 RNN"]["budget"] is None and rungs["3 RNN"]["perplexity"] is None   # not measured here
    assert "budget" in recap.RECAP_COLUMNS


def test_plot_compute_draws_a_line_per_run_and_a_star_per_test():
    ax = recap.plot_compute(recap.training_curves(RESULTS))
    lines = ax.get_lines()
    stars = [l for l in lines if l.get_marker() == "*"]
    assert len(stars) == 4                                                 # KN, window, LSTM, transformer
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"ch. 1 n-gram", "ch. 2 fixed window", "ch. 4 LSTM",
                                                                   "ch. 7 transformer"}


def test_upto_must_be_a_chapter_bench():
    with pytest.raises(ValueError, match="upto must be one of"):
        recap.training_curves(RESULTS, upto="attention")
