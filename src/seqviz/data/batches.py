"""Batching: ids -> batches of tensors, batch first (B batch, T time, S source time).

One family, one batch type. Every batcher yields a :class:`Batch` ``(x, y, mask)`` that every consumer reads by name:
``x`` the model's input ids, ``y`` its targets (``IGNORE_INDEX`` where nothing is scored), ``mask`` the input's
padding mask (True = real token) or None. Batchers are re-iterable (one pass per epoch) and shuffle the same way:
the order is a function of ``(seed, epoch)`` only, never of the global random state or of how often the object was
read. ``set_epoch(e)`` (the trainer calls it at the start of every epoch, as torch's ``DistributedSampler`` expects)
chooses the epoch (a loop of your own calls it too; without it every pass is epoch 0's); reading the object again in
the same epoch gives the same batches, so two models trained one after the other on one batcher see the same data in
the same order.

- fixed windows (ch. 2): :func:`fixed_windows`, :class:`WindowBatches`, :func:`window_data`
- LM streams (ch. 3-4, stateful truncated BPTT): :func:`sentence_stream`, :class:`StreamBatcher`, :func:`lm_batches`
- padded sequences with masks (tagging, classification): :func:`pad_batch`, :class:`PaddedBatches`
- padded source/target pairs (encoder-decoders, ch. 5, 7 and 8): :class:`PairBatches`, :func:`shift_right`
"""
from __future__ import annotations

from typing import Iterator, NamedTuple, Sequence

import numpy as np
import torch

from seqviz._checks import IGNORE_INDEX, _check_positive

__all__ = ["Batch", "fixed_windows", "WindowBatches", "window_data", "sentence_stream", "StreamBatcher",
           "lm_batches", "pad_batch", "PaddedBatches", "PairBatches", "shift_right"]


class Batch(NamedTuple):
    """A batch, read by name: x input ids (B, T) or (B, n); y targets ((B, T) or (B,), IGNORE_INDEX = not scored);
    mask (B, T) bool, True where x holds a real token (None when every position is real)."""

    x: torch.Tensor
    y: torch.Tensor | None = None
    mask: torch.Tensor | None = None

    @property
    def n_targets(self) -> int:
        """Targets that count in the loss: entries of y that are not IGNORE_INDEX."""
        if self.y is None:
            return 0
        return int((self.y != IGNORE_INDEX).sum())

    def to(self, device) -> "Batch":
        """The batch with every tensor on ``device`` (those already there are kept as they are)."""
        device = torch.device(device)
        return Batch(*(t.to(device) if torch.is_tensor(t) and t.device != device else t for t in self))


class _Shuffled:
    """Seeded order of n items: epoch e draws it from its own generator, seeded with seed + e, so epochs differ, a
    batcher read twice in one epoch repeats itself, and two batchers built with the same seed agree."""

    def __init__(self, shuffle: bool, seed: int):
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.shuffle, self.seed, self.epoch = bool(shuffle), seed, 0

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose order the next passes use (the trainer calls this at the start of every epoch)."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be a non-negative int (counted from 0), got {epoch!r}")
        self.epoch = epoch

    def _generator(self) -> torch.Generator | None:
        """This epoch's generator (None when not shuffling), seeded with ``seed + epoch`` as torch's
        DistributedSampler does (so seed s + 1 replays seed s's orders one epoch later)."""
        if not self.shuffle:
            return None
        return torch.Generator().manual_seed(self.seed + self.epoch)


def _order(n: int, gen: torch.Generator | None) -> torch.Tensor:
    """0..n-1 in the generator's random order, or in order without one."""
    return torch.arange(n) if gen is None else torch.randperm(n, generator=gen)


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


