"""Tests for seqviz.ngram: hand-computed counts, distributions that sum to 1, the scratch Kneser-Ney (ScratchKN)
equal to the fast one, an independent dict-based backoff reference, NLTK's nltk.lm where the definitions match,
perplexity by the formula, sampling, and clear errors on bad input."""
from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings, strategies as st

from seqviz import decode
from seqviz.data import Vocab
from seqviz.ngram import NGramConfig, NGramLM, ScratchKN

SAM = [s.split() for s in ("I am Sam", "Sam I am", "I do not like green eggs and ham")]  # SLP's toy corpus
# The toy corpora below are read word for word (min_freq=1 keeps every type), as the hand counts assume; the default
# vocabulary of raw text (training singletons -> <unk>) is tested at the end.
ALPHABET = ["a", "b", "c", "d"]

# ---------------------------------------------------------------------------------------------------------------
# Strategies: small random corpora and contexts (with unseen tokens and explicit sentence starts)
# ---------------------------------------------------------------------------------------------------------------
corpora = st.lists(st.lists(st.sampled_from(ALPHABET), max_size=7), min_size=1, max_size=8).filter(
    lambda ss: any(ss))  # at least one token (an all-empty corpus is an error, tested below)


@st.composite
def model_and_context(draw, smoothings=("addk", "backoff", "kn")):
    n = draw(st.integers(1, 4))
    smoothing = draw(st.sampled_from(smoothings))
    extra = {}
    if smoothing == "addk":
        extra["k"] = draw(st.sampled_from([0.01, 0.5, 1.0, 3.0]))
    elif smoothing == "kn":
        extra["discount"] = draw(st.sampled_from([None, 0.0, 0.3, 0.75, 1.0]))
    elif smoothing == "backoff":
        extra["discount"] = draw(st.sampled_from([None, 0.1, 0.5, 0.9]))
    sents = draw(corpora)
    lm = NGramLM(n=n, smoothing=smoothing, **extra, min_freq=1).fit(sents)
    length = draw(st.integers(0, n - 1))
    n_bos = draw(st.integers(0, length))
    ctx = ["<s>"] * n_bos + draw(st.lists(st.sampled_from(ALPHABET + ["zz"]), min_size=length - n_bos,
                                          max_size=length - n_bos))
    return lm, ctx, sents


# ---------------------------------------------------------------------------------------------------------------
# An independent reference for backoff: the textbook definition written with dicts, one query at a time
# (Kneser-Ney has its dict version in the package, seqviz.ngram.ScratchKN, tested below)
# ---------------------------------------------------------------------------------------------------------------
def ref_counts(sents, n):
    """counts[m][(w_1..w_m)] over n-grams ending at predicted positions (n-1 <s> of padding, one </s>)."""
    counts = [Counter() for _ in range(n + 1)]
    for s in sents:
        p = ["<s>"] * (n - 1) + list(s) + ["</s>"]
        for i in range(n - 1, len(p)):
            for m in range(1, n + 1):
                counts[m][tuple(p[i - m + 1:i + 1])] += 1
    return counts


def ref_backoff(sents, n, V, D):
    """Normalised backoff with absolute discount D[m-1] at order m; the uniform 1/V below the unigrams."""
    counts = ref_counts(sents, n)

    def P(w, h):
        m = len(h) + 1
        low = (lambda v: P(v, h[1:])) if m > 1 else (lambda v: 1.0 / V)
        row = {g[-1]: c for g, c in counts[m].items() if g[:-1] == h}
        den = sum(row.values())
        if den == 0:
            return low(w)
        Dm = 0.0 if len(row) >= V else D[m - 1]
        if w in row:
            return (row[w] - Dm) / den
        freed = Dm * len(row) / den
        room = 1.0 - sum(low(v) for v in row)
        return freed / room * low(w) if freed > 0 and room > 1e-12 else 0.0

    return P


def padded(lm, ctx):
    """A context as the model sees it: unknown tokens -> <unk>, left-padded with <s> to n-1 tokens."""
    ctx = [t if t in lm.vocab else "<unk>" for t in ctx]
    return tuple(["<s>"] * (lm.n - 1 - len(ctx)) + ctx)


def predictable(lm):
    return [t for t in lm.vocab.itos if t not in ("<s>", "<pad>")]


# ---------------------------------------------------------------------------------------------------------------
# MLE and counts, by hand
# ---------------------------------------------------------------------------------------------------------------
def test_mle_bigram_equals_hand_counts():
    lm = NGramLM(n=2, smoothing="mle", min_freq=1).fit(SAM)
    # C(<s> I) = 2, C(<s>) = 3; C(I am) = 2, C(I) = 3; C(Sam </s>) = 1, C(Sam) = 2; C(am Sam) = 1, C(am) = 2
    assert lm.prob("I", ["<s>"]) == pytest.approx(2 / 3)
    assert lm.prob("Sam", ["<s>"]) == pytest.approx(1 / 3)
    assert lm.prob("am", ["I"]) == pytest.approx(2 / 3)
    assert lm.prob("</s>", ["Sam"]) == pytest.approx(1 / 2)
    assert lm.prob("Sam", ["am"]) == pytest.approx(1 / 2)
    assert lm.prob("do", ["I"]) == pytest.approx(1 / 3)
    assert lm.prob("ham", ["I"]) == 0.0
    assert lm.count(["I", "am"]) == 2 and lm.context_count(["I"]) == 3 and lm.context_count(["<s>"]) == 3
    assert lm.count(["am"]) == 2 and lm.count(["</s>"]) == 3 and lm.context_count([]) == 17  # 14 words + 3 </s>


