"""Chapter 5's recurrent encoder-decoder (seqviz.seq2seq) and the data it trains on (seqviz.data: the date task, BPE,
trans-de-en, pair tasks): teacher forcing, scheduled sampling, the decoder binding, greedy and beam decoding in eval
mode whatever the caller's mode, translation to text with one length cap per sentence."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqviz.data import Corpus, SentencePair, date_pairs, translation_pairs
from seqviz.data.batches import shift_right
from seqviz.decode import Stepper, beam_search, generate, next_token_logits_by_step
from seqviz.seq2seq import (Seq2Seq, Seq2SeqConfig, Seq2SeqDecoder, UNK_TEXT, ids_to_text, inverse_sigmoid_decay,
                            translate)


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
# Seq2Seq: training
# ---------------------------------------------------------------------------------------------------------------
def _s2s(**kw):
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
    # the step loop: the decoder binding fed the gold inputs
    binding = m.bind(src, mask)
    z, st, steps = None, None, []
    gold_in = shift_right(tgt, 2, 0)
    for t in range(tgt.shape[1]):
        z, st = binding.step(gold_in[:, t:t + 1], st)
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
    src2 = src.clone()
    src2[~mask] = 11
    logits2, loss2 = m(src2, tgt, mask)
    assert torch.allclose(loss2, loss, atol=1e-6)


def test_seq2seq_bad_input():
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
    with pytest.raises(ValueError, match="src_vocab_size must be a positive int"):
        Seq2Seq(Seq2SeqConfig(0, 5))


# ---------------------------------------------------------------------------------------------------------------
# Seq2Seq: the decoder binding, greedy and beam decoding
# ---------------------------------------------------------------------------------------------------------------
def test_binding_encodes_lazily_names_its_module_and_serves_any_rows_from_one_source():
    m = _s2s(attention="general").eval()
    src, mask, _ = _pair_batch()
    calls = []
    encode = m.encode
    m.encode = lambda *a, **k: (calls.append(1), encode(*a, **k))[1]
    binding = m.bind(src[0])                                    # (S,): one source
    assert isinstance(binding, Seq2SeqDecoder) and isinstance(binding, Stepper) and binding.module is m
    assert calls == []                                          # nothing encoded until the first step
    z, _ = binding.step(torch.full((4, 1), 2), None)            # one source serves 4 rows
    assert calls == [1] and z.shape == (4, 9)
    assert torch.allclose(z, z[:1].expand(4, -1))
    with pytest.raises(ValueError, match="holds 3 sources but step got 2 rows"):
        m.bind(src, mask).step(torch.full((2, 1), 2), None)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m.bind(src + 20, mask)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        m.bind(src, mask).step(torch.full((3, 1), 9), None)    # 9 is past the target vocabulary


def test_reorder_state_selects_rows():
    m = _s2s(attention="dot", cell="lstm")
    src, mask, _ = _pair_batch()
    binding = m.bind(src, mask)
    z, st = binding.step(torch.tensor([[2], [2], [2]]), None)
    idx = torch.tensor([2, 2, 0])
    z2, _ = binding.step(torch.tensor([[4], [4], [4]]), binding.reorder_state(st, idx))
    z_ref, _ = binding.step(torch.tensor([[4], [4], [4]]), st)
    assert torch.allclose(z2, z_ref[idx])


def test_greedy_generate_and_beam_of_one_agree_through_the_binding():
    m = _s2s(attention="general").eval()
    src, mask, _ = _pair_batch()
    greedy = m.greedy(src, mask, max_new_tokens=6)
    for b in range(3):
        binding = m.bind(src[b:b + 1, :int(mask[b].sum())])
        assert generate(binding, [2], 6, greedy=True, stop_id=3) == greedy[b]
        assert beam_search(binding, [2], 1, 6, stop_id=3)[0][0] == greedy[b]
        # the score-function interface over the same binding (every context re-read from the start)
        by_context = lambda ctx, _b=binding: next_token_logits_by_step(_b, ctx)   # noqa: E731
        assert generate(by_context, [2], 6, greedy=True, stop_id=3) == greedy[b]


def test_beam_is_scored_as_one_batch_and_equals_the_score_function_beam():
    m = _s2s(attention="additive").eval()
    src, mask, _ = _pair_batch()
    calls = []
    for b in range(3):
        binding = m.bind(src[b:b + 1, :int(mask[b].sum())])
        real_step = binding.step
        binding.step = lambda ids, st, _f=real_step: (calls.append(ids.shape[0]), _f(ids, st))[1]
        batched = beam_search(binding, [2], 3, 6, stop_id=3)
        by_context = beam_search(lambda ctx, _b=m.bind(src[b:b + 1, :int(mask[b].sum())]):
                                 next_token_logits_by_step(_b, ctx), [2], 3, 6, stop_id=3)
        assert [ids for ids, _ in batched] == [ids for ids, _ in by_context]
        assert np.allclose([lp for _, lp in batched], [lp for _, lp in by_context], atol=1e-5)
    assert max(calls) == 3          # the beam's 3 hypotheses went through one step call together


def _dropout_model():
    """A model with dropout 0.5, left in train mode (as after Trainer.fit)."""
    torch.manual_seed(0)
    m = Seq2Seq(Seq2SeqConfig(12, 9, d_emb=16, d_h=32, dropout=0.5, attention="general", bidirectional=True))
    with torch.no_grad():
        m.out.bias[3] -= 2.0                                        # </s> less likely: longer outputs
    return m.train()


def test_decoding_a_model_left_in_train_mode_with_dropout_is_eval_mode_decoding():
    """Bug 1: the encoder (and the decoder) ran with dropout on when the model was in train mode."""
    m = _dropout_model()
    src, mask, _ = _pair_batch()
    m.eval()
    want_greedy = m.greedy(src, mask, max_new_tokens=8)
    want_beam = [beam_search(m.bind(src[b:b + 1, :int(mask[b].sum())]), [2], 3, 8, stop_id=3)
                 for b in range(3)]
    m.train()
    for _ in range(5):
        assert m.greedy(src, mask, max_new_tokens=8) == want_greedy
        assert m.training
        for b in range(3):
            got = beam_search(m.bind(src[b:b + 1, :int(mask[b].sum())]), [2], 3, 8, stop_id=3)
            assert [ids for ids, _ in got] == [ids for ids, _ in want_beam[b]]
            assert np.allclose([lp for _, lp in got], [lp for _, lp in want_beam[b]], atol=1e-6)
            assert m.training
    # and the same after the encoder was bound in train mode (binding is not encoding)
    bound = [m.bind(src[b:b + 1, :int(mask[b].sum())]) for b in range(3)]
    for b in range(3):
        assert generate(bound[b], [2], 8, greedy=True, stop_id=3) == want_greedy[b]
    assert m.training


def test_greedy_restores_the_mode_when_it_raises():
    """Bug 2: greedy left the model in eval mode when the input was bad."""
    m = _dropout_model()
    src, mask, _ = _pair_batch()
    for mode in (True, False):
        m.train(mode)
        with pytest.raises(ValueError, match="outside the vocabulary"):
            m.greedy(src + 20, mask)
        assert m.training is mode and m.drop.training is mode
        with pytest.raises(ValueError, match="no real token"):
            m.greedy(src, torch.zeros_like(mask))
        assert m.training is mode


def test_greedy_caps_each_row_at_its_own_max_new_tokens():
    m = _s2s(attention="general").eval()
    with torch.no_grad():
        m.out.bias[3] = -1e4                                        # never </s>: only the caps stop it
    src, mask, _ = _pair_batch()
    outs, w = m.greedy(src, mask, max_new_tokens=[2, 5, 3], return_attention=True)
    assert [len(o) for o in outs] == [2, 5, 3] and w.shape == (3, 5, 5)
    alone = [m.greedy(src[b:b + 1], mask[b:b + 1], max_new_tokens=n)[0] for b, n in enumerate([2, 5, 3])]
    assert outs == alone                                        # each row as if decoded on its own
    assert [len(o) for o in m.greedy(src, mask, max_new_tokens=torch.tensor([1, 1, 4]))] == [1, 1, 4]
    for bad in (0, [2, 0, 1], [2, 3], 2.5, [1.0, 2.0, 3.0]):
        with pytest.raises(ValueError, match="max_new_tokens must be a positive int"):
            m.greedy(src, mask, max_new_tokens=bad)


# ---------------------------------------------------------------------------------------------------------------
# pair tasks and translation
# ---------------------------------------------------------------------------------------------------------------
def _toy_corpus(test=None):
    pairs = [SentencePair(f"Ich sehe {n} Hunde.", f"I see {n} dogs.") for n in range(2, 40)]
    return Corpus("toy", tuple(pairs[:30]), tuple(pairs[30:34]), tuple(test or pairs[34:]), "test", "none"), pairs


def test_date_pairs_batches_and_config_for_task():
    task = date_pairs(200, 20, 30, batch_size=16)
    assert len(task.test_src) == 30 and all(t[-1] == task.tgt_vocab.eos_id for t in task.test_tgt)
    assert "".join(task.tgt_vocab.itos[i] for i in task.test_tgt[0][:-1]) == task.test_text[0][1]
    b = next(iter(task.train))
    assert b.x.shape[0] == 16 and b.mask is not None and b.y.shape[0] == 16
    c = Seq2SeqConfig.for_task(task, d_h=8)
    assert (c.src_vocab_size, c.tgt_vocab_size) == (len(task.src_vocab), len(task.tgt_vocab))
    assert (c.pad_id, c.bos_id, c.eos_id) == (task.src_vocab.pad_id, task.tgt_vocab.bos_id, task.tgt_vocab.eos_id)
    assert (c.d_h, c.d_emb, c.bidirectional) == (8, 32, True)  # the tiny preset, d_h overridden


def test_translation_pairs_translate_and_bleu():
    pytest.importorskip("sacrebleu")
    from seqviz.metrics import bleu
    corpus, pairs = _toy_corpus()
    task, bpe = translation_pairs(corpus, num_merges=30, batch_size=8)
    assert "".join(task.src_vocab.itos[i] for i in task.test_src[0]) == pairs[34].source
    assert bpe["tgt"].decode(bpe["tgt"].encode(pairs[0].target)) == pairs[0].target
    m = Seq2Seq(Seq2SeqConfig.for_task(task, d_h=8, d_emb=4))
    assert len(translate(m, task, 1, max_new_tokens=5)) == 4 and len(translate(m, task, 2, n=2, max_new_tokens=5)) == 2
    refs = [t for _, t in task.test_text]
    assert bleu(refs, refs) == pytest.approx(100.0)


def test_translation_pairs_max_words_filters_every_split():
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


def test_presets_for_a_task():
    task, _ = translation_pairs(_toy_corpus()[0], num_merges=30, batch_size=8)
    c = Seq2SeqConfig.for_task(task, "small")
    assert (c.d_h, c.d_emb, c.bidirectional, c.attention) == (256, 128, True, "general")
    with pytest.raises(ValueError, match="preset"):
        Seq2SeqConfig.for_task(task, "huge")


def _always_says(m, token_id):
    """Make the model emit ``token_id`` at every step, never </s>: only a length cap stops it."""
    with torch.no_grad():
        m.out.bias[token_id] = 1e4


def test_translate_caps_greedy_and_beam_by_each_sentences_own_length():
    """Bug 9: greedy's cap was the batch's padded width, beam's each sentence's own length."""
    test = [SentencePair("Ich sehe 7 Hunde.", "I see 7 dogs."),
            SentencePair("Ich sehe heute 12345 sehr große Hunde.", "Today I see 12345 very big dogs.")]
    task, _ = translation_pairs(_toy_corpus(test)[0], num_merges=30, batch_size=8)
    m = Seq2Seq(Seq2SeqConfig.for_task(task, d_h=8, d_emb=4))
    ch = next(p for p in task.tgt_vocab.itos if len(p) == 1 and p.isalpha())     # a one-letter piece
    _always_says(m, task.tgt_vocab.stoi[ch])
    lens = [len(s) for s in task.test_src]
    assert lens[0] < lens[1]
    want = [ch * (2 * n + 10) for n in lens]                                      # each source's own length
    assert translate(m, task, 1) == want                                          # greedy
    assert translate(m, task, 2) == want                                          # beam
    assert translate(m, task, 1, max_new_tokens=3) == translate(m, task, 2, max_new_tokens=3) == [ch * 3] * 2


def test_translate_restores_the_mode_and_ignores_dropout():
    """Bug 2: translate with a beam called model.eval() and never gave the caller's mode back."""
    corpus, _ = _toy_corpus()
    task, _ = translation_pairs(corpus, num_merges=30, batch_size=8)
    torch.manual_seed(0)
    m = Seq2Seq(Seq2SeqConfig.for_task(task, d_h=16, d_emb=8, dropout=0.5))
    m.eval()
    want = {k: translate(m, task, k, max_new_tokens=6) for k in (1, 3)}
    for mode in (True, False):
        m.train(mode)
        for k in (1, 3):
            assert translate(m, task, k, max_new_tokens=6) == want[k]
            assert m.training is mode


