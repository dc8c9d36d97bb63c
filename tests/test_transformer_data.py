"""seqviz.data.lm, the transformer chapter's data: random LM windows, BERT's corruption (the random token is a real
token, never [MASK] nor a special id), masked windows; and the names chapters 6 and 7 import from seqviz.transformer."""
import pytest
import torch

from seqviz._checks import IGNORE_INDEX
from seqviz.data import mask_tokens, masked_windows, random_windows


def test_mask_tokens_80_10_10():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 50, (64, 256), generator=g)
    x, y = mask_tokens(ids, mask_id=0, vocab_size=50, generator=g, special_ids=(7,))
    chosen = y != IGNORE_INDEX
    assert 0.13 < chosen.float().mean() < 0.17
    assert not bool(chosen[ids == 7].any())
    assert torch.equal(y[chosen], ids[chosen])
    assert torch.equal(x[~chosen], ids[~chosen])
    masked = (x[chosen] == 0).float().mean()
    same = (x[chosen] == ids[chosen]).float().mean()
    assert 0.77 < masked < 0.83 and 0.08 < same < 0.13
    with pytest.raises(ValueError, match="mask_id 60"):
        mask_tokens(ids, 60, 50)
    with pytest.raises(ValueError, match=r"special_ids \[50\] are not in the vocabulary"):
        mask_tokens(ids, 0, 50, special_ids=(50,))
    with pytest.raises(ValueError, match="no real token left to draw"):
        mask_tokens(torch.tensor([[0, 1]]), 0, 2, special_ids=(1,))


def test_the_random_token_is_a_real_token():
    """BERT replaces 10 % of the chosen tokens by a random *word*: never [MASK] (that would make the 80 % larger) and
    never a special id such as padding; every real token can be drawn, about equally often."""
    PAD, MASK, V = 0, 1, 6                                                        # real tokens: 2, 3, 4, 5
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(2, V, (256, 256), generator=g)
    ids[:, -16:] = PAD                                                            # some padding, never chosen
    x, y = mask_tokens(ids, MASK, V, p=0.5, generator=g, special_ids=(PAD,))
    chosen = y != IGNORE_INDEX
    assert not bool(chosen[ids == PAD].any())
    assert not bool((x[chosen] == PAD).any())                                     # no chosen token became padding
    assert (x[chosen] == MASK).float().mean() == pytest.approx(0.8, abs=0.01)    # exactly the 80 %, no more
    replaced = x[chosen & (x != MASK) & (x != ids)]                               # the random draws that differ
    counts = torch.bincount(replaced, minlength=V)                                # (V,)
    assert counts[PAD] == 0 and counts[MASK] == 0
    assert counts[2:].min() > 0.8 * counts[2:].float().mean()                    # each real token about equally
    # the 10 % random: a uniform draw over the 4 real tokens keeps the original a quarter of the time
    assert (x[chosen] != ids[chosen]).float().mean() == pytest.approx(0.8 + 0.1 * 3 / 4, abs=0.01)


def test_random_windows_are_seeded_shifted_windows():
    ids = torch.arange(100) % 37
    a, b = random_windows(ids, 3, 4, 10, seed=5), random_windows(ids, 3, 4, 10, seed=5)
    assert all(torch.equal(p.x, q.x) for p, q in zip(a, b)) and a[0].x.shape == (4, 10)
    assert torch.equal(a[1].x[:, 1:], a[1].y[:, :-1])
    assert torch.equal(a[2].y, ids[(a[2].x[:, :1] + torch.arange(1, 11))])
    with pytest.raises(ValueError, match="more than T=10"):
        random_windows(torch.arange(5), 1, 1, 10)


def test_masked_windows_are_mask_tokens_of_random_windows():
    ids = torch.randint(0, 20, (500,), generator=torch.Generator().manual_seed(0))
    batches = masked_windows(ids, 3, 16, 8, mask_id=20, vocab_size=21, seed=7)
    plain = random_windows(ids, 3, 16, 8, seed=7)
    for b, p in zip(batches, plain):
        chosen = b.y != IGNORE_INDEX
        assert torch.equal(b.y[chosen], p.x[chosen])                              # targets: the original ids
        assert torch.equal(b.x[~chosen], p.x[~chosen])                            # the rest untouched
        assert bool((b.x[chosen] == 20).any())
    again = masked_windows(ids, 3, 16, 8, mask_id=20, vocab_size=21, seed=7)
    assert all(torch.equal(a.x, b.x) and torch.equal(a.y, b.y) for a, b in zip(again, batches))
    no_zero = masked_windows(ids, 3, 16, 8, mask_id=20, vocab_size=21, seed=7, special_ids=(0,))
    assert not any(bool((b.y == 0).any()) for b in no_zero)                       # a special id is never a target


def test_seqviz_transformer_still_exports_every_name_it_exported():
    """Chapters 6 and 7 and the benchmarks import these from seqviz.transformer (the data pieces are seqviz.data's)."""
    import seqviz.data
    import seqviz.transformer as T
    old = ["sinusoidal_encoding", "LayerNorm", "MultiHeadAttention", "AttnOut", "FeedForward", "TransformerBlock",
           "BlockOut", "LearnedPositions", "SinusoidalPositions", "TransformerConfig", "TransformerLM",
           "DecodeState", "mask_tokens", "masked_windows", "random_windows", "window_loss", "sliding_loss",
           "EncoderDecoderConfig", "EncoderDecoderTransformer", "EncDecState"]
    assert set(old) <= set(T.__all__) and all(getattr(T, name) is not None for name in T.__all__)
    for name in ("mask_tokens", "masked_windows", "random_windows"):
        assert getattr(T, name) is getattr(seqviz.data, name)
