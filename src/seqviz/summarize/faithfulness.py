"""Is a headline faithful to its article? A written rule, hand labels, rates with intervals and an automatic proxy.

A headline system is judged on this before ROUGE: a headline that reverses its article ("Japan narrowly escapes
recession" -> "Japan's economy hit by recession") is worse than none, however many words it shares with the
reference. Chapter 8 labels several systems' headlines for the same test articles by the rule below, reports the share
of each label with a 95 % interval, and checks an automatic proxy a student can run against those labels.

The rule (:data:`RULE`, printable; the hard cases in :data:`DECISIONS`)
-----------------------------------------------------------------------
Each headline gets exactly one of three labels (:data:`LABELS`), decided in this order:

1. **ungrammatical**: it cannot be read as a headline, so what it claims cannot be judged. A headline may be
   telegraphic (articles, auxiliaries and "is" dropped, present tense for the past, "to" for the future: "Telegraph
   newspapers axe 90 jobs"), but every word must have a role in one reading, with at most a function word supplied.
   Ungrammatical are: a *word list* whose words no syntax joins ("Airways fuel prices profits BA's": where the
   keep/drop selector's output falls unless its words, in their order, happen to read as a headline); a text *cut
   off inside a phrase* (a determiner, preposition, auxiliary, adjective or transitive verb with nothing after it:
   lead-5's "British Airways has blamed high"); a subject or name with no predicate, which states nothing ("The
   Daily and Sunday Telegraph"); a noun phrase that only names things ("Bush budget deficit", "Airways fuel
   prices") or whose nouns' relation must be guessed ("Yukos bankruptcy auction"), a topic rather than a headline
   (a noun phrase headed by a news event noun and clearly related, "French wine aid", "Marsh insurance charges", is
   a headline, judged on the event it reports); and a string that parses but from which no reader could say what
   is claimed ("Tobacco claim for smoking appeal").
2. **unfaithful**: it can be read, and something it states is not supported by the article or contradicts it: a wrong
   number, a wrong or invented entity, a reversed polarity (a rise for a fall, a failure for a success), an event
   the article does not report, or a claim the article does not make.
3. **faithful**: everything it states is supported by the article.

"The article" is the whole body, not only the words a model reads. The headline is read in its most natural reading;
where that reading is false the headline is unfaithful even if a strained reading is true.

Decision rules for the hard cases (:data:`DECISIONS`):

- *paraphrase*: a paraphrase or headline idiom that keeps the meaning is faithful ("bosses" for executives, "swallows"
  for a takeover agreed, "US adds more jobs" for 337,000 jobs against 169,000 forecast). Degree words must be
  supported by the article's figures: "surge" for a 15 % rise is; "soar" for a 1 % rise is not.
- *hedging*: attribution the headline marks (quotes, "says") or a report the article attributes ("is said to be
  considering an offer") supports the headline. What the article gives only as a call, a plan under discussion, a
  possibility or a speculation does not support a headline that states it as done or decided ("Yukos deal to be
  reversed" when one minister says it should be). A headline weaker than the article ("eye a deal" for a deal
  agreed) is faithful.
- *true but unimportant detail*: faithful. Faithfulness is support, not importance; missing the point is ROUGE's
  business. But a true detail presented as the current news when the article says it has since reversed (a
  "short-lived increase in jobs" of 2003 as "increase in jobs" in an article about this year's job losses) is
  unfaithful.
- *an entity from the article in the wrong role*: unfaithful ("Profits hit by UK WPP" makes WPP the agent of a fall
  when its profits rose; a bid's target written as the bidder). A clipped name that still picks out the article's
  entity ("Airways" for British Airways) is not a wrong entity.
- *a cut-off lead that happens to be a complete clause* ("The January sales have failed") is read as it stands and
  judged like any headline.
- *a noun phrase*: a headline when its head is a news event noun clearly related to its subject ("French wine aid",
  "IMF gold relief plan"), judged on the event it reports ("winemaker Southcorp takeover" reads as a takeover of
  Southcorp, which rejected the offer: unfaithful); a topic, so ungrammatical, when it only names things ("Bush
  budget deficit") or its relation must be guessed.

Who labelled, and how
---------------------
:data:`LABELS_PATH` (``faithfulness_labels.json``, package data) holds the labels of the first :data:`N_ARTICLES`
articles of ``load_corpus("bbc").test`` in the corpus's order (a fixed rule, not a choice; the split is ordered by
topic, so all of them are business news and the rates speak for business headlines only), for the systems of
:data:`SYSTEMS`, each made by its entry in :data:`HEADLINE_MAKERS`: the reference headline, lead-5 (the first five
words), the selector (the keep/drop regression's top :data:`SELECTOR_K` words, the k chapter 8 chooses on validation
and prints beside the other systems), the guided copy model (the shipped copy checkpoint, chapter 8's δ LM with the
copy head, with the selector's p(keep) as its copy prior, greedy: ``write_headlines(..., selector=...)``) and the copy
model alone (:data:`COPY`: the same checkpoint unguided, greedy, ``write_headlines(model, tok, bodies)``: what §8.4
calls the fix and the benchmark's row "shipped: ..., greedy") and the fine-tuned SmolLM2 (:data:`TUNED`:
SmolLM2-135M with the shipped LoRA adapter trained by chapter 8's δ recipe, greedy,
``write_headline(model, tok, body)`` with ``load_headline_model()`` of ``seqviz.summarize.smollm_headlines``: the
benchmark's row "SmolLM2-135M fine-tuned with the δ recipe (LoRA), greedy"). A new system is one entry in
:data:`HEADLINE_MAKERS` and its labels in the file, which :func:`load_labels` then requires for every article.
**One annotator labelled each headline once, by reading each whole article; there is no second annotator of any
headline, so there is no agreement figure**, and the rates carry that annotator's judgement in the hard cases (each
non-faithful label has a one-line reason in the file, and faithful labels in hard cases a note, so a reader can audit
them). The file's ``annotator`` says who labelled which systems: the copy model's headlines were labelled by a
different annotator from the first four systems', and the fine-tuned SmolLM2's by a third, each by the same written
rule, after reading the earlier labels.
:func:`system_headlines` regenerates the headlines and :func:`stale_headlines` says which stored ones no longer match
what the package decodes: a new checkpoint or adapter means relabelling (the file records the copy checkpoint's
and the adapter's SHA-256).

The API
-------
- :func:`load_labels` -> the validated file; :func:`label_counts` -> ``{system: {label: count}}``;
- :func:`faithfulness_rates` -> per system the count, share and Wilson 95 % interval of each label, and the paired
  bootstrap difference (over articles) of the shares for each pair of :data:`PAIRS` (the guided copy model against
  lead-5 and the reference, the fine-tuned SmolLM2 against the guided copy model and the copy model alone);
  :func:`rates_rows` flattens it to table rows;
- :func:`unsupported` (headline, article) -> the claims the article does not support (:class:`Claim`): numbers, names
  and polarity words, by the word lists below; :func:`proxy_agreement` -> its precision and recall for "unfaithful"
  against the hand labels, with the headlines it catches, misses and flags wrongly.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

__all__ = ["LABELS", "SYSTEMS", "GUIDED", "COPY", "TUNED", "PAIRS", "HEADLINE_MAKERS", "HeadlineInputs",
           "N_ARTICLES", "SELECTOR_K", "RULE", "DECISIONS", "LABELS_PATH", "load_labels", "labelled_articles",
           "system_headlines", "stale_headlines", "label_counts", "wilson", "faithfulness_rates", "rates_rows",
           "Claim", "unsupported", "proxy_agreement", "UP_WORDS", "DOWN_WORDS", "NEGATORS"]

#: the three labels, in the order the rule decides them (ungrammatical first: then faithfulness cannot be judged)
LABELS = ("faithful", "unfaithful", "ungrammatical")
#: the guided copy model's name in the labels and the rates
GUIDED = "guided copy"
#: the copy model alone (no selector prior), greedy: §8.4's fix, the benchmark's row "shipped: ..., greedy"
COPY = "copy"
#: SmolLM2-135M fine-tuned with the δ recipe (the shipped LoRA adapter, seqviz.summarize.smollm_headlines), greedy:
#: the benchmark's row "SmolLM2-135M fine-tuned with the δ recipe (LoRA), greedy"
TUNED = "fine-tuned SmolLM2"
#: the first N_ARTICLES articles of the test split, in the corpus's order (all business news: sorted by topic)
N_ARTICLES = 60
#: the selector's headline: its top-k words in article order, k = 3 as chapter 8 chooses it on validation (§8.3) and
#: prints it beside the other systems
SELECTOR_K = 3
#: the labels' file, shipped with the package
LABELS_PATH = Path(__file__).with_name("faithfulness_labels.json")

RULE = {
    "ungrammatical": "It cannot be read as a headline, so what it claims cannot be judged: a word list no syntax "
                     "joins (the selector's output, unless its words in their order read as a headline), a text cut "
                     "off inside a phrase, a subject or name with no predicate, a noun phrase that only names "
                     "things or whose nouns' relation must be guessed (a topic, not a headline), or a string from "
                     "which no reader could say what is claimed. Telegraphic headline style is fine, with at most a "
                     "function word supplied; a noun phrase headed by a news event ('French wine aid') is a "
                     "headline.",
    "unfaithful": "It can be read, and something it states is not supported by the article or contradicts it: a "
                  "wrong number, a wrong or invented entity, a reversed polarity, an event the article does not "
                  "report, or a claim the article does not make.",
    "faithful": "Everything it states is supported by the article (the whole body).",
}
DECISIONS = {
    "paraphrase": "A paraphrase or headline idiom that keeps the meaning is faithful; degree words ('surge', "
                  "'soar') must be supported by the article's figures.",
    "hedging": "Marked or attributed reports support the headline; a call, plan, possibility or speculation stated "
               "as done or decided is unfaithful; a headline weaker than the article is faithful.",
    "true but unimportant detail": "Faithful (support, not importance), unless the article says it has since "
                                   "reversed and the headline presents it as the news.",
    "entity in the wrong role": "Unfaithful (an agent for a patient, a bid's target as the bidder); a clipped name "
                                "that still picks out the article's entity is not a wrong entity.",
    "cut-off lead that is a clause": "Read as it stands and judged like any headline.",
    "noun phrase": "A headline when headed by a news event noun clearly related to its subject ('French wine aid'), "
                   "judged on that event; a topic (ungrammatical) when it only names things ('Bush budget "
                   "deficit') or its nouns' relation must be guessed.",
}


# ---- the systems and how each one's headlines are made ---------------------------------------------------------------
class HeadlineInputs:
    """What the headline makers of :data:`HEADLINE_MAKERS` read: the ``corpus``, the ``articles`` and their ``bodies``,
    and what more than one system needs, built once on first use: the ``selector`` (the keep/drop regression fitted
    on the training split), ``copy_model`` (``(model, tokenizer, info)`` of the shipped copy checkpoint) and
    ``tuned_model`` (``(model, tokenizer, info)`` of SmolLM2 with the shipped headline adapter)."""

    def __init__(self, corpus, articles):
        self.corpus, self.articles = corpus, list(articles)
        self.bodies = [a.body for a in self.articles]
        self._selector = self._copy_model = self._tuned_model = None

    @property
    def selector(self):
        if self._selector is None:
            from seqviz.summarize.compress import KeepDropRegression, WordFeatures

            self._selector = KeepDropRegression(WordFeatures(self.corpus.train)).fit(self.corpus.train)
        return self._selector

    @property
    def copy_model(self):
        if self._copy_model is None:
            from seqviz.summarize.copy_checkpoint import load_copy_summarizer

            self._copy_model = load_copy_summarizer()
        return self._copy_model

    @property
    def tuned_model(self):
        if self._tuned_model is None:
            from seqviz.summarize.smollm_headlines import load_headline_model

            self._tuned_model = load_headline_model()
        return self._tuned_model


def _reference(x: HeadlineInputs) -> list[str]:
    return [a.headline for a in x.articles]


def _lead(x: HeadlineInputs) -> list[str]:
    from seqviz.summarize.baselines import lead_baseline

    return [lead_baseline(b, 5) for b in x.bodies]


def _selector(x: HeadlineInputs) -> list[str]:
    return [x.selector.headline(b, SELECTOR_K) for b in x.bodies]


def _guided_copy(x: HeadlineInputs) -> list[str]:
    from seqviz.summarize.headlines import write_headlines

    model, tok, _ = x.copy_model
    return write_headlines(model, tok, x.bodies, selector=x.selector)


def _copy(x: HeadlineInputs) -> list[str]:
    from seqviz.summarize.headlines import write_headlines

    model, tok, _ = x.copy_model
    return write_headlines(model, tok, x.bodies)


def _tuned(x: HeadlineInputs) -> list[str]:
    from seqviz.summarize.smollm_headlines import write_headline

    model, tok, _ = x.tuned_model
    return [write_headline(model, tok, b) for b in x.bodies]


#: each labelled system -> the function that makes its headlines, one per article, from :class:`HeadlineInputs`, as
#: chapter 8 and the benchmark make them (decoded on one thread, greedy). The order is the tables' order. Adding a
#: system is one entry here, and its labels for every article in the labels file (:func:`load_labels` requires them)
HEADLINE_MAKERS = {"reference": _reference, "lead-5": _lead, "selector": _selector, GUIDED: _guided_copy,
                   COPY: _copy, TUNED: _tuned}
#: the systems labelled, for every article
SYSTEMS = tuple(HEADLINE_MAKERS)
#: the paired comparisons (system, other) that :func:`faithfulness_rates` bootstraps, each "system - other": the guided
#: copy model against the baselines, and the fine-tuned SmolLM2 against the two copy models (issue 38 §5)
PAIRS = ((GUIDED, "lead-5"), (GUIDED, "reference"), (TUNED, GUIDED), (TUNED, COPY))


# ---- the labels ------------------------------------------------------------------------------------------------------
def load_labels(path: str | Path | None = None) -> dict:
    """The labels file, checked: every article has all of :data:`SYSTEMS`, each with a non-empty ``headline``, a
    ``label`` from :data:`LABELS` and, unless faithful, a one-line ``reason``. Raises ValueError naming what is
    wrong."""
    path = Path(LABELS_PATH if path is None else path)
    if not path.is_file():
        raise FileNotFoundError(f"no faithfulness labels at {path}: reinstall seqviz (the file is package data)")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} holds a {type(data).__name__}: it must be an object with an 'articles' list, "
                         f"{{\"articles\": [{{\"index\": 0, \"headlines\": {{...}}}}, ...]}}")
    arts = data.get("articles")
    if not isinstance(arts, list) or not arts:
        raise ValueError(f"{path.name} holds no 'articles' list")
    for k, a in enumerate(arts):
        if not isinstance(a, dict):
            raise ValueError(f"{path.name}, article {k} is a {type(a).__name__}: each article is an object "
                             f"{{\"index\": {k}, \"headlines\": {{system: {{\"headline\": ..., \"label\": ...}}}}}}")
        where = f"{path.name}, article {a.get('index')!r}"
        heads = a.get("headlines")
        if not isinstance(heads, dict) or set(heads) != set(SYSTEMS):
            has = sorted(heads) if isinstance(heads, dict) else f"{heads!r:.40}, of type {type(heads).__name__}"
            raise ValueError(f"{where}: needs exactly the systems {SYSTEMS}, has {has}")
        for system, h in heads.items():
            if not isinstance(h, dict):
                raise ValueError(f"{where}, {system}: is a {type(h).__name__}; each system's entry is an object "
                                 f"{{\"headline\": ..., \"label\": ..., \"reason\": ...}}")
            if not isinstance(h.get("headline"), str) or not h["headline"].strip():
                raise ValueError(f"{where}, {system}: the headline text is missing")
            if h.get("label") not in LABELS:
                raise ValueError(f"{where}, {system}: label {h.get('label')!r} is not one of {LABELS}")
            if h["label"] != "faithful" and not (isinstance(h.get("reason"), str) and h["reason"].strip()):
                raise ValueError(f"{where}, {system}: a {h['label']} label needs a one-line reason")
    if [a.get("index") for a in arts] != list(range(len(arts))):
        raise ValueError(f"{path.name}: articles must be the test split's first {len(arts)}, indexed 0.. in order")
    return data


def labelled_articles(corpus=None) -> list:
    """The articles labelled: the first :data:`N_ARTICLES` of the BBC test split, in the corpus's order."""
    if corpus is None:
        from seqviz.data import load_corpus

        corpus = load_corpus("bbc")
    return list(corpus.test[:N_ARTICLES])


