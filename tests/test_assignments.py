"""The graded assignments (scripts/assignments.py, `make assignments`; issue 40 item 6): built from the chapters'
build-it exercises in otter-grader's format, they give the solutions full marks, the student notebook as issued zero,
and each known wrong answer (seqviz.exercises.mistakes) zero on its own question and full marks on every other; what
students get (the student notebooks, the student book's sources, and the built student book where it is built)
holds no solution code.

Grading runs two ways: one chapter end to end with `otter run` (the notebook executed in a kernel, as Gradescope or a
local grader runs it), and every chapter here, in this process, with the autograder zip's own test files applied to
the globals the notebook leaves (scripts/assignments.py: notebook_env, autograder_tests, grade), which is what
otter does after executing a submission; the ~70 wrong answers are graded that way, each in a copy of the
solutions' globals with the question's function replaced."""
from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import assignments as A  # noqa: E402

from seqviz.exercises.mistakes import known_mistakes  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return A.build_all(tmp_path_factory.mktemp("assignments"))


@pytest.fixture(scope="module")
def graded(built):
    """chapter -> (its Built, the zip's tests, the solutions' globals)."""
    return {b.chapter: (b, A.autograder_tests(b.autograder), A.notebook_env(b.solutions)) for b in built}


def _full(scores: dict[str, float]) -> bool:
    return all(v == pytest.approx(A.POINTS) for v in scores.values())


def test_every_chapter_has_an_assignment(built):
    """Discovered from the notebooks: each "# Solution N" cell that asserts a check, paired with its stub; every
    chapter has at least one (issue 40, item 3)."""
    with_exercises = [ch.stem for ch in A.chapters() if A.discover(ch)]
    assert [b.chapter for b in built] == with_exercises
    assert with_exercises == [ch.stem for ch in A.chapters()] and len(with_exercises) == 8   # every chapter has one
    for b in built:
        assert b.student.is_file() and b.solutions.is_file() and b.autograder.is_file()
        assert [e.question for e in b.exercises] == [f"exercise_{e.number}" for e in b.exercises]


def test_each_question_has_its_public_check_and_a_hidden_test_per_named_mistake(graded):
    for chapter, (b, tests, _) in graded.items():
        assert set(tests) == {e.question for e in b.exercises}, chapter
        for e in b.exercises:
            cases = tests[e.question].test_cases
            public = [tc.body.test_func.__name__ for tc in cases if not tc.hidden]
            hidden = sorted(tc.body.test_func.__name__ for tc in cases if tc.hidden)
            assert public == [f"test_{e.fn}"], (chapter, public)
            assert hidden == sorted(f"test_{m.name}" for m in known_mistakes(e.check) if m.named), (chapter, hidden)
            assert tests[e.question].all_or_nothing


def test_the_solutions_score_full_marks_and_the_student_notebook_zero(graded):
    for chapter, (b, tests, solutions) in graded.items():
        assert _full(A.grade(tests, solutions)), chapter
        issued = A.grade(tests, A.notebook_env(b.student))
        assert set(issued.values()) == {0.0}, (chapter, issued)


def test_each_known_wrong_answer_loses_its_questions_points_and_only_those(graded):
    seen = 0
    for chapter, (b, tests, solutions) in graded.items():
        for e in b.exercises:
            for m in known_mistakes(e.check):
                scores = A.grade(tests, {**solutions, e.fn: m.fn})
                assert scores[e.question] == 0.0, (chapter, e.question, m.name, scores)
                assert _full({q: v for q, v in scores.items() if q != e.question}), (chapter, m.name, scores)
                seen += 1
    assert seen >= 60


def test_a_named_mistake_is_told_by_its_hidden_test(graded):
    """The grading report names the typical mistake: its hidden test fails with the mistake and the check's words."""
    b, tests, solutions = graded["03_rnn"]
    e = b.exercises[0]
    m = next(m for m in known_mistakes(e.check) if m.name == "no_activation")
    test = tests[e.question]
    test.run({**solutions, e.fn: m.fn})
    failed = {r.test_case.body.test_func.__name__: r.message for r in test.test_case_results if not r.passed}
    assert set(failed) == {f"test_{e.fn}", "test_no_activation"}, failed
    assert "the activation tanh left out: h_t equals U h_{t-1} + W x_t" in failed["test_no_activation"]