class WindowBatches(_Shuffled):
    """Re-iterable ``Batch(x=context (B, n), y=next word (B,))`` of fixed windows, reshuffled every epoch
    (``set_epoch``) when ``shuffle``.

    Each batch is gathered with one index per tensor: much faster than a ``DataLoader`` that fetches and collates
    windows one at a time.
    """

    def __init__(self, X: torch.Tensor, Y: torch.Tensor, batch_size: int, shuffle: bool = False, seed: int = 0):
        _check_positive(batch_size=batch_size)
        if X.dim() != 2 or Y.dim() != 1 or len(X) != len(Y):
            raise ValueError(f"need X (N, n) and Y (N,) with the same N, got {tuple(X.shape)} and {tuple(Y.shape)}")
        if len(Y) == 0:
            raise ValueError("no windows: give a stream longer than the window")
        super().__init__(shuffle, seed)
        self.X, self.Y, self.batch_size = X, Y, batch_size

    def __len__(self) -> int:
        return -(-len(self.Y) // self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        order = _order(len(self.Y), self._generator())
        for start in range(0, len(self.Y), self.batch_size):
            rows = order[start:start + self.batch_size]                       # (B,)
            yield Batch(self.X[rows], self.Y[rows])                           # (B, n), (B,)


def window_data(ids, n: int, pad_id: int | None = None, batch_size: int = 128, shuffle: bool = False,
                seed: int = 0) -> WindowBatches:
    """(context, next word) batches for every token of a stream: x (B, n), y (B,).

    With ``pad_id`` the stream is first left-padded with ``n`` copies of it, so every token is predicted once,
    the first ones from a padded window (as a PTB stream starting after ``</s>``); without it, the first ``n``
    tokens are context only.
    """
    t = _as_ids(ids)
    if pad_id is not None:
        t = torch.cat([torch.full((n,), int(pad_id), dtype=torch.long), t])
    X, Y = fixed_windows(t, n)                                                # (N, n), (N,)
    return WindowBatches(X, Y, batch_size, shuffle, seed)


def sentence_stream(sentences: Sequence[Sequence[str]], vocab) -> torch.Tensor:
    """One long id stream ``<s> w_1 ... w_n </s> <s> ...`` (LongTensor (N,)) for truncated BPTT over a corpus."""
    ids: list[int] = []
    for sent in sentences:
        ids.append(vocab.bos_id)
        ids.extend(vocab.encode(list(sent)))
        ids.append(vocab.eos_id)
    if not ids:
        raise ValueError("no sentences: the stream would be empty")
    return torch.tensor(ids, dtype=torch.long)


class StreamBatcher:
    """Contiguous ``Batch(x, y)`` of shape (B, T) from one long stream, for truncated BPTT.

    The stream is cut into B equal rows; batch k holds columns ``k*T .. k*T+T-1`` of every row, so row b of batch
    k+1 continues row b of batch k and a stateful RNN can carry its hidden state across batches. y is x shifted by
    one; targets equal to ``skip_target`` (e.g. the ``<s>`` of :func:`sentence_stream`, only ever an input) become
    IGNORE_INDEX. The last batch may be shorter than T unless ``drop_last``. The order is fixed: a stream is never
    shuffled (that would break the state carried from batch to batch).
    """

    def __init__(self, ids, batch_size: int, bptt: int, drop_last: bool = False, skip_target: int | None = None):
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
        if skip_target is not None:
            self.y = self.y.masked_fill(self.y == int(skip_target), IGNORE_INDEX)
        self.batch_size, self.bptt, self.drop_last = batch_size, bptt, drop_last

    def __len__(self) -> int:
        L = self.x.shape[1]
        return L // self.bptt if self.drop_last else -(-L // self.bptt)

    def __iter__(self) -> Iterator[Batch]:
        for k in range(len(self)):
            s = slice(k * self.bptt, (k + 1) * self.bptt)
            yield Batch(self.x[:, s], self.y[:, s])  # (B, T), (B, T)

    @property
    def n_targets(self) -> int:
        """Targets scored per pass (entries of y that are not IGNORE_INDEX; with drop_last, only in full batches):
        the count the trainer weights the loss by, as ``Batch.n_targets`` is for one batch."""
        read = len(self) * self.bptt if self.drop_last else self.y.shape[1]
        return int((self.y[:, :read] != IGNORE_INDEX).sum())


def lm_batches(ids, batch_size: int, bptt: int, skip_target: int | None = None) -> list[Batch]:
    """The batches of a :class:`StreamBatcher` as a list (a stream is re-read in the same order every epoch)."""
    return list(StreamBatcher(ids, batch_size, bptt, skip_target=skip_target))


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


def _lengths_order(lengths: list[int], order: torch.Tensor, batch_size: int, bucket: bool,
                   gen: torch.Generator | None) -> list[torch.Tensor]:
    """Cut ``order`` into batches of rows. With ``bucket``, each chunk of 50 batches is first sorted by length, so a
    batch holds sequences of similar length (less padding); the batches are then put in a random order drawn from
    ``gen`` (so lengths do not grow through an epoch), or, without ``gen`` (no shuffling), left short to long
    within each chunk."""
    if not bucket:
        return [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    chunk = 50 * batch_size
    batches = []
    for c in range(0, len(order), chunk):
        part = order[c:c + chunk]
        part = part[torch.argsort(torch.tensor([lengths[i] for i in part.tolist()]), stable=True)]
        batches += [part[s:s + batch_size] for s in range(0, len(part), batch_size)]
    if gen is not None:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=gen).tolist()]
    return batches


