"""Tests of chapter 8's copy mechanism, keep/drop labels, baselines and the swap test (issue 21)."""
from __future__ import annotations

import hashlib
from types import SimpleNamespace as NS

import numpy as np
import pytest
import torch

from seqviz.metrics import rouge_corpus
from seqviz.summarize.baselines import (best_window_oracle, compression_oracle, copy_only_oracle, first_sentence,
                                        lead_baseline)
from seqviz.summarize.compress import keep_drop_labels, select_words
from seqviz.summarize.pointer import CopyHead, CopyOut, copy_distribution, copy_target_logprob
from seqviz.summarize.copy_models import CopyConfig, build_copy_model
from seqviz.summarize.headlines import CopyBinding, HeadlineRules, swap_test, write_headline
from seqviz.summarize.words import WordTokenizer


def _head_out(B=2, T=3, S=5, d=8, seed=0):
    torch.manual_seed(seed)
    head = CopyHead(d)
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 3:] = False
    return head(torch.randn(B, T, d), torch.randn(B, S, d), mask), mask


def test_copy_mixture_sums_to_one_and_puts_weight_on_article_words():
    out, mask = _head_out()
    logits = torch.randn(2, 3, 10)
    ext = torch.tensor([[1, 2, 10, 11, 2], [3, 10, 4, 0, 0]])                   # two article-only words in row 0
    p = copy_distribution(logits, out, ext, n_ext=2)
    assert p.shape == (2, 3, 12)
    assert torch.allclose(p.sum(-1), torch.ones(2, 3), atol=1e-6)
    assert (out.a[1, :, 3:] == 0).all()                                           # padding never gets copy weight
    # an article-only word's probability is exactly its copy share
    assert torch.allclose(p[0, :, 11], (1 - out.p_gen[0]) * out.a[0, :, 3])


def test_p_gen_one_gives_exactly_the_vocabulary_distribution():
    out, _ = _head_out()
    logits = torch.randn(2, 3, 10)
    ext = torch.tensor([[1, 2, 10, 11, 2], [3, 10, 4, 0, 0]])
    p = copy_distribution(logits, CopyOut(out.a, out.c, torch.ones(2, 3)), ext, n_ext=2)
    assert torch.equal(p[..., :10], logits.softmax(-1))
    assert (p[..., 10:] == 0).all()


def test_the_prior_multiplies_the_copy_attention_which_is_renormalised():
    # bottom-up copy attention, computed here independently (NumPy, float64): a_t[j] = softmax_j(score) w_j /
    # sum_k softmax_k(score) w_k over the real article positions
    torch.manual_seed(1)
    B, T, S, d = 2, 3, 6, 8
    head = CopyHead(d)
    h, memory = torch.randn(B, T, d), torch.randn(B, S, d)
    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 4:] = False
    prior = torch.tensor([[0.9, 0.1, 0.5, 0.02, 0.7, 0.3], [0.2, 0.8, 0.05, 0.6, 0.9, 0.9]])
    out = head(h, memory, mask, prior)
    Wq, Wk = head.W_q.weight.detach().double().numpy(), head.W_k.weight.detach().double().numpy()
    hn, mn, w = h.double().numpy(), memory.double().numpy(), prior.double().numpy()
    for b in range(B):
        real = mask[b].numpy()
        for t in range(T):
            e = np.exp((Wq @ hn[b, t]) @ (Wk @ mn[b, real].T) / np.sqrt(d))    # (S_b,) unnormalised softmax
            a = e / e.sum() * w[b, real]
            a /= a.sum()
            np.testing.assert_allclose(out.a[b, t, real].detach().numpy(), a, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(out.c[b, t].detach().numpy(), a @ mn[b, real], rtol=1e-5, atol=1e-6)
    assert (out.a[1, :, 4:] == 0).all()
    torch.testing.assert_close(out.a.sum(-1), torch.ones(B, T))
    # and in a whole model: the copy mixture with a prior is a distribution over the extended vocabulary
    tok = _tiny_tok()
    src = tok.encode_source("schwarzenegger sat on the mat and the dog sat too", 20)
    x = torch.tensor([src.ext])
    w1 = torch.linspace(0.05, 1.0, len(src.ext))[None]
    for arch in ("encdec", "lm"):
        model = _tiny_model(tok, arch)
        with torch.no_grad():
            p, o = model.distribution(x, torch.ones_like(x, dtype=torch.bool), torch.tensor([[2, 5, 6]]), 1, w1)
        torch.testing.assert_close(p.sum(-1), torch.ones(1, 3))
        torch.testing.assert_close(o.a.sum(-1), torch.ones(1, 3))


@pytest.mark.parametrize("bad, says", [
    (float("nan"), "prior holds NaN or inf (nan at row 1, article position 2)"),
    (float("inf"), "prior holds NaN or inf (inf at row 1, article position 2)"),
    (-0.5, "prior holds a negative weight (-0.5 at row 1, article position 2)"),
])
def test_the_head_refuses_a_prior_that_is_not_finite_and_non_negative(bad, says):
    torch.manual_seed(1)
    head, h, memory = CopyHead(8), torch.randn(2, 3, 8), torch.randn(2, 6, 8)
    mask = torch.ones(2, 6, dtype=torch.bool)
    prior = torch.full((2, 6), 0.5)
    prior[1, 2] = bad
    with pytest.raises(ValueError) as e:
        head(h, memory, mask, prior)
    assert says in str(e.value) and "pass finite weights >= 0" in str(e.value), str(e.value)


def test_the_head_refuses_a_prior_row_that_would_switch_copying_off():
    torch.manual_seed(1)
    head, h, memory = CopyHead(8), torch.randn(2, 3, 8), torch.randn(2, 6, 8)
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1, 4:] = False
    for prior in (torch.zeros(2, 6), torch.tensor([[1.0] * 6, [0, 0, 0, 0, 1, 1]])):   # zero, or only where masked
        with pytest.raises(ValueError, match=r"row (0|1) of prior is zero at every article position.*prior=None"):
            head(h, memory, mask, prior)
    with pytest.raises(ValueError, match=r"shape \(B, S\) = \(2, 6\)"):
        head(h, memory, mask, torch.ones(2, 5))
    out = head(h, memory, mask, torch.tensor([[1.0] * 6, [0, 0, 1e-3, 0, 0, 0]]))   # one positive weight will do
    assert torch.isfinite(out.a).all() and torch.allclose(out.a[1].sum(-1), torch.ones(3))