def test_mle_trigram_and_unigram_counts():
    tri = NGramLM(n=3, smoothing="mle", min_freq=1).fit(SAM)
    assert tri.prob("am", ["<s>", "I"]) == pytest.approx(1 / 2)        # "<s> I am" and "<s> I do"
    assert tri.prob("Sam", ["I", "am"]) == pytest.approx(1 / 2)        # C(I am Sam) = 1, C(I am) = 2
    assert tri.prob("Sam", ["<s>", "<s>"]) == pytest.approx(1 / 3)
    assert tri.count(["<s>", "<s>", "Sam"]) == 1 and tri.context_count(["<s>", "<s>"]) == 3
    uni = NGramLM(n=1, smoothing="mle", min_freq=1).fit(SAM)
    assert uni.prob("I") == pytest.approx(3 / 17) and uni.prob("</s>") == pytest.approx(3 / 17)
    assert uni.distribution().sum() == pytest.approx(1.0)


def test_continuation_counts_by_hand():
    lm = NGramLM(n=3, min_freq=1).fit(SAM)
    assert lm.continuation_count("am") == 1      # only "I" precedes "am"
    assert lm.continuation_count("I") == 2       # <s> I, Sam I
    assert lm.continuation_count("</s>") == 3    # Sam, am, ham
    assert lm.continuation_count("Sam") == 2 and lm.count(["Sam"]) == 2
    with pytest.raises(ValueError, match="n >= 2"):
        NGramLM(n=1, min_freq=1).fit(SAM).continuation_count("I")


def test_num_ngrams_and_unseen_rates_by_hand():
    lm = NGramLM(n=2, smoothing="mle", min_freq=1).fit([["a", "b"], ["a", "c"]])
    # bigrams: <s> a (2), a b, b </s>, a c, c </s>
    assert [lm.num_ngrams(1), lm.num_ngrams(2)] == [4, 5]
    # test "a d": predictions a, <unk>, </s>; unigrams unseen: <unk>; bigrams unseen: a <unk>, <unk> </s>
    # contexts: <s> (seen), a (seen), <unk> (never a context)
    gram, ctx = lm.unseen_rates([["a", "d"]])
    np.testing.assert_allclose(gram, [1 / 3, 2 / 3])
    np.testing.assert_allclose(ctx, [0.0, 1 / 3])


# ---------------------------------------------------------------------------------------------------------------
# Distributions sum to 1, and the batch and single-context code paths agree
# ---------------------------------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(model_and_context())
def test_smoothed_distributions_sum_to_one(lm_ctx):
    lm, ctx, _ = lm_ctx
    p = lm.distribution(ctx)
    assert p.shape == (len(lm.vocab),)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(p >= 0)
    assert p[lm.vocab.bos_id] == 0 and p[lm.vocab.pad_id] == 0
    if lm.config.smoothing == "addk" or lm.config.discount is None or lm.config.discount > 0:
        assert np.all(p[lm.predictable] > 0)  # smoothing leaves no predictable token at zero


@settings(max_examples=80, deadline=None)
@given(model_and_context(smoothings=("mle", "addk", "backoff", "kn")), corpora)
def test_sentence_scores_match_one_context_queries(lm_ctx, test_sents):
    lm, _, _ = lm_ctx
    lp = lm.logprobs(test_sents)
    assert lp.shape == (sum(len(s) + 1 for s in test_sents),)
    expected = []
    for s in test_sents:
        for i, w in enumerate(s + ["</s>"]):
            hist = s[max(0, i - lm.n + 1):i]
            try:
                d = lm.next_token_logits(lm.vocab.encode(hist))
            except ValueError as e:  # MLE refuses to give a distribution for a context it never saw (0/0)
                assert lm.config.smoothing == "mle" and "never occurs in training" in str(e)
                expected.append(math.nan)
                continue
            expected.append(float(d[lm.vocab.stoi.get(w, lm.vocab.unk_id)]))
    np.testing.assert_allclose(lp, expected, rtol=1e-12, atol=0)  # NaN (MLE, unseen context) compares equal


# ---------------------------------------------------------------------------------------------------------------
# Equal to the dict-based reference
# ---------------------------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------------------------
# The scratch Kneser-Ney (dicts, one query at a time) equals the fast one (ranked integer ids)
# ---------------------------------------------------------------------------------------------------------------
ZIPF_WORDS = [f"w{i}" for i in range(10)]


def zipf_corpus(n_sentences=100, seed=0):
    """Skewed random sentences: enough n-grams seen 1, 2, 3 and 4 times that (1.9) estimates D_1 != D_2 != D_3+."""
    rng = np.random.default_rng(seed)
    p = 1 / np.arange(1, len(ZIPF_WORDS) + 1)
    return [list(rng.choice(ZIPF_WORDS, size=rng.integers(1, 9), p=p / p.sum())) for _ in range(n_sentences)]


