"""seqviz.transformer.lm: the LM's invariants (causality, permutation equivariance without positions, the loss, the
scratch path equal to the fused one), decoding through the key/value cache = rescoring the whole context, decoding
and evaluation of a model left in train mode with dropout (eval mode inside, the caller's mode restored after), and
the window losses."""
import pytest
import torch

import seqviz.decode as decode
from seqviz._checks import IGNORE_INDEX
from seqviz.transformer import DecodeState, KVCache, TransformerConfig, TransformerLM, sliding_loss, window_loss

TOL = 1e-5


def _padding(lengths, T):
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]             # (B, T) True = real


def _lm(**kw):
    torch.manual_seed(0)
    return TransformerLM(TransformerConfig.tiny(23, **kw)).eval()


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_lm_is_causal(norm):
    m = _lm(norm=norm)
    x = torch.randint(23, (2, 12), generator=torch.Generator().manual_seed(1))
    x2 = x.clone()
    x2[:, 7:] = (x2[:, 7:] + 5) % 23                                              # change every token after t = 6
    a, b = m(x)[0], m(x2)[0]
    torch.testing.assert_close(a[:, :7], b[:, :7], atol=1e-6, rtol=0)
    assert (a[:, 7:] - b[:, 7:]).abs().max() > 1e-3


def test_bidirectional_model_sees_the_future():
    m = _lm(causal=False)
    x = torch.randint(23, (1, 10), generator=torch.Generator().manual_seed(1))
    x2 = x.clone()
    x2[0, 9] = (x2[0, 9] + 1) % 23
    assert (m(x)[0][0, 0] - m(x2)[0][0, 0]).abs().max() > 1e-4
    with pytest.raises(ValueError, match="cannot decode left to right"):
        m.step(x)


def test_without_positions_permutation_equivariant_with_them_not():
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(3))
    x = torch.randint(23, (2, 10), generator=torch.Generator().manual_seed(2))
    m = _lm(positions="none", causal=False)
    torch.testing.assert_close(m(x[:, perm])[0], m(x)[0][:, perm], atol=1e-5, rtol=0)
    for pos in ("learned", "sinusoidal"):
        m = _lm(positions=pos, causal=False)
        with torch.no_grad():                                                     # learned rows start near 0
            if pos == "learned":
                m.pos.P.weight.normal_()
        assert (m(x[:, perm])[0] - m(x)[0][:, perm]).abs().max() > 1e-3


def test_lm_loss_matches_cross_entropy_and_weights_tied():
    m = _lm()
    assert m.V.weight is m.E.weight
    x = torch.randint(23, (2, 9), generator=torch.Generator().manual_seed(4))
    y = x.roll(-1, 1)
    y[1, 5:] = IGNORE_INDEX
    logits, loss = m(x, y)
    keep = y != IGNORE_INDEX
    want = torch.nn.functional.cross_entropy(logits[keep], y[keep])
    torch.testing.assert_close(loss, want)


def test_lm_scratch_equals_fused_and_attention_shape():
    m = _lm(norm="pre")
    x = torch.randint(23, (3, 11), generator=torch.Generator().manual_seed(5))
    fused = m(x)[0]
    m.impl = "scratch"
    logits, _, attn = m(x, return_attention=True)
    torch.testing.assert_close(logits, fused, atol=TOL, rtol=0)
    assert attn.shape == (3, 2, 2, 11, 11)                                        # (B, L, H, T, T)
    attn = attn.detach()
    torch.testing.assert_close(attn.sum(-1), torch.ones(3, 2, 2, 11))
    assert float(attn.triu(1).abs().max()) == 0.0                                 # causal: nothing above the diagonal
    assert m.attention_weights(x[0]).shape == (2, 2, 11, 11)