def test_otter_run_grades_a_chapter_end_to_end(built, tmp_path):
    """`otter run` (the notebook executed in a kernel, then the zip's tests): solutions 1/1, the stub 0/1."""
    b = next(b for b in built if b.chapter == "03_rnn")
    for notebook, want in ((b.solutions, 1.0), (b.student, 0.0)):
        out = tmp_path / notebook.parent.name
        out.mkdir()
        run = subprocess.run([sys.executable, "-m", "otter", "run", "--no-logo", "-a", str(b.autograder), "-o",
                              str(out), str(notebook)], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        results = json.loads((out / "results.json").read_text())
        scores = {t["name"]: t.get("score") for t in results["tests"] if "score" in t}
        assert scores == {e.question: pytest.approx(want) for e in b.exercises}, results


def _leaks(text: str, exercises) -> list[str]:
    return [f"{e.chapter} exercise {e.number}: {line!r}" for e in exercises for line in A.solution_lines(e)
            if line in text]


def _lecture_text(path) -> str:
    """Everything a chapter shows outside its solution cells: sources and text outputs (a listing of the package's
    code is a Markdown output)."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    parts = []
    for c in nb["cells"]:
        if A.is_solution(c):
            continue
        parts.append(A._source(c))
        for o in c.get("outputs", []):
            data = o.get("data", {})
            for key in ("text/markdown", "text/plain"):
                parts.append("".join(data.get(key, "")))
            parts.append("".join(o.get("text", "")))
    return "\n".join(parts)


def test_the_student_notebooks_hold_no_solution_code(built):
    for b in built:
        text = b.student.read_text(encoding="utf-8")
        nb = json.loads(text)
        assert not _leaks("\n".join(A._source(c) for c in nb["cells"]) + json.dumps(nb["metadata"]), b.exercises)
        assert "NotImplementedError" in text
        # what the test looks for is there to find: every exercise has solution lines, and the autograder's copy
        # (which keeps the solutions) holds each of them
        solved = b.solutions.read_text(encoding="utf-8").replace("\\n", "\n").replace('\\"', '"')
        for e in b.exercises:
            assert A.solution_lines(e) and len(_leaks(solved, [e])) == len(A.solution_lines(e)), (b.chapter, e.fn)


def test_the_student_book_holds_no_solutions(tmp_path):
    """The sources `make book-student` builds from: no solution cell, no answer, no solution code line; the built
    student book too, where it has been built (_build/student/html)."""
    src = A.prepare_student_book(tmp_path / "src")
    exercises = [e for ch in A.chapters() for e in A.discover(ch)]
    solutions = answers = 0
    for path in sorted(src.rglob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert not [c for c in nb["cells"] if A.is_solution(c)], path
        assert not _leaks("\n".join(A._source(c) for c in nb["cells"]), exercises), path
        original = json.loads((A.ROOT / path.relative_to(src)).read_text(encoding="utf-8"))
        solutions += sum(c["cell_type"] == "code" and A.is_solution(c) for c in original["cells"])
        answers += sum(c["cell_type"] == "markdown" and A.is_solution(c) for c in original["cells"])
        kept = {A._source(c) for c in nb["cells"]}
        for c in original["cells"]:                          # nothing a reader sees is taken out but solutions
            assert A._source(c) in kept or A.is_solution(c) or "remove-cell" in c["metadata"].get("tags", []), c
    assert solutions >= 30 and answers >= 30                 # the book's own solutions and answers were taken out
    built = A.STUDENT / "html"
    if not (built / "notebooks" / "03_rnn.html").is_file():
        pytest.skip("the student book is not built here (make book-student)")
    for page in sorted((built / "notebooks").glob("*.html")):
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))
        mine = [e for e in exercises if e.chapter == page.stem]
        # a line the lecture itself shows (chapter 4 lists the package's GRUCell, whose last line is the GRU
        # exercise's) is the lecture's, not a leaked solution: only lines the chapter shows nowhere but in its
        # solution cells count
        lecture = _lecture_text(A.ROOT / "notebooks" / f"{page.stem}.ipynb")

        def leaked(found: str) -> list[str]:
            return [leak for leak in _leaks(found, mine) if leak.split(": ", 1)[1][1:-1] not in lecture]

        assert not leaked(text), page
        assert "Solution 1" not in text and "Answer 1" not in text, page
        assert "colab.research.google.com" not in page.read_text(encoding="utf-8"), page    # launch buttons: the repo
        download = built / "_sources" / "notebooks" / f"{page.stem}.ipynb"                 # the page's .ipynb button
        assert not download.exists() or not leaked(download.read_text(encoding="utf-8")), download


def test_a_build_never_empties_a_folder_it_did_not_make(tmp_path):
    """`--out .` or `--out ~` must not delete a repository or a home: a non-empty folder without the script's marker
    is refused and left as it was; a folder an earlier build made is emptied and refilled."""
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(SystemExit, match="did not make"):
        A.clear_out(mine)
    assert (mine / "thesis.tex").read_text() == "years of work"
    out = tmp_path / "assignments"
    A.clear_out(out)
    (out / "01_ngrams").mkdir()
    A.clear_out(out)                                   # an earlier build's folder: emptied, marked again
    assert sorted(p.name for p in out.iterdir()) == [A.MARKER]
    with pytest.raises(SystemExit, match="is a file"):
        A.clear_out(mine / "thesis.tex")