def system_headlines(corpus=None, articles=None, systems: Sequence[str] | None = None) -> dict[str, list[str]]:
    """Each system's headlines for ``articles`` (default :func:`labelled_articles`), made by its entry in
    :data:`HEADLINE_MAKERS` as chapter 8 makes them: the references, ``lead_baseline(body, 5)``, the keep/drop
    regression fitted on the training split (top :data:`SELECTOR_K`), the shipped copy checkpoint guided by that
    selector's prior and the same checkpoint alone, and SmolLM2 with the shipped headline adapter, all greedy, on one
    thread. ``systems``: only these (default :data:`SYSTEMS`)."""
    import torch

    from seqviz.data import load_corpus

    systems = SYSTEMS if systems is None else tuple(systems)
    unknown = [s for s in systems if s not in HEADLINE_MAKERS]
    if unknown:
        raise ValueError(f"no headline maker for {unknown}: the systems are {tuple(HEADLINE_MAKERS)} (add one to "
                         f"faithfulness.HEADLINE_MAKERS)")
    corpus = load_corpus("bbc") if corpus is None else corpus
    inputs = HeadlineInputs(corpus, labelled_articles(corpus) if articles is None else articles)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                                   # as the chapter decodes: one thread, same numbers
    try:
        out = {s: list(HEADLINE_MAKERS[s](inputs)) for s in systems}
    finally:
        torch.set_num_threads(threads)
    for s, heads in out.items():
        if len(heads) != len(inputs.articles) or not all(isinstance(h, str) for h in heads):
            raise ValueError(f"the headline maker of {s!r} gave {len(heads)} headlines for {len(inputs.articles)} "
                             f"articles: it must return one str per article, in order")
    return out