@pytest.mark.parametrize("bad, says", [(float("nan"), "NaN or inf"), (float("-inf"), "NaN or inf"),
                                       (-1.0, "a negative weight"), (0.0, "zero at every article position")])
def test_write_headline_and_copy_trace_refuse_a_bad_prior_before_decoding(bad, says):
    """The BA article with an all-zero prior silently lost its copying ('uk economy'): now it is an error."""
    from seqviz.summarize.headlines import copy_trace

    tok = _tiny_tok()
    model = _tiny_model(tok)
    article = "schwarzenegger sat on the mat and the dog sat too"
    n = len(tok.encode_source(article, 20).ext)
    prior = [bad] * n if bad == 0.0 else [0.5] * (n - 1) + [bad]
    with pytest.raises(ValueError, match=says):
        write_headline(model, tok, article, max_words=3, prior=prior)
    with pytest.raises(ValueError, match=says):
        copy_trace(model, tok, article, [5, 6], prior=prior)
    assert len(write_headline(model, tok, article, max_words=3, prior=[0.5] * n)) >= 1


def test_target_logprob_equals_the_full_distribution_at_the_targets():
    out, _ = _head_out()
    logits = torch.randn(2, 3, 10)
    ext = torch.tensor([[1, 2, 10, 11, 2], [3, 10, 4, 0, 0]])
    target = torch.tensor([[11, 2, 7], [10, -1, 4]])
    lp = copy_target_logprob(logits, out, ext, target)
    full = copy_distribution(logits, out, ext, 2).gather(-1, target.clamp(min=0)[..., None]).squeeze(-1).log()
    assert torch.allclose(lp[target >= 0], full[target >= 0], atol=1e-6)
    assert lp[1, 1] == 0                                                           # ignored position


def _tiny_tok():
    texts = ["the cat sat on the mat and the dog sat too"] * 3
    return WordTokenizer.learn(texts, min_count=2)


def _tiny_model(tok, arch="encdec", max_summary=4, **kw):
    """A small copy model over ``tok``'s vocabulary: seeded, dropout off, in eval mode."""
    torch.manual_seed(0)
    return build_copy_model(CopyConfig(len(tok), arch=arch, d_model=16, num_heads=2, num_layers=1, max_source=20,
                                       max_summary=max_summary, dropout=0.0, **kw)).eval()


def test_a_name_absent_from_training_is_copied():
    tok = _tiny_tok()
    assert "schwarzenegger" not in tok.vocab
    article = "schwarzenegger sat on the mat"
    src = tok.encode_source(article, 20)
    assert src.oovs == ["schwarzenegger"] and src.ext[0] == len(tok)
    torch.manual_seed(0)
    model = build_copy_model(CopyConfig(len(tok), d_model=16, num_heads=2, num_layers=1, max_source=20,
                                        max_summary=4, dropout=0.0))
    x = torch.tensor([src.ext])
    y = torch.tensor([tok.encode_target("Schwarzenegger sat", src.oovs, 4) + [tok.eos_id]])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):                                                            # learn to copy the first word
        _, loss = model(x, y, torch.ones_like(x, dtype=torch.bool))
        opt.zero_grad()
        loss.backward()
        opt.step()
    ids = write_headline(model, tok, article, beam_size=1, max_words=2)
    assert tok.words(ids, src.oovs)[0] == "schwarzenegger"
    assert tok.detokenize(tok.words(ids, src.oovs), "Schwarzenegger sat on the mat").startswith("Schwarzenegger")


