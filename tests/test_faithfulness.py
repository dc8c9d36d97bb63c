"""Chapter 8's faithfulness labels, rates and automatic proxy (seqviz.summarize.faithfulness, issue 32 §5)."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from seqviz import results
from seqviz.summarize import COPY_SHA256
from seqviz.summarize import faithfulness as fa
from seqviz.summarize.smollm_headlines import ADAPTER_SHA256

#: the benchmark's row that the fine-tuned SmolLM2 system is (bench_summarize.py --smollm tuned)
TUNED_ROW = "SmolLM2-135M fine-tuned with the δ recipe (LoRA), greedy"

WPP = ("UK advertising giant WPP has posted larger-than-expected annual profits and predicted that it will outperform "
       "the market in 2005. Pre-tax profits rose 15% from a year ago to reach £546m ($1.04bn), ahead of average "
       "analysts' forecasts of £532m. Three of its units grew.")
BA = ("British Airways has blamed high fuel prices for a 40% drop in profits. The airline made a pre-tax profit of "
      "£75m. BA won two contracts in Egypt.")
SALES = ("The January sales have failed to help the UK High Street recover from a poor Christmas season, a survey has "
         "found. Sales rose by 0.5 per cent on a like-for-like basis.")


@pytest.fixture(scope="module")
def labels():
    return fa.load_labels()


@pytest.fixture(scope="module")
def raw():
    return json.loads(fa.LABELS_PATH.read_text(encoding="utf-8"))


# ---- the rule and the file -------------------------------------------------------------------------------------------
def test_the_rule_defines_each_label_and_the_hard_cases():
    assert fa.LABELS == ("faithful", "unfaithful", "ungrammatical") and set(fa.RULE) == set(fa.LABELS)
    for case in ("paraphrase", "hedging", "true but unimportant detail", "entity in the wrong role", "noun phrase"):
        assert case in fa.DECISIONS and len(fa.DECISIONS[case]) > 40, case
    assert "word list" in fa.RULE["ungrammatical"]                 # where the selector's output falls
    doc = fa.__doc__
    assert "One annotator" in doc and "no agreement figure" in doc


def test_every_article_has_every_system_labelled_by_the_rule(raw):
    arts = raw["articles"]
    assert len(arts) == fa.N_ARTICLES >= 60
    assert [a["index"] for a in arts] == list(range(fa.N_ARTICLES))
    assert "no second annotator" in raw["annotator"] and "agreement" in raw["annotator"]
    assert fa.SYSTEMS == tuple(fa.HEADLINE_MAKERS) == ("reference", "lead-5", "selector", fa.GUIDED, fa.COPY,
                                                       fa.TUNED)
    assert set(raw["systems"]) == set(fa.SYSTEMS)                   # each system's making is described in the file
    for a in arts:
        assert set(a["headlines"]) == set(fa.SYSTEMS)
        for system, h in a["headlines"].items():
            assert h["label"] in fa.LABELS, (a["index"], system, h["label"])
            assert h["headline"].strip(), (a["index"], system)
            if h["label"] != "faithful":
                assert h.get("reason", "").strip(), f"article {a['index']}, {system}: a {h['label']} label needs " \
                                                    f"a reason"


def test_a_labels_file_that_is_a_list_is_refused_with_a_clear_error(raw, tmp_path):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(raw["articles"]))                   # the articles without the object around them
    with pytest.raises(ValueError, match="holds a list: it must be an object with an 'articles' list"):
        fa.load_labels(path)


@pytest.mark.parametrize("break_it, message", [
    (lambda d: d["articles"][3]["headlines"]["lead-5"].update(label="wrong"), "is not one of"),
    (lambda d: d["articles"][1]["headlines"]["guided copy"].update(label="unfaithful", reason=""), "needs a one-line"),
    (lambda d: d["articles"][0]["headlines"].pop("selector"), "needs exactly the systems"),
    (lambda d: d["articles"][59]["headlines"].pop("copy"), "needs exactly the systems"),
    (lambda d: d["articles"][8]["headlines"]["copy"].update(label="ungrammatical", reason=" "), "needs a one-line"),
    (lambda d: d["articles"][30]["headlines"].pop("fine-tuned SmolLM2"), "needs exactly the systems"),
    (lambda d: d["articles"][3]["headlines"]["fine-tuned SmolLM2"].pop("reason"), "needs a one-line"),
    (lambda d: d["articles"][5]["headlines"]["reference"].update(headline="  "), "headline text is missing"),
    (lambda d: d["articles"].pop(2), "indexed 0.. in order"),
    # the docstring's promise, ValueError, for the wrong shapes too (these raised AttributeError)
    (lambda d: d.update(articles=[d["articles"][0]["headlines"]["lead-5"]["headline"]]), "each article is an object"),
    (lambda d: d["articles"][4]["headlines"].update(reference="BA profits fall"), "reference: is a str"),
    (lambda d: d["articles"][4].update(headlines=7), "has 7, of type int"),
])
def test_a_broken_labels_file_is_refused_with_a_clear_error(raw, tmp_path, break_it, message):
    bad = copy.deepcopy(raw)
    break_it(bad)
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=message):
        fa.load_labels(path)
    with pytest.raises(FileNotFoundError, match="package data"):
        fa.load_labels(tmp_path / "none.json")


# ---- the labelled headlines are what the corpus, the code and the shipped model give now -----------------------------
@pytest.fixture(scope="module")
def current():
    return fa.system_headlines()


def test_reference_and_lead_headlines_are_the_corpus_and_lead_baseline(labels):
    from seqviz.summarize.baselines import lead_baseline

    arts = fa.labelled_articles()
    for a, art in zip(labels["articles"], arts):
        assert a["headlines"]["reference"]["headline"] == art.headline
        assert a["headlines"]["lead-5"]["headline"] == lead_baseline(art.body, 5)


def test_the_selector_is_labelled_at_the_k_chosen_on_validation():
    """Chapter 8 (§8.3) picks the selector's k on the validation split and shows its headlines at that k."""
    from seqviz.data import load_corpus
    from seqviz.metrics import rouge_corpus
    from seqviz.summarize.compress import KeepDropRegression, WordFeatures, select_words

    corpus = load_corpus("bbc")
    sel = KeepDropRegression(WordFeatures(corpus.train)).fit(corpus.train)
    refs, scores = [a.headline for a in corpus.valid], [sel.scores(a.body) for a in corpus.valid]
    curve = {k: rouge_corpus(refs, [select_words(w, p, k) for w, p in scores])["rougeL"] for k in range(2, 9)}
    assert fa.SELECTOR_K == max(curve, key=curve.get), curve