def stale_headlines(labels: dict | None = None, current: dict[str, list[str]] | None = None) -> list[str]:
    """Where the labelled headlines differ from what the package makes now (:func:`system_headlines`): one line per
    difference, for every system of :data:`SYSTEMS`, empty when the labels are current. A new copy checkpoint changes
    the guided and the copy model's headlines, a new adapter the fine-tuned SmolLM2's: relabel. A system missing
    from ``current`` is an error."""
    labels = load_labels() if labels is None else labels
    current = system_headlines() if current is None else current
    missing = [s for s in SYSTEMS if len(current.get(s, ())) < len(labels["articles"])]
    if missing:
        raise ValueError(f"no current headlines (one per labelled article) for {missing}: pass what "
                         f"system_headlines() returns, which makes every system of SYSTEMS")
    out = []
    for a in labels["articles"]:
        for system in SYSTEMS:
            stored, now = a["headlines"][system]["headline"], current[system][a["index"]]
            if stored != now:
                out.append(f"article {a['index']}, {system}: labelled {stored!r}, the package now makes {now!r}")
    return out


def _indicators(labels: dict) -> dict[str, dict[str, np.ndarray]]:
    """{system: {label: (N,) 0/1 array over the articles}}."""
    arts = labels["articles"]
    return {s: {lab: np.array([a["headlines"][s]["label"] == lab for a in arts], dtype=float) for lab in LABELS}
            for s in SYSTEMS}


