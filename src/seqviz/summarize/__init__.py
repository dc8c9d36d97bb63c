"""Chapter 7: summarization with a transformer language model (SLP 3rd ed. draft, ch. 9, §9.9).

SLP's recipe (§9.9, Fig. 9.24): each pair of an article x_1..x_m and its summary y_1..y_n becomes one training
sequence x_1..x_m δ y_1..y_n </s> for a decoder-only LM, trained with teacher forcing; at inference the article
plus δ primes the generation, which stops at ``</s>`` or a length limit. Here the articles are BBC news bodies and
the summaries their headlines (``load_corpus("bbc")``), tokenised with chapter 5's BPE.

The modules, in the order the chapter uses them:

- ``tokenizer``       :class:`SummaryTokenizer`, BPE pieces and ids with the delimiter δ as one special token;
- ``pretraining``     :func:`pretrain` / :func:`load_pretrained`, the small LM pretrained on the training bodies (the
  package's own recipe, ``make pretrain-summarize`` = ``python -m seqviz.summarize pretrain``), stored with a
  SHA-256 that loading checks;
- ``delta``           the δ recipe: :func:`build_example` (one training sequence with its loss mask),
  :func:`summary_batches`, :func:`finetune`; :func:`summarize` (greedy / beam / sampled headlines through
  ``seqviz.decode``) and :func:`evaluate_rouge`;
- ``baselines``       :func:`lead_baseline`, :func:`random_sentence_baseline`;
- ``attention_view``  :func:`summary_attention`, the weights from the summary tokens back to the article, for
  ``AttentionHeatmap``.

ROUGE itself lives in :mod:`seqviz.metrics`.
"""
from seqviz.summarize.attention_view import SummaryAttention, summary_attention
from seqviz.summarize.baselines import headline_length, lead_baseline, random_sentence_baseline, split_sentences
from seqviz.summarize.delta import (MAX_SUMMARY, Example, build_example, evaluate_rouge, finetune, make_examples,
                                    prompt_ids, summarize, summary_batches)
from seqviz.summarize.pretraining import (PRETRAINED_PATH, PRETRAINED_SHA256, PretrainConfig, load_pretrained,
                                          pretrain, save_pretrained)
from seqviz.summarize.tokenizer import DELIMITER, SPECIALS, SummaryTokenizer

# ROUGE moved to seqviz.metrics; notebooks/07_summarization.ipynb still imports these three from here
from seqviz.metrics import rouge, rouge_corpus, rouge_tokenize  # noqa: E402,F401

__all__ = ["DELIMITER", "SPECIALS", "SummaryTokenizer",
           "MAX_SUMMARY", "Example", "build_example", "summary_batches", "make_examples", "finetune", "prompt_ids",
           "summarize", "evaluate_rouge",
           "PretrainConfig", "pretrain", "save_pretrained", "load_pretrained", "PRETRAINED_PATH", "PRETRAINED_SHA256",
           "headline_length", "lead_baseline", "split_sentences", "random_sentence_baseline",
           "SummaryAttention", "summary_attention"]