def test_labelled_headlines_are_what_the_package_decodes_now(labels, current):
    stale = fa.stale_headlines(labels, current)
    assert labels["guided_checkpoint_sha256"] == COPY_SHA256, (
        "the copy checkpoint changed since the headlines were labelled: relabel faithfulness_labels.json (decode "
        "with faithfulness.system_headlines(), label the new guided headlines by the rule, rerun "
        "bench/bench_summarize.py --faithfulness)")
    assert labels["tuned_adapter_sha256"] == ADAPTER_SHA256, (
        "the SmolLM2 headline adapter changed since its headlines were labelled: relabel the fine-tuned SmolLM2's "
        "headlines in faithfulness_labels.json (faithfulness.system_headlines(systems=[faithfulness.TUNED])), then "
        "rerun bench/bench_summarize.py --faithfulness")
    assert not stale, ("the labelled headlines are not what the package makes now: relabel them "
                       "(faithfulness.system_headlines(), then bench/bench_summarize.py --faithfulness):\n"
                       + "\n".join(stale[:10]))


def test_a_changed_headline_is_reported_as_stale(labels, current):
    changed = copy.deepcopy(current)
    changed[fa.GUIDED][7] = "Something else entirely"
    changed[fa.COPY][41] = "Inbev buys Sun Interbrew stake"
    changed[fa.TUNED][59] = "World leaders gather in Davos"
    assert fa.stale_headlines(labels, changed) == [
        f"article 7, {fa.GUIDED}: labelled {labels['articles'][7]['headlines'][fa.GUIDED]['headline']!r}, the "
        f"package now makes 'Something else entirely'",
        f"article 41, {fa.COPY}: labelled {labels['articles'][41]['headlines'][fa.COPY]['headline']!r}, the "
        f"package now makes 'Inbev buys Sun Interbrew stake'",
        f"article 59, {fa.TUNED}: labelled {labels['articles'][59]['headlines'][fa.TUNED]['headline']!r}, the "
        f"package now makes 'World leaders gather in Davos'"]
    del changed[fa.COPY]
    with pytest.raises(ValueError, match=r"no current headlines .* for \['copy'\]"):
        fa.stale_headlines(labels, changed)
    changed[fa.COPY] = current[fa.COPY]
    changed[fa.TUNED] = current[fa.TUNED][:30]                          # half of them: as bad as none
    with pytest.raises(ValueError, match=r"no current headlines .* for \['fine-tuned SmolLM2'\]"):
        fa.stale_headlines(labels, changed)


