"""seqviz: the shared package behind the book *Deep Learning for Sequences, Interactively*.

One module per chapter of the lecture flow (n-grams -> fixed window -> RNN -> LSTM -> attention -> transformer ->
summarization), one trainer, one decoder, and browser-side widgets. Data flows one way:
``seqviz.data`` (corpus -> tokens -> ``Batch``) -> model -> (logits, traces) -> ``seqviz.widgets``.

One vocabulary for the whole package (SLP 3rd ed. draft, ch. 9, where it has a name):

=================  ==========================================================================================
shapes             batch first: B batch, T time (T_q / T_k query / key positions, S source length), V vocabulary
                   size, L layers, K directions (1 or 2), H attention heads (only heads, never a width)
widths             ``d_emb`` embedding width, ``d_h`` hidden width (SLP's d_h), ``d_model`` transformer width,
                   ``d_k`` / ``d_v`` key / value width
matrices           E embeddings (one row per word), W input -> hidden, U hidden -> hidden (recurrent), V hidden
                   -> output (the context tells V the matrix from V the size), W^Q W^K W^V W^O attention
config fields      ``vocab_size``, ``d_emb``, ``d_h``, ``num_layers``, ``nonlinearity``, ``dropout``, ``impl``
                   ("scratch": the loop the chapter explains; "fused": the torch kernel on the same parameters)
batches            ``seqviz.data.Batch(x, y, mask)``: inputs, targets (``IGNORE_INDEX`` = not scored), padding mask
=================  ==========================================================================================
"""
from __future__ import annotations

import os
import random
import sys
from contextlib import contextmanager

__version__ = "0.1.0"

__all__ = ["__version__", "set_seed", "configure_threads", "default_device", "evaluating"]


def set_seed(seed: int, *, deterministic: bool = True) -> None:
    """Seed Python, NumPy and PyTorch so a run repeats bit for bit on the same machine.

    With ``deterministic=True`` PyTorch is asked to use deterministic kernels (``warn_only``, so an op without a
    deterministic version still runs and says so). Thread policy: see :func:`configure_threads`; results are
    reproducible for a fixed thread count, and across CPUs they agree only to about three significant digits.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        # torch.use_deterministic_algorithms(True, warn_only=True), less one side effect: it also sets the flag of
        # torch.compile's compiler and imports the compiler for it, ~1.5 s in every fresh kernel, for code the book
        # never compiles. The compiler's flag is set where the compiler is already loaded.
        inductor = sys.modules.get("torch._inductor.config")
        if inductor is not None:
            inductor.deterministic = True
        torch._C._set_deterministic_algorithms(True, warn_only=True)


@contextmanager
def evaluating(*modules):
    """Run the body with every given module in eval mode (dropout off); restore each module's own mode after it,
    also when the body raises. ``None`` entries are skipped, so ``evaluating(getattr(x, "module", None))`` works.

    The package's one mode discipline: evaluation, decoding and every "look at the trained model" helper use this,
    so a model comes back in the mode it was in (training after ``Trainer.fit``, eval after ``model.eval()``).
    """
    given = [m for m in modules if m is not None]
    for m in given:
        if not hasattr(m, "train") or not hasattr(m, "training") or not hasattr(m, "modules"):
            raise TypeError(f"evaluating() takes torch.nn.Module objects, got {type(m).__name__}")
    # every submodule's own flag: a part kept in eval inside a training model (a frozen encoder) stays in eval
    kept = [(m, m.training, [(sub, sub.training) for sub in m.modules()]) for m in given]
    kept = [k for k in kept if any(flag for _, flag in k[2])]      # a module wholly in eval already: nothing to do
    try:
        for m, _, _ in kept:
            m.eval()
        yield
    finally:
        for m, was, parts in kept:
            m.train(was)                       # through the module's own train(), should it override it
            for sub, sub_was in parts:
                if sub.training != sub_was:
                    sub.training = sub_was


def configure_threads(n: int | None = None) -> int:
    """Set PyTorch's intra-op thread count and return it.

    Policy: by default we leave PyTorch at one thread per core (2 on the book's reference machine), unless the
    environment variable ``SEQVIZ_THREADS`` says otherwise. Results are bit-identical run to run only for the same
    thread count, so the notebooks never change it mid-run.
    """
    import torch

    if n is None:
        env = os.environ.get("SEQVIZ_THREADS")
        if env is None:
            return torch.get_num_threads()
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"SEQVIZ_THREADS must be a positive integer, got {env!r}") from None
    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    torch.set_num_threads(n)
    return n


def default_device():
    """The device the chapters put their models on: CUDA, else Apple's MPS, else the CPU.

    ``SEQVIZ_DEVICE`` overrides the choice (e.g. ``SEQVIZ_DEVICE=cpu``, as the tests and CI set it). Every default
    size in the book is chosen for a 2-core CPU; a GPU makes the ``full`` presets take minutes instead of hours.
    """
    import torch

    name = os.environ.get("SEQVIZ_DEVICE")
    if name:
        try:
            device = torch.device(name)
        except RuntimeError:
            raise ValueError(f"SEQVIZ_DEVICE={name!r} is not a torch device; use cpu, cuda, cuda:1 or mps") from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"SEQVIZ_DEVICE={name!r} but torch sees no CUDA GPU; unset it or use cpu")
        if device.type == "mps" and not torch.backends.mps.is_available():
            raise ValueError(f"SEQVIZ_DEVICE={name!r} but MPS is not available here; unset it or use cpu")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