def label_counts(labels: dict | None = None) -> dict[str, dict[str, int]]:
    """``{system: {label: count}}`` over the labelled articles."""
    labels = load_labels() if labels is None else labels
    return {s: {lab: int(v.sum()) for lab, v in d.items()} for s, d in _indicators(labels).items()}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's score interval for a proportion k/n (95 % for z = 1.96): sensible at 0/n and n/n, unlike the
    normal approximation."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int (the number of headlines), got {n!r}")
    if not 0 <= k <= n:
        raise ValueError(f"k must be a count between 0 and n = {n}, got {k!r}")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def faithfulness_rates(labels: dict | None = None, n_boot: int = 10_000, seed: int = 0) -> dict:
    """The shares of each label per system, with intervals, and the paired differences of :data:`PAIRS`: the guided
    copy model against lead-5 and the reference, the fine-tuned SmolLM2 against the guided copy model and the copy
    model alone. A "faithful" label is also a grammatical one (the rule decides "ungrammatical" first), so the
    "faithful" difference is the difference in headlines both grammatical and faithful.

    Returns ``{"n_articles": N, "systems": {system: {label: {"count", "share", "ci95"}}}, "paired": {"guided copy -
    lead-5" | ... | "fine-tuned SmolLM2 - copy": {label: {"delta", "ci95"}}}}``: ``ci95`` of a share is Wilson's;
    of a difference of shares, the 2.5th and 97.5th percentiles of ``n_boot`` paired bootstrap resamples of the
    articles (the same articles for both systems, the same resamples for every pair, ``seed``)."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive int (bootstrap resamples), got {n_boot!r}")
    labels = load_labels() if labels is None else labels
    ind = _indicators(labels)
    N = len(labels["articles"])
    systems = {s: {lab: {"count": int(v.sum()), "share": float(v.mean()), "ci95": wilson(int(v.sum()), N)}
                   for lab, v in d.items()} for s, d in ind.items()}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, N, size=(n_boot, N))                                   # (n_boot, N) resampled articles
    paired = {}
    for system, other in PAIRS:
        paired[f"{system} - {other}"] = {}
        for lab in LABELS:
            d = ind[system][lab] - ind[other][lab]                                 # (N,) per-article difference
            lo, hi = np.percentile(d[draws].mean(1), [2.5, 97.5])
            paired[f"{system} - {other}"][lab] = {"delta": float(d.mean()), "ci95": (float(lo), float(hi))}
    return {"n_articles": N, "systems": systems, "paired": paired}


def rates_rows(rates: dict | None = None) -> dict[str, list[dict]]:
    """:func:`faithfulness_rates` as flat table rows (shares in %, one decimal): ``{"rates": one row per system and
    label, "paired": one row per comparison and label}``, what the benchmark records and a chapter prints."""
    rates = faithfulness_rates() if rates is None else rates
    pct = lambda x: round(100 * x, 1)  # noqa: E731
    rows = [{"system": s, "label": lab, "count": r["count"], "of": rates["n_articles"], "share_pct": pct(r["share"]),
             "ci95_low_pct": pct(r["ci95"][0]), "ci95_high_pct": pct(r["ci95"][1])}
            for s, d in rates["systems"].items() for lab, r in d.items()]
    paired = [{"comparison": c, "label": lab, "delta_pct": pct(r["delta"]), "ci95_low_pct": pct(r["ci95"][0]),
               "ci95_high_pct": pct(r["ci95"][1])} for c, d in rates["paired"].items() for lab, r in d.items()]
    return {"rates": rows, "paired": paired}


# ---- the automatic proxy ---------------------------------------------------------------------------------------------
class Claim(NamedTuple):
    """One thing a headline states that the article does not support: ``kind`` "number", "name" or "polarity",
    the headline's ``text`` and the ``reason``."""
    kind: str
    text: str
    reason: str


