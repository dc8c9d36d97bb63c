"""Batching: ids -> batches of tensors, batch first (B batch, T time)."""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import torch


# ----------------------------------------------------------------------------------------------------------------
# Batching
# ----------------------------------------------------------------------------------------------------------------
def _as_ids(ids) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(ids) if not isinstance(ids, torch.Tensor) else ids)
    if t.dim() != 1:
        raise ValueError(f"expected a 1-D sequence of token ids, got shape {tuple(t.shape)}")
    if t.numel() and (t.dtype.is_floating_point or t.dtype == torch.bool):
        raise TypeError(f"token ids must be integers, got dtype {t.dtype}")
    return t.long()


def fixed_windows(ids, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All (context of ``n`` ids -> next id) pairs of a stream: X (N, n), Y (N,) with N = len(ids) - n."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"window size n must be a positive int, got {n!r}")
    t = _as_ids(ids)
    if t.numel() <= n:
        raise ValueError(f"a stream of {t.numel()} ids has no window of {n} followed by a target; "
                         f"give at least {n + 1} ids")
    X = t.unfold(0, n, 1)[:-1]  # (N, n): row i is ids[i:i+n]
    Y = t[n:]                   # (N,)
    return X.contiguous(), Y.contiguous()


class StreamBatcher:
    """Contiguous (x, y) batches of shape (B, T) from one long stream, for truncated BPTT.

    The stream is cut into B equal rows; batch k holds columns ``k*T .. k*T+T-1`` of every row, so row b of batch
    k+1 continues row b of batch k and a stateful RNN can carry its hidden state across batches. y is x shifted by
    one. The last batch may be shorter than T unless ``drop_last``.
    """

    def __init__(self, ids, batch_size: int, bptt: int, drop_last: bool = False):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(bptt, int) or bptt < 1:
            raise ValueError(f"bptt (sequence length T) must be a positive int, got {bptt!r}")
        t = _as_ids(ids)
        per_row = (t.numel() - 1) // batch_size
        if per_row < 1:
            raise ValueError(f"{t.numel()} ids are too few for {batch_size} rows: need at least "
                             f"{batch_size + 1}; lower batch_size or give more text")
        self.x = t[: batch_size * per_row].view(batch_size, per_row)          # (B, L)
        self.y = t[1: batch_size * per_row + 1].view(batch_size, per_row)     # (B, L)
        self.batch_size, self.bptt, self.drop_last = batch_size, bptt, drop_last

    def __len__(self) -> int:
        L = self.x.shape[1]
        return L // self.bptt if self.drop_last else -(-L // self.bptt)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for k in range(len(self)):
            s = slice(k * self.bptt, (k + 1) * self.bptt)
            yield self.x[:, s], self.y[:, s]  # (B, T), (B, T)

    @property
    def n_tokens(self) -> int:
        """Targets per pass; with drop_last, only those in full batches."""
        return self.batch_size * (len(self) * self.bptt if self.drop_last else self.x.shape[1])


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int, max_len: int | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id sequences into ids (B, T) and mask (B, T), True where a real token stands.

    ``max_len`` truncates longer sequences (and fixes T); without it T is the longest length.
    """
    if isinstance(seqs, torch.Tensor):
        seqs = seqs.tolist()
    seqs = [list(map(int, s.tolist() if isinstance(s, torch.Tensor) else s)) for s in seqs]
    if not seqs:
        raise ValueError("pad_batch got an empty batch: give at least one sequence")
    if max_len is not None and max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    T = max_len if max_len is not None else max(len(s) for s in seqs)
    if T == 0:
        raise ValueError("every sequence in the batch is empty")
    ids = torch.full((len(seqs), T), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.bool)
    for b, s in enumerate(seqs):
        s = s[:T]
        ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[b, : len(s)] = True
    return ids, mask
