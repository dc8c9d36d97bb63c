"""seqviz.metrics: exact match (either encoder-decoder), BLEU and its paired bootstrap (checked against sacrebleu's
own paired bootstrap), ROUGE (equal to Google's rouge-score)."""
import numpy as np
import pytest
import torch

from seqviz.metrics import (Score, _bleu_from_stats, _bleu_segment_stats, bleu, exact_match, paired_bootstrap, rouge,
                            rouge_corpus)


# ---------------------------------------------------------------------------------------------------------------
# exact match
# ---------------------------------------------------------------------------------------------------------------
class _Answers:
    """A stand-in encoder-decoder whose greedy output for source row i is ``answers[i]``; records its calls."""

    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def greedy(self, x, mask, max_new_tokens):
        self.calls.append((tuple(x.shape), max_new_tokens))
        return [self.answers[int(row[0])] for row in x]              # row i's first id is i


def test_exact_match_compares_each_output_with_its_target():
    tgt = [[5, 6, 3], [7, 3], [8, 8, 8, 3], [4, 3], [9, 3]]
    src = [[i, 1, 1][:2 + i % 2] for i in range(5)]                  # first id = row number
    answers = [[5, 6, 3], [7, 7, 3], [8, 8, 8, 3], [4], [9, 3, 3]]  # right, wrong, right, no </s>, too long
    model = _Answers(answers)
    ok = exact_match(model, src, tgt, pad_id=99, batch_size=2)
    assert ok.dtype == torch.bool and ok.tolist() == [True, False, True, False, False]
    assert [s for s, _ in model.calls] == [(2, 3), (2, 3), (1, 2)]  # batches of 2, padded
    assert {n for _, n in model.calls} == {4 + 5}                    # longest target + 5 output tokens
    exact_match(model, src, tgt, 99, max_new_tokens=7)
    assert model.calls[-1][1] == 7
    with pytest.raises(ValueError, match="as many targets as sources"):
        exact_match(model, src, tgt[:3], 99)


def test_exact_match_of_a_seq2seq_left_in_train_mode_with_dropout():
    from seqviz.seq2seq import Seq2Seq, Seq2SeqConfig
    torch.manual_seed(0)
    m = Seq2Seq(Seq2SeqConfig(12, 9, d_emb=16, d_h=32, dropout=0.5))
    src = [[5, 6, 7, 8, 9], [4, 5, 6], [7, 7], [10, 11, 4, 4]]
    alone = [m.eval().greedy(torch.tensor([s]), max_new_tokens=6)[0] for s in src]   # one source at a time
    tgt = [out if i % 2 == 0 else out[:-1] + [(out[-1] + 1) % 9] for i, out in enumerate(alone)]
    m.train()
    assert exact_match(m, src, tgt, pad_id=0, max_new_tokens=6).tolist() == [True, False, True, False]
    assert m.training


# ---------------------------------------------------------------------------------------------------------------
# BLEU and the paired bootstrap resampling of corpus BLEU (Koehn, 2004)
# ---------------------------------------------------------------------------------------------------------------
_WORDS = "the cat dog sat on a mat ran to house big small red tree in garden".split()


def _sentences(n: int, seed: int, lo: int = 3, hi: int = 12) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_WORDS, size=rng.integers(lo, hi))) + rng.choice([".", "!", "?"]) for _ in range(n)]


def _noisy(refs: list[str], p: float, seed: int) -> list[str]:
    """Each word of each reference replaced by a random word with probability p."""
    rng = np.random.default_rng(seed)
    return [" ".join(w if rng.random() > p else str(rng.choice(_WORDS)) for w in r.split()) for r in refs]


def test_bleu_is_sacrebleus_corpus_bleu():
    import sacrebleu
    refs = _sentences(50, 30)
    hyps = _noisy(refs, 0.3, 31)
    assert bleu(hyps, refs) == sacrebleu.corpus_bleu(hyps, [refs]).score
    assert bleu(refs, refs) == pytest.approx(100.0)
    assert bleu(["a b c d"] * 4, refs[:4]) < 5
    with pytest.raises(ValueError, match="one reference per hypothesis"):
        bleu(refs[:2], refs)