def every_context(tokens, n):
    """Every context of 0..n-1 tokens over ``tokens``, and each also behind explicit <s> where it is shorter."""
    for length in range(n):
        for ctx in itertools.product(tokens, repeat=length):
            for n_bos in range(n - length):
                yield ["<s>"] * n_bos + list(ctx)


@pytest.mark.parametrize("discount", [None, 0.5, "per order"])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_scratch_kn_equals_fast_in_every_context(n, discount):
    sents = zipf_corpus()
    if discount == "per order":
        discount = [0.2, 0.9, 0.4, 1.0][:n]
    fast = NGramLM(n=n, smoothing="kn", discount=discount, min_freq=1).fit(sents)
    scratch = ScratchKN(n=n, discount=discount, min_freq=1).fit(sents)
    if discount is None and n > 1:  # (1.9) really estimated three different discounts, at the top order too
        assert len(set(np.round(fast.discounts_used[-1], 12))) == 3
    np.testing.assert_allclose(scratch.discounts_used, fast.discounts_used, rtol=0, atol=0)
    seen_contexts = {tuple(s[max(0, i - n + 1):i]) for s in sents for i in range(len(s) + 1)}
    n_unseen = 0
    for ctx in every_context(ZIPF_WORDS + ["zz"], n):  # "zz" is unknown: <unk>, a context never seen in training
        p = scratch.distribution(ctx)
        np.testing.assert_allclose(p, fast.distribution(ctx), rtol=0, atol=1e-12)
        assert p.sum() == pytest.approx(1.0, abs=1e-12) and np.all(p[scratch.predictable] > 0)
        n_unseen += tuple(t for t in ctx if t != "<s>") not in seen_contexts
    assert n == 1 or n_unseen > 0  # unseen contexts were among those compared
    ids = fast.vocab.encode(["w1", "w0", "</s>", "w3", "zz", "w2"])  # a history across a sentence boundary
    torch.testing.assert_close(scratch.next_token_logits(ids), fast.next_token_logits(ids), rtol=0, atol=1e-12)
    assert scratch.prob("w0", ["w1"][:n - 1]) == pytest.approx(fast.prob("w0", ["w1"][:n - 1]), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(model_and_context(smoothings=("kn",)))
def test_scratch_kn_equals_fast_on_random_corpora(lm_ctx):
    lm, ctx, sents = lm_ctx
    scratch = ScratchKN(lm.config).fit(sents)
    p = scratch.distribution(ctx)
    np.testing.assert_allclose(p, lm.distribution(ctx), rtol=0, atol=1e-12)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert p[lm.vocab.bos_id] == 0 and p[lm.vocab.pad_id] == 0


@settings(max_examples=30, deadline=None)
@given(corpora, corpora, st.integers(1, 4))
def test_scratch_kn_scores_sentences_like_the_fast_one(train, test, n):
    fast, scratch = NGramLM(n=n, min_freq=1).fit(train), ScratchKN(n=n, min_freq=1).fit(train)
    np.testing.assert_allclose(scratch.logprobs(test + [["zz", "a"]]), fast.logprobs(test + [["zz", "a"]]),
                               rtol=1e-12, atol=0)


def test_scratch_kn_generates_like_the_fast_one_and_keeps_the_vocabulary():
    vocab = Vocab.build(SAM, min_freq=2)  # a closed vocabulary: the rarer words are <unk>
    fast, scratch = NGramLM(n=3).fit(SAM, vocab=vocab), ScratchKN(n=3).fit(SAM, vocab=vocab)
    assert scratch.vocab is vocab and scratch.V_pred == fast.V_pred == 5
    assert scratch.prob("green", ["I"]) == scratch.prob("<unk>", ["I"]) == pytest.approx(fast.prob("<unk>", ["I"]))
    assert scratch.generate(["I"], 20, greedy=True) == fast.generate(["I"], 20, greedy=True)
    (w_s, p_s), (w_f, p_f) = (zip(*lm.top_next(["I", "am"], k=3)) for lm in (scratch, fast))
    assert w_s == w_f and p_s == pytest.approx(p_f, abs=1e-12)
    assert "ScratchKN(n=3" in repr(scratch) and "not fitted" in repr(ScratchKN(n=2))


def test_scratch_kn_reads_its_tables_like_the_equations():
    """(1.6)-(1.8) by hand on SAM with one discount D = 0.5 at every order, bigram model."""
    lm = ScratchKN(n=2, discount=0.5, min_freq=1).fit(SAM)
    # top order: raw counts after "I": am 2, do 1 -> sum 3; gamma(I) = (0.5 + 0.5) / 3
    assert lm.cp[("I", "am")] == 2 and lm.cp[("I", "do")] == 1 and lm.total[("I",)] == 3
    assert lm.gamma[("I",)] == pytest.approx(1 / 3)
    # unigrams: continuation counts N1+(. w); "am" follows only "I"; 15 distinct bigram types
    assert lm.cp[("am",)] == 1 and lm.cp[("</s>",)] == 3 and lm.total[()] == 15
    V = lm.V_pred  # 12: 10 words, </s>, <unk>
    p_uni_am = (1 - 0.5) / 15 + (0.5 * 11 / 15) * (1 / V)  # 11 distinct continuation types in c'(.)
    assert lm.p_kn("am", ()) == pytest.approx(p_uni_am)
    assert lm.prob("am", ["I"]) == pytest.approx((2 - 0.5) / 3 + (1 / 3) * p_uni_am)
    assert lm.prob("am", ["zz"]) == pytest.approx(p_uni_am)  # <unk> never was a context: the lower order answers


def test_scratch_kn_errors():
    with pytest.raises(ValueError, match="Kneser-Ney only"):
        ScratchKN(n=2, smoothing="laplace")
    with pytest.raises(ValueError, match="n must be a positive int"):
        ScratchKN(n=0)
    with pytest.raises(TypeError, match=r"ScratchKN\(n=...\)"):
        ScratchKN(3)
    with pytest.raises(ValueError, match="not been fitted"):
        ScratchKN(n=2).prob("a")
    with pytest.raises(ValueError, match="adds n-1 <s>"):
        ScratchKN(n=2).fit([["<s>", "I", "am"]])
    with pytest.raises(TypeError, match="not one string"):
        ScratchKN(n=2).fit("I am Sam")
    with pytest.raises(ValueError, match="at most 1 previous tokens"):
        ScratchKN(n=2, min_freq=1).fit(SAM).prob("Sam", ["I", "am"])


@settings(max_examples=60, deadline=None)
@given(model_and_context(smoothings=("backoff",)))
def test_backoff_equals_reference(lm_ctx):
    lm, ctx, sents = lm_ctx
    P = ref_backoff(sents, lm.n, lm.V_pred, lm.discounts_used)
    p = lm.distribution(ctx)
    h = padded(lm, ctx)
    for w in predictable(lm):
        assert p[lm.vocab[w]] == pytest.approx(P(w, h), abs=1e-12)


@pytest.mark.parametrize("smoothing", ["backoff", "kn"])
def test_context_followed_by_every_word(smoothing):
    """With a closed vocabulary and no <unk>, a context can be followed by every token. Backoff then has no
    unseen word to give freed mass to, so it keeps that context's MLE; KN still interpolates."""
    vocab = Vocab(["<s>", "</s>", "a", "b"], unk=None, pad=None)
    sents = [["a", "b"], ["a", "a"], ["a"], ["b", "a", "b", "b"]]
    lm = NGramLM(n=2, smoothing=smoothing).fit(sents, vocab=vocab)
    p = lm.distribution(["a"])
    assert p.sum() == pytest.approx(1.0)
    if smoothing == "backoff":
        ref = ref_backoff(sents, 2, 3, lm.discounts_used)
        ref_p = [ref(w, ("a",)) for w in ("a", "b", "</s>")]
    else:
        ref_p = [ScratchKN(n=2).fit(sents, vocab=vocab).prob(w, ["a"]) for w in ("a", "b", "</s>")]
    np.testing.assert_allclose(p[[vocab["a"], vocab["b"], vocab["</s>"]]], ref_p, rtol=0, atol=1e-12)
    if smoothing == "backoff":  # C(a a) = 1, C(a b) = 2, C(a </s>) = 2 of C(a) = 5
        np.testing.assert_allclose(p[[vocab["a"], vocab["b"], vocab["</s>"]]], [1 / 5, 2 / 5, 2 / 5])


@settings(max_examples=40, deadline=None)
@given(corpora, corpora, st.integers(1, 4))
def test_with_smoothing_equals_a_fresh_fit(train, test, n):
    base = NGramLM(n=n, smoothing="kn", min_freq=1).fit(train)
    before = base.logprobs(test)
    for smoothing, kw in [("mle", {}), ("laplace", {}), ("addk", {"k": 0.3}), ("backoff", {}),
                          ("backoff", {"discount": 0.4}), ("kn", {}), ("kn", {"discount": 0.5})]:
        fresh = NGramLM(n=n, smoothing=smoothing, **kw, min_freq=1).fit(train)
        np.testing.assert_array_equal(base.with_smoothing(smoothing, **kw).logprobs(test), fresh.logprobs(test))
    np.testing.assert_array_equal(base.logprobs(test), before)  # the original model is untouched
    with pytest.raises(ValueError, match="cannot change"):
        base.with_smoothing("kn", n=n + 1)


def test_modified_kn_discounts_follow_chen_goodman():
    rng = np.random.default_rng(0)
    zipf = 1 / np.arange(1, 301)
    sents = [list(rng.choice([f"w{i}" for i in range(300)], size=rng.integers(3, 12), p=zipf / zipf.sum()))
             for _ in range(400)]
    lm = NGramLM(n=3, smoothing="kn", min_freq=1).fit(sents)
    counts = ref_counts(sents, 3)
    top = np.array(list(counts[3].values()))
    n1, n2, n3, n4 = (np.sum(top == r) for r in (1, 2, 3, 4))
    Y = n1 / (n1 + 2 * n2)
    np.testing.assert_allclose(lm.discounts_used[2], [1 - 2 * Y * n2 / n1, 2 - 3 * Y * n3 / n2, 3 - 4 * Y * n4 / n3])
    cont = np.array(list(Counter(g[1:] for g in counts[3]).values()))  # bigram continuation counts
    n1, n2, n3, n4 = (np.sum(cont == r) for r in (1, 2, 3, 4))
    Y = n1 / (n1 + 2 * n2)
    np.testing.assert_allclose(lm.discounts_used[1], [1 - 2 * Y * n2 / n1, 2 - 3 * Y * n3 / n2, 3 - 4 * Y * n4 / n3])
    bo = NGramLM(n=2, smoothing="backoff", min_freq=1).fit(sents)
    big = np.array(list(counts[2].values()))
    assert bo.discounts_used[1] == pytest.approx(np.sum(big == 1) / (np.sum(big == 1) + 2 * np.sum(big == 2)))


# ---------------------------------------------------------------------------------------------------------------
# NLTK's nltk.lm, an independent implementation (test-only dependency)
# ---------------------------------------------------------------------------------------------------------------
def our_ngrams(sentence, n):
    """The n-grams we count for one sentence, every order, ending at each prediction."""
    p = ["<s>"] * (n - 1) + list(sentence) + ["</s>"]
    return [tuple(p[i - m + 1:i + 1]) for i in range(n - 1, len(p)) for m in range(1, n + 1)]


def nltk_contexts(n):
    """Contexts whose tokens NLTK and we both know (see the note in test_nltk_agrees...)."""
    out = []
    for m in range(n):
        for c in itertools.product(["<s>"] + ALPHABET, repeat=m):
            if "<s>" not in c[c.count("<s>"):]:  # <s> only as a prefix
                out.append(list(c))
    return out


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.sampled_from(ALPHABET), max_size=7), min_size=1, max_size=8).filter(
    lambda ss: set(ALPHABET) <= {w for s in ss for w in s}), st.integers(1, 3))