def test_the_copy_system_is_the_benchmarks_unguided_greedy_row(labels, current):
    """'copy' is what bench_summarize.py's row "shipped: ..., greedy" decodes: write_headlines on the shipped
    checkpoint with no selector prior (its own call here, not system_headlines'), and it is not the guided system."""
    import torch

    from seqviz.summarize.copy_checkpoint import load_copy_summarizer
    from seqviz.summarize.headlines import write_headlines

    model, tok, _ = load_copy_summarizer()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        bench = write_headlines(model, tok, [a.body for a in fa.labelled_articles()])
    finally:
        torch.set_num_threads(threads)
    assert [a["headlines"][fa.COPY]["headline"] for a in labels["articles"]] == bench == current[fa.COPY]
    assert sum(c != g for c, g in zip(current[fa.COPY], current[fa.GUIDED])) > fa.N_ARTICLES / 2


def test_the_fine_tuned_smollm_system_is_the_benchmarks_greedy_row(labels, current):
    """'fine-tuned SmolLM2' is write_headline (greedy) on load_headline_model(), one thread (its own call here on the
    first articles, not system_headlines'), and what bench_summarize.py --smollm tuned records as its greedy row."""
    import torch

    from seqviz.summarize.smollm_headlines import load_headline_model, write_headline

    stored = [a["headlines"][fa.TUNED]["headline"] for a in labels["articles"]]
    assert stored == current[fa.TUNED]
    model, tok, _ = load_headline_model()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        own = [write_headline(model, tok, a.body) for a in fa.labelled_articles()[:3]]
    finally:
        torch.set_num_threads(threads)
    assert own == stored[:3]
    rows = {r["name"]: r for r in (results.read_results("summarize") or {}).get("rows", [])}
    assert TUNED_ROW in rows, f"no row {TUNED_ROW!r} in summarize.json: run bench/bench_summarize.py --smollm tuned"
    assert rows[TUNED_ROW]["headlines"][:fa.N_ARTICLES] == stored
    assert sum(t != g for t, g in zip(current[fa.TUNED], current[fa.GUIDED])) > fa.N_ARTICLES * 0.9


def test_a_new_system_is_one_headline_maker_and_its_labels(raw, tmp_path, monkeypatch):
    """A seventh system (e.g. the fine-tuned SmolLM2 with beam search) is one entry in HEADLINE_MAKERS:
    system_headlines makes it, load_labels then requires its labels in every article, stale_headlines and the rates
    cover it."""
    monkeypatch.setitem(fa.HEADLINE_MAKERS, "first word", lambda x: [b.split()[0] for b in x.bodies])
    monkeypatch.setattr(fa, "SYSTEMS", tuple(fa.HEADLINE_MAKERS))
    made = fa.system_headlines(systems=["first word", "lead-5"])
    assert list(made) == ["first word", "lead-5"] and made["first word"][0] == "British"
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="needs exactly the systems"):            # no labels for it yet
        fa.load_labels(path)
    grown = copy.deepcopy(raw)
    for a, h in zip(grown["articles"], made["first word"]):
        a["headlines"]["first word"] = {"headline": h, "label": "ungrammatical", "reason": "one word"}
    path.write_text(json.dumps(grown))
    labels = fa.load_labels(path)
    now = {s: [a["headlines"][s]["headline"] for a in raw["articles"]] for s in raw["systems"]}
    assert fa.stale_headlines(labels, {**now, "first word": made["first word"]}) == []
    assert fa.stale_headlines(labels, {**now, "first word": ["Bad"] + made["first word"][1:]})[0].startswith(
        "article 0, first word: labelled 'British'")
    assert fa.label_counts(labels)["first word"]["ungrammatical"] == fa.N_ARTICLES
    with pytest.raises(ValueError, match=r"no headline maker for \['smollm'\]"):
        fa.system_headlines(systems=["smollm"])
    monkeypatch.setitem(fa.HEADLINE_MAKERS, "first word", lambda x: ["one headline"])
    with pytest.raises(ValueError, match="one str per article"):
        fa.system_headlines(systems=["first word"])