@pytest.mark.parametrize("noise_a, noise_b", [(0.25, 0.40), (0.30, 0.30)])
def test_paired_bootstrap_equals_sacrebleus_paired_bootstrap(monkeypatch, noise_a, noise_b):
    """sacrebleu's own paired bootstrap (sacrebleu.significance.PairedTest, test_type="bs") on the same sentences.

    The same delta on the full set. With SACREBLEU_SEED = our seed, sacrebleu draws the same resamples (its
    rng.choice(N, (n, N)) is our n draws of rng.integers(0, N, N)), so its p-value is exactly its own rule applied
    to our resampled deltas: every resampled BLEU difference agrees. The reported numbers differ by definition, not
    by noise: sacrebleu's p is two-sided, the share of resamples whose |delta| minus the mean |delta| exceeds the
    full set's |delta| (+1 smoothed), where ours is Koehn's one-sided share of resamples in which A does not beat B;
    and sacrebleu gives each system's own 95% half-width, not an interval of the difference. Seed 0 cannot be
    compared: sacrebleu takes SACREBLEU_SEED=0 for "no seed".
    """
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest
    refs = _sentences(200, 20)
    a, b = _noisy(refs, noise_a, 21), _noisy(refs, noise_b, 22)
    n, seed = 1000, 12345
    ours = paired_bootstrap(a, b, refs, n=n, seed=seed)
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    _, scores = PairedTest([("B", b), ("A", a)], {"BLEU": BLEU()}, [refs], test_type="bs", n_samples=n)()
    base, system = scores["BLEU"]
    assert ours["delta"] == pytest.approx(system.score - base.score, abs=1e-9)
    d = ours["deltas"]
    assert d.shape == (n,)
    centred = np.abs(d) - np.abs(d).mean()
    assert system.p_value == pytest.approx((np.sum(centred > abs(ours["delta"])) + 1) / (n + 1), abs=1e-12)
    assert ours["ci95"] == tuple(np.percentile(d, [2.5, 97.5])) and ours["p_value"] == np.mean(d <= 0)
    if noise_a < noise_b:                                  # a clear difference: both call it significant
        assert ours["p_value"] < 0.01 and system.p_value < 0.01 and ours["ci95"][0] > 0


def test_paired_bootstrap_full_set_delta_is_the_bleu_difference():
    refs = _sentences(200, 0)
    a, b = _noisy(refs, 0.2, 1), _noisy(refs, 0.4, 2)
    res = paired_bootstrap(a, b, refs, n=50)
    assert res["delta"] == pytest.approx(bleu(a, refs) - bleu(b, refs), abs=1e-6)
    assert res["delta"] != 0 and res["n"] == 50
    # and the sign flips with the order of the systems
    assert paired_bootstrap(b, a, refs, n=50)["delta"] == pytest.approx(-res["delta"], abs=1e-9)


def test_paired_bootstrap_resample_equals_bleu_of_the_resampled_corpus():
    """Summing per-sentence statistics is corpus BLEU of the resampled test set, computed the slow way."""
    refs = _sentences(60, 3)
    hyps = _noisy(refs, 0.3, 4)
    stats, metric = _bleu_segment_stats(hyps, refs)
    idx = np.random.default_rng(5).integers(0, len(refs), size=len(refs))
    counts = np.bincount(idx, minlength=len(refs))
    assert _bleu_from_stats(metric, counts @ stats) == pytest.approx(
        bleu([hyps[i] for i in idx], [refs[i] for i in idx]), abs=1e-6)


def test_paired_bootstrap_identical_systems():
    refs = _sentences(80, 6)
    a = _noisy(refs, 0.3, 7)
    res = paired_bootstrap(a, list(a), refs, n=200)
    assert res["delta"] == 0.0 and res["ci95"] == (0.0, 0.0)
    assert res["p_value"] == 1.0                        # A never beats itself: every resampled delta is 0