@example([["a", "b", "c", "d"], ["a"]], 2)  # words seen once: both models must keep them (min_freq=1), not <unk>
def test_nltk_agrees_on_laplace_and_kneser_ney(sents, n):
    """Same counts, same numbers, once two conventions are lined up:

    * NLTK's usual pipeline (padded_everygram_pipeline) also pads n-1 ``</s>`` on the right, so it counts and
      predicts ``</s> </s>`` and ``<s>`` as unigrams. We hand NLTK exactly our n-grams (each order, ending at each
      prediction) instead.
    * NLTK's Laplace divides by len(vocab); its vocabulary must therefore hold exactly the tokens we predict
      (words, ``</s>``, ``<unk>``). Leaving ``<s>`` out makes NLTK map it to its unk label ``<unk>``, harmless here
      because the training text has no real ``<unk>`` and every context token is known.
    * NLTK's Kneser-Ney uses one discount (0.1) at every order *except the unigrams*, which it leaves undiscounted
      with no uniform floor (a word never seen as a continuation gets 0). Ours, with discount=(0, 0.1, ...), is the
      same model. NLTK's KN is undefined for n = 1 (it divides by the bigram-type count), so that case is skipped.
    """
    import nltk.lm as nltk_lm  # test-only dependency (the dev extra): absent, the test fails rather than skips
    text = [our_ngrams(s, n) for s in sents]
    vocab = nltk_lm.Vocabulary([w for s in sents for w in s] + ["</s>"], unk_label="<unk>")
    pairs = [(NGramLM(n=n, smoothing="laplace", min_freq=1).fit(sents), nltk_lm.Laplace(n, vocabulary=vocab))]
    if n > 1:
        pairs.append((NGramLM(n=n, smoothing="kn", discount=[0.0] + [0.1] * (n - 1), min_freq=1).fit(sents),
                      nltk_lm.KneserNeyInterpolated(n, discount=0.1, vocabulary=vocab)))
    for ours, theirs in pairs:
        theirs.fit(text)
        assert len(theirs.vocab) == ours.V_pred
        for ctx in nltk_contexts(n):
            p = ours.distribution(ctx)
            for w in ALPHABET + ["</s>", "<unk>"]:
                assert p[ours.vocab[w]] == pytest.approx(theirs.score(w, list(padded(ours, ctx))), abs=1e-12)


