"""Chapter 8: summarization with a transformer language model (SLP 3rd ed. draft, ch. 9, §9.9).

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
- ``baselines``       the targets first: lead-k, first and random sentence, tf-idf centroid, TextRank, and oracles
  (best sentence, best window, extractive compression, copy-only);
- ``attention_view``  :func:`summary_attention`, the weights from the summary tokens back to the article, for
  ``AttentionHeatmap``;
- ``compress``        supervised extractive compression (Filippova & Altun 2013): keep/drop labels, a feature
  regression and a token head on the pretrained LM;
- ``pointer``         the copy mechanism (See et al. 2017): :class:`CopyHead` and the copy mixture;
- ``words``           word tokens with per-article extended ids; ``copy_models`` the encoder-decoder and the δ LM
  wearing the copy head; ``pairs`` headline and gap-sentence pairs; ``headlines`` decoding (n-gram blocking, length
  normalisation, bottom-up prior), the copy trace and the article-swap test; ``copy_checkpoint`` the recipe and
  checkpoint of the copy summarizer (``make copy-summarizer``).

ROUGE itself lives in :mod:`seqviz.metrics`.
"""
from seqviz.summarize.attention_view import SummaryAttention, summary_attention
from seqviz.summarize.baselines import (IdfTable, best_sentence_oracle, best_window_oracle, centroid_sentence,
                                       choose_lead_k, compression_oracle, copy_only_oracle, first_sentence,
                                       headline_length, lead_baseline, random_sentence_baseline, split_sentences,
                                       textrank_sentence)
from seqviz.summarize.compress import (KeepDropHead, KeepDropRegression, WordFeatures, head_scores, keep_drop_labels,
                                       lead_words, name_word, select_words, token_prior, train_keep_drop_head)
from seqviz.summarize.copy_checkpoint import (COPY_CHECKPOINT, COPY_SHA256, CopyRecipe, load_copy_summarizer,
                                              save_copy_summarizer, train_copy_summarizer)
from seqviz.summarize.copy_models import CopyConfig, CopyEncoderDecoder, CopyLM, build_copy_model
from seqviz.summarize.headlines import (CopyBinding, CopyTrace, HeadlineRules, SwapResult, copy_trace, swap_test,
                                        write_headline, write_headlines)
from seqviz.summarize.pairs import CopyBatches, encode_pairs, gap_sentence_pairs, headline_pairs
from seqviz.summarize.pointer import CopyHead, CopyOut, copy_distribution, copy_target_logprob
from seqviz.summarize.words import SourceIds, WordTokenizer, word_tokens
from seqviz.summarize.delta import (MAX_SUMMARY, Example, build_example, evaluate_rouge, finetune, make_examples,
                                    prompt_ids, summarize, summary_batches)
from seqviz.summarize.pretraining import (PRETRAINED_PATH, PRETRAINED_SHA256, PretrainConfig, load_pretrained,
                                          pretrain, save_pretrained)
from seqviz.summarize.tokenizer import DELIMITER, SPECIALS, SummaryTokenizer
from seqviz._checks import IGNORE_INDEX  # the target the δ sequence's loss mask writes at the article

# ROUGE lives in seqviz.metrics; these three names stay importable from here for code written before it moved
from seqviz.metrics import rouge, rouge_corpus, rouge_tokenize  # noqa: E402,F401

__all__ = ["DELIMITER", "SPECIALS", "SummaryTokenizer", "IGNORE_INDEX",
           "MAX_SUMMARY", "Example", "build_example", "summary_batches", "make_examples", "finetune", "prompt_ids",
           "summarize", "evaluate_rouge",
           "PretrainConfig", "pretrain", "save_pretrained", "load_pretrained", "PRETRAINED_PATH", "PRETRAINED_SHA256",
           "headline_length", "lead_baseline", "split_sentences", "random_sentence_baseline", "choose_lead_k",
           "first_sentence", "IdfTable", "centroid_sentence", "textrank_sentence", "best_sentence_oracle",
           "best_window_oracle", "compression_oracle", "copy_only_oracle",
           "lead_words", "keep_drop_labels", "select_words", "name_word", "token_prior", "WordFeatures",
           "KeepDropRegression",
           "KeepDropHead", "train_keep_drop_head", "head_scores", "CopyHead", "CopyOut", "copy_distribution", "copy_target_logprob", "word_tokens",
           "SourceIds", "WordTokenizer", "CopyConfig", "CopyEncoderDecoder", "CopyLM", "build_copy_model",
           "headline_pairs", "gap_sentence_pairs", "encode_pairs", "CopyBatches", "CopyBinding", "HeadlineRules",
           "write_headline", "write_headlines", "CopyTrace", "copy_trace", "SwapResult", "swap_test", "CopyRecipe",
           "train_copy_summarizer", "save_copy_summarizer", "load_copy_summarizer", "COPY_CHECKPOINT", "COPY_SHA256",
           "SummaryAttention", "summary_attention"]
