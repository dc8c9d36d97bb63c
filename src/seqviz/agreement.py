"""Chapter 4 §4.4: subject-verb agreement inside a language model (Linzen, Dupoux & Goldberg 2016).

The sentences come from ``seqviz.data.tasks.agreement_examples`` (a subject, distractor phrases whose nouns may have
the other number, the *attractors*, then the verb). A recurrent LM is trained to predict every next word of them, the
verb included; the verb's number is then read off the trained LM: does it give the right form (*is* / *are*) a
higher score than the wrong one after the prefix? Accuracies are kept by the number of attractors, after every epoch,
so a run shows both where it ends and how it got there. :func:`number_unit` finds the unit whose state best tracks
the subject's number, and :func:`ablated_correct` silences it at every step to see whether the LM uses it (Lakretz
et al. 2019 found such "number units" in an LSTM LM trained on English).

Shapes: B batch, T time, N examples, d_h hidden width.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch
from torch import Tensor

from seqviz import evaluating, set_seed
from seqviz.data import PaddedBatches, Vocab, pad_batch
from seqviz.data.tasks import AGREEMENT_VERBS, AgreementExample, agreement_vocabulary
from seqviz.lstm import GRULM, LSTMLM, LSTMLMConfig
from seqviz.rnn import RNNLM, RNNLMConfig, map_state, state_h

__all__ = ["KINDS", "ATTRACTOR_BINS", "agreement_vocab", "agreement_lm_batches", "verb_logits",
           "accuracy_by_attractors", "AgreementRun", "train_agreement_lm", "number_unit", "ablated_correct"]

#: the three language models the chapter compares, by name: (model class, config class)
KINDS = {"Elman": (RNNLM, RNNLMConfig), "GRU": (GRULM, LSTMLMConfig), "LSTM": (LSTMLM, LSTMLMConfig)}
#: attractor counts the accuracies are kept by; the last bin holds that many or more
ATTRACTOR_BINS = (0, 1, 2, 3, 4)


def agreement_vocab() -> Vocab:
    """``<pad>`` and every word the generator writes (no <unk>, <s>, </s>: a prefix is read as it is)."""
    return Vocab(["<pad>"] + agreement_vocabulary(), unk=None, bos=None, eos=None)


def agreement_lm_batches(examples: Sequence[AgreementExample], vocab: Vocab, batch_size: int = 128, *,
                         seed: int = 0) -> PaddedBatches:
    """Language-modelling batches: each sentence, verb included, read as w_1..w_{n-1} to predict w_2..w_n (the loss
    falls on every word, the verb only one of them). Shuffled each epoch from (seed, epoch)."""
    ids = [vocab.encode([*e.tokens, e.verb]) for e in examples]
    return PaddedBatches([s[:-1] for s in ids], [s[1:] for s in ids], batch_size=batch_size, pad_id=vocab.pad_id,
                         shuffle=True, seed=seed)


def _prefixes(examples: Sequence[AgreementExample], vocab: Vocab) -> tuple[Tensor, Tensor]:
    """The prefixes, right-padded: ids (N, T) and the index of each one's last word (N,)."""
    if not examples:
        raise ValueError("no examples: give at least one AgreementExample")
    ids, mask = pad_batch([vocab.encode(list(e.tokens)) for e in examples], vocab.pad_id)    # (N, T), (N, T)
    return ids, mask.sum(1) - 1


@torch.no_grad()
def verb_logits(lm, examples: Sequence[AgreementExample], vocab: Vocab, batch_size: int = 512) -> Tensor:
    """The LM's scores for (*is*, *are*) right after each prefix: (N, 2), column = label (0 singular, 1 plural).
    Eval mode inside, the LM's own mode restored after. Right padding never reaches a real word (the LM is causal)."""
    ids, last = _prefixes(examples, vocab)
    verbs = torch.tensor(vocab.encode(list(AGREEMENT_VERBS)))
    device = next(lm.parameters()).device
    out = []
    with evaluating(lm):
        for s in range(0, len(ids), batch_size):
            logits = lm(ids[s:s + batch_size].to(device))[0]                     # (B, T, V): every next word
            rows = torch.arange(logits.shape[0], device=device)
            out.append(logits[rows, last[s:s + batch_size].to(device)][:, verbs.to(device)].cpu())  # (B, 2)
    return torch.cat(out)                                                         # (N, 2)


def accuracy_by_attractors(correct: Tensor, examples: Sequence[AgreementExample],
                           bins: Sequence[int] = ATTRACTOR_BINS) -> list[float]:
    """Mean of ``correct`` (N,) over the sentences with at least one phrase between subject and verb, by number of
    attractors (the last bin: that many or more); NaN for an empty bin."""
    if len(correct) != len(examples):
        raise ValueError(f"{len(correct)} results for {len(examples)} examples: score the same examples")
    correct = torch.as_tensor(correct, dtype=torch.float)
    attr = torch.tensor([min(e.attractors, bins[-1]) for e in examples])
    spaced = torch.tensor([e.phrases > 0 for e in examples])
    return [correct[spaced & (attr == b)].mean().item() if bool((spaced & (attr == b)).any()) else float("nan")
            for b in bins]