@pytest.mark.parametrize("arch", ["encdec", "lm"])
def test_a_decoding_step_equals_the_last_row_of_the_full_distribution(arch):
    # CopyBinding reads the article once (read_article) and scores only the last position: the same numbers as the
    # full teacher-forced pass, for one row and for a beam of three, with and without the selector's prior
    tok = _tiny_tok()
    model = _tiny_model(tok, arch, max_summary=6)
    src = tok.encode_source("schwarzenegger sat on the mat and the dog sat too", 20)
    x = torch.tensor([src.ext])
    mask = torch.ones_like(x, dtype=torch.bool)
    prior = torch.linspace(0.1, 1.0, len(src.ext))
    for w in (None, prior):
        binding = CopyBinding(model, src, None if w is None else w.tolist())
        seq, state = torch.tensor([[tok.bos_id]] * 3), None
        for nxt in ([4, 5, 6], [len(tok), 7, 4], [8, 8, 5]):                   # a copied word is read as <unk>
            with torch.no_grad():
                z, state = binding.step(seq, state)
                full, _ = model.distribution(x.expand(3, -1), mask.expand(3, -1), state, binding.n_ext,
                                             None if w is None else w[None].expand(3, -1))
            assert z.shape == (3, len(tok) + binding.n_ext)
            torch.testing.assert_close(z, full[:, -1].clamp_min(1e-30).log(), rtol=1e-5, atol=1e-6)
            seq = torch.tensor(nxt)[:, None]
        assert (binding.memory is None) == (arch == "lm")       # the encoder-decoder read its article once


@pytest.mark.parametrize("arch", ["encdec", "lm"])
def test_copy_trace_reads_p_gen_the_attention_and_each_words_copied_share(arch):
    # copy_share is the copied part of p(y_t): 1 for a word only copying can write (an extended id), 0 for a word
    # the article lacks, and for a word in both, 1 - p_gen p_vocab(w) / p(w) (the mixture's other part)
    from seqviz.summarize.headlines import copy_trace

    tok = _tiny_tok()
    model = _tiny_model(tok, arch, max_summary=6)
    article = "schwarzenegger sat on the mat and the dog sat too"
    src = tok.encode_source(article, 20)
    ids = [len(tok), tok.vocab.stoi["sat"], tok.vocab.stoi["cat"], tok.vocab.stoi["the"]]   # "cat": not in it
    tr = copy_trace(model, tok, article, ids)
    assert tr.words == ["schwarzenegger", "sat", "cat", "the"] and tr.article == article.split()
    assert tr.copied.tolist() == [True, True, False, True] and tr.a.shape == (4, len(src.ext))
    np.testing.assert_allclose(tr.a.sum(1), 1, atol=1e-6)
    x = torch.tensor([src.ext])
    y = torch.tensor([[tok.bos_id] + [i if i < len(tok) else tok.unk_id for i in ids[:-1]]])
    with torch.no_grad():
        h, _ = model.states(x, torch.ones_like(x, dtype=torch.bool), y)
        p_vocab = model.vocab_logits(h)[0].softmax(-1)                           # (T, V)
        p, out = model.distribution(x, torch.ones_like(x, dtype=torch.bool), y, 1)
    np.testing.assert_allclose(tr.p_gen, out.p_gen[0].numpy(), atol=1e-6)
    assert tr.copy_share[0] == pytest.approx(1.0) and tr.copy_share[2] == pytest.approx(0.0, abs=1e-7)
    for t in (1, 3):
        w = ids[t]
        want = 1 - float(out.p_gen[0, t] * p_vocab[t, w] / p[0, t, w])
        assert tr.copy_share[t] == pytest.approx(want, rel=1e-5) and 0 < want < 1


@pytest.mark.parametrize("arch", ["encdec", "lm"])
@pytest.mark.parametrize("use_copy", [True, False])
def test_batches_count_only_the_targets_the_loss_scores(arch, use_copy):
    # the trainer and evaluate() weight each batch's mean loss by count_targets (the targets that are not
    # IGNORE_INDEX): <unk>, and without the copy head the article-only words, must not be among them
    from seqviz._checks import IGNORE_INDEX
    from seqviz.summarize.pairs import CopyBatches, encode_pairs
    from seqviz.summarize.words import word_tokens
    from seqviz.train import count_targets, evaluate

    tok = _tiny_tok()
    model = _tiny_model(tok, arch, max_summary=6, copy=use_copy)
    pairs = [("schwarzenegger sat on the mat", "Schwarzenegger zzyzx sat"),        # copied, <unk>, a word
             ("the cat sat on the mat", "the cat sat"),
             ("the dog sat too and the cat sat on the mat", "qqq dog mat yyy"),
             ("tolkien and the dog sat", "the dog tolkien xxx sat on the mat, later")]   # cut to 6 words
    enc = encode_pairs(tok, pairs, 20, 6, copy=use_copy)
    # scored: a vocabulary word, an article word when the model can copy, and </s>; counted from the text
    scored = [sum(w in tok.vocab.stoi or (use_copy and w in word_tokens(a)) for w in word_tokens(h)[:6]) + 1
              for a, h in pairs]
    assert [sum(i != IGNORE_INDEX for i in y) for _, y in enc] == scored
    one = CopyBatches(enc, len(enc), tok.pad_id, shuffle=False)
    batch = next(iter(one))
    assert count_targets(batch) == batch.n_targets == sum(scored)
    with torch.no_grad():
        _, loss = model(batch.x, batch.y, batch.mask)                             # the mean over scored targets
    # two batches of different shares of unscored words: their target-weighted mean is the one-batch mean
    got = evaluate(model, CopyBatches(enc, 2, tok.pad_id, shuffle=False))
    assert got["targets"] == sum(scored) and got["loss"] == pytest.approx(float(loss), abs=1e-6)
    # the decoder still reads an unscored word (as <unk>): the loss equals the one of targets that keep the ids
    raw = []
    for a, h in pairs:
        src = tok.encode_source(a, 20)
        raw.append((src.ext, tok.encode_target(h, src.oovs, 6) + [tok.eos_id]))
    raw_batch = CopyBatches(raw, len(raw), tok.pad_id, shuffle=False).collate(raw)
    assert (raw_batch.y != IGNORE_INDEX).sum() > sum(scored)                       # what count_targets saw before
    with torch.no_grad():
        assert float(model(raw_batch.x, raw_batch.y, raw_batch.mask)[1]) == pytest.approx(float(loss), abs=1e-6)


