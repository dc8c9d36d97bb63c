"""Chapters 6 and 7: the transformer block by block, and the models built from it (SLP 3rd ed. draft, ch. 9,
(9.40)-(9.48), §9.7-9.9).

- `layers`  LayerNorm (9.42)-(9.45), multi-head attention (9.46)-(9.48) with its ``KVCache``, the feed-forward layer,
            the block (9.40)-(9.41), learned and sinusoidal positions
- `lm`      the decoder-only ``TransformerLM`` (causal, decoding through the cache; ``causal=False`` is the masked
            LM, BERT) and the losses that score it on a long text (``window_loss``, ``sliding_loss``)
- `encdec`  the ``EncoderDecoderTransformer`` and its decoder binding (``model.bind(src, mask)``)
- `bert`    BERT's encoder (post-norm blocks, GELU) and a pretrained checkpoint's weights in it
            (``BertEncoder.from_pretrained``, ``load_minilm``; tokenizer: ``seqviz.data.wordpiece``)
- `loss`    the output layer and the cross-entropy in chunks (``linear_cross_entropy``, ``TransformerLM.loss``)
- `pretrained` the chapter's recipes and shipped checkpoints (``load_char_lm``, ``load_dates``; ``python -m
            seqviz.transformer make char|dates`` rebuilds them)
- `translator` a German -> English transformer on more data than chapter 5's (``make translator``; an experiment,
            not shipped: bench/README.md)

Everything public is importable from ``seqviz.transformer`` directly. The LM windows and BERT's corruption live in
``seqviz.data`` (``random_windows``, ``mask_tokens``, ``masked_windows``); chapter 7 imports them from here too.
"""
from seqviz.data.lm import mask_tokens, masked_windows, random_windows

from .encdec import EncDecState, EncoderDecoderBinding, EncoderDecoderConfig, EncoderDecoderTransformer
from .layers import (AttnOut, BlockCache, BlockOut, FeedForward, KVCache, LayerNorm, LearnedPositions,
                     MultiHeadAttention, SinusoidalPositions, TransformerBlock, sinusoidal_encoding)
from .layers import _check_base, _positive_int  # noqa: F401  (the positional widget checks its sliders with them)
from .bert import BertConfig, BertEncoder, BertOut, load_minilm, minilm_path, minilm_reference
from .lm import DecodeState, TransformerConfig, TransformerLM, sliding_loss, window_loss
from .loss import linear_cross_entropy
from .pretrained import (CHAPTER_CHAR, SHIPPED_CHAR, SHIPPED_DATES, CharLMRecipe, DatesRecipe, load_char_lm,
                         load_dates, train_char_lm, train_dates)
from .translator import SHIPPED_TRANSLATOR, TranslationRecipe, Translator, load_translator

__all__ = ["sinusoidal_encoding", "LayerNorm", "MultiHeadAttention", "KVCache", "AttnOut", "FeedForward",
           "TransformerBlock", "BlockCache", "BlockOut", "LearnedPositions", "SinusoidalPositions",
           "TransformerConfig", "TransformerLM", "DecodeState", "window_loss", "sliding_loss",
           "EncoderDecoderConfig", "EncoderDecoderTransformer", "EncDecState", "EncoderDecoderBinding",
           "BertConfig", "BertEncoder", "BertOut", "load_minilm", "minilm_path", "minilm_reference",
           "mask_tokens", "masked_windows", "random_windows", "linear_cross_entropy", "CharLMRecipe", "DatesRecipe",
           "CHAPTER_CHAR", "SHIPPED_CHAR", "SHIPPED_DATES", "train_char_lm", "train_dates", "load_char_lm",
           "load_dates", "SHIPPED_TRANSLATOR", "TranslationRecipe", "Translator", "load_translator"]