def test_nltk_standard_pipeline_counts_extra_predictions():
    """Why NLTK's own perplexity comes out lower: over padded n-grams it predicts n-1 ``</s>`` per sentence
    (the later ones almost certain), where the standard convention predicts one. We check the counts."""
    from nltk.lm.preprocessing import padded_everygram_pipeline
    from nltk.util import ngrams, pad_sequence

    n, sents = 3, [s for s in SAM]
    nltk_predictions = sum(len(list(ngrams(list(pad_sequence(s, n, pad_left=True, pad_right=True,
                                                             left_pad_symbol="<s>", right_pad_symbol="</s>")), n)))
                           for s in sents)
    ours = len(NGramLM(n=n, min_freq=1).fit(sents).logprobs(sents))
    assert ours == sum(len(s) + 1 for s in sents) == 17
    assert nltk_predictions == sum(len(s) + n - 1 for s in sents) == 20
    train, _ = padded_everygram_pipeline(n, sents)
    everygrams = [g for sent in train for g in sent]
    assert ("</s>", "</s>") in everygrams and ("<s>",) in everygrams  # things we never predict


# ---------------------------------------------------------------------------------------------------------------
# Perplexity by the formula
# ---------------------------------------------------------------------------------------------------------------
def test_perplexity_equals_formula_by_hand():
    # Laplace bigram on two sentences; predictable V = {a, b, </s>, <unk>} = 4
    lm = NGramLM(n=2, smoothing="laplace", min_freq=1).fit([["a", "b"], ["a"]])
    # counts: <s> a: 2 (C(<s>)=2); a b: 1, a </s>: 1 (C(a)=2); b </s>: 1 (C(b)=1)
    # test "a b": P(a|<s>) = 3/6, P(b|a) = 2/6, P(</s>|b) = 2/5 -> N = 3 predictions
    p = Fraction(3, 6) * Fraction(2, 6) * Fraction(2, 5)
    assert lm.perplexity([["a", "b"]]) == pytest.approx(float(p) ** (-1 / 3), rel=1e-12)
    assert lm.sentence_logprob(["a", "b"]) == pytest.approx(math.log(p), rel=1e-12)
    # two sentences: N = 3 + 2 ("b" then </s>: P(b|<s>) = 1/6, P(</s>|b) = 2/5)
    q = p * Fraction(1, 6) * Fraction(2, 5)
    assert lm.perplexity([["a", "b"], ["b"]]) == pytest.approx(float(q) ** (-1 / 5), rel=1e-12)
    np.testing.assert_allclose(np.exp(lm.logprobs([["b"]])), [1 / 6, 2 / 5])