def test_lm_padding_mask_leaves_real_positions_unchanged():
    m = _lm(causal=False)
    x = torch.randint(23, (1, 6), generator=torch.Generator().manual_seed(6))
    padded = torch.cat([x, torch.zeros(1, 3, dtype=torch.long)], 1)              # (1, 9)
    a = m(x)[0]
    b = m(padded, mask=_padding([6], 9))[0][:, :6]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match=r"mask must have shape \(B, T\) = \(1, 9\)"):
        m(padded, mask=_padding([6], 8))


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_kv_cache_decoding_equals_full_prefix(positions):
    m = _lm(positions=positions, max_len=16)
    x = torch.randint(23, (2, 22), generator=torch.Generator().manual_seed(7))
    logits, state = m.step(x[:, :3])
    for t in range(3, 22):
        full = m(x[:, max(0, t - 16):t])[0][:, -1]                                # the last max_len tokens
        torch.testing.assert_close(logits, full, atol=1e-5, rtol=0)
        assert state.ids.shape[1] == min(t, 16)
        logits, state = m.step(x[:, t:t + 1], state)
    assert isinstance(state, DecodeState) and len(state.caches) == 2
    assert isinstance(state.caches[0], KVCache) and state.caches[0].K.shape == (2, 2, 16, 16)   # (B, H, T, d_k)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_several_new_tokens_on_top_of_a_cache_equal_the_full_prefix(positions):
    # a chunk of T_q > 1 new tokens after T_past cached ones: query i sees the cached keys and the chunk's up to
    # itself (the causal mask shifted by T_past), at every position of the chunk, not only the last
    m = _lm(positions=positions, max_len=16)
    x = torch.randint(23, (2, 16), generator=torch.Generator().manual_seed(9))
    state, t = None, 0
    for n in (3, 4, 1, 5, 2):
        chunk, t = x[:, t:t + n], t + n
        full, _, _ = m._run(x[:, :t], None, False, None, 0, False)                # (B, t, d) the whole prefix
        if state is not None:
            h, _, _ = m._run(chunk, None, False, state.caches, t - n, False)      # (B, n, d) on top of the cache
            torch.testing.assert_close(h, full[:, t - n:], atol=TOL, rtol=0)
        logits, state = m.step(chunk, state)
        torch.testing.assert_close(logits, m(x[:, :t])[0][:, -1], atol=TOL, rtol=0)
    assert state.ids.shape[1] == t == 15


def test_reorder_state_selects_rows():
    m = _lm()
    x = torch.randint(23, (3, 5), generator=torch.Generator().manual_seed(8))
    _, state = m.step(x)
    idx = torch.tensor([2, 2, 0])
    logits, _ = m.step(torch.tensor([[1], [4], [5]]), m.reorder_state(state, idx))
    want, _ = m.step(torch.cat([x[idx], torch.tensor([[1], [4], [5]])], 1))
    torch.testing.assert_close(logits, want, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="the state holds 3 sequences but ids has 2"):
        m.step(torch.tensor([[1], [2]]), state)


def test_next_token_logits_and_generate():
    m = _lm()
    ctx = [1, 2, 3, 4]
    torch.testing.assert_close(m.next_token_logits(ctx), m(torch.tensor([ctx]))[0][0, -1])
    a = m.generate(ctx, 5, temperature=0.8, top_k=5, seed=0)
    assert a == m.generate(ctx, 5, temperature=0.8, top_k=5, seed=0) and len(a) == 5
    assert m.generate(ctx, 3, greedy=True)[0] == int(m.next_token_logits(ctx).argmax())


def test_decode_through_the_cache_equals_rescoring_the_context():
    m = _lm(max_len=8)                                                            # beams run past the window
    cached = decode.beam_search(m, [1, 2, 3], 3, 10)
    rescored = decode.beam_search(m.next_token_logits, [1, 2, 3], 3, 10)
    assert isinstance(decode.as_stepper(m), TransformerLM)                        # the first one used the cache
    assert [ids for ids, _ in cached] == [ids for ids, _ in rescored]
    assert [lp for _, lp in cached] == pytest.approx([lp for _, lp in rescored], abs=1e-4)
    assert decode.generate(m, [4], 12, greedy=True) == decode.generate(m.next_token_logits, [4], 12, greedy=True)


def test_decoding_a_model_left_in_train_mode_with_dropout_is_deterministic():
    """After Trainer.fit the model is in train mode: decoding (and every look at the model) must run with dropout
    off, give what eval mode gives, and hand the model back in train mode."""
    torch.manual_seed(0)
    m = TransformerLM(TransformerConfig.tiny(23, dropout=0.5, init_std=0.3))
    m.train()
    prompt = [1, 2, 3]
    runs = [(decode.beam_search(m, prompt, 3, 8), decode.generate(m, prompt, 8, greedy=True),
             decode.generate(m, prompt, 8, temperature=1.0, seed=4), m.next_token_logits(prompt),
             m.attention_weights(torch.tensor(prompt))) for _ in range(5)]
    assert m.training and all(mod.training for mod in m.modules())
    m.eval()
    want = (decode.beam_search(m, prompt, 3, 8), decode.generate(m, prompt, 8, greedy=True),
            decode.generate(m, prompt, 8, temperature=1.0, seed=4), m.next_token_logits(prompt),
            m.attention_weights(torch.tensor(prompt)))
    for beams, greedy, sampled, logits, weights in runs:
        assert [ids for ids, _ in beams] == [ids for ids, _ in want[0]]
        assert [lp for _, lp in beams] == pytest.approx([lp for _, lp in want[0]], abs=1e-5)
        assert greedy == want[1] and sampled == want[2]
        torch.testing.assert_close(logits, want[3], atol=1e-6, rtol=0)
        torch.testing.assert_close(weights, want[4], atol=1e-6, rtol=0)
    # with dropout on, the same forward pass twice differs: the checks above could fail
    m.train()
    x = torch.tensor([prompt])
    assert not torch.equal(m(x)[0], m(x)[0])