def test_paired_bootstrap_perfect_system_beats_a_poor_one():
    refs = _sentences(100, 8)
    poor = _noisy(refs, 0.7, 9)
    res = paired_bootstrap(refs, poor, refs, n=300)
    assert res["p_value"] == 0.0
    assert 0 < res["ci95"][0] <= res["delta"] <= res["ci95"][1]
    assert paired_bootstrap(poor, refs, refs, n=300)["p_value"] == 1.0


def test_paired_bootstrap_close_systems_are_not_significant():
    """Two systems of the same noise level (different draws): the CI straddles 0 and p is far from 0 and 1."""
    refs = _sentences(150, 10)
    res = paired_bootstrap(_noisy(refs, 0.3, 11), _noisy(refs, 0.3, 12), refs, n=500)
    assert res["ci95"][0] < 0 < res["ci95"][1]
    assert 0.02 < res["p_value"] < 0.98


def test_paired_bootstrap_is_deterministic_for_a_seed():
    refs = _sentences(60, 13)
    a, b = _noisy(refs, 0.25, 14), _noisy(refs, 0.3, 15)
    r1, r2 = paired_bootstrap(a, b, refs, n=100, seed=3), paired_bootstrap(a, b, refs, n=100, seed=3)
    assert np.array_equal(r1.pop("deltas"), r2.pop("deltas")) and r1 == r2
    r3 = paired_bootstrap(a, b, refs, n=100, seed=4)
    assert r3["delta"] == r1["delta"] and r3["ci95"] != r1["ci95"]


def test_paired_bootstrap_bad_input():
    refs = _sentences(5, 16)
    with pytest.raises(ValueError, match="same sentences.*equal length"):
        paired_bootstrap(refs[:4], refs, refs)
    with pytest.raises(ValueError, match="equal length"):
        paired_bootstrap(refs, refs, refs[:3])
    with pytest.raises(ValueError, match="at least one sentence"):
        paired_bootstrap([], [], [])
    for bad in (0, -5, 2.5, True, "1000"):
        with pytest.raises(ValueError, match="positive int"):
            paired_bootstrap(refs, refs, refs, n=bad)


# ---------------------------------------------------------------------------------------------------------------
# ROUGE equals Google's rouge-score (its defaults: no stemmer)
# ---------------------------------------------------------------------------------------------------------------
_ROUGE_WORDS = ["the", "The", "cat", "cat's", "sat", "on", "mat", "Mat", "2-1", "win", "£5m", "U.S.", "don't",
                "a", "A", "dog", "ran", "to", "house"]
_PUNCT = ["", "", "", ",", ".", "!", "?", ";", " -", "'s", ")", " ("]


def _rouge_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """Random texts from a small vocabulary (so words repeat) with punctuation, mixed case, digits and symbols;
    some empty or punctuation-only."""
    rng = np.random.default_rng(seed)

    def text():
        k = int(rng.integers(0, 16))
        return " ".join(str(rng.choice(_ROUGE_WORDS)) + str(rng.choice(_PUNCT)) for _ in range(k))

    pairs = [(text(), text()) for _ in range(n)]
    return pairs + [("", "the cat"), ("the cat", ""), ("!!", "?"), ("the the the", "the")]


def test_rouge_equals_rouge_score_on_300_pairs():
    from rouge_score import rouge_scorer
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    pairs = _rouge_pairs(300, 40)
    for ref, hyp in pairs:
        ours, theirs = rouge(ref, hyp), scorer.score(ref, hyp)
        for k in ("rouge1", "rouge2", "rougeL"):
            assert isinstance(ours[k], Score)
            assert tuple(ours[k]) == pytest.approx(tuple(theirs[k]), abs=1e-12), (k, ref, hyp)
    refs, hyps = zip(*pairs)
    got = rouge_corpus(refs, hyps)
    for k in ("rouge1", "rouge2", "rougeL"):
        assert got[k] == pytest.approx(100 * np.mean([scorer.score(r, h)[k].fmeasure for r, h in pairs]), abs=1e-9)
    assert 0 < got["rouge2"] < got["rouge1"] < 100      # the pairs overlap in part: no vacuous zeros or ones
    with pytest.raises(ValueError, match="one each"):
        rouge_corpus(refs, hyps[:3])