def test_mle_perplexity_is_infinite_or_undefined_on_unseen_events():
    lm = NGramLM(n=2, smoothing="mle", min_freq=1).fit([["a", "b"]])
    assert lm.perplexity([["a", "b"]]) == pytest.approx(1.0)  # every prediction certain
    assert lm.perplexity([["b", "a"]]) == math.inf           # P(b | <s>) = 0
    assert math.isnan(lm.perplexity([["zz", "a"]]))            # context <unk> never seen: 0/0
    with pytest.raises(ValueError, match="never occurs in training"):
        lm.distribution(["zz"])


# ---------------------------------------------------------------------------------------------------------------
# The LM interface, temperature and sampling
# ---------------------------------------------------------------------------------------------------------------
def test_next_token_logits_uses_the_last_n_minus_1_tokens_and_restarts_after_eos():
    lm = NGramLM(n=3, min_freq=1).fit(SAM)
    ids = lm.vocab.encode
    z = lm.next_token_logits(ids(["I", "do", "not"]))
    assert isinstance(z, torch.Tensor) and z.shape == (len(lm.vocab),) and z.dtype == torch.float64
    assert torch.equal(z, lm.next_token_logits(ids(["do", "not"])))           # Markov assumption
    assert torch.equal(lm.next_token_logits(ids(["am"])), lm.next_token_logits(ids(["<s>", "am"])))
    assert torch.equal(lm.next_token_logits(ids(["am", "</s>"])), lm.next_token_logits([]))  # a new sentence
    assert z[lm.vocab.bos_id] == -math.inf and z[lm.vocab.pad_id] == -math.inf
    assert torch.exp(z).sum().item() == pytest.approx(1.0)
    np.testing.assert_allclose(torch.exp(z).numpy(), lm.distribution(["do", "not"]))


def test_temperature_is_renormalised_power():
    lm = NGramLM(n=2, min_freq=1).fit(SAM)
    p = lm.distribution(["I"])
    for T in (0.5, 2.0):
        q = p ** (1 / T)
        np.testing.assert_allclose(lm.distribution(["I"], temperature=T), q / q.sum(), rtol=1e-10)
    entropy = lambda x: -np.sum(x[x > 0] * np.log(x[x > 0]))  # noqa: E731
    assert entropy(lm.distribution(["I"], 0.5)) < entropy(p) < entropy(lm.distribution(["I"], 2.0))


def test_generation_is_seeded_in_vocabulary_and_greedy_is_argmax():
    lm = NGramLM(n=2, min_freq=1).fit(SAM)
    a = lm.generate(["I"], 20, temperature=1.5, seed=3)
    assert a == lm.generate(["I"], 20, temperature=1.5, seed=3)
    assert all(t in lm.vocab and t not in ("<s>", "<pad>") for t in a)
    assert len(a) <= 20 and ("</s>" not in a or a.index("</s>") == len(a) - 1)
    greedy = lm.generate(["<s>"], 10, greedy=True)
    ctx, expected = ["<s>"], []
    for _ in range(10):
        w = lm.top_next(ctx[-1:], k=1)[0][0]
        expected.append(w)
        if w == "</s>":
            break
        ctx.append(w)
    assert greedy == expected
    long = lm.generate([], 60, stop_at_eos=False, seed=1)
    assert len(long) == 60 and long.count("</s>") >= 1   # new sentences follow a </s>
    ids = decode.generate(lm.next_token_logits, [], 15, temperature=0.7, seed=5,  # the shared decoder directly
                          stop_id=lm.vocab.eos_id)
    assert lm.vocab.decode(ids) == lm.generate([], 15, temperature=0.7, seed=5)