@pytest.mark.parametrize("arch", ["encdec", "lm"])
def test_a_padded_batch_equals_each_article_alone(arch):
    # articles of 10, 3 and 7 words in one right-padded batch: each row's distribution, copy attention and loss are
    # those of the article alone (the LM writes each headline right after its own article, not after the longest)
    from seqviz._checks import IGNORE_INDEX

    tok = _tiny_tok()
    model = _tiny_model(tok, arch, max_summary=6)
    srcs = [tok.encode_source(a, 20) for a in ("schwarzenegger sat on the mat and the dog sat too", "the cat sat",
                                                "tolkien and the dog sat on mat")]
    lengths = [len(s.ext) for s in srcs]
    assert lengths == [10, 3, 7]
    x = torch.full((3, 10), tok.pad_id)                                           # (B, S) right-padded
    for b, s in enumerate(srcs):
        x[b, :len(s.ext)] = torch.tensor(s.ext)
    mask = x != tok.pad_id
    V = len(tok)
    y = torch.tensor([[V, 6, 7, tok.eos_id], [5, tok.eos_id, IGNORE_INDEX, IGNORE_INDEX], [V, 8, 6, tok.eos_id]])
    y_in = torch.tensor([[tok.bos_id, tok.unk_id, 6, 7], [tok.bos_id, 5, tok.pad_id, tok.pad_id],
                         [tok.bos_id, tok.unk_id, 8, 6]])
    with torch.no_grad():
        p, out = model.distribution(x, mask, y_in, 1)
        _, loss = model(x, y, mask)
        total = count = 0
        for b, n in enumerate(lengths):
            xb, mb = x[b:b + 1, :n], mask[b:b + 1, :n]
            alone, out_b = model.distribution(xb, mb, y_in[b:b + 1], 1)
            torch.testing.assert_close(p[b], alone[0], atol=1e-6, rtol=1e-5)
            torch.testing.assert_close(out.a[b, :, :n], out_b.a[0], atol=1e-6, rtol=1e-5)
            assert (out.a[b, :, n:] == 0).all()
            k = int((y[b] != IGNORE_INDEX).sum())
            total, count = total + float(model(xb, y[b:b + 1], mb)[1]) * k, count + k
    assert float(loss) == pytest.approx(total / count, abs=1e-6)                  # the batch's mean over targets


def test_keep_drop_labels_on_hand_made_examples():
    words, labels = keep_drop_labels("British Airways has blamed high fuel prices for a drop in profits.",
                                     "High fuel prices hit BA's profits")
    assert [w for w, l in zip(words, labels) if l] == ["high", "fuel", "prices", "profits"]
    words, labels = keep_drop_labels("Japan's economy teetered on the brink.", "Japan narrowly escapes recession")
    assert labels == [1, 0, 0, 0, 0, 0]                                            # "Japan's" holds the token japan
    assert select_words(["a", "Big", "cat", "big"], [0.1, 0.9, 0.5, 0.8], 2) == "Big cat"


def test_baselines_and_oracles_on_a_hand_made_article():
    body = "Rod Eddington said the results were respectable. Fuel prices rose. BA profits fell sharply."
    ref = "BA profits fell"
    assert lead_baseline(body, 3) == "Rod Eddington said"
    assert first_sentence(body) == "Rod Eddington said the results were respectable."
    assert best_window_oracle(body, ref, 3) == "BA profits fell"
    assert compression_oracle(body, ref) == "ba profits fell"
    assert copy_only_oracle(body, "BA profits collapse", n_words=None) == "ba profits"