# ---- rates -----------------------------------------------------------------------------------------------------------
def test_rates_are_the_counts_in_the_file(raw, labels):
    rates = fa.faithfulness_rates(labels, n_boot=2000)
    N = len(raw["articles"])
    assert rates["n_articles"] == N
    for system in fa.SYSTEMS:
        counted = {lab: sum(a["headlines"][system]["label"] == lab for a in raw["articles"]) for lab in fa.LABELS}
        assert fa.label_counts(labels)[system] == counted
        for lab in fa.LABELS:
            r = rates["systems"][system][lab]
            assert r["count"] == counted[lab] and r["share"] == pytest.approx(counted[lab] / N)
            assert r["ci95"] == pytest.approx(fa.wilson(counted[lab], N))
            assert r["ci95"][0] <= r["share"] <= r["ci95"][1]
    # the comparisons: the guided copy model against the baselines, the fine-tuned SmolLM2 against both copy
    # models
    assert list(rates["paired"]) == ["guided copy - lead-5", "guided copy - reference",
                                     "fine-tuned SmolLM2 - guided copy", "fine-tuned SmolLM2 - copy"]
    for system, other in fa.PAIRS:
        for lab in fa.LABELS:
            d = rates["paired"][f"{system} - {other}"][lab]
            assert d["delta"] == pytest.approx(rates["systems"][system][lab]["share"]
                                               - rates["systems"][other][lab]["share"])
            assert d["ci95"][0] <= d["delta"] <= d["ci95"][1]
    assert fa.faithfulness_rates(labels, n_boot=2000)["paired"] == rates["paired"]     # seeded


def test_wilson_interval_known_values():
    assert fa.wilson(0, 60) == pytest.approx((0.0, 3.8416 / 60 / (1 + 3.8416 / 60)))
    # by hand: centre (1/3 + z²/120) / (1 + z²/60) = 0.34336, half-width 1.96 sqrt(2/9/60 + z²/14400) / 1.06403
    # = 0.11607, z = 1.96
    assert fa.wilson(20, 60) == pytest.approx((0.2273, 0.4594), abs=1e-4)
    lo, hi = fa.wilson(60, 60)
    assert hi == pytest.approx(1.0) and lo == pytest.approx(1 - 3.8416 / 60 / (1 + 3.8416 / 60))
    with pytest.raises(ValueError, match="positive int"):
        fa.wilson(0, 0)
    with pytest.raises(ValueError, match="between 0 and n"):
        fa.wilson(7, 5)
    with pytest.raises(ValueError, match="n_boot"):
        fa.faithfulness_rates(n_boot=0)


def test_rates_rows_are_flat_and_in_percent(labels):
    rates = fa.faithfulness_rates(labels, n_boot=500)
    rows = fa.rates_rows(rates)
    assert len(rows["rates"]) == len(fa.SYSTEMS) * len(fa.LABELS) and len(rows["paired"]) == 4 * len(fa.LABELS)
    r = next(r for r in rows["rates"] if r["system"] == fa.GUIDED and r["label"] == "unfaithful")
    assert r["count"] == rates["systems"][fa.GUIDED]["unfaithful"]["count"] and r["of"] == fa.N_ARTICLES
    assert r["share_pct"] == round(100 * rates["systems"][fa.GUIDED]["unfaithful"]["share"], 1)
    assert all(not isinstance(v, (dict, list, tuple)) for row in rows["rates"] + rows["paired"] for v in row.values())


def test_recorded_figures_are_the_labels_now(labels):
    """The benchmark's record (bench_summarize.py --faithfulness) is what the labels give: relabelling without
    rerunning the benchmark fails here."""
    rec = (results.read_results("summarize") or {}).get("faithfulness")
    assert rec, "no 'faithfulness' in the recorded summarize.json: run bench/bench_summarize.py --faithfulness"
    assert rec["rates"] == fa.rates_rows(fa.faithfulness_rates(labels))["rates"]
    p = fa.proxy_agreement(labels)
    assert rec["paired"] == fa.rates_rows(fa.faithfulness_rates(labels))["paired"]
    assert {k: rec["proxy"][0][k] for k in p["counts"]} == p["counts"] and rec["proxy"][0]["system"] == "all systems"
    assert rec["setup"][0]["guided_checkpoint_sha256"] == labels["guided_checkpoint_sha256"]
    assert rec["setup"][0]["tuned_adapter_sha256"] == labels["tuned_adapter_sha256"]