def test_lm_bad_input():
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        TransformerConfig(10, d_model=30, num_heads=4)
    m = _lm()
    with pytest.raises(ValueError, match=r"token id 23 .* \[0, 23\)"):
        m(torch.tensor([[1, 23]]))
    with pytest.raises(ValueError, match="targets must have shape"):
        m(torch.tensor([[1, 2]]), torch.tensor([[1, 2, 3]]))
    with pytest.raises(ValueError, match="norm must be one of"):
        TransformerConfig(10, norm="middle")
    with pytest.raises(ValueError, match="positions must be one of"):
        TransformerConfig(10, positions="rotary")


def test_lm_training_is_seeded_and_learns():
    def run():
        torch.manual_seed(0)
        m = TransformerLM(TransformerConfig.tiny(5))
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        x = torch.tensor([[0, 1, 2, 3, 4] * 4])                                  # a cycle: fully predictable
        for _ in range(60):
            _, loss = m(x[:, :-1], x[:, 1:])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return float(loss.detach())
    a = run()
    assert a == run() and a < 0.1


def test_init_std_sets_the_initial_weights_and_rejects_bad_values():
    torch.manual_seed(0)
    lm = TransformerLM(TransformerConfig(200, max_len=16, d_model=64, num_layers=2, init_std=0.1))
    assert float(lm.E.weight.detach().std()) == pytest.approx(0.1, rel=0.05)
    assert float(lm.blocks[0].attn.W_O.weight.detach().std()) == pytest.approx(0.1 / 2, rel=0.1)   # / sqrt(2 L), L = 2
    for bad in (0, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match="init_std must be a number > 0"):
            TransformerConfig(10, init_std=bad)


# -- the window losses --------------------------------------------------------------------------------------------
def test_window_loss_counts_every_position_once():
    m = _lm(max_len=8).requires_grad_(False)
    ids = torch.randint(23, (50,), generator=torch.Generator().manual_seed(9))
    total = 0.0
    for k in range(0, 49, 8):                                                     # windows 0-7, 8-15, ..., 48
        x, y = ids[k:min(k + 8, 49)], ids[k + 1:min(k + 9, 50)]
        total += float(torch.nn.functional.cross_entropy(m(x[None])[0][0], y, reduction="sum"))
    assert window_loss(m, ids, 8, batch_size=2) == pytest.approx(total / 49, rel=1e-6)


def test_sliding_loss_scores_every_target_once():
    m = _lm(max_len=8).requires_grad_(False)
    ids = torch.randint(0, 16, (33,), generator=torch.Generator().manual_seed(3))    # 32 targets = 4 windows of 8
    loss, n = sliding_loss(m, ids, 8, stride=8, batch_size=3)
    assert n == 32 and loss == pytest.approx(window_loss(m, ids, 8), rel=1e-6)   # stride T: the same windows
    # stride 2: every target after the first window is scored by the window whose last 2 positions hold it
    loss2, n2 = sliding_loss(m, ids, 8, stride=2, batch_size=5)
    total = float(torch.nn.functional.cross_entropy(m(ids[None, :8])[0][0], ids[1:9], reduction="sum"))
    for s in range(2, 26, 2):
        logits = m(ids[None, s:s + 8])[0][0]                                      # (8, V)
        total += float(torch.nn.functional.cross_entropy(logits[-2:], ids[s + 7:s + 9], reduction="sum"))
    assert n2 == 32 and loss2 == pytest.approx(total / 32, rel=1e-6)
    skipped, n3 = sliding_loss(m, ids, 8, skip_target=int(ids[5]))
    assert n3 == 32 - int((ids[1:] == ids[5]).sum())
    with pytest.raises(ValueError, match="stride must be an int in"):
        sliding_loss(m, ids, 8, stride=9)
    with pytest.raises(ValueError, match="no target left"):
        sliding_loss(m, torch.tensor([1, 2]), 8, skip_target=2)


def test_window_losses_run_in_eval_mode_and_restore_the_mode():
    torch.manual_seed(0)
    m = TransformerLM(TransformerConfig.tiny(23, max_len=8, dropout=0.5, init_std=0.3))
    ids = torch.randint(23, (40,), generator=torch.Generator().manual_seed(2))
    m.train()
    a, b = window_loss(m, ids, 8), sliding_loss(m, ids, 8)
    assert m.training and window_loss(m, ids, 8) == a and sliding_loss(m, ids, 8) == b
    with pytest.raises(ValueError, match="no target left"):                       # raised inside eval mode
        sliding_loss(m, torch.tensor([1, 2]), 8, skip_target=2)
    assert m.training
    m.eval()
    assert window_loss(m, ids, 8) == a and sliding_loss(m, ids, 8) == b and not m.training
