"""seqviz.transformer.encdec: padding and causality, cached decoding = a full pass, the decoder binding (its module,
lazy encoding, one source for a beam), decoding a model left in train mode with dropout (eval mode inside, the mode
restored after, also on error), ``greedy``'s defaults within the position table, and exact match against targets
known independently of the model."""
import pytest
import torch

from seqviz.data import pad_batch
from seqviz.decode import _model_device, beam_search, generate
from seqviz.metrics import exact_match
from seqviz.transformer import EncDecState, EncoderDecoderBinding, EncoderDecoderConfig, EncoderDecoderTransformer


def _padding(lengths, T):
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]             # (B, T) True = real


def _encdec(**kw):
    torch.manual_seed(0)
    return EncoderDecoderTransformer(EncoderDecoderConfig.tiny(15, 12, bos_id=1, pad_id=0, **kw)).eval()


def _rescored_greedy(m, src_row, n, eos=None):
    """Greedy decoding by re-running the whole model on the prefix at every step (no cache, no binding)."""
    ids = [m.config.bos_id]
    for _ in range(n):
        ids.append(int(m(src_row[None], tgt_in=torch.tensor([ids]))[0][0, -1].argmax()))
        if ids[-1] == eos:
            break
    return ids[1:]


def test_encdec_padding_and_causality():
    m = _encdec(num_layers=2)
    src = torch.randint(2, 15, (1, 6), generator=torch.Generator().manual_seed(0))
    tgt = torch.randint(2, 12, (1, 5), generator=torch.Generator().manual_seed(1))
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], 1)
    a = m(src, tgt)[0]
    b = m(padded, tgt, mask=_padding([6], 9))[0]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)                          # padding changes nothing
    tgt2 = tgt.clone()
    tgt2[0, 3] = (tgt2[0, 3] + 1) % 12
    c = m(src, tgt2)[0]                                                           # decoder input is shift_right(y)
    torch.testing.assert_close(a[:, :4], c[:, :4], atol=1e-6, rtol=0)
    assert (a[:, 4] - c[:, 4]).abs().max() > 1e-4
    _, _, attn = m(padded, tgt, mask=_padding([6], 9), return_attention=True)
    assert attn["cross"].shape == (1, 2, 2, 5, 9) and float(attn["cross"][..., 6:].detach().abs().max()) == 0.0
    with pytest.raises(ValueError, match=r"mask \(the source padding mask\) must have shape"):
        m(padded, tgt, mask=_padding([6], 8))


def test_binding_steps_through_the_caches_like_a_full_pass():
    m = _encdec(num_layers=2)
    src = torch.tensor([[3, 4, 5, 6, 7]])
    bound = m.bind(src)
    assert isinstance(bound, EncoderDecoderBinding) and bound.module is m
    ids = torch.tensor([[1, 3, 4, 5]])
    logits, state = bound.step(ids[:, :2])
    assert isinstance(state, EncDecState) and state.T_past == 2 and state.caches[1].cross_attn.length == 5
    logits, state = bound.step(ids[:, 2:3], bound.reorder_state(state, torch.tensor([0])))
    full = m(src, tgt_in=ids[:, :3])[0][:, -1]
    torch.testing.assert_close(logits, full, atol=1e-5, rtol=0)
    # one source serves a beam of 3 rows; reorder_state duplicates and drops rows
    logits3, state3 = bound.step(torch.tensor([[1], [1], [1]]))
    torch.testing.assert_close(logits3, m(src, tgt_in=torch.tensor([[1]]))[0][:, -1].expand(3, -1), atol=1e-5,
                               rtol=0)
    logits3, _ = bound.step(torch.tensor([[3], [4]]), bound.reorder_state(state3, torch.tensor([2, 0])))
    torch.testing.assert_close(logits3, m(src.expand(2, -1), tgt_in=torch.tensor([[1, 3], [1, 4]]))[0][:, -1],
                               atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="holds 2 sources but step got 3 rows"):
        m.bind(torch.tensor([[3, 4], [5, 6]])).step(torch.tensor([[1], [1], [1]]))
    with pytest.raises(ValueError, match="token id 15 in src"):
        m.bind(torch.tensor([3, 15]))


