"""The recorded benchmark results: bench/_results.py writes src/seqviz/recorded/*.json (package data); the package
reads them back (seqviz.results: tables; seqviz.recap: the chapters' ladder) wherever it is installed, for the Measured
appendix (book/measured.ipynb), the chapters and their recaps. The readers and the HTML they make are tested on
results files written here, and the chapters' stored recaps against the committed files."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from seqviz import recap, results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "src" / "seqviz" / "recorded"  # the committed results
sys.path.insert(0, str(ROOT / "bench"))
import _results  # noqa: E402  (the writing side; bench/ is not a package)

WINDOW = {"machine": {"date": "2026-11-23T10:00:00+00:00", "cpu": "Test CPU", "cores": 2, "torch": "2.13.0+cpu",
                      "threads": 2, "cpu_capability": "AVX2"},
          "rows": [{"name": "KN 4-gram", "size": 1234567, "test": 145.25, "best valid": float("nan")},
                   {"name": "window LM <b>", "size": 2_000_000, "test": 171.5, "steps": "-"}],
          "published": {"KN 5-gram, Mikolov et al. 2011 (test)": 141.2}}


@pytest.fixture
def res_dir(tmp_path):
    """tmp/results with two results files."""
    root = tmp_path / "results"
    root.mkdir()
    (root / "window.json").write_text(json.dumps(WINDOW))
    (root / "widgets.json").write_text(json.dumps({"machine": WINDOW["machine"], "latency_ms": {"heatmap": 3.25},
                                                   "sizes": {"4x4x64": [{"bytes": 65536}]}}))
    return root


def test_files_read_in_lecture_order_and_missing_benches_named(res_dir):
    assert list(results.all_results(res_dir)) == ["window", "widgets"]
    assert results.read_results("ngram", res_dir) is None
    assert results.missing(res_dir) == [f"python bench/bench_{n}.py" for n in results.BENCHES
                                        if n not in ("window", "widgets")]


def test_every_bench_has_its_results_file_and_only_benches_do():
    """BENCHES names every bench/bench_NAME.py, and the package ships one recorded file for each, and no other (a
    quick run writes to _build/bench/, not into the package)."""
    benches = {p.stem[len("bench_"):] for p in (ROOT / "bench").glob("bench_*.py")}
    assert set(results.BENCHES) == benches
    assert {p.stem for p in RESULTS.glob("*.json")} == benches
    assert results.missing() == []
    assert results.results_dir() == RESULTS  # the editable install reads the repository's own files
    with pytest.raises(ValueError, match="no bench is called 'atention'"):
        results.read_results("atention")


def test_the_wheel_ships_the_recorded_results():
    """What a Colab reader installs holds the files the chapters read (pyproject's package-data)."""
    import tomllib
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["seqviz"]
    assert "recorded/*.json" in data


def test_backticks_in_a_results_file_become_code_not_text():
    """A bench writes a preset as `full`; the table shows it as code, never a raw backtick (HTML and PDF)."""
    out = results.html_table([{"preset": "`full`", "note": "the `ptb` run, <b> is text", "odd": "a ` b"}],
                             ["preset", "note", "odd"])
    assert "<td><code>full</code></td>" in out and "the <code>ptb</code> run, &lt;b&gt; is text" in out
    assert "`" not in out


def test_tables_show_the_files_numbers_escaped(res_dir):
    html = dict(results.sections(results.read_results("window", res_dir)))
    rows = html["rows"]
    assert "1,234,567" in rows and "145.2" in rows and "171.5" in rows
    assert "window LM &lt;b&gt;" in rows and "<b>" not in rows  # names are text, never markup
    assert "<td>-</td>" in rows  # NaN and missing cells
    assert "141.2" in html["published"]
    other = dict(results.sections(results.read_results("widgets", res_dir)))
    assert "3.25" in other["latency_ms"] and "65,536" in other["sizes: 4x4x64"]


def test_a_changed_file_changes_the_tables(res_dir):
    before = results.sections(results.read_results("window", res_dir))
    changed = json.loads(json.dumps(WINDOW))
    changed["rows"][0]["test"] = 139.75
    (res_dir / "window.json").write_text(json.dumps(changed))
    after = results.sections(results.read_results("window", res_dir))
    assert before != after and "139.8" in dict(after)["rows"]


def test_ladder_has_ours_and_published_in_order(res_dir):
    rungs = results.ladder(results.all_results(res_dir))
    assert [(r["model"], r["perplexity"], r["source"]) for r in rungs] == [
        ("KN 4-gram", 145.25, "ours"), ("window LM <b>", 171.5, "ours"),
        ("KN 5-gram, Mikolov et al. 2011 (test)", 141.2, "published")]
    assert {r["corpus"] for r in rungs} == {"PTB test"}


def test_machine_line_says_what_the_figures_depend_on(res_dir):
    line = results.machine_line(results.read_results("window", res_dir))
    assert "Test CPU" in line and "2 cores" in line and "torch 2.13.0+cpu" in line and "2 threads" in line


def test_broken_file_says_which_bench_rewrites_it(res_dir):
    (res_dir / "ngram.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"bench_ngram\.py"):
        results.read_results("ngram", res_dir)


def test_html_table_rejects_what_is_not_a_table():
    with pytest.raises(TypeError, match="list of dicts or a dict"):
        results.html_table([1, 2])
    assert results.fmt(float("nan")) == "-" and results.fmt(12345.6) == "12,346" and results.fmt(0.01234) == "0.0123"


def test_write_results_records_the_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(_results, "ROOT", tmp_path)
    monkeypatch.setattr(_results, "RESULTS", tmp_path / "recorded")
    monkeypatch.setattr(_results, "SCRATCH", tmp_path / "_build" / "bench")
    monkeypatch.setattr(sys, "argv", ["/x/bench/bench_demo.py", "--quick"])
    path = _results.write_results("demo", {"rows": [{"name": "a", "test": 1.5}]})
    assert path == tmp_path / "_build" / "bench" / "demo.json"  # no bench's name: never into the package
    assert _results.write_results("window", {"rows": []}) == tmp_path / "recorded" / "window.json"
    data = json.loads(path.read_text())
    assert set(data["machine"]) >= {"date", "cpu", "cores", "torch", "threads"} and data["rows"][0]["test"] == 1.5
    assert data["machine"]["command"] == "python bench/bench_demo.py --quick"  # a quick run says so on the page
    assert "by the command python bench/bench_demo.py --quick" in results.machine_line(data)
    assert _results.read_results("demo")["rows"][0]["test"] == 1.5  # read back from where it was written
    if hasattr(__import__("os"), "getloadavg"):  # the load at the start and the end of the run, both recorded
        assert len(data["machine"]["load"]) == 2 and all(x >= 0 for x in data["machine"]["load"])


def test_machine_line_flags_timings_from_a_busy_machine():
    quiet = {"machine": {"cores": 2, "load": [0.1, 0.4]}}
    busy = {"machine": {"cores": 2, "load": [0.2, 5.5]}}
    assert "load average 0.1 at the start, 0.4 at the end" in results.machine_line(quiet)
    assert "busy" not in results.machine_line(quiet)
    assert "a busy machine: its timings are pessimistic" in results.machine_line(busy)
    assert "load" not in results.machine_line({"machine": {"cores": 2}})  # files written before loads were recorded


def test_page_is_executed_at_every_build_and_reads_the_results():
    nb = json.loads((ROOT / "book" / "measured.ipynb").read_text())
    # Jupyter Book's cache keys on code cells only: a cached page would keep showing old JSON
    assert nb["metadata"]["mystnb"]["execution_mode"] == "force"
    src = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "results.all_results()" in src and "results.ladder(" in src
    # no number is typed into the page's prose
    prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert not re.search(r"\d+\.\d", prose), "a measured number was typed into the page"


def test_chapter_rungs_take_each_chapters_best_ptb_figure(res_dir):
    ngram = {"machine": WINDOW["machine"], "corpus": "PTB", "published": {"KN 5-gram (Mikolov et al. 2011)": 141.2},
             "rows": [{"model": "KN 5-gram", "test": 141.5}, {"model": "Laplace 3-gram", "test": 990.0}]}
    (res_dir / "ngram.json").write_text(json.dumps(ngram))
    rungs = recap.chapter_rungs(results.all_results(res_dir), upto="rnn")
    assert [r["chapter"] for r in rungs] == ["1 n-gram", "2 fixed window", "3 RNN"]
    assert (rungs[0]["model"], rungs[0]["perplexity"]) == ("KN 5-gram", 141.5)  # rows named by "model" work too
    assert (rungs[1]["model"], rungs[1]["perplexity"]) == ("window LM <b>", 171.5)  # not window.json's KN baseline
    assert rungs[0]["published"] == "KN 5-gram (Mikolov et al. 2011): 141.2"
    assert rungs[1]["published"] is None  # the same published figure (141.2) is listed once, at its first chapter
    assert rungs[2]["perplexity"] is None and rungs[2]["model"] == "not measured: python bench/bench_rnn.py"
    with pytest.raises(ValueError, match="upto must be one of"):
        recap.chapter_rungs({}, upto="attention")


def test_a_new_result_moves_the_recap(res_dir):
    before = recap.chapter_rungs(results.all_results(res_dir))
    better = json.loads(json.dumps(WINDOW))
    better["rows"].append({"name": "window LM, full", "test": 120.0})
    (res_dir / "window.json").write_text(json.dumps(better))
    after = recap.chapter_rungs(results.all_results(res_dir))
    assert before[1]["perplexity"] == 171.5 and (after[1]["model"], after[1]["perplexity"]) == ("window LM, full", 120.0)


def test_recap_reads_the_packaged_results_from_any_folder(tmp_path, monkeypatch):
    """A chapter run outside the repository (Colab: no bench/ anywhere) draws the same recap as in a clone."""
    import matplotlib

    matplotlib.use("Agg")
    alone = tmp_path / "colab"
    alone.mkdir()
    monkeypatch.chdir(alone)
    rows = recap.show_recap("window")
    assert rows == recap.chapter_rungs(results.all_results(RESULTS), "window")
    assert [r["chapter"] for r in rows] == ["1 n-gram", "2 fixed window"] and all(r["perplexity"] for r in rows)


def test_bench_results_reads_with_the_package_readers(res_dir):
    """bench/_results.py keeps the writing side and hands reading to seqviz.results, defaulting to its own folder."""
    for name in ("fmt", "html_table", "machine_line", "sections", "ladder", "plot_rungs"):
        assert getattr(_results, name) is getattr(results, name), name
    as_text = json.dumps  # the file's NaN is not equal to itself, its text is
    assert as_text(_results.read_results("window", res_dir)) == as_text(results.read_results("window", res_dir))
    assert as_text(results.read_results("window", res_dir)) == as_text(WINDOW)
    assert _results.all_results() == results.all_results(RESULTS) and "ngram" in _results.all_results()
    assert _results.missing(res_dir) == results.missing(res_dir)


# ---- the recaps stored in the chapters are the committed results, not older ones ------------------------------------
# The book renders each chapter's stored outputs (execution is off) and nbval ignores the recap cells' output (their
# plots differ by platform), so nothing else would notice a chapter whose recap was executed before a results file
# changed: the table a recap stored must be the table the committed recorded results make now.
#: a recap cell's call, with the chapter it stops at (none: every chapter)
RECAP_CALL = re.compile(r"show_recap\((?:upto=)?(?:\"(\w+)\")?\)")


def _stored_recaps():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            src = "".join(cell["source"])
            m = RECAP_CALL.search(src) if cell["cell_type"] == "code" else None
            if m:
                tables = ["".join(o["data"]["text/html"]) for o in cell.get("outputs", [])
                          if "text/html" in o.get("data", {}) and "<table" in "".join(o["data"]["text/html"])]
                yield pytest.param(m.group(1), tables, id=f"{path.stem}-cell{i}")


RECAPS = list(_stored_recaps())


def test_the_chapters_have_recaps_to_check():
    assert len(RECAPS) >= 5, f"found {len(RECAPS)} show_recap cells in notebooks/: the pattern no longer matches them"


@pytest.mark.parametrize("upto, stored", RECAPS)
def test_stored_recap_tables_match_the_committed_results(upto, stored):
    rungs = recap.chapter_rungs(results.all_results(RESULTS), upto)
    now = results.html_table(rungs, recap.RECAP_COLUMNS)
    assert stored, "the recap cell stored no table: re-execute the chapter"
    assert stored[-1].strip() == now.strip(), (
        f"the recap this chapter stored (up to {upto or 'the last chapter'}) is not what seqviz/recorded/*.json give "
        "now: "
        "re-execute the chapter (jupyter nbconvert --to notebook --execute --inplace notebooks/NN_name.ipynb)")


def _cells_reading_results():
    """(notebook cell id, when the cell ran, the results files it reads) for every chapter cell that reads
    the recorded results: by name (``read_results("NAME")``, ``bench_results("NAME")``) or through a recap (the ladder's files
    up to its chapter)."""
    ladder = list(recap.CHAPTERS)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            src = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
            names = re.findall(r"(?:read_results|bench_results)\(\"(\w+)\"", src)
            call = RECAP_CALL.search(src)
            if call:
                names += ladder[: ladder.index(call.group(1)) + 1] if call.group(1) else ladder
            if names:
                ran = cell["metadata"].get("execution", {}).get("iopub.execute_input")
                yield pytest.param(ran, sorted(set(names)), id=f"{path.stem}-cell{i}")


@pytest.mark.parametrize("ran, names", list(_cells_reading_results()))
def test_chapter_cells_ran_after_the_results_they_read(ran, names):
    """The book shows stored outputs and nbval ignores these cells' (their figures are platform-dependent plots and
    tables): a cell that reads recorded/NAME.json must have run after NAME.json was last measured."""
    import datetime
    assert ran, "no execution time stored: execute the chapter with `jupyter nbconvert --execute --inplace`"
    ran_at = datetime.datetime.fromisoformat(ran.replace("Z", "+00:00"))
    for name in names:
        figures = results.read_results(name, RESULTS)
        if figures is None:  # not measured on this checkout: the cell says so, and shows no figure that could be stale
            continue
        measured = figures["machine"]["date"]
        assert ran_at >= datetime.datetime.fromisoformat(measured), (
            f"this cell ran at {ran} but recorded/{name}.json was measured at {measured}: its stored output "
            "shows older figures; re-execute the chapter")


def test_a_long_cell_is_cut_and_says_how_much_is_left():
    """A stored beam search or curve in a results file shows its start, not thousands of numbers (page size, PDF)."""
    long = list(range(2000))
    html_out = results.html_table([{"name": "a", "trace": long}, {"name": "b", "trace": [1, 2]}])
    text = results.fmt(long)
    assert f"{text[:results.CELL_MAX]} … ({len(text) - results.CELL_MAX:,} more characters in the results file)" \
        in html_out
    assert "1,999" not in html_out and "<td>1, 2</td>" in html_out