def test_textrank_ranks_by_the_stationary_distribution_of_the_transposed_walk():
    # three sentences, each word once, idf 1 over a one-document collection: cosine = shared / sqrt(|a| |b|), so
    # W = [[0, 1/2, 2/sqrt 8], [1/2, 0, 2/sqrt 8], [2/sqrt 8, 2/sqrt 8, 0]] before its rows are normalised. PageRank
    # p = (1 - d)/n + d W^T p puts the most weight on the third sentence, linked to both others. (With W p instead,
    # a row-normalised W keeps the uniform start, and the first sentence would win the tie.)
    from seqviz.summarize.baselines import IdfTable, textrank_sentence

    article = "Fuel prices. Prices rose. Fuel prices rose sharply."
    idf = IdfTable([article])
    assert idf("fuel") == idf("sharply") == 1.0
    c = 2 / np.sqrt(8)
    W = np.array([[0, 0.5, c], [0.5, 0, c], [c, c, 0]])
    W /= W.sum(1, keepdims=True)
    d, n = 0.85, 3
    p = np.linalg.solve(np.eye(n) - d * W.T, np.full(n, (1 - d) / n))
    assert p.argmax() == 2 and p[2] - p[0] > 0.04 and p.sum() == pytest.approx(1)     # 0.366 vs 0.317
    assert textrank_sentence(article, idf) == "Fuel prices rose sharply."


def test_word_features_leave_an_articles_own_pair_out_of_its_headline_rate():
    # feature 9, the logit of (kept + 2 base) / (seen + 2) over the training leads, counted by hand: leads hold 8
    # forms of which 4 are headline words, so base = 1/2; "japan" is in 2 leads and 2 headlines, "economy" 1 and 1
    from seqviz.summarize.compress import WordFeatures

    arts = [NS(body="Japan economy grows.", headline="Japan economy"),
            NS(body="Japan recession looms.", headline="Japan"),
            NS(body="Tobacco case.", headline="Court case")]
    f = WordFeatures(arts)
    assert f.base == 0.5
    words, X = f(arts[0].body)                                     # an article to score: every pair counts
    assert words == ["Japan", "economy", "grows"]
    np.testing.assert_allclose(X[:, 9], np.log([3, 2, 1 / 2]))     # (2 + 1)/4, (1 + 1)/3, (0 + 1)/3 as logits
    _, X = f(arts[0].body, arts[0].headline)                       # its own training pair: left out
    np.testing.assert_allclose(X[:, 9], [np.log(2), 0, 0])         # (1 + 1)/3, (0 + 1)/2, (0 + 1)/2


def test_the_oracles_pick_what_a_search_by_full_rouge_picks():
    # best_window_oracle and best_sentence_oracle score hundreds of candidates with the reference tokenized once and
    # no LCS for a candidate that shares no token with it: the same choice, ties included, as max() over rouge()
    from seqviz.metrics import rouge
    from seqviz.summarize.baselines import _sentences, best_sentence_oracle

    rng = np.random.default_rng(0)
    words = ["BA", "profits", "fell", "the", "fuel", "prices", "rose,", "Eddington", "said.", "jobs", "cut!", "90"]
    for _ in range(40):
        body = " ".join(rng.choice(words, size=int(rng.integers(1, 30))))
        ref = " ".join(rng.choice(words, size=int(rng.integers(1, 6))))
        w = body.split()
        for k in (1, 3, 5):
            windows = [" ".join(w[i:i + k]) for i in range(max(1, len(w) - k + 1))]
            assert best_window_oracle(body, ref, k) == max(windows, key=lambda s: rouge(ref, s)["rougeL"].fmeasure)
        assert best_sentence_oracle(body, ref) == max(_sentences(body), key=lambda s: rouge(ref, s)["rougeL"].fmeasure)
    assert best_window_oracle("a b c d", "x y", 2) == "a b"                      # nothing shared: the first window


def test_swap_test_reports_a_number():
    r = swap_test(["ba profits fall", "japan in recession", "tobacco case thrown out"],
                  ["BA profits fall", "Japan escapes recession", "Court rejects tobacco case"], seed=0)
    assert r.own > r.swapped and r.changed == 1.0
    same = swap_test(["same headline"] * 3, ["a b", "c d", "e f"])
    assert same.changed == 0.0 and same.own == same.swapped


def test_headline_rules_block_repeats_and_early_stop():
    rules = HeadlineRules(None, block_ngram=2, min_words=4, eos_id=3)
    assert rules.banned([5, 6, 5]) == {3, 6}                                       # "5 6" again, and </s> too early
    assert HeadlineRules(None, 1).banned([5, 6]) == {5, 6}