def test_binding_reads_several_new_tokens_on_top_of_its_cache():
    # a chunk of T_q > 1 target tokens after T_past cached ones equals the full pass at every position of the chunk
    m = _encdec(num_layers=2)
    src = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 3, 0, 0]])
    mask = src != 0
    tgt = torch.tensor([[1, 3, 4, 5, 6, 7, 8, 9, 10], [1, 9, 8, 7, 6, 5, 4, 3, 2]])
    bound = m.bind(src, mask)
    memory, _ = m.encode(src, mask)
    state, t = None, 0
    for n in (2, 3, 1, 3):
        chunk, t = tgt[:, t:t + n], t + n
        full, _, _, _ = m._decode(tgt[:, :t], memory, mask, False, None, 0, False)   # (B, t, d) the whole prefix
        if state is not None:
            h, _, _, _ = m._decode(chunk, state.memory, state.memory_mask, False, state.caches, t - n, False)
            torch.testing.assert_close(h, full[:, t - n:], atol=1e-5, rtol=0)
        logits, state = bound.step(chunk, state)
        torch.testing.assert_close(logits, m(src, tgt_in=tgt[:, :t], mask=mask)[0][:, -1], atol=1e-5, rtol=0)
    assert state.T_past == t == 9


def test_binding_encodes_lazily_on_the_models_device():
    m = _encdec()
    calls = []
    encode = m.encode
    m.encode = lambda *a, **k: calls.append(m.training) or encode(*a, **k)     # noqa: E731
    m.train()
    b = m.bind(torch.tensor([3, 4, 5]))
    assert calls == []                                                            # nothing encoded yet
    generate(b, [1], 3, greedy=True)
    assert calls == [False] and m.training                                       # encoded inside decode's eval mode
    m.to("meta")                                                                  # the decoder builds ids on the
    assert _model_device(m.bind(torch.tensor([3, 4]))).type == "meta"            # module's device, not the CPU


def _dropout_model():
    torch.manual_seed(0)
    m = EncoderDecoderTransformer(EncoderDecoderConfig.tiny(15, 12, bos_id=1, pad_id=0, eos_id=2, dropout=0.5,
                                                            init_std=0.3))
    return m.train()                                                              # as Trainer.fit leaves it


def test_beam_search_on_a_model_left_in_train_mode_is_deterministic_and_keeps_the_mode():
    m = _dropout_model()
    src = torch.tensor([3, 9, 4, 7, 5, 11])
    runs = [(beam_search(m.bind(src), [1], 3, 10, stop_id=2), generate(m.bind(src), [1], 10, greedy=True))
            for _ in range(5)]
    assert m.training and all(mod.training for mod in m.modules())
    with torch.no_grad():                                                         # dropout on: could differ
        x, y = src[None], torch.tensor([[3, 4, 5]])
        assert not torch.equal(m(x, y)[0], m(x, y)[0])
    m.eval()
    want = (beam_search(m.bind(src), [1], 3, 10, stop_id=2), generate(m.bind(src), [1], 10, greedy=True))
    for beams, greedy in runs:
        assert [ids for ids, _ in beams] == [ids for ids, _ in want[0]]
        assert [lp for _, lp in beams] == pytest.approx([lp for _, lp in want[0]], abs=1e-5)
        assert greedy == want[1]


def test_greedy_on_a_model_left_in_train_mode_is_deterministic_and_keeps_the_mode():
    m = _dropout_model()
    src = torch.randint(3, 15, (4, 6), generator=torch.Generator().manual_seed(1))
    runs = [m.greedy(src, max_new_tokens=8, return_attention=True) for _ in range(5)]
    assert m.training
    m.eval()
    want, want_w = m.greedy(src, max_new_tokens=8, return_attention=True)
    assert not m.training
    for out, w in runs:
        assert out == want
        torch.testing.assert_close(w, want_w, atol=1e-6, rtol=0)
    assert want == [_rescored_greedy(m, row, 8, eos=2) for row in src]


def test_greedy_restores_the_mode_when_it_raises():
    m = _dropout_model()
    seen = []

    def broken_encode(*args, **kw):
        seen.append(m.training)
        raise RuntimeError("encoder failed")

    m.encode = broken_encode
    with pytest.raises(RuntimeError, match="encoder failed"):
        m.greedy(torch.tensor([[3, 4, 5]]))
    assert seen == [False] and m.training                                        # eval inside, train again after
    m.eval()
    with pytest.raises(RuntimeError, match="encoder failed"):
        m.greedy(torch.tensor([[3, 4, 5]]))
    assert not m.training