def test_translated_text_drops_specials_and_marks_unk():
    """Bug 9: <pad>, <s>, </s> and <unk> reached sacrebleu as literal text."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    from seqviz.data import Vocab
    v = Vocab.build([["I", " see", " d", "o", "g", "s", "."]])
    ids = lambda *pieces: [v.stoi[p] if p in v.stoi else p for p in pieces]          # noqa: E731
    assert ids_to_text(ids("<s>", "I", " see", "<pad>", ".", "</s>"), v) == "I see."
    # an unknown piece inside a word never makes the word match: "d" <unk> "ogs" is not "dogs"
    text = ids_to_text(ids("I", " see", " d", "<unk>", "o", "g", "s", "."), v)
    assert text == f"I see d{UNK_TEXT}ogs." and "<" not in text
    assert Tokenizer13a()(text).split() == ["I", "see", f"d{UNK_TEXT}ogs", "."]
    corpus, _ = _toy_corpus()
    task, _ = translation_pairs(corpus, num_merges=30, batch_size=8)
    v = task.tgt_vocab
    # through translate: a model that only says <pad> (or <unk>) translates to "" (or one "⁇" per piece)
    m = Seq2Seq(Seq2SeqConfig.for_task(task, d_h=8, d_emb=4))
    _always_says(m, v.pad_id)
    assert set(translate(m, task, 1, max_new_tokens=4)) == {""} == set(translate(m, task, 2, max_new_tokens=4))
    m = Seq2Seq(Seq2SeqConfig.for_task(task, d_h=8, d_emb=4))
    _always_says(m, v.unk_id)
    assert set(translate(m, task, 1, max_new_tokens=4)) == {UNK_TEXT * 4}