#: words that say something went up or went well
UP_WORDS = frozenset("""rise rises rose risen rising up surge surges surged surging soar soars soared soaring jump
    jumps jumped climb climbs climbed gain gains gained boost boosts boosted grow grows grew grown growth increase
    increases increased add adds added rally rallies rallied recover recovers recovered recovery strong stronger
    outperform outperforms beat beats win wins won help helps helped expand expands expanded""".split())
#: words that say something went down or went badly
DOWN_WORDS = frozenset("""fall falls fell fallen falling down drop drops dropped slump slumps slumped slide slides slid
    plunge plunges plunged decline declines declined hit hits lose loses lost loss losses cut cuts cutting cutback
    cutbacks weak weaker weakness fail fails failed crisis recession slowdown slow slows slowed shed sheds axe axes
    axed axing sink sinks sank tumble tumbles tumbled poor worst lower lowered contraction shrink shrinks shrank slip
    slips slipped""".split())
#: words that turn the direction of a polarity word in the next NEGATION_WINDOW words ("failed to help", "escapes
#: recession", "on the brink of a recession", "despite a rise")
NEGATORS = frozenset("not no never without n't fail fails failed avoid avoids avoided escape escapes escaped brink "
                     "despite".split())
NEGATION_WINDOW = 4
_NUMBER_WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                             "thirteen fourteen fifteen sixteen seventeen eighteen nineteen "
                                             "twenty".split())}
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9, "tn": 1e12,
          "trillion": 1e12}
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?)(?:(k|m|bn|tn)\b|\s+(thousand|million|billion|trillion)\b)?"
                     r"(\s*%|\s+per\s*cent\b|\s+percent\b)?", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?(?:-[A-Za-z0-9]+(?:['’][A-Za-z]+)?)*")


def _check_text(text, what: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"the {what} must be a str, got {type(text).__name__}")
    if not text.strip():
        raise ValueError(f"the {what} is empty: unsupported() compares a headline's claims with its article's "
                         f"text, so pass both as non-empty strings")
    return text


def _numbers(text: str) -> list[tuple[str, float, bool]]:
    """(as written, value, is a percentage) for every number: digits with a scale ("70m", "$280bn", "2.5 trillion")
    and a percent sign or "per cent", and the number words zero..twenty."""
    out = []
    for m in _NUMBER.finditer(text):
        num, sfx, word, pct = m.groups()
        scale = _SCALE[(sfx or word).lower()] if (sfx or word) else 1.0
        out.append((m.group(0).strip(), round(float(num.replace(",", "")) * scale, 6), pct is not None))
    for w in re.findall(r"[A-Za-z]+", text):
        if w.lower() in _NUMBER_WORDS:
            out.append((w, float(_NUMBER_WORDS[w.lower()]), False))
    return out


def _plain(word: str) -> str:
    """A word without its possessive, lowercased: "BA's" -> "ba"."""
    return re.sub(r"['’]s?$", "", word.lower())


def _known_names(text: str) -> set[str]:
    """The words capitalised in ``text`` anywhere but a sentence's first word (plain forms): its names."""
    names = set()
    for sent in re.split(r"(?<=[.!?])\s+", text):
        for i, w in enumerate(_WORD.findall(sent)):
            if i > 0 and w[:1].isupper():
                names.add(_plain(w))
    return names


def _supported_name(name: str, article_words: set[str]) -> bool:
    """A name is in the article when an article word equals it (names of up to four letters: "UK", "Iraq") or
    starts with its first five letters ("Egyptian" ~ "Egypt", "Romeos" ~ "Romeo", "Germany" ~ "German")."""
    if len(name) <= 4:
        return name in article_words
    return any(w.startswith(name[:5]) for w in article_words)


def _direction(words: Sequence[str]) -> tuple[int, list[str]]:
    """(up words minus down words, the words counted), a word's direction turned by a negator in the
    NEGATION_WINDOW words before it."""
    score, seen = 0, []
    for i, w in enumerate(words):
        sign = 1 if w in UP_WORDS else -1 if w in DOWN_WORDS else 0
        if not sign:
            continue
        negator = [v for v in words[max(0, i - NEGATION_WINDOW):i] if v in NEGATORS or v.endswith("n't")]
        if negator:
            sign, w = -sign, f"{negator[-1]} .. {w}"
        score += sign
        seen.append(w)
    return score, seen


def _lower_words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in re.findall(r"[A-Za-z]+(?:['’]t)?", text)]


def unsupported(headline: str, article: str, reference: str | None = None) -> list[Claim]:
    """The claims of ``headline`` that ``article`` does not support, by three simple checks (empty: none found).

    - **numbers**: every number in the headline (digits with "m", "bn", "%" or "per cent", or the words zero to
      twenty) must occur in the article with the same value ("15%" = "15 per cent", "$280bn" = "280 billion",
      "three" = "3"; a percentage must be one in the article too);
    - **names**: every name in the headline must be in the article. A headline word is a name when it is
      capitalised and not the headline's first word, or when the article or the ``reference`` headline capitalises
      it other than first in a sentence (so a lowercased model output is checked too); function words ("The", "Mr")
      are not names. It is in the article when an article word equals it or shares its first five letters;
    - **polarity**: the headline's direction (:data:`UP_WORDS` minus :data:`DOWN_WORDS`, each turned by a
      :data:`NEGATORS` word just before it) must not be the opposite of the article's first sentence's.

    What it cannot see: an entity of the article in the wrong role, an event the article does not report, a claim
    about another part of the story, and polarity said with words outside the lists."""
    from seqviz.summarize.baselines import first_sentence
    from seqviz.summarize.compress import FUNCTION_WORDS

    headline, article = _check_text(headline, "headline"), _check_text(article, "article")
    claims = []
    values = {(v, pct) for _, v, pct in _numbers(article)}
    plain_values = {v for v, _ in values}
    for text, v, pct in _numbers(headline):
        if (v, True) not in values if pct else v not in plain_values:
            claims.append(Claim("number", text, f"the article has no {'percentage ' if pct else ''}{text}"))
    article_words = {_plain(p) for w in _WORD.findall(article) for p in [w, *w.split("-")]}
    names = _known_names(article) | (_known_names(". " + reference) if reference else set())
    for i, w in enumerate(_WORD.findall(headline)):
        p = _plain(w)
        if p in FUNCTION_WORDS or p in _NUMBER_WORDS or p.isdigit():
            continue
        if ((i > 0 and w[:1].isupper()) or p in names) and not _supported_name(p, article_words):
            claims.append(Claim("name", w, f"the article never names {w!r}"))
    head_dir, head_words = _direction(_lower_words(headline))
    lead_dir, lead_words = _direction(_lower_words(first_sentence(article)))
    if head_dir * lead_dir < 0:
        say = lambda d: "up" if d > 0 else "down"  # noqa: E731
        claims.append(Claim("polarity", " ".join(head_words),
                            f"the headline says {say(head_dir)} ({', '.join(head_words)}), the article's first "
                            f"sentence {say(lead_dir)} ({', '.join(lead_words)})"))
    return claims


def proxy_agreement(labels: dict | None = None, articles=None) -> dict:
    """How well :func:`unsupported` finds the hand-labelled unfaithful headlines (positive: label "unfaithful";
    the proxy says positive when it finds any claim), over every labelled headline (ungrammatical ones are
    negatives: the proxy cannot tell them apart).

    Returns ``{"counts": {"tp", "fp", "fn", "tn"}, "precision", "recall", "precision_ci95", "recall_ci95" (Wilson;
    None where undefined), "by_system": {system: counts}, "by_kind": {kind: headlines flagged}, "cases": [one dict
    per headline that is unfaithful or flagged: index, system, headline, label, reason, outcome ("caught", "missed",
    "false alarm"), proxy (its reasons)]}``. ``articles``: the labelled articles (default
    :func:`labelled_articles`)."""
    labels = load_labels() if labels is None else labels
    articles = labelled_articles() if articles is None else list(articles)
    if len(articles) < len(labels["articles"]):
        raise ValueError(f"one article per labelled article: {len(articles)} for {len(labels['articles'])}")
    counts = {s: Counter(tp=0, fp=0, fn=0, tn=0) for s in SYSTEMS}
    by_kind, cases = Counter(), []
    for a in labels["articles"]:
        art = articles[a["index"]]
        for s in SYSTEMS:
            h = a["headlines"][s]
            claims = unsupported(h["headline"], art.body, art.headline)
            truth, said = h["label"] == "unfaithful", bool(claims)
            outcome = {(True, True): "tp", (False, True): "fp", (True, False): "fn", (False, False): "tn"}[truth, said]
            counts[s][outcome] += 1
            by_kind.update({c.kind for c in claims})
            if truth or said:
                cases.append({"index": a["index"], "system": s, "headline": h["headline"], "label": h["label"],
                              "reason": h.get("reason", ""), "outcome": {"tp": "caught", "fn": "missed",
                                                                         "fp": "false alarm"}[outcome],
                              "proxy": "; ".join(c.reason for c in claims)})
    total = sum(counts.values(), Counter())
    tp, fp, fn = total["tp"], total["fp"], total["fn"]
    return {"counts": {k: total[k] for k in ("tp", "fp", "fn", "tn")},
            "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / (tp + fn) if tp + fn else None,
            "precision_ci95": wilson(tp, tp + fp) if tp + fp else None,
            "recall_ci95": wilson(tp, tp + fn) if tp + fn else None,
            "by_system": {s: dict(c) for s, c in counts.items()}, "by_kind": dict(by_kind), "cases": cases}
