"""Chapter 1: n-gram language models — counting, smoothing, perplexity and sampling.

An n-gram model makes the Markov assumption P(w_i | w_<i) ~ P(w_i | w_{i-n+1:i-1}) and estimates that conditional
from counts. Four estimators share one set of count tables:

- ``"mle"``      relative frequency C(h w) / C(h); zero for unseen n-grams, undefined (NaN) for unseen contexts;
- ``"addk"``     add-k smoothing (C(h w) + k) / (C(h) + k V); ``"laplace"`` is k = 1;
- ``"backoff"``  normalised backoff with absolute discounting (Katz-style): seen n-grams keep (C - D) / C(h), the
                 mass freed goes to the next lower order, renormalised over the words the context has not seen.
                 (Stupid backoff, a fixed 0.4 per step, is *not* a distribution, so it is not offered.)
- ``"kn"``       interpolated Kneser-Ney; by default *modified* KN with three discounts per order estimated from
                 count-of-counts (Chen & Goodman 1999), lower orders built from continuation counts.

Sentence boundaries (the book's convention, as in SLP): every sentence is padded on the left with n-1 ``<s>``
(context only: ``<s>`` is never predicted) and closed with one ``</s>`` (predicted). A sentence of L words makes
L + 1 predictions, and perplexity averages over exactly those: N = sum of (L + 1) over sentences.

Two implementations of Kneser-Ney, as the RNN has a scratch and a fused one, tested equal to 1e-12. The modules, in
reading order:

- ``scratch``     :class:`ScratchKN`, the estimator written as its equations (dicts of token tuples, one query at a
  time), with the (1.9) discounts: read this first;
- ``base``        :class:`NGramConfig` and what both models share: input checks, the vocabulary, the queries of one
  context (``prob``, ``distribution``, ``next_token_logits``, ``generate``);
- ``tables``      the fast model's count tables: the m-gram ending at each position gets an integer id, the rank of the
  pair (id of its first m-1 tokens, last token) among all pairs, so lookups are ``np.searchsorted`` over sorted int64
  keys and no Python dict is touched per token;
- ``estimators``  MLE, add-k, backoff and Kneser-Ney over those tables, many queries at once;
- ``lm``          :class:`NGramLM`, the fast model: a thin facade that fits the tables and estimators and scores a
  whole corpus (perplexity, counts, sparsity).

Equation numbers: (9.1) perplexity P(w_1..w_N)^(-1/N), (9.2) the same with the chain rule expanded and (9.10) the
chain rule are SLP 3rd ed. draft ch. 9; (1.x) number the n-gram formulas (SLP ch. 3; Chen & Goodman 1999) in this
book's chapter 1, ``notebooks/01_ngrams.ipynb``. Logs are natural logs. Shapes: V is the vocabulary size, Q a number
of queries.
"""
from seqviz.ngram.scratch import ScratchKN
from seqviz.ngram.base import SMOOTHINGS, NGramConfig
from seqviz.ngram.lm import NGramLM

__all__ = ["NGramConfig", "NGramLM", "ScratchKN", "SMOOTHINGS"]
