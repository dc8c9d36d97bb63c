"""Data for the book, in the order it flows: corpus -> text -> tokens and ids -> batches (-> model).

- `corpora`  registry-installed corpora and checksummed downloads: ``load_corpus(name)``
- `text`     tokenizers and ``Vocab``
- `batches`  fixed windows, LM streams (stateful), padded sequences and source/target pairs with masks; every
             batch is a named ``Batch(x, y, mask)``
- `lm`       a context-window LM's training data: ``random_windows``, BERT's ``mask_tokens``, ``masked_windows``
- `bpe`      byte-pair encoding: chapter 7's learned ``BPE`` and ``ByteLevelBPE``, a pretrained model's tokenizer
             (SmolLM2's, read from its GGUF file)
- `pairs`    source/target tasks ready to train an encoder-decoder: ``date_pairs``, ``translation_pairs``

Everything public is importable from ``seqviz.data`` directly.
"""
from .batches import (Batch, PairBatches, PaddedBatches, StreamBatcher, WindowBatches, fixed_windows, lm_batches,
                      pad_batch, sentence_stream, shift_right, window_data)
from .corpora import (CORPORA, DOWNLOADS, UNIVERSAL_TAGS, Article, Corpus, CorpusUnavailableError, SentencePair,
                      Snippet, TaggedSentence, brown_to_universal, download_corpus, load_corpus, load_trans_de_en)
from .bpe import BPE, ByteLevelBPE, bytes_to_unicode, pretokenize_bytelevel
from .lm import mask_tokens, masked_windows, random_windows
from .pairs import PairTask, date_pairs, pair_task, translation_pairs
from .text import Vocab, char_tokenize, sentences, word_tokenize

__all__ = [
    "Article", "Snippet", "TaggedSentence", "Corpus", "CorpusUnavailableError", "CORPORA", "DOWNLOADS",
    "load_corpus", "download_corpus", "char_tokenize", "word_tokenize", "sentences", "Vocab",
    "Batch", "fixed_windows", "WindowBatches", "window_data", "sentence_stream", "StreamBatcher", "lm_batches",
    "pad_batch", "PaddedBatches", "PairBatches", "shift_right", "UNIVERSAL_TAGS", "brown_to_universal",
    "SentencePair", "load_trans_de_en", "PairTask", "pair_task", "date_pairs", "translation_pairs",
    "random_windows", "mask_tokens", "masked_windows",
    "BPE", "ByteLevelBPE", "bytes_to_unicode", "pretokenize_bytelevel",
]