def test_ngram_blocking_sees_every_ngram_written_up_to_the_last_token():
    # the window's edges: the n-gram that ends at the last token counts too ("5 5" after "5 5")
    one, two, three = (HeadlineRules(None, n) for n in (1, 2, 3))
    assert one.banned([]) == set() and one.banned([7]) == {7} and one.banned([7, 8, 7]) == {7, 8}
    assert two.banned([]) == two.banned([5]) == two.banned([5, 6]) == set()
    assert two.banned([5, 5]) == {5} and two.banned([6, 5, 5]) == {5} and two.banned([5, 6, 5]) == {6}
    assert three.banned([5]) == three.banned([5, 5]) == three.banned([5, 6, 7]) == set()
    assert three.banned([5, 5, 5]) == {5} and three.banned([4, 5, 5, 5]) == {5}
    assert three.banned([1, 2, 3, 1, 2]) == {3} and three.banned([1, 2, 1, 2]) == {1}
    # decoding with a model that always prefers 5, then 6, then 7 ...: no bigram is written twice
    class Prefers5:
        def step(self, ids, state):
            return -torch.arange(12, dtype=torch.float32).roll(5).expand(ids.shape[0], 12), None   # 5 > 6 > ...

        def reorder_state(self, state, index):
            return state

    from seqviz.decode import generate

    out = generate(HeadlineRules(Prefers5(), block_ngram=2), [2], 8, greedy=True)
    bigrams = list(zip(out, out[1:]))
    assert out[:3] == [5, 5, 6] and len(set(bigrams)) == len(bigrams)


def test_name_word_is_the_likeliest_capitalised_word_that_is_not_a_function_word():
    from seqviz.summarize.compress import name_word

    words = ["The", "Daily", "Telegraph", "is", "axing", "90", "jobs", "He", "said"]
    p = [0.9, 0.3, 0.5, 0.0, 0.8, 0.4, 0.7, 0.95, 0.1]
    assert name_word(words, p) == "Telegraph"                       # "The" and "He" are not names; 0.5 > 0.3
    assert name_word(["axing", "jobs"], [0.9, 0.8]) is None        # no capital: no name, no constraint
    assert name_word(["Japan", "Japan's"], [0.6, 0.6]) == "Japan"  # a tie goes to the earlier word
    with pytest.raises(ValueError, match="one score per word"):
        name_word(["A"], [])


def test_a_hard_prior_fixes_the_first_word_and_only_the_first():
    tok = _tiny_tok()
    model = _tiny_model(tok)
    article = "the dog sat on the mat schwarzenegger"
    src = tok.encode_source(article, 20)
    free = write_headline(model, tok, article, max_words=4)
    for word in ("mat", "Schwarzenegger"):                        # a vocabulary word and an article-only word
        ids = write_headline(model, tok, article, max_words=4, lead_word=word)
        assert tok.words(ids, src.oovs)[0] == word.lower()
        assert len(ids) >= 2 and len(set(ids)) == len(ids)         # the other rules still hold after it
    # the rule itself: every other token is -inf at the first step, nothing changes after it
    rules = HeadlineRules(_Uniform(9), block_ngram=None, first={4, 6})
    z, st = rules.step(torch.tensor([[2], [2]]), None)
    assert torch.isfinite(z[:, [4, 6]]).all() and torch.isinf(z[:, [0, 1, 2, 3, 5, 7, 8]]).all()
    z, _ = rules.step(torch.tensor([[4], [6]]), st)
    assert torch.isfinite(z).all()
    assert free == write_headline(model, tok, article, max_words=4, lead_word=None)
    with pytest.raises(ValueError, match="not one of the article's first 20 words"):
        write_headline(model, tok, article, lead_word="Telegraph")
    with pytest.raises(ValueError, match="at least one token id"):
        HeadlineRules(_Uniform(9), first=set())


class _Uniform:
    """A stepper whose every next-token score is 0 (its state: nothing)."""

    def __init__(self, V):
        self.V = V

    def step(self, ids, state):
        return torch.zeros(ids.shape[0], self.V), None

    def reorder_state(self, state, index):
        return state


def test_bad_input_gets_clear_errors(tmp_path):
    tok = _tiny_tok()
    with pytest.raises(ValueError, match="empty"):
        tok.encode_source("", 10)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.encode_source("zyx qwv", 10)
    model = build_copy_model(CopyConfig(len(tok), d_model=16, num_heads=2, num_layers=1, max_source=20,
                                        max_summary=4))
    with pytest.raises(ValueError, match="max_words"):
        write_headline(model, tok, "the cat sat", max_words=5)
    from seqviz.summarize.headlines import write_headlines
    with pytest.raises(ValueError, match="name_first needs the selector"):
        write_headlines(model, tok, ["the cat sat"], name_first=True)


@pytest.mark.parametrize("arch", ["encdec", "lm"])
def test_checkpoint_round_trip_and_wrong_hash_refused(arch, tmp_path):
    from seqviz.summarize.copy_checkpoint import CopyRecipe, load_copy_summarizer, save_copy_summarizer

    tok = _tiny_tok()
    recipe = CopyRecipe(arch=arch, d_model=16, num_layers=1, max_source=20, max_summary=4)
    torch.manual_seed(0)
    model = build_copy_model(recipe.model_config(len(tok))).eval()
    path = tmp_path / "copy.pt"
    digest = save_copy_summarizer(model, tok, {"recipe": recipe.__dict__}, path)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    loaded, tok2, _ = load_copy_summarizer(path, digest)
    assert not loaded.training and tok2.vocab.itos == tok.vocab.itos
    E = loaded.net.E_src if arch == "encdec" else loaded.net.E
    assert E.weight is loaded.net.V.weight                                         # the tie survives the round trip
    x = torch.tensor([tok.encode_source("the cat sat on the mat", 20).ext])
    y = torch.tensor([[5, 6, tok.eos_id]])
    with torch.no_grad():
        a, b = model(x, y)[1], loaded(x, y)[1]
    assert abs(a.item() - b.item()) < 1e-2                                          # float16 storage
    with pytest.raises(ValueError, match="SHA-256"):
        load_copy_summarizer(path, "0" * 64)