def test_greedy_defaults_fit_the_tiny_preset_and_longer_requests_are_clear_errors():
    m = _encdec()                                                                 # tiny: max_len = 32, no eos_id
    src = torch.randint(2, 15, (2, 5), generator=torch.Generator().manual_seed(3))
    out = m.greedy(src)                                                           # the defaults
    assert [len(o) for o in out] == [32, 32]                                      # all the position table allows
    assert out == [_rescored_greedy(m, row, 32) for row in src]
    assert m.greedy(src[0], max_new_tokens=4) == [out[0][:4]]                     # (S,) is one source
    with pytest.raises(ValueError, match=r"max_new_tokens=33 asks for more output tokens .*config.max_len=32"):
        m.greedy(src, max_new_tokens=33)
    with pytest.raises(ValueError, match="max_new_tokens must be a positive int"):
        m.greedy(src, max_new_tokens=0)
    with pytest.raises(ValueError, match=r"would read 33 target tokens .*config.max_len=32"):
        beam_search(m.bind(src[0]), [1], 2, 40)                                   # the binding says it too
    assert len(beam_search(m.bind(src[0]), [1], 2, 32)[0][0]) == 32


def test_greedy_of_a_padded_batch_equals_each_source_alone():
    m = _encdec(eos_id=2, num_layers=2)
    rows = [[3, 4, 5, 6, 7, 8], [9, 10], [11, 3, 12]]
    x, mask = pad_batch(rows, 0)                                                  # (3, 6) x2
    assert m.greedy(x, mask, max_new_tokens=7) == [m.greedy(torch.tensor(r), max_new_tokens=7)[0] for r in rows]


def test_exact_match_against_independent_targets():
    """exact_match greedy-decodes through ``greedy(x, mask, max_new_tokens=...)``: compared with outputs computed
    without the cache (re-running the model on each prefix) it is right where they agree and wrong where the target
    differs by one token or one missing </s>."""
    m = _encdec(eos_id=2)
    src = torch.randint(3, 15, (3, 5), generator=torch.Generator().manual_seed(4))
    refs = [_rescored_greedy(m, row, 6, eos=2) for row in src]
    wrong = [t + 1 if t + 1 < 12 else 3 for t in refs[1]]                        # every token off by one
    ok = exact_match(m, src.tolist(), [refs[0], wrong, refs[2][:-1]], pad_id=0, max_new_tokens=6)
    assert ok.tolist() == [True, False, False]
    assert exact_match(m, src.tolist(), refs, pad_id=0, max_new_tokens=6).tolist() == [True, True, True]


def test_learns_to_copy_and_greedy_with_its_defaults_gets_the_copies():
    """A copy task: the decoder must read the source through cross-attention; the targets are known without the
    model (the source itself, then </s>), and exact match is scored against them."""
    m = _encdec(eos_id=2)
    torch.manual_seed(0)
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    eos = torch.full((32, 1), 2)
    for _ in range(150):
        src = torch.randint(3, 12, (32, 6), generator=g)
        _, loss = m(src, torch.cat([src, eos], 1))                                # target = source + </s>
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 0.1
    held = torch.randint(3, 12, (20, 6), generator=torch.Generator().manual_seed(99)).tolist()
    copies = [s + [2] for s in held]
    assert m.greedy(torch.tensor(held[:3])) == copies[:3]                         # the defaults (stops at </s>)
    ok = exact_match(m, held, copies, pad_id=0)
    assert float(ok.float().mean()) >= 0.9
    reversed_ = [s[::-1] + [2] for s in held]                                     # known wrong
    assert not bool((exact_match(m, held, reversed_, pad_id=0) & ok).any())
    assert m.training                                                             # greedy gave the mode back


def test_config_errors():
    with pytest.raises(ValueError, match="eos_id must be a target-vocabulary id"):
        EncoderDecoderConfig.tiny(15, 12, bos_id=1, pad_id=0, eos_id=12)
    for bad in (0, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match="init_std must be a number > 0"):
            EncoderDecoderConfig(10, 10, bos_id=1, pad_id=0, init_std=bad)
    torch.manual_seed(0)
    ed = EncoderDecoderTransformer(EncoderDecoderConfig(30, 40, bos_id=1, pad_id=0, d_model=64, init_std=0.1))
    assert float(ed.E_tgt.weight.detach().std()) == pytest.approx(0.1, rel=0.1)