# ---- the proxy -------------------------------------------------------------------------------------------------------
def test_a_number_the_article_does_not_have_is_found():
    claims = fa.unsupported("WPP profits surge 25%", WPP)
    assert [(c.kind, c.text) for c in claims] == [("number", "25%")]
    assert fa.unsupported("WPP profits rise 15 per cent", WPP) == []          # "15%" in the article
    assert fa.unsupported("January sales: 0.5% like-for-like", SALES) == []   # "0.5 per cent" in the article
    assert fa.unsupported("WPP makes £546 million", WPP) == []                # "£546m"
    assert [c.text for c in fa.unsupported("WPP makes £546bn", WPP)] == ["546bn"]   # a thousand times too much
    assert fa.unsupported("3 WPP units grew", WPP) == []                      # "Three"
    assert [c.kind for c in fa.unsupported("WPP: 2005 profits seen at 15", WPP)] == []
    assert [c.text for c in fa.unsupported("WPP grows 2% in 2005", WPP)] == ["2%"]   # no 2 per cent in it
    assert [c.text for c in fa.unsupported("Profits rise 40", WPP)] == ["40"]


def test_a_percentage_must_be_a_percentage_in_the_article():
    """'three' in the article supports the count 3, not 'rise 3%': the value alone is not enough."""
    three = "Prices rose by three this year, the shop said."
    claims = fa.unsupported("Prices rise 3%", three)
    assert [(c.kind, c.text, c.reason) for c in claims] == [("number", "3%", "the article has no percentage 3%")]
    assert fa.unsupported("Prices rise 3", three) == []                       # the count is supported
    assert fa.unsupported("Prices rise 3%", "Prices rose by 3 per cent this year.") == []
    assert fa.unsupported("Prices rise three per cent", "Prices rose 3% this year.") == []


def test_a_name_the_article_does_not_have_is_found_even_lowercased():
    claims = fa.unsupported("BA profits hit by Ryanair fares", BA)
    assert [(c.kind, c.text) for c in claims] == [("name", "Ryanair")]
    # a model's lowercased output: "lufthansa" is a name because the reference capitalises it
    assert [c.text for c in fa.unsupported("Fuel prices hit lufthansa", BA, "Fuel hits Lufthansa and BA")] == [
        "lufthansa"]
    assert fa.unsupported("Fuel prices hit lufthansa", BA) == []           # nothing says it is a name
    assert fa.unsupported("BA awarded Egyptian contracts", BA) == []          # Egyptian ~ Egypt
    assert fa.unsupported("British Airways blames fuel", BA) == []


def test_a_reversed_polarity_is_found_and_a_faithful_paraphrase_is_not():
    claims = fa.unsupported("Profits hit by UK WPP", WPP)
    assert [c.kind for c in claims] == ["polarity"] and "outperform" in claims[0].reason
    assert fa.unsupported("Ad firm WPP's profits surge 15%", WPP) == []
    assert fa.unsupported("High fuel costs hit BA's profits", BA) == []    # paraphrase, same direction
    # negation turns a word round: "fail to boost" agrees with "failed to help"; "sales help" does not
    assert fa.unsupported("Sales 'fail to boost High Street'", SALES) == []
    assert [c.kind for c in fa.unsupported("UK sales help High Street", SALES)] == ["polarity"]
    japan = "Japan's economy teetered on the brink of a technical recession in the three months to September."
    assert fa.unsupported("Japan narrowly escapes recession", japan) == []
    assert [c.kind for c in fa.unsupported("Japan's economy hit by recession", japan)] == ["polarity"]


def test_the_proxy_rejects_empty_input_clearly():
    with pytest.raises(ValueError, match="headline is empty"):
        fa.unsupported("  ", WPP)
    with pytest.raises(ValueError, match="article is empty"):
        fa.unsupported("WPP profits rise", "")
    with pytest.raises(TypeError, match="headline must be a str"):
        fa.unsupported(None, WPP)


def test_proxy_agreement_counts_every_labelled_headline(labels):
    p = fa.proxy_agreement(labels)
    c = p["counts"]
    n_unfaithful = sum(fa.label_counts(labels)[s]["unfaithful"] for s in fa.SYSTEMS)
    assert sum(c.values()) == len(fa.SYSTEMS) * fa.N_ARTICLES and c["tp"] + c["fn"] == n_unfaithful
    assert p["precision"] == pytest.approx(c["tp"] / (c["tp"] + c["fp"]))
    assert p["recall"] == pytest.approx(c["tp"] / n_unfaithful)
    assert sum(s["tp"] for s in p["by_system"].values()) == c["tp"]
    assert len(p["cases"]) == c["tp"] + c["fp"] + c["fn"]
    assert {x["outcome"] for x in p["cases"]} <= {"caught", "missed", "false alarm"}
    assert all(x["proxy"] for x in p["cases"] if x["outcome"] != "missed")
    with pytest.raises(ValueError, match="one article per labelled article"):
        fa.proxy_agreement(labels, fa.labelled_articles()[:3])