def _toy_corpus(n_train=6, n_valid=2, seed=0):
    """Articles of five sentences of 25-40 words over 30 words (each seen far more than min_count times): every
    gap-sentence target is longer than a headline (max_summary = 16 words)."""
    import random

    from seqviz.data.corpora import Article

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(30)]

    def article():
        sents = [" ".join(rng.choice(words) for _ in range(rng.randrange(25, 41))) + "." for _ in range(5)]
        return Article("toy", " ".join(rng.sample(words, 5)), " ".join(sents))
    return NS(train=[article() for _ in range(n_train)], valid=[article() for _ in range(n_valid)])


@pytest.mark.parametrize("arch", ["encdec", "lm"])
def test_the_recipe_pretrains_and_fine_tunes_both_architectures(arch, tmp_path):
    # pretraining's gap-sentence targets (up to gap_max_summary = 32 words + </s>) are longer than headlines
    # (max_summary = 16): the decoder-only model's one sequence, article + δ + target, must fit its position table
    from seqviz.summarize.copy_checkpoint import (CopyRecipe, check_loss, load_copy_summarizer, save_copy_summarizer,
                                                  train_copy_summarizer)
    from seqviz.summarize.pairs import encode_pairs, gap_sentence_pairs

    corpus = _toy_corpus()
    recipe = CopyRecipe(arch=arch, pretrain_steps=1, finetune_steps=1)
    model, tok, info = train_copy_summarizer(recipe, corpus, progress=False)
    gap = encode_pairs(tok, gap_sentence_pairs(corpus.train, recipe.max_source), recipe.max_source,
                       recipe.gap_max_summary)
    assert info["pretrain_pairs"] == len(gap) <= recipe.batch_size                 # one batch: every pair was read
    assert max(len(t) for _, t in gap) == recipe.gap_max_summary + 1 > recipe.max_summary + 1
    assert np.isfinite([info["pretrain_loss"], info["finetune_loss"], info["check_loss"]]).all()
    # the file's recipe rebuilds the same model: the tables it was trained with
    path = tmp_path / "copy.pt"
    loaded, _, _ = load_copy_summarizer(path, save_copy_summarizer(model, tok, info, path))
    assert check_loss(loaded, tok, corpus) == pytest.approx(info["check_loss"], abs=1e-6)
    # without pretraining, the tables are those a model without pretraining always had (its files still load)
    lm = build_copy_model(CopyRecipe(arch="lm", pretrain_steps=0).model_config(len(tok)))
    assert lm.net.config.max_len == recipe.max_source + recipe.max_summary + 1


def test_token_prior_spreads_word_scores_over_the_copy_tokens():
    from seqviz.summarize.compress import token_prior

    assert token_prior("BA's profits, fell. Later text", [0.9, 0.5, 0.1], 6) == [0.9, 0.5, 1e-3, 0.1, 1e-3, 1e-3]


@pytest.mark.parametrize("special", ["\u0130", "\u212a"])                       # İ; the Kelvin sign
def test_the_prior_and_the_model_read_the_same_tokens(special):
    # "İ".lower() is two characters and the Kelvin sign lowercases to an ASCII k: lowercasing before splitting gives
    # the article another number of tokens than the prior's split, and then every weight after it lands on the
    # wrong word (or write_headline refuses the prior)
    from seqviz.summarize.compress import lead_words, token_prior
    from seqviz.summarize.words import word_tokens

    text = f"Police in {special}stanbul and {special}elvin arrested BA's two men."
    assert word_tokens(text) == [w.lower() for w in word_tokens(text, lower=False)]
    assert len(word_tokens(text)) == 12                                          # the special is a token
    tok = _tiny_tok()
    model = _tiny_model(tok)
    short = f"The cat {special}stanbul sat on the mat."
    long = f"The cat {special}stanbul sat on the mat and the dog sat too, {special}lker said. " + "the cat sat " * 9
    for article in (short, long):
        words = lead_words(article)
        scores = [(k + 1) / 100 for k in range(len(words))]                      # a different weight per word
        prior = token_prior(article, scores, 20)
        src = tok.encode_source(article, 20)
        assert len(prior) == len(src.ext) == min(20, len(word_tokens(article)))
        # each lead word's weight sits on that word as the model reads it; every other token gets the floor
        read = tok.words(src.ext, src.oovs)
        weighted = [(w, p) for w, p in zip(read, prior) if p != 1e-3]
        assert weighted == [(w.lower(), s) for w, s in zip(words, scores)][:len(weighted)]
        assert len(weighted) == sum(any(ch.isalnum() for ch in w) for w in read)
        assert len(write_headline(model, tok, article, max_words=3, prior=prior)) >= 1


