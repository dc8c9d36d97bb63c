"""Chapter 5: attention, score functions, the worked examples, beam search on the seed's toy scorer, seq2seq."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqviz.attention import (AdditiveScore, DotScore, GeneralScore, SoftAttention, attention, causal_mask,
                              masked_softmax, we_wash_our_cats)


def _qkv(*lead, tq=5, tk=7, dk=8, dv=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, tq, dk, generator=g, dtype=torch.float64)
    k = torch.randn(*lead, tk, dk, generator=g, dtype=torch.float64)
    v = torch.randn(*lead, tk, dv, generator=g, dtype=torch.float64)
    return q, k, v


# ---------------------------------------------------------------------------------------------------------------
# attention == scaled_dot_product_attention
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lead", [(), (3,), (2, 4)])
def test_attention_equals_sdpa_unmasked(lead):
    q, k, v = _qkv(*lead)
    out, w = attention(q, k, v)
    ref = F.scaled_dot_product_attention(q, k, v)
    assert out.shape == (*lead, 5, 6) and w.shape == (*lead, 5, 7)
    assert torch.allclose(out, ref, atol=1e-6, rtol=0)


def test_attention_equals_sdpa_causal():
    q, k, v = _qkv(2, 3, tq=6, tk=6)
    out, w = attention(q, k, v, mask=torch.from_numpy(causal_mask(6)))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(out, ref, atol=1e-6, rtol=0)
    assert torch.all(w.triu(1) == 0)


def test_attention_equals_sdpa_padding_mask_float32():
    q, k, v = (t.float() for t in _qkv(3, tq=4, tk=7))
    lengths = torch.tensor([7, 3, 1])
    pad = torch.arange(7)[None, :] < lengths[:, None]       # (B, T_k)
    out, w = attention(q, k, v, mask=pad[:, None, :])
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, :])
    assert torch.allclose(out, ref, atol=1e-6, rtol=0)
    assert torch.all(w[1, :, 3:] == 0) and torch.all(w[2, :, 1:] == 0)


def test_attention_gradients_match_sdpa():
    q, k, v = (t.requires_grad_() for t in _qkv(2, tq=4, tk=5))
    attention(q, k, v, mask=torch.from_numpy(causal_mask(4, 5)))[0].square().sum().backward()
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(causal_mask(4, 5))).square().sum().backward()
    for a, t in zip(grads, (q, k, v)):
        assert torch.allclose(a, t.grad, atol=1e-6)


@given(tq=st.integers(1, 6), tk=st.integers(1, 6), dk=st.integers(1, 5), seed=st.integers(0, 10_000),
       data=st.data())
def test_weights_rows_sum_to_one_and_masked_are_zero(tq, tk, dk, seed, data):
    q, k, v = _qkv(2, tq=tq, tk=tk, dk=dk, dv=3, seed=seed)
    q = q * 10  # large scores: the softmax must still be exact 0 where masked
    bits = data.draw(st.lists(st.lists(st.booleans(), min_size=tk, max_size=tk), min_size=tq, max_size=tq))
    mask = torch.tensor(bits, dtype=torch.bool).reshape(tq, tk)
    mask[:, data.draw(st.integers(0, tk - 1))] = True        # every row may attend somewhere
    _, w = attention(q, k, v, mask=mask)
    assert torch.allclose(w.sum(-1), torch.ones(2, tq, dtype=torch.float64), atol=1e-12)
    assert torch.all(w[:, ~mask] == 0)
    assert torch.all(w >= 0)


# ---------------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------------
def test_bad_inputs_give_clear_errors():
    q, k, v = _qkv(2)
    with pytest.raises(ValueError, match="same width d_k"):
        attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match="same length T_k"):
        attention(q, k, v[:, :4])
    with pytest.raises(ValueError, match="broadcast to the scores"):
        attention(q, k, v, mask=torch.ones(2, 7, dtype=torch.bool))
    with pytest.raises(ValueError, match="broadcast to the scores"):
        attention(q, k, v, mask=torch.ones(5, 6, dtype=torch.bool))
    with pytest.raises(ValueError, match="does not broadcast"):
        attention(q, k, v, mask=torch.ones(3, 5, 7, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool tensor"):
        attention(q, k, v, mask=torch.ones(5, 7))
    m = torch.ones(5, 7, dtype=torch.bool)
    m[2] = False
    with pytest.raises(ValueError, match="all False"):
        attention(q, k, v, mask=m)
    with pytest.raises(ValueError, match="empty"):
        attention(q, k[:, :0], v[:, :0])
    with pytest.raises(ValueError, match="empty"):
        attention(q[:, :0], k, v)
    with pytest.raises(ValueError, match="leading"):
        attention(q, *_qkv(3)[1:])
    with pytest.raises(TypeError, match="floating-point"):
        attention(q.long(), k, v)


# ---------------------------------------------------------------------------------------------------------------
# the worked example "We wash our cats" (seed 003)
# ---------------------------------------------------------------------------------------------------------------
def test_we_wash_our_cats_numbers():
    e = we_wash_our_cats()
    assert e.raw.tolist() == [13, 24, 20, 12]
    assert torch.allclose(e.scaled, torch.tensor([1.625, 3.0, 2.5, 1.5], dtype=torch.float64))
    # the seed's slide rounds to 1.63, 3.0, 2.5, 1.5 and 0.12, 0.48, 0.29, 0.10 (the last is 0.107, rounded down)
    assert [math.floor(x * 100 + 0.5) / 100 for x in e.scaled.tolist()] == [1.63, 3.0, 2.5, 1.5]  # half up
    assert np.round(e.weights.numpy(), 3).tolist() == [0.121, 0.480, 0.291, 0.107]
    assert np.round(e.weights.numpy(), 2)[:3].tolist() == [0.12, 0.48, 0.29]
    v = torch.arange(8, dtype=torch.float64).reshape(4, 2)
    e2 = we_wash_our_cats(v)
    assert torch.allclose(e2.output, (e2.weights[:, None] * v).sum(0))
    # the causal row: "We" sees only itself
    assert e.causal_weights.tolist() == [1.0, 0.0, 0.0, 0.0]


# ---------------------------------------------------------------------------------------------------------------
# score functions as modules
# ---------------------------------------------------------------------------------------------------------------
def test_score_functions():
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    assert torch.allclose(DotScore()(q, k), torch.einsum("bqd,bkd->bqk", q, k))
    g = GeneralScore(4, 6)
    k6 = torch.randn(2, 5, 6)
    assert torch.allclose(g(q, k6), torch.einsum("bqd,de,bke->bqk", q, g.W_a.weight, k6), atol=1e-6)
    a = AdditiveScore(4, 6, d_attn=7)
    ref = torch.stack([torch.stack([a.v_a(torch.tanh(a.W_a(q[b, i]) + a.U_a(k6[b, j]))).squeeze()
                                    for j in range(5)]) for i in range(3) for b in range(2)])
    got = a(q, k6)                                              # (2, 3, 5)
    assert got.shape == (2, 3, 5)
    assert torch.allclose(got.permute(1, 0, 2).reshape(6, 5), ref, atol=1e-6)
    with pytest.raises(ValueError, match="widths to match"):
        DotScore(4, 6)


@pytest.mark.parametrize("kind", ["dot", "general", "additive"])
def test_soft_attention_context_is_weighted_sum(kind):
    torch.manual_seed(1)
    att = SoftAttention(kind, 4, 4)
    q, h = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    pad = torch.tensor([[True] * 5, [True, True, False, False, False]])
    ctx, w = att(q, h, mask=pad[:, None, :])
    assert torch.allclose(ctx, w @ h, atol=1e-6)
    assert torch.all(w[1, :, 2:] == 0)
    assert torch.allclose(w.sum(-1), torch.ones(2, 3))
    with pytest.raises(ValueError, match="score must be one of"):
        SoftAttention("cosine", 4, 4)


def test_masked_softmax_without_mask_is_softmax():
    s = torch.randn(3, 4)
    assert torch.equal(masked_softmax(s), torch.softmax(s, -1))


# ---------------------------------------------------------------------------------------------------------------
# beam search: seed 004's worked example
# ---------------------------------------------------------------------------------------------------------------
def _pct(scorer, beam):
    return [(scorer.decode(ids), round(100 * p)) for ids, p in beam]


def test_seed_beam_example_greedy_vs_beam():
    from seqviz.attention import SeedBeamScorer, beam_steps
    from seqviz.decode import beam_search, generate
    s = SeedBeamScorer()
    greedy = generate(s.next_token_logits, [s.bos], 10, greedy=True, stop_id=s.eos)
    assert s.decode(greedy) == "How will you </s>"
    best = beam_search(s.next_token_logits, [s.bos], 3, 10, stop_id=s.eos)[0]
    assert s.decode(best[0]) == "How are you </s>"
    steps = beam_steps(s, s.bos, 3, 10, stop_id=s.eos)
    assert _pct(s, steps[0]) == [("How", 75), ("What", 3), ("You", 1)]
    assert _pct(s, steps[1]) == [("How will", 27), ("How are", 24), ("How do", 12)]
    assert _pct(s, steps[2]) == [("How are you", 10), ("How do you", 8), ("How will you", 2)]
    assert _pct(s, steps[3]) == [("How do you do", 7), ("How are you </s>", 6), ("How are you doing", 3)]
    # beam width 1 is greedy
    one = beam_search(s.next_token_logits, [s.bos], 1, 10, stop_id=s.eos)[0][0]
    assert one == greedy
    # every distribution of the toy model sums to 1
    for ctx in list(s.TABLE) + [("x",)]:
        assert math.isclose(sum(s.probs(ctx).values()), 1.0)


# ---------------------------------------------------------------------------------------------------------------
# data: the date task
# ---------------------------------------------------------------------------------------------------------------
def test_date_task_is_seeded_split_by_date_and_correct():
    import datetime

    from seqviz.data.tasks import DATE_FORMATS, date_examples, date_task
    t = date_task(2000, 300, 300, seed=3)
    assert t == date_task(2000, 300, 300, seed=3)
    assert date_examples(50, seed=4) != date_examples(50, seed=3)
    dates = {s: {e.target for e in ex} for s, ex in t.items()}
    assert not dates["train"] & dates["test"] and not dates["train"] & dates["valid"]
    assert {e.form for e in t["train"]} == set(DATE_FORMATS)
    for e in t["train"]:
        d = datetime.date.fromisoformat(e.target)
        assert DATE_FORMATS[e.form](d) == e.source
    # a few forms parse back with strptime, independently of the generator
    for e in t["train"]:
        if e.form == "d_month_y":
            assert datetime.datetime.strptime(e.source, "%d %B %Y").date().isoformat() == e.target
        if e.form == "us_slash":
            assert datetime.datetime.strptime(e.source, "%m/%d/%Y").date().isoformat() == e.target
        if e.form == "dd_mon_yy":
            assert datetime.datetime.strptime(e.source.title(), "%d-%b-%y").date().isoformat() == e.target
    assert DATE_FORMATS["dth_of_month_y"](datetime.date(1999, 3, 3)) == "3rd of March 1999"
    assert DATE_FORMATS["dth_of_month_y"](datetime.date(1999, 3, 11)) == "11th of March 1999"
    assert DATE_FORMATS["dth_of_month_y"](datetime.date(1999, 3, 22)) == "22nd of March 1999"


def test_date_task_bad_input():
    from seqviz.data.tasks import date_examples
    with pytest.raises(ValueError, match="split must be"):
        date_examples(3, split="dev")
    with pytest.raises(ValueError, match="unknown date forms"):
        date_examples(3, forms=["iso"])
    with pytest.raises(ValueError, match="non-negative int"):
        date_examples(-1)


# ---------------------------------------------------------------------------------------------------------------
# data: byte-pair encoding
# ---------------------------------------------------------------------------------------------------------------
def _naive_bpe(text, num_merges, min_freq=2):
    """Sennrich et al. (2016), Fig. 1, recounting every pair after each merge (slow, obviously right)."""
    import collections
    import re
    from seqviz.data.bpe import pretokenize
    vocab = collections.Counter(tuple(w) for w in pretokenize(text))
    merges = []
    for _ in range(num_merges):
        pairs = collections.Counter()
        for w, n in vocab.items():
            for p in zip(w, w[1:]):
                pairs[p] += n
        if not pairs:
            break
        best, n = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if n < min_freq:
            break
        merges.append(best)
        new = collections.Counter()
        for w, c in vocab.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] += c
        vocab = new
    return merges


_TEXT = ("the lower the newer the lowest the newest wider low lower lowest newer newest widest. "
         "Anything unseen still encodes: zebra quux! \n\n  tabs\tand  spaces  ") * 3


def test_bpe_learns_the_merges_of_the_paper_algorithm():
    from seqviz.data.bpe import BPE
    bpe = BPE.learn(_TEXT, 60)
    assert bpe.merges == _naive_bpe(_TEXT, 60)
    assert len(bpe) == 60


@settings(max_examples=60)
@given(st.text(alphabet="ab c\n", min_size=1, max_size=60), st.integers(1, 15))
def test_bpe_incremental_counts_equal_recounting(text, k):
    from seqviz.data.bpe import BPE
    assert BPE.learn(text, k, min_freq=1).merges == _naive_bpe(text, k, min_freq=1)


def test_bpe_splits_rare_words_into_known_pieces():
    from seqviz.data.bpe import BPE
    bpe = BPE.learn("low lower lowest newer newest " * 20, 40)
    pieces = bpe.encode(" slowest")
    assert "".join(pieces) == " slowest"
    assert len(pieces) < len(" slowest") and "est" in "".join(pieces[1:])
    assert set(pieces[1:]) <= set(bpe.symbols) | set("slowest")


@given(st.text(max_size=80))
def test_bpe_round_trips_any_text(text):
    from seqviz.data.bpe import BPE, pretokenize
    bpe = _BPE_FOR_PROPERTY
    assert "".join(pretokenize(text)) == text
    assert BPE.decode(bpe.encode(text)) == text


def test_bpe_bad_input():
    from seqviz.data.bpe import BPE
    with pytest.raises(ValueError, match="no text"):
        BPE.learn("", 10)
    with pytest.raises(ValueError, match="num_merges"):
        BPE.learn("abc", -1)
    with pytest.raises(TypeError, match="str"):
        BPE.learn("abc abc", 2).encode(["abc"])
    with pytest.raises(TypeError, match="pieces must be strings"):
        BPE.decode([1, 2])


def _make_property_bpe():
    from seqviz.data.bpe import BPE
    return BPE.learn(_TEXT, 80)


_BPE_FOR_PROPERTY = _make_property_bpe()


# ---------------------------------------------------------------------------------------------------------------
# data: trans-de-en
# ---------------------------------------------------------------------------------------------------------------
def test_trans_de_en_filter_keeps_whole_sentences_only():
    from seqviz.data.corpora import SentencePair, _trans_de_en_pairs
    lines = ["# Version :: devel\n",
             "Abholtag {m} :: pick-up day\n",
             "essen | Wir essen zu Abend. | Er isst. :: to eat | We have dinner. | He eats.\n",
             "gehen | Wir gehen heim. :: to go | We go home.; We are going home.\n",
             "a | b :: only one side\n",
             "x | Wir essen zu Abend. :: y | We have dinner.\n"]
    assert _trans_de_en_pairs(lines) == [SentencePair("Wir essen zu Abend.", "We have dinner.")]


def test_trans_de_en_missing_gives_clear_error(monkeypatch, tmp_path):
    from seqviz.data import corpora
    monkeypatch.setenv("SEQVIZ_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(corpora, "_TRANS_DE_EN_SYSTEM", tmp_path / "nowhere")
    corpora.load_trans_de_en.cache_clear()
    try:
        with pytest.raises(corpora.CorpusUnavailableError, match="make setup.*apt-get download trans-de-en"):
            corpora.load_corpus("trans-de-en")
    finally:
        corpora.load_trans_de_en.cache_clear()


def test_trans_de_en_when_installed():
    from seqviz.data import CorpusUnavailableError, load_corpus
    try:
        c = load_corpus("trans_de_en")
    except CorpusUnavailableError as e:
        pytest.skip(str(e))
    assert len(c.train) > 10_000 and len(c.test) > 500
    assert not {p.source for p in c.train} & {p.source for p in c.test}


# ---------------------------------------------------------------------------------------------------------------
# Seq2Seq
# ---------------------------------------------------------------------------------------------------------------
def _s2s(**kw):
    from seqviz.attention import Seq2Seq, Seq2SeqConfig
    torch.manual_seed(0)
    return Seq2Seq(Seq2SeqConfig(12, 9, d_emb=6, d_h=8, **kw))


def _pair_batch():
    src = torch.tensor([[5, 6, 7, 8, 9], [4, 5, 6, 0, 0], [7, 7, 0, 0, 0]])
    mask = src != 0
    tgt = torch.tensor([[4, 5, 6, 3], [7, 3, -100, -100], [8, 8, 8, 3]])
    return src, mask, tgt


class _Recorder(torch.nn.Module):
    """Wraps an embedding and records every id it is asked to embed."""

    def __init__(self, emb):
        super().__init__()
        self.emb, self.seen = emb, []

    def forward(self, ids):
        self.seen.append(ids.clone())
        return self.emb(ids)


@pytest.mark.parametrize("kw", [dict(attention=None), dict(attention="general"),
                                dict(attention="additive", context="input"), dict(attention="dot", cell="lstm")])
def test_teacher_forcing_ratio_one_feeds_gold_zero_feeds_predictions(kw):
    from seqviz.data.batches import shift_right
    m = _s2s(**kw)
    src, mask, tgt = _pair_batch()
    rec = m.tgt_emb = _Recorder(m.tgt_emb)
    logits, _ = m(src, tgt, mask, teacher_forcing=1.0)
    gold_in = shift_right(tgt, 2, 0)
    seen = torch.cat([s.reshape(3, -1) for s in rec.seen], 1)
    assert torch.equal(seen, gold_in)
    rec.seen.clear()
    logits0, _ = m(src, tgt, mask, teacher_forcing=0.0)
    seen = torch.stack([s.reshape(3) for s in rec.seen], 1)          # (B, T): one step at a time
    assert torch.equal(seen[:, 0], torch.full((3,), 2))             # <s> first
    assert torch.equal(seen[:, 1:], logits0[:, :-1].argmax(-1))     # then its own previous predictions
    assert not torch.equal(seen, gold_in)


def test_scheduled_sampling_mixes_gold_and_predictions_seeded():
    from seqviz.attention import inverse_sigmoid_decay
    from seqviz.data.batches import shift_right
    m = _s2s()
    src, mask, tgt = _pair_batch()
    rec = m.tgt_emb = _Recorder(m.tgt_emb)
    logits, _ = m(src, tgt, mask, teacher_forcing=0.5, generator=torch.Generator().manual_seed(1))
    seen = torch.stack([s.reshape(3) for s in rec.seen], 1)
    gold, pred = shift_right(tgt, 2, 0), logits[:, :-1].argmax(-1)
    assert torch.all((seen[:, 1:] == gold[:, 1:]) | (seen[:, 1:] == pred))
    assert 1 > inverse_sigmoid_decay(0) > inverse_sigmoid_decay(5) > inverse_sigmoid_decay(30) > 0


@pytest.mark.parametrize("kw", [dict(attention=None), dict(attention="general"), dict(attention="dot", cell="lstm"),
                                dict(attention="additive", bidirectional=True, num_layers=2)])
def test_parallel_teacher_forcing_equals_the_step_loop(kw):
    m = _s2s(**kw)
    src, mask, tgt = _pair_batch()
    logits, loss, w = m(src, tgt, mask, return_attention=True)
    # the step loop: the incremental decoder fed the gold inputs
    from seqviz.data.batches import shift_right
    dec = m.start(src, mask)
    z, st, steps = None, None, []
    gold_in = shift_right(tgt, 2, 0)
    for t in range(tgt.shape[1]):
        z, st = dec.step(gold_in[:, t:t + 1], st)
        steps.append(z)
    assert torch.allclose(torch.stack(steps, 1), logits, atol=1e-5)
    if kw["attention"] is not None:
        assert w.shape == (3, 4, 5) and torch.all(w[1, :, 3:] == 0) and torch.all(w[2, :, 2:] == 0)
        assert torch.allclose(w.sum(-1), torch.ones(3, 4))
    else:
        assert w is None


def test_loss_ignores_padding():
    m = _s2s()
    src, mask, tgt = _pair_batch()
    logits, loss = m(src, tgt, mask)
    keep = tgt != -100
    ref = F.cross_entropy(logits[keep], tgt[keep])
    assert torch.allclose(loss, ref)
    # what stands in a padded source position or past </s> changes nothing
    src2, tgt2 = src.clone(), tgt.clone()
    src2[~mask] = 11
    logits2, loss2 = m(src2, tgt, mask)
    assert torch.allclose(loss2, loss, atol=1e-6)


def test_beam_search_over_the_seq2seq_decoder():
    from seqviz.decode import beam_search, generate
    m = _s2s(attention="general").eval()
    src, mask, _ = _pair_batch()
    greedy = m.greedy(src, mask, max_len=6)
    for b in range(3):
        dec = m.start(src[b:b + 1, :int(mask[b].sum())])
        one = generate(dec.next_token_logits, [2], 6, greedy=True, stop_id=3)
        assert one == greedy[b]
        beam1 = beam_search(dec.next_token_logits, [2], 1, 6, stop_id=3)[0][0]
        assert beam1 == greedy[b]


def test_reorder_state_selects_rows():
    m = _s2s(attention="dot", cell="lstm")
    src, mask, _ = _pair_batch()
    dec = m.start(src, mask)
    ids = torch.tensor([[2], [2], [2]])
    z, st = dec.step(ids, None)
    idx = torch.tensor([2, 2, 0])
    st2 = dec.reorder_state(st, idx)
    z2, _ = dec.step(torch.tensor([[4], [4], [4]]), st2)
    z_ref, _ = dec.step(torch.tensor([[4], [4], [4]]), st)
    assert torch.allclose(z2, z_ref[idx])


def test_seq2seq_bad_input():
    from seqviz.attention import Seq2Seq, Seq2SeqConfig
    m = _s2s()
    src, mask, tgt = _pair_batch()
    with pytest.raises(ValueError, match="empty"):
        m(src[:, :0], tgt, mask[:, :0])
    with pytest.raises(ValueError, match="no real token"):
        m(src, tgt, torch.zeros_like(mask))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m(src + 20, tgt, mask)
    with pytest.raises(ValueError, match="teacher_forcing"):
        m(src, tgt, mask, teacher_forcing=1.5)
    with pytest.raises(ValueError, match="attention must be one of"):
        Seq2Seq(Seq2SeqConfig(5, 5, attention="cosine"))
    with pytest.raises(ValueError, match="needs an attention"):
        Seq2Seq(Seq2SeqConfig(5, 5, attention=None, context="input"))


def test_date_pairs_and_exact_match():
    from seqviz.attention import Seq2Seq, date_pairs, exact_match
    task = date_pairs(200, 20, 30, batch_size=16)
    assert len(task.test_src) == 30 and all(t[-1] == task.tgt_vocab.eos_id for t in task.test_tgt)
    assert "".join(task.tgt_vocab.itos[i] for i in task.test_tgt[0][:-1]) == task.test_text[0][1]
    b = next(iter(task.train))
    assert b.x.shape[0] == 16 and b.mask is not None and b.y.shape[0] == 16
    m = Seq2Seq(task.config(d_h=8, d_emb=4))
    ok = exact_match(m, task.test_src, task.test_tgt, task.src_vocab.pad_id)
    assert ok.shape == (30,) and ok.dtype == torch.bool and not ok.any()   # untrained: nothing right
    # a "model" that returns the gold answers scores 1
    class Oracle:
        def greedy(self, x, mask, max_len):
            return [task.test_tgt[i] for i in range(len(x))]
    assert exact_match(Oracle(), task.test_src, task.test_tgt, 0, batch_size=100).all()


def test_seq2seq_decoder_is_a_stepper_beams_scored_as_one_batch():
    from seqviz.decode import Stepper, beam_search, generate
    m = _s2s(attention="additive").eval()
    src, mask, _ = _pair_batch()
    greedy = m.greedy(src, mask, max_len=6)
    calls = []
    for b in range(3):
        dec = m.start(src[b:b + 1, :int(mask[b].sum())])
        assert isinstance(dec, Stepper)
        real_step = dec.step
        dec.step = lambda ids, st, _f=real_step: (calls.append(ids.shape[0]), _f(ids, st))[1]
        assert generate(dec, [2], 6, greedy=True, stop_id=3) == greedy[b]
        assert beam_search(dec, [2], 1, 6, stop_id=3)[0][0] == greedy[b]
        batched = beam_search(dec, [2], 3, 6, stop_id=3)
        by_context = beam_search(m.start(src[b:b + 1, :int(mask[b].sum())]).next_token_logits, [2], 3, 6, stop_id=3)
        assert [ids for ids, _ in batched] == [ids for ids, _ in by_context]
        assert np.allclose([lp for _, lp in batched], [lp for _, lp in by_context], atol=1e-5)
    assert max(calls) == 3          # the beam's 3 hypotheses went through one step call together


def test_translation_pairs_translate_and_bleu():
    pytest.importorskip("sacrebleu")
    from seqviz.attention import Seq2Seq, bleu, translate, translation_pairs
    from seqviz.data import Corpus, SentencePair
    pairs = [SentencePair(f"Ich sehe {n} Hunde.", f"I see {n} dogs.") for n in range(2, 40)]
    corpus = Corpus("toy", tuple(pairs[:30]), tuple(pairs[30:34]), tuple(pairs[34:]), "test", "none")
    task, bpe = translation_pairs(corpus, num_merges=30, batch_size=8)
    assert "".join(task.src_vocab.itos[i] for i in task.test_src[0]) == pairs[34].source
    assert bpe["tgt"].decode(bpe["tgt"].encode(pairs[0].target)) == pairs[0].target
    m = Seq2Seq(task.config(d_h=8, d_emb=4))
    assert len(translate(m, task, 1, max_len=5)) == 4 and len(translate(m, task, 2, n=2, max_len=5)) == 2
    refs = [t for _, t in task.test_text]
    assert bleu(refs, refs) == pytest.approx(100.0)
    assert bleu(["a b c d"] * 4, refs) < 5
    with pytest.raises(ValueError, match="one reference per hypothesis"):
        bleu(refs[:2], refs)


def test_translation_pairs_max_words_filters_every_split():
    from seqviz.attention import translation_pairs
    from seqviz.data import Corpus, SentencePair
    short = [SentencePair(f"Ich sehe {n} Hunde.", f"I see {n} dogs.") for n in range(2, 40)]
    long = [SentencePair(f"Ich sehe heute {n} sehr große Hunde.", f"Today I see {n} very big dogs.")
            for n in range(2, 40)]
    corpus = Corpus("toy", tuple(short[:30] + long[:30]), tuple(short[30:34] + long[30:34]),
                    tuple(short[34:] + long[34:]), "test", "none")
    task, _ = translation_pairs(corpus, num_merges=30, batch_size=8, max_words=4)
    assert len(task.train.sources) == 30 and len(task.valid.sources) == 4
    assert [s for s, _ in task.test_text] == [p.source for p in short[34:]]
    everything, _ = translation_pairs(corpus, num_merges=30, batch_size=8)
    assert len(everything.train.sources) == 60 and len(everything.test_text) == 8
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_words must be a positive int"):
            translation_pairs(corpus, num_merges=30, max_words=bad)
    with pytest.raises(ValueError, match="raise max_words"):
        translation_pairs(corpus, num_merges=30, max_words=2)


def test_small_preset_and_translate_stops_without_eos():
    from seqviz.attention import Seq2Seq, translate, translation_pairs
    from seqviz.data import Corpus, SentencePair
    pairs = [SentencePair(f"Ich sehe {n} Hunde.", f"I see {n} dogs.") for n in range(2, 40)]
    corpus = Corpus("toy", tuple(pairs[:30]), tuple(pairs[30:34]), tuple(pairs[34:]), "test", "none")
    task, _ = translation_pairs(corpus, num_merges=30, batch_size=8)
    c = task.config("small")
    assert (c.d_h, c.d_emb, c.bidirectional, c.attention) == (256, 128, True, "general")
    with pytest.raises(ValueError, match="preset"):
        task.config("huge")
    m = Seq2Seq(task.config("tiny", d_h=8, d_emb=4))
    ch = next(p for p in task.tgt_vocab.itos if len(p) == 1 and p.isalpha())     # a one-letter piece
    with torch.no_grad():                      # the model always says it, never </s>: only the cap stops it
        m.out.bias[task.tgt_vocab.stoi[ch]] = 1e4
    lens = [len(s) for s in task.test_src[:2]]
    assert translate(m, task, 1, n=2) == [ch * (2 * max(lens) + 10)] * 2      # greedy: the batch's padded width
    assert translate(m, task, 2, n=2) == [ch * (2 * n + 10) for n in lens]    # beam: each source's own length
    assert translate(m, task, 1, n=1, max_len=3) == [ch * 3]


# ---------------------------------------------------------------------------------------------------------------
# paired bootstrap resampling of corpus BLEU (Koehn, 2004)
# ---------------------------------------------------------------------------------------------------------------
_WORDS = "the cat dog sat on a mat ran to house big small red tree in garden".split()


def _sentences(n: int, seed: int, lo: int = 3, hi: int = 12) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_WORDS, size=rng.integers(lo, hi))) + rng.choice([".", "!", "?"]) for _ in range(n)]


def _noisy(refs: list[str], p: float, seed: int) -> list[str]:
    """Each word of each reference replaced by a random word with probability p."""
    rng = np.random.default_rng(seed)
    return [" ".join(w if rng.random() > p else str(rng.choice(_WORDS)) for w in r.split()) for r in refs]


def test_paired_bootstrap_full_set_delta_is_the_bleu_difference():
    pytest.importorskip("sacrebleu")
    from seqviz.attention import bleu, paired_bootstrap
    refs = _sentences(200, 0)
    a, b = _noisy(refs, 0.2, 1), _noisy(refs, 0.4, 2)
    res = paired_bootstrap(a, b, refs, n=50)
    assert res["delta"] == pytest.approx(bleu(a, refs) - bleu(b, refs), abs=1e-6)
    assert res["delta"] != 0 and res["n"] == 50
    # and the sign flips with the order of the systems
    assert paired_bootstrap(b, a, refs, n=50)["delta"] == pytest.approx(-res["delta"], abs=1e-9)


def test_paired_bootstrap_resample_equals_bleu_of_the_resampled_corpus():
    """Summing per-sentence statistics is corpus BLEU of the resampled test set, computed the slow way."""
    pytest.importorskip("sacrebleu")
    from seqviz.metrics import _bleu_from_stats, _bleu_segment_stats, bleu
    refs = _sentences(60, 3)
    hyps = _noisy(refs, 0.3, 4)
    stats, metric = _bleu_segment_stats(hyps, refs)
    idx = np.random.default_rng(5).integers(0, len(refs), size=len(refs))
    counts = np.bincount(idx, minlength=len(refs))
    assert _bleu_from_stats(metric, counts @ stats) == pytest.approx(
        bleu([hyps[i] for i in idx], [refs[i] for i in idx]), abs=1e-6)


def test_paired_bootstrap_identical_systems():
    pytest.importorskip("sacrebleu")
    from seqviz.attention import paired_bootstrap
    refs = _sentences(80, 6)
    a = _noisy(refs, 0.3, 7)
    res = paired_bootstrap(a, list(a), refs, n=200)
    assert res["delta"] == 0.0 and res["ci95"] == (0.0, 0.0)
    assert res["p_value"] == 1.0                        # A never beats itself: every resampled delta is 0


def test_paired_bootstrap_perfect_system_beats_a_poor_one():
    pytest.importorskip("sacrebleu")
    from seqviz.attention import paired_bootstrap
    refs = _sentences(100, 8)
    poor = _noisy(refs, 0.7, 9)
    res = paired_bootstrap(refs, poor, refs, n=300)
    assert res["p_value"] == 0.0
    assert 0 < res["ci95"][0] <= res["delta"] <= res["ci95"][1]
    assert paired_bootstrap(poor, refs, refs, n=300)["p_value"] == 1.0


def test_paired_bootstrap_close_systems_are_not_significant():
    """Two systems of the same noise level (different draws): the CI straddles 0 and p is far from 0 and 1."""
    pytest.importorskip("sacrebleu")
    from seqviz.attention import paired_bootstrap
    refs = _sentences(150, 10)
    res = paired_bootstrap(_noisy(refs, 0.3, 11), _noisy(refs, 0.3, 12), refs, n=500)
    assert res["ci95"][0] < 0 < res["ci95"][1]
    assert 0.02 < res["p_value"] < 0.98


def test_paired_bootstrap_is_deterministic_for_a_seed():
    pytest.importorskip("sacrebleu")
    from seqviz.attention import paired_bootstrap
    refs = _sentences(60, 13)
    a, b = _noisy(refs, 0.25, 14), _noisy(refs, 0.3, 15)
    r1, r2 = paired_bootstrap(a, b, refs, n=100, seed=3), paired_bootstrap(a, b, refs, n=100, seed=3)
    assert r1 == r2
    r3 = paired_bootstrap(a, b, refs, n=100, seed=4)
    assert r3["delta"] == r1["delta"] and r3["ci95"] != r1["ci95"]


def test_paired_bootstrap_bad_input():
    pytest.importorskip("sacrebleu")
    from seqviz.attention import paired_bootstrap
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