class PaddedBatches(_Shuffled):
    """Re-iterable ``Batch(x=ids (B, T), y, mask (B, T))`` of variable-length sequences, right-padded with ``pad_id``.

    targets: one label per token (lists, padded with IGNORE_INDEX -> y (B, T)) or one per sequence (ints -> y (B,)).
    ``shuffle`` draws a new order every epoch from (seed, epoch). ``bucket=True`` puts sequences of similar length
    in one batch (less padding) and, with ``shuffle``, visits those batches in a random order (see
    :func:`_lengths_order`).
    """

    def __init__(self, inputs: Sequence[Sequence[int]], targets: Sequence, batch_size: int, pad_id: int, *,
                 shuffle: bool = False, seed: int = 0, max_len: int | None = None, bucket: bool = False):
        _check_positive(batch_size=batch_size)
        if len(inputs) != len(targets):
            raise ValueError(f"{len(inputs)} inputs but {len(targets)} targets: give one target per input")
        if not len(inputs):
            raise ValueError("no sequences: give at least one input")
        empty = [i for i, seq in enumerate(inputs) if len(seq) == 0]
        if empty:
            raise ValueError(f"input {empty[0]} is empty; drop empty sequences before batching")
        first = targets[0]
        self.per_token = (isinstance(first, torch.Tensor) and first.dim() == 1) or (
            not isinstance(first, (torch.Tensor, str)) and hasattr(first, "__len__"))
        if self.per_token:
            bad = [i for i, (x, y) in enumerate(zip(inputs, targets)) if len(x) != len(y)]
            if bad:
                raise ValueError(f"sequence {bad[0]} has {len(inputs[bad[0]])} tokens but "
                                 f"{len(targets[bad[0]])} tags: give one tag per token")
        super().__init__(shuffle, seed)
        self.inputs, self.targets = [list(map(int, x)) for x in inputs], list(targets)
        self.batch_size, self.pad_id, self.max_len, self.bucket = batch_size, pad_id, max_len, bucket

    def __len__(self) -> int:
        return -(-len(self.inputs) // self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        lengths, gen = [len(x) for x in self.inputs], self._generator()
        for rows in _lengths_order(lengths, _order(len(self.inputs), gen), self.batch_size, self.bucket, gen):
            rows = rows.tolist()
            ids, mask = pad_batch([self.inputs[i] for i in rows], self.pad_id, self.max_len)      # (B, T), (B, T)
            if self.per_token:
                tags, _ = pad_batch([self.targets[i] for i in rows], IGNORE_INDEX, self.max_len)  # (B, T)
                yield Batch(ids, tags.masked_fill(~mask, IGNORE_INDEX), mask)
            else:
                yield Batch(ids, torch.tensor([int(self.targets[i]) for i in rows], dtype=torch.long), mask)


class PairBatches(_Shuffled):
    """Re-iterable ``Batch(x=source (B, S), y=target (B, T), mask=source mask (B, S))`` for encoder-decoders.

    Sources are right-padded with ``pad_id``; targets (each ending in ``</s>``, without ``<s>``) are padded with
    IGNORE_INDEX, so the loss never scores a position past ``</s>``. The decoder's input is
    :func:`shift_right` of y (``<s>`` then y without its last position: teacher forcing). ``shuffle`` and
    ``bucket`` as in :class:`PaddedBatches`, by source length.
    """

    def __init__(self, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], batch_size: int,
                 pad_id: int, *, shuffle: bool = False, seed: int = 0, bucket: bool = False,
                 max_source_len: int | None = None, max_target_len: int | None = None):
        _check_positive(batch_size=batch_size)
        if len(sources) != len(targets):
            raise ValueError(f"{len(sources)} sources but {len(targets)} targets: give one target per source")
        if not len(sources):
            raise ValueError("no pairs: give at least one (source, target) pair")
        for what, seqs in (("source", sources), ("target", targets)):
            empty = [i for i, seq in enumerate(seqs) if len(seq) == 0]
            if empty:
                raise ValueError(f"{what} {empty[0]} is empty; drop empty pairs before batching (a target holds at "
                                 f"least </s>)")
        super().__init__(shuffle, seed)
        self.sources = [list(map(int, s)) for s in sources]
        self.targets = [list(map(int, t)) for t in targets]
        self.batch_size, self.pad_id, self.bucket = batch_size, pad_id, bucket
        self.max_source_len, self.max_target_len = max_source_len, max_target_len

    def __len__(self) -> int:
        return -(-len(self.sources) // self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        lengths, gen = [len(s) for s in self.sources], self._generator()
        for rows in _lengths_order(lengths, _order(len(self.sources), gen), self.batch_size, self.bucket, gen):
            rows = rows.tolist()
            src, mask = pad_batch([self.sources[i] for i in rows], self.pad_id, self.max_source_len)  # (B, S) x2
            tgt, _ = pad_batch([self.targets[i] for i in rows], IGNORE_INDEX, self.max_target_len)   # (B, T)
            yield Batch(src, tgt, mask)


def shift_right(y: torch.Tensor, bos_id: int, pad_id: int) -> torch.Tensor:
    """Decoder input for teacher forcing: ``<s>`` followed by y without its last position, IGNORE_INDEX -> pad_id.

    y (B, T) -> (B, T): position t of the input is the gold token t-1, so the decoder predicts y_t from y_<t.
    """
    if y.dim() != 2:
        raise ValueError(f"targets must have shape (B, T), got {tuple(y.shape)}")
    prev = torch.cat([torch.full_like(y[:, :1], int(bos_id)), y[:, :-1]], dim=1)   # (B, T)
    return prev.masked_fill(prev == IGNORE_INDEX, int(pad_id))