def test_rouge_bootstrap_and_diagnostics():
    from seqviz.summarize.evaluation import headline_diagnostics, rouge_bootstrap

    refs = ["ba profits fall", "japan escapes recession", "court rejects tobacco case", "telegraph axes jobs"] * 5
    good = ["ba profits fall", "japan recession", "tobacco case", "telegraph jobs"] * 5
    bad = ["news today"] * 20
    r = rouge_bootstrap(good, bad, refs, n=200)
    assert r["delta"] > 0 and r["ci95"][0] > 0 and r["p_value"] == 0
    same = rouge_bootstrap(good, good, refs, n=50)
    assert same["delta"] == 0 and same["p_value"] == 1
    arts = [NS(body="BA profits fell sharply", headline="x")] * 2
    d = headline_diagnostics(arts, ["BA profits fall", "BA profits fell"])
    assert d["distinct"] == 2 and d["novel_word_share"] == 1 / 6 and d["heads_with_novel"] == 0.5
    # no <unk> count: decoding bars <unk> (the next test), so such a column could never be non-zero
    assert set(d) == {"distinct", "novel_word_share", "heads_with_novel", "mean_words"}


@pytest.mark.parametrize("arch", ["encdec", "lm"])
def test_decoding_never_writes_unk_even_when_the_model_prefers_it(arch):
    tok = _tiny_tok()
    model = _tiny_model(tok, arch)
    vocab_logits = model.vocab_logits
    bias = torch.zeros(len(tok))
    bias[tok.unk_id] = 50.0                                                       # p_vocab(<unk>) = 1
    model.vocab_logits = lambda h: vocab_logits(h) + bias
    article = "the cat sat on the mat"
    src = tok.encode_source(article, 20)
    x = torch.tensor([src.ext])
    with torch.no_grad():
        p, _ = model.distribution(x, torch.ones_like(x, dtype=torch.bool), torch.tensor([[tok.bos_id]]), 1)
    assert int(p[0, -1].argmax()) == tok.unk_id                                   # what an unbarred search writes
    for beam in (1, 3):
        ids = write_headline(model, tok, article, beam_size=beam, max_words=4)
        assert ids and not set(ids) & set(tok.special_ids)


def test_keep_drop_head_reads_each_lead_word_at_its_last_piece():
    from seqviz.summarize import load_pretrained
    from seqviz.summarize.compress import KeepDropHead, head_scores, lead_words, train_keep_drop_head

    lm, tok, _ = load_pretrained()
    head = KeepDropHead(lm, tok, lm.config.d_model)
    body = "British Airways has blamed high fuel prices for a 40% drop in profits."
    ids, last, words = head.encode(body, lm.config.max_len)
    assert words == lead_words(body) and len(last) == len(words) and last == sorted(last)
    assert tok.decode(ids[:last[1] + 1]) == "British Airways"
    arts = [NS(body=body, headline="High fuel prices hit BA's profits")] * 4
    losses = train_keep_drop_head(head, arts, steps=30, batch_size=4, lr=3e-3)
    assert losses[-1] < losses[0]
    w, p = head_scores(head, body)
    assert w == words and p[words.index("fuel")] > p[words.index("has")]


# -- the shipped checkpoint (make copy-summarizer) -------------------------------------------------------------------
def test_shipped_copy_checkpoint_is_verified_small_and_the_one_recorded(tmp_path):
    from seqviz.data import load_corpus
    from dataclasses import asdict

    from seqviz.summarize.copy_checkpoint import (COPY_CHECKPOINT, COPY_SHA256, CopyRecipe, check_loss,
                                                  load_copy_summarizer)
    from seqviz.summarize.copy_models import CopyLM

    if not COPY_CHECKPOINT.is_file():
        pytest.fail(f"{COPY_CHECKPOINT} is missing: run `make copy-summarizer`")
    assert COPY_SHA256 is not None, "COPY_SHA256 is unset: paste the SHA-256 that `make copy-summarizer` printed"
    assert COPY_CHECKPOINT.stat().st_size <= 8_000_000
    model, tok, info = load_copy_summarizer()                                      # checks COPY_SHA256
    assert not any(m.training for m in model.modules()) and model.copy is not None
    # the file is what the package's recipe makes (`make copy-summarizer`: CopyRecipe's defaults), the δ LM
    assert info["recipe"] == asdict(CopyRecipe()) and isinstance(model, CopyLM)
    # the loss on the first 32 validation pairs is the one recorded when the file was written (CPU drift only)
    assert check_loss(model, tok, load_corpus("bbc")) == pytest.approx(info["check_loss"], abs=1e-3)
    bad = tmp_path / "bad.pt"
    data = bytearray(COPY_CHECKPOINT.read_bytes())
    data[-10] ^= 1
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256"):
        load_copy_summarizer(bad)
    with pytest.raises(FileNotFoundError, match="make copy-summarizer"):
        load_copy_summarizer(tmp_path / "none.pt")