def test_config_presets_and_overrides():
    assert NGramLM(NGramConfig.tiny()).n == 3 and NGramLM(NGramConfig.full()).n == 5
    lm = NGramLM(NGramConfig.full(), smoothing="laplace")
    assert lm.n == 5 and lm.config.smoothing == "addk" and lm.config.k == 1.0
    assert "not fitted" in repr(lm)
    assert "2-grams" in repr(NGramLM(n=2, min_freq=1).fit(SAM))


def test_user_vocabulary_closed_with_unk():
    vocab = Vocab.build(SAM, min_freq=2)  # I, am, Sam are kept; the rest become <unk>
    lm = NGramLM(n=2, smoothing="laplace").fit(SAM, vocab=vocab)
    assert lm.V_pred == 5  # I, am, Sam, </s>, <unk>
    assert lm.prob("green", ["I"]) == lm.prob("<unk>", ["I"]) == pytest.approx((1 + 1) / (3 + 5))
    assert lm.distribution(["I"]).sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------------------------
# Bad input -> clear errors
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, -1, 2.5, True, "3"])
def test_bad_order(n):
    with pytest.raises(ValueError, match="n must be a positive int"):
        NGramLM(n=n)


@pytest.mark.parametrize("kwargs, match", [
    (dict(smoothing="witten-bell"), "unknown smoothing"),
    (dict(smoothing="addk", k=0), "k > 0"),
    (dict(smoothing="addk", k=-1), "k > 0"),
    (dict(smoothing="kn", discount=1.5), "kn discount"),
    (dict(smoothing="kn", n=3, discount=[0.5, 0.5]), "kn discount"),
    (dict(smoothing="backoff", discount=1.0), "0 < D < 1"),
    (dict(smoothing="kn", discount="high"), "kn discount"),
])
def test_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NGramLM(**kwargs)


def test_config_must_be_a_config():
    with pytest.raises(TypeError, match=r"NGramLM\(n=...\)"):
        NGramLM(3)


def test_bad_corpora():
    with pytest.raises(ValueError, match="empty"):
        NGramLM(n=2).fit([])
    with pytest.raises(ValueError, match="no tokens"):
        NGramLM(n=2).fit([[], []])
    with pytest.raises(TypeError, match="not one string"):
        NGramLM(n=2).fit("I am Sam")
    with pytest.raises(TypeError, match="list of tokens"):
        NGramLM(n=2).fit(["I am Sam", "Sam I am"])
    with pytest.raises(TypeError, match="token strings, got int 3"):
        NGramLM(n=2).fit([["I", "am"], ["Sam", 3]])
    with pytest.raises(ValueError, match="adds n-1 <s>"):
        NGramLM(n=2).fit([["<s>", "I", "am", "</s>"]])
    with pytest.raises(TypeError, match="Vocab"):
        NGramLM(n=2).fit(SAM, vocab={"I": 0})
    with pytest.raises(ValueError, match="needs <s> and </s>"):
        NGramLM(n=2).fit(SAM, vocab=Vocab.build(SAM, specials=("<unk>",)))


def test_bad_queries():
    lm = NGramLM(n=3, min_freq=1).fit(SAM)
    with pytest.raises(ValueError, match="at most 2 previous tokens"):
        lm.prob("Sam", ["I", "do", "not"])
    with pytest.raises(ValueError, match="at most 2 previous tokens"):
        lm.distribution(["a", "b", "c"])
    with pytest.raises(TypeError, match="list of tokens, not a string"):
        lm.prob("Sam", "I am")
    with pytest.raises(ValueError, match="never predicted"):
        lm.prob("<s>", ["I"])
    with pytest.raises(ValueError, match="only appear at the start"):
        lm.prob("Sam", ["I", "<s>"])
    with pytest.raises(ValueError, match=r"0\.\.13"):
        lm.next_token_logits([3, 99])
    with pytest.raises(ValueError, match="not been fitted"):
        NGramLM(n=2).prob("a")
    with pytest.raises(ValueError, match="k must be a positive int"):
        lm.top_next(["I"], k=0)
    with pytest.raises(ValueError, match="1- to 3-grams"):
        lm.count(["I", "am", "Sam", "I"])
    with pytest.raises(ValueError, match="empty"):
        lm.perplexity([])
    uni = NGramLM(n=1, min_freq=1).fit(SAM)
    assert uni.prob("Sam", []) == pytest.approx(uni.prob("Sam"))
    with pytest.raises(ValueError, match="or an empty context"):
        NGramLM(n=1, min_freq=1).fit(SAM).prob("Sam", ["I"])


def test_unknown_tokens_map_to_unk_or_fail_clearly():
    lm = NGramLM(n=2, min_freq=1).fit(SAM)
    assert lm.prob("zebra", ["I"]) == lm.prob("<unk>", ["I"]) > 0
    assert lm.prob("am", ["zebra"]) == lm.prob("am", ["<unk>"])
    no_unk = Vocab(["<s>", "</s>", "I", "am", "Sam", "do", "not", "like", "green", "eggs", "and", "ham"], unk=None,
                   pad=None)
    lm = NGramLM(n=2).fit(SAM, vocab=no_unk)
    assert lm.distribution(["I"]).sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"unknown token\(s\) \['zebra'\].*no <unk>"):
        lm.prob("zebra", ["I"])
    with pytest.raises(ValueError, match="no <unk>"):
        lm.perplexity([["I", "like", "zebra"]])
    with pytest.raises(ValueError, match="no <unk>"):
        NGramLM(n=2).fit(SAM + [["zebra"]], vocab=no_unk)