@dataclass
class AgreementRun:
    """One trained agreement LM: its name and seed, the model, and which test sentences it got right after every
    epoch (``correct[e]``, (N,) bool, in the order of the test examples it was scored on)."""

    kind: str
    seed: int
    model: torch.nn.Module
    test: Sequence[AgreementExample] = ()
    correct: list[Tensor] = field(default_factory=list)  # epoch -> (N,) bool
    seconds: float = 0.0  # training time, evaluations included

    def accuracy(self, bins: Sequence[int] = ATTRACTOR_BINS, epoch: int = -1) -> list[float]:
        """Accuracy by attractors after ``epoch`` (default the last; see :func:`accuracy_by_attractors`)."""
        return accuracy_by_attractors(self.correct[epoch], self.test, bins)

    @property
    def by_epoch(self) -> list[list[float]]:
        """Accuracy by ATTRACTOR_BINS after every epoch."""
        return [self.accuracy(epoch=e) for e in range(len(self.correct))]

    @property
    def adjacent(self) -> float:
        """Accuracy after the last epoch with the verb right after its subject (no phrase between)."""
        near = torch.tensor([e.phrases == 0 for e in self.test])
        return self.correct[-1][near].float().mean().item()


def train_agreement_lm(kind: str, seed: int, train: Sequence[AgreementExample], test: Sequence[AgreementExample],
                       vocab: Vocab, *, d: int = 64, epochs: int = 4, lr: float = 2e-2, batch_size: int = 128
                       ) -> AgreementRun:
    """Train the ``kind`` LM (a key of KINDS: d-wide embeddings and states, tied output layer) on ``train`` with
    AdamW at a constant rate, from ``seed`` (initialisation and batch order); score ``test`` after every epoch."""
    from seqviz.train import Trainer, TrainConfig, lm_step

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    Model, Config = KINDS[kind]
    set_seed(seed)
    run = AgreementRun(kind, seed, Model(Config(len(vocab), d_emb=d, d_h=d)), list(test))
    labels = torch.tensor([e.label for e in test])

    def score(trainer, event, info):
        if event == "epoch":
            run.correct.append(verb_logits(run.model, test, vocab).argmax(-1) == labels)

    hist = Trainer(run.model, TrainConfig(epochs=epochs, lr=lr, seed=seed, progress=False, device="cpu"),
                   agreement_lm_batches(train, vocab, batch_size, seed=seed), step=lm_step(stateful=False),
                   callbacks=[score]).fit()
    run.model.eval()
    run.seconds = hist.seconds
    return run


@torch.no_grad()
def _last_states(lm, examples, vocab, ablate: int | None = None, field: str = "h") -> Tensor:
    """Run the LM's scratch cell over each prefix (zeroing unit ``ablate`` of every state part after every step, if
    given) and return the state part ``field`` ("h", or "c" for an LSTM) at the last word: (N, d_h)."""
    ids, last = _prefixes(examples, vocab)
    cell = lm.rnn.cell(0)
    with evaluating(lm):
        x = lm.E(ids)                                                             # (N, T, d_emb)
        state, kept = cell.init_state(len(ids), x.device, x.dtype), []
        for t in range(x.shape[1]):
            state = cell(x[:, t], state)
            if ablate is not None:
                state = map_state(lambda s: s.index_fill(1, torch.tensor([ablate]), 0.0), state)
            kept.append(state[1] if field == "c" else state_h(state))            # (N, d_h)
    return torch.stack(kept, 1)[torch.arange(len(ids)), last]                   # (N, d_h)


def number_unit(lm, examples: Sequence[AgreementExample], vocab: Vocab, field: str = "c") -> tuple[int, float]:
    """The unit whose state (``field``: "c", an LSTM's cell, or "h") after the last word of the prefix has the
    largest |Pearson correlation| with the subject's number (0 singular, 1 plural) over ``examples``: (unit, r)."""
    if field not in ("c", "h"):
        raise ValueError(f"field must be 'c' (an LSTM's cell state) or 'h' (the hidden state), got {field!r}")
    if field == "c" and (not isinstance(lm, LSTMLM) or isinstance(lm, GRULM)):
        raise ValueError("only an LSTM has a cell state c; use field='h' for an Elman network or a GRU")
    if lm.config.num_layers != 1:
        raise ValueError("number_unit reads a one-layer LM (the chapter's agreement models)")
    v = _last_states(lm, examples, vocab, field=field).double()                  # (N, d_h)
    a = torch.tensor([float(e.label) for e in examples], dtype=torch.double)
    a, v = a - a.mean(), v - v.mean(0)
    r = (a @ v) / (a.norm() * v.norm(dim=0)).clamp_min(1e-12)                   # (d_h,)
    unit = int(r.abs().argmax())
    return unit, float(r[unit])


def ablated_correct(lm, examples: Sequence[AgreementExample], vocab: Vocab, unit: int | None) -> Tensor:
    """Whether the LM picks the right verb (N,) bool when ``unit`` is set to 0 in its state (h, and c for an LSTM)
    after every word; ``unit=None`` runs it untouched through the same loop."""
    h = _last_states(lm, examples, vocab, ablate=unit)                            # (N, d_h)
    verbs = torch.tensor(vocab.encode(list(AGREEMENT_VERBS)))
    with torch.no_grad():
        scores = lm.V(h)[:, verbs]                                                # (N, 2)
    return scores.argmax(-1) == torch.tensor([e.label for e in examples])