@pytest.mark.parametrize("T", [0, -1.0])
def test_bad_temperature(T):
    lm = NGramLM(n=2, min_freq=1).fit(SAM)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        lm.generate(["I"], 5, temperature=T)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        lm.distribution(["I"], temperature=T)
    with pytest.raises(TypeError, match="temperature must be a number"):
        lm.distribution(["I"], temperature="hot")


# ---------------------------------------------------------------------------------------------------------------
# The real corpus: the chapter's headline number
# ---------------------------------------------------------------------------------------------------------------
def test_ptb_kneser_ney_5gram_matches_the_published_figure():
    from seqviz.data import load_corpus

    ptb = load_corpus("ptb")
    lm = NGramLM(NGramConfig.full()).fit(ptb.sentences("train"))
    test = ptb.sentences("test")
    assert len(lm.logprobs(test)) == 82_430  # 78,669 words + 3,761 </s>
    assert lm.V_pred == 10_000               # the standard 10k: 9,999 word types (with <unk>) and </s>
    assert 139 < lm.perplexity(test) < 148   # Mikolov et al. (2011): 141.2 for KN5
# ---------------------------------------------------------------------------------------------------------------
# Raw text: the default vocabulary learns <unk> from the training singletons
# ---------------------------------------------------------------------------------------------------------------
def _novels(seed: int, n_books: int = 6, sentences: int = 1500, V: int = 20_000, zipf: float = 1.1):
    """Books of one 'author': a Zipfian vocabulary of V types and a random bigram habit (each word has five favourite
    successors, used 60% of the time). Raw text: there is no <unk> in it, and the held-out book has words that the
    others never use."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, V + 1) ** -zipf
    cdf = np.cumsum(p / p.sum())  # (V,)

    def draw(size):
        return np.minimum(np.searchsorted(cdf, rng.random(size)), V - 1)

    successors = draw((V, 5))  # (V, 5)
    words = np.array([f"w{i}" for i in range(V)])
    books = []
    for _ in range(n_books):
        book = []
        for L in rng.integers(5, 25, sentences):
            habit, free, pick = rng.random(L) < 0.6, draw(L), rng.integers(0, 5, L)
            s = [int(free[0])]
            for t in range(1, L):
                s.append(int(successors[s[-1], pick[t]]) if habit[t] else int(free[t]))
            book.append(words[s].tolist())
        books.append(book)
    return books


def test_default_vocabulary_on_raw_text_learns_unk_and_keeps_kneser_ney_ahead():
    books = _novels(0)
    train, held_out = [s for b in books[:5] for s in b], books[5]
    unknown = {w for s in held_out for w in s} - {w for s in train for w in s}
    assert unknown  # the held-out novel has words the training novels never use
    kn = NGramLM(n=3, smoothing="kn").fit(train)  # the default: min_freq=None
    singletons = {w for w, c in Counter(w for s in train for w in s).items() if c == 1}
    assert singletons and not (singletons & set(kn.vocab.itos))  # seen once -> <unk>, so <unk> is trained
    assert kn.count(["<unk>"]) == len(singletons)
    backoff = kn.with_smoothing("backoff")
    pp_kn, pp_bo = kn.perplexity(held_out), backoff.perplexity(held_out)
    assert pp_kn < 0.95 * pp_bo, (pp_kn, pp_bo)  # the right order: Kneser-Ney beats absolute-discount backoff
    # every type kept (min_freq=1): <unk> never trained, unknown words get the uniform floor, the order flips,
    # and scoring says why
    kn1 = NGramLM(n=3, smoothing="kn", min_freq=1).fit(train)
    assert kn1.count(["<unk>"]) == 0
    with pytest.warns(UserWarning, match="never occurs in training"):
        pp_kn1, pp_bo1 = kn1.perplexity(held_out), kn1.with_smoothing("backoff").perplexity(held_out)
    assert pp_kn1 > pp_bo1 and pp_kn1 > 1.3 * pp_kn


def test_default_vocabulary_keeps_a_closed_vocabulary_whole():
    # text that already has <unk> (as PTB) keeps every type, singletons included: PTB's numbers do not move
    sents = [["a", "<unk>", "b"], ["a", "c"], ["b", "a"]]
    lm = NGramLM(n=2).fit(sents)
    assert {"a", "b", "c", "<unk>"} <= set(lm.vocab.itos) and lm.count(["c"]) == 1
    assert NGramLM(n=2, min_freq=1).fit([["a", "b"], ["a"]]).count(["b"]) == 1  # explicit min_freq is obeyed


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_min_freq(bad):
    with pytest.raises(ValueError, match="min_freq must be a positive integer"):
        NGramLM(n=2, min_freq=bad)
