"""Graded assignments from the chapters' build-it exercises (issue 40, item 6): `make assignments`, `make book-student`.

A build-it exercise is a pair of code cells in a chapter notebook: a stub that defines a function raising
``NotImplementedError`` and calls ``check_<name>(fn)`` from :mod:`seqviz.exercises`, and after it a hidden cell that
opens with ``# Solution N`` and ends with ``assert check_<name>(fn)``. :func:`discover` finds every such pair in every
chapter (nothing is listed by hand: a chapter that gains one gains a question). For each chapter with at least one,
:func:`master_notebook` writes an otter-grader master notebook (``otter assign``'s format, otter-grader 7.0.0) and
``otter assign`` turns it into:

- ``_build/assignments/NN_name/student/NN_name.ipynb``: the student notebook. Each question is the exercise's
  statement (its item of the chapter's Exercises list), the stub as the chapter has it, and ``grader.check(...)``
  for the public test, which is the chapter's own check. No solutions.
- ``_build/assignments/NN_name/autograder.zip`` (otter's ``autograder/NN_name-autograder_<time>.zip``, moved):
  for Gradescope, or locally ``otter run -a autograder.zip submission.ipynb``. Each question is worth 1 point, all
  or nothing: its public test, and one hidden test per mistake of the check's known wrong answers
  (:mod:`seqviz.exercises.mistakes`, the list the unit tests read too) that the check names, called after it
  (``test_no_activation``), so the grading report says which typical mistake a submission made. With ``--wheel``
  (``make assignments``) the zip carries the seqviz wheel and a requirements.txt that installs it, for Gradescope's
  image; ``otter run`` uses the environment it runs in.

The book for the weeks an assignment is open (``--student-book``, `make book-student`): a copy of the book's sources
in ``_build/student/src`` whose notebooks have no solution cells (``# Solution N`` code cells) and no answers
(markdown cells that open with a ``{dropdown}``, scripts/hide_solutions.py's rule; :func:`student_notebook`), built
by Jupyter Book into ``_build/student/html``.

    python scripts/assignments.py                 # every chapter's assignment into _build/assignments/
    python scripts/assignments.py --wheel         # ... with the seqviz wheel inside each autograder zip
    python scripts/assignments.py --student-book  # the book without solutions into _build/student/html

tests/test_assignments.py grades the solutions (full marks), the student notebooks as issued (zero) and every known
wrong answer (it loses its question's points and no other's), and looks for solution code in what students get.
"""
from __future__ import annotations

import argparse
import ast
import builtins
import copy
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "assignments"
STUDENT = ROOT / "_build" / "student"
SOLUTION = re.compile(r"^\s*#\s*Solution\s+(\d+)\b")
POINTS = 1  # per question, all or nothing


class AssignmentError(ValueError):
    """A chapter's exercise cells do not follow the pattern this script reads (the message says what to fix)."""


@dataclass(frozen=True)
class Exercise:
    """One build-it exercise of a chapter: the stub cell, the solution cell, the check and the function's name."""

    chapter: str          # notebook stem, e.g. "03_rnn"
    number: int           # N of "# Solution N"
    check: str            # e.g. "check_elman_step"
    fn: str               # the function the student writes, e.g. "elman_step"
    stub: str             # the stub cell's source
    solution: str         # the solution cell's source
    prompt: str           # the exercise's item of the chapter's Exercises list (markdown), or ""

    @property
    def question(self) -> str:
        return f"exercise_{self.number}"


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _python(source: str) -> str:
    """The cell's source without IPython's magics and shell lines (which ast cannot read)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _checked_calls(tree: ast.AST) -> list[tuple[str, str]]:
    """(check, function) for each ``assert check_x(fn)`` in the tree."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Call):
            f, args = node.test.func, node.test.args
            if isinstance(f, ast.Name) and f.id.startswith("check_") and args and isinstance(args[0], ast.Name):
                out.append((f.id, args[0].id))
    return out


def _is_stub(tree: ast.AST, fn: str) -> bool:
    """Whether the tree defines ``fn`` with a body that raises NotImplementedError."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == fn:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Raise) and sub.exc is not None:
                    exc = sub.exc.func if isinstance(sub.exc, ast.Call) else sub.exc
                    if isinstance(exc, ast.Name) and exc.id == "NotImplementedError":
                        return True
    return False


def _prompt(cells: list[dict], before: int, number: int) -> str:
    """Item ``number`` of the last numbered list before cell ``before`` that has one (the Exercises list)."""
    item = re.compile(rf"^{number}\.\s")
    for cell in reversed(cells[:before]):
        if cell["cell_type"] != "markdown":
            continue
        lines = _source(cell).splitlines()
        starts = [i for i, line in enumerate(lines) if item.match(line)]
        if not starts:
            continue
        out = [lines[starts[-1]]]
        for line in lines[starts[-1] + 1:]:
            if re.match(r"^(\d+\.\s|#)", line) or (line and not line.startswith(" ")):
                break
            out.append(line)
        return re.sub(rf"^{number}\.\s+", "", "\n".join(out).rstrip()).replace("\n   ", "\n")
    return ""


def discover(path: Path) -> list[Exercise]:
    """Every build-it exercise of the notebook at ``path``, in order (see the module's docstring)."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    cells = nb["cells"]
    found = []
    for i, cell in enumerate(cells):
        src = _source(cell)
        m = SOLUTION.match(src)
        if cell["cell_type"] != "code" or not m:
            continue
        try:
            calls = _checked_calls(ast.parse(_python(src)))
        except SyntaxError as e:
            raise AssignmentError(f"{path.name}: cell {i} (Solution {m.group(1)}) is not valid Python: {e}") from None
        if not calls:
            continue                                         # a solution with no check: not a build-it exercise
        if len(calls) > 1:
            raise AssignmentError(f"{path.name}: cell {i} (Solution {m.group(1)}) asserts {len(calls)} checks; a "
                                  f"build-it exercise asserts one, `assert check_x(fn)`")
        check, fn = calls[0]
        stub = next((j for j in range(i - 1, -1, -1) if cells[j]["cell_type"] == "code"
                     and not SOLUTION.match(_source(cells[j])) and _is_stub(ast.parse(_python(_source(cells[j]))), fn)),
                    None)
        if stub is None:
            raise AssignmentError(f"{path.name}: Solution {m.group(1)} (cell {i}) checks {fn} with {check}, but no "
                                  f"cell before it defines a stub {fn} that raises NotImplementedError")
        found.append(Exercise(path.stem, int(m.group(1)), check, fn, _source(cells[stub]), src,
                              _prompt(cells, stub, int(m.group(1)))))
    return found


def chapters() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


# ---- the names an exercise needs ---------------------------------------------------------------------------------
def chapter_imports(path: Path) -> dict[str, str]:
    """name -> the import statement that binds it, for every top-level import in the notebook's code cells."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    out = {}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse(_python(_source(cell)))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    out.setdefault(a.asname or a.name.split(".")[0],
                                   f"import {a.name}" + (f" as {a.asname}" if a.asname else ""))
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    out.setdefault(a.asname or a.name,
                                   f"from {node.module} import {a.name}" + (f" as {a.asname}" if a.asname else ""))
    return out


def free_names(*sources: str) -> set[str]:
    """Names the code reads and neither binds nor finds among Python's builtins."""
    loads, binds = set(), set()
    for source in sources:
        for node in ast.walk(ast.parse(_python(source))):
            if isinstance(node, ast.Name):
                (loads if isinstance(node.ctx, ast.Load) else binds).add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                binds.add(node.name)
            elif isinstance(node, ast.arg):
                binds.add(node.arg)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                binds.update(a.asname or a.name.split(".")[0] for a in node.names)
    return loads - binds - set(dir(builtins))


def setup_imports(path: Path, exercises: list[Exercise]) -> list[str]:
    """The import lines every exercise of the chapter needs, in the chapter's words (the checks included)."""
    imports = chapter_imports(path)
    need = free_names(*(e.stub for e in exercises), *(_solution_body(e) for e in exercises))
    need |= {e.check for e in exercises}
    missing = sorted(n for n in need if n not in imports)
    if missing:
        raise AssignmentError(f"{path.name}: the exercises use {', '.join(missing)}, which no top-level import of the "
                              f"chapter binds: import them in the chapter (or in the stub cell)")
    return sorted({imports[n] for n in need}, key=lambda s: (not s.startswith("import "), s))


# ---- the master notebook (otter assign's format) -----------------------------------------------------------------
def _cell(kind: str, source: str, **meta) -> dict:
    cell = {"cell_type": kind, "metadata": dict(meta), "source": source}
    if kind == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


def _raw(source: str) -> dict:
    return _cell("raw", source)


def _split_stub(e: Exercise) -> tuple[str, str, str]:
    """(lines before the stub's def, the def, lines after it) of the stub cell."""
    src = e.stub
    lines = src.splitlines()
    node = next(n for n in ast.parse(_python(src)).body if isinstance(n, ast.FunctionDef) and n.name == e.fn)
    first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    return ("\n".join(lines[:first]).rstrip(), "\n".join(lines[first:node.end_lineno]),
            "\n".join(lines[node.end_lineno:]).strip())


def _solution_body(e: Exercise) -> str:
    """The solution cell up to its ``assert check_x(fn)``: the function and what it needs. The assert goes (the
    tests grade; the stub's own call of the check stays), and so does what follows it, which may use the chapter's
    models and data (a demonstration, not the answer)."""
    lines = e.solution.splitlines()
    end = next((node.lineno - 1 for node in ast.parse(_python(e.solution)).body
                if isinstance(node, ast.Assert) and _checked_calls(node)), len(lines))
    return "\n".join(lines[:end]).rstrip()


def answer_cell(e: Exercise) -> str:
    """The question's code cell: the stub's first lines, the solution (student version: the stub's def), the call."""
    before, stub, after = _split_stub(e)
    quote = "'''" if "'''" not in stub else '"""'
    if quote in stub:
        raise AssignmentError(f"{e.chapter}: the stub of {e.fn} holds both kinds of triple quotes; use one")
    parts = [before + "\n\n"] if before else []
    parts += ["# BEGIN SOLUTION NO PROMPT", _solution_body(e), "# END SOLUTION",
              f"{quote} # BEGIN PROMPT", stub, f"{quote} # END PROMPT"]
    return "\n".join(parts) + ("\n\n\n" + after if after else "")


def _test(name: str, e: Exercise, body: str, hidden: bool) -> dict:
    config = '""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\n' if hidden else ""
    return _cell("code", f"{config}def test_{name}({e.fn}):\n{body}")


def tests(e: Exercise, check_import: str) -> list[dict]:
    """The public test (the chapter's check) and one hidden test per known mistake that the check names."""
    from seqviz.exercises.mistakes import known_mistakes

    out = [_test(e.fn, e, f"    {check_import}\n    assert {e.check}({e.fn}), "
                          f"'{e.fn} is not written yet: replace its raise NotImplementedError'", hidden=False)]
    for m in known_mistakes(e.check):
        if m.named:
            out.append(_test(m.name, e, f"    from seqviz.exercises.mistakes import hidden_test\n"
                                        f"    hidden_test({e.check!r}, {m.name!r}, {e.fn})", hidden=True))
    return out


def _title(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        m = re.search(r"^#\s+(.+)$", _source(cell), re.M) if cell["cell_type"] == "markdown" else None
        if m:
            return m.group(1).strip()
    return path.stem


def master_notebook(path: Path, exercises: list[Exercise], requirements: str | None = None,
                    files: list[str] | None = None) -> dict:
    """The otter-grader master notebook for one chapter's exercises."""
    imports = setup_imports(path, exercises)
    by_name = chapter_imports(path)
    config = {"name": path.stem, "python_version": f"{sys.version_info.major}.{sys.version_info.minor}",
              "init_cell": True, "check_all_cell": True, "export_cell": {"pdf": False},
              "run_tests": False, "tests": {"ok_format": False}, "generate": {"show_stdout": True}}
    if requirements:
        config["requirements"] = requirements
    if files:
        config["autograder_files"] = files
    import yaml

    title = _title(path)
    cells = [
        _cell("markdown", f"# Assignment: {title}\n\nThe build-it exercises of *{title}*. Fill in each function and "
                          f"run its cell: the chapter's check says what is right or wrong. `grader.check(...)` runs "
                          f"the question's public test (the same check); when graded, each question also has hidden "
                          f"tests, one per typical mistake. Each question is worth {POINTS} point, all or nothing. "
                          f"Run every cell from the top before you submit."),
        _raw("# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=False).rstrip()),
        _cell("code", "\n".join(imports)),
    ]
    for e in exercises:
        cells += [
            _raw("# BEGIN QUESTION\n" + yaml.safe_dump({"name": e.question, "points": POINTS, "all_or_nothing": True},
                                                       sort_keys=False).rstrip()),
            _cell("markdown", f"**Exercise {e.number}.** {e.prompt}".rstrip() if e.prompt else
                  f"**Exercise {e.number}.** Write `{e.fn}` and run the cell."),
            _raw("# BEGIN SOLUTION"),
            _cell("code", answer_cell(e)),
            _raw("# END SOLUTION"),
            _raw("# BEGIN TESTS"),
            *tests(e, by_name[e.check]),
            _raw("# END TESTS"),
            _raw("# END QUESTION"),
        ]
    for i, cell in enumerate(cells):
        cell["id"] = f"{path.stem}-{i}"
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                        "name": "python3"},
                                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


# ---- building ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Built:
    chapter: str
    exercises: tuple[Exercise, ...]
    student: Path         # the student notebook
    solutions: Path       # the autograder's copy of the notebook, with the solutions
    autograder: Path      # the autograder zip


def _otter() -> list[str]:
    exe = Path(sys.executable).with_name("otter")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "otter"]


def wheel(out: Path) -> Path:
    """The seqviz wheel (its dependencies from PyPI) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("seqviz-*.whl"):
        old.unlink()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                    str(out), str(ROOT)], check=True)
    return next(out.glob("seqviz-*.whl"))


def build(chapter: Path, out: Path = OUT, wheel_file: Path | None = None) -> Built | None:
    """The assignment of one chapter into ``out/<chapter>/`` (None when the chapter has no build-it exercise)."""
    exercises = discover(chapter)
    if not exercises:
        return None
    dest = out / chapter.stem
    src = dest / "master"
    shutil.rmtree(dest, ignore_errors=True)
    src.mkdir(parents=True)
    requirements = files = None
    if wheel_file is not None:                       # Gradescope installs requirements.txt into its image
        shutil.copy2(wheel_file, src / wheel_file.name)
        # otter generate puts autograder_files under files/ in the zip, which Gradescope unpacks to /autograder/source
        (src / "requirements.txt").write_text(f"/autograder/source/files/{wheel_file.name}\n", encoding="utf-8")
        requirements, files = "requirements.txt", [wheel_file.name]
    master = src / f"{chapter.stem}.ipynb"
    master.write_text(json.dumps(master_notebook(chapter, exercises, requirements, files), indent=1,
                                 ensure_ascii=False) + "\n", encoding="utf-8")
    for m in {e.check for e in exercises}:
        from seqviz.exercises.mistakes import known_mistakes

        if not known_mistakes(m):
            print(f"assignments: {m} has no known mistakes in seqviz.exercises.mistakes: its question has the public "
                  f"test only", file=sys.stderr)
    import contextlib
    import io

    from otter.assign import main as otter_assign

    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            otter_assign(str(master), str(dest), no_pdfs=True, no_run_tests=True)
    except Exception as e:
        raise SystemExit(f"assignments: otter assign failed for {chapter.name}: {e}\n{said.getvalue()}") from e
    zips = sorted((dest / "autograder").glob(f"{chapter.stem}-autograder_*.zip"))
    if not zips:
        raise SystemExit(f"assignments: otter assign made no autograder zip for {chapter.name}:\n{said.getvalue()}")
    shutil.move(zips[-1], dest / "autograder.zip")
    if wheel_file is not None:                           # it is in the zip; 14 MB a copy otherwise
        for copied in (src / wheel_file.name, dest / "autograder" / wheel_file.name):
            copied.unlink(missing_ok=True)
    return Built(chapter.stem, tuple(exercises), dest / "student" / master.name, dest / "autograder" / master.name,
                 dest / "autograder.zip")


MARKER = ".seqviz-assignments"  # written into every folder build_all fills, so only such a folder is ever emptied


def clear_out(out: Path) -> None:
    """Empty ``out`` for a new build: a folder this script made (it holds MARKER), or a new or empty one. Any other
    existing folder is refused, not deleted: ``--out .`` or ``--out ~`` must never remove a repository or a home."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise SystemExit(f"--out {out} is a file; give a folder for the assignments (default {OUT})")
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise SystemExit(f"--out {out} is a folder this script did not make (no {MARKER} in it), so it is not "
                             f"emptied; give a new or empty folder, or the default {OUT}")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("made by scripts/assignments.py; emptied by its next build\n", encoding="utf-8")


def build_all(out: Path = OUT, with_wheel: bool = False) -> list[Built]:
    clear_out(out)
    wheel_file = wheel(out / "wheel") if with_wheel else None
    return [b for b in (build(ch, out, wheel_file) for ch in chapters()) if b is not None]


# ---- grading (in this process, with the autograder's own test files) --------------------------------------------
OTTER_CELL = re.compile(r"^\s*(# Initialize Otter|# Save your notebook first|grader\.)")


def notebook_env(path: Path) -> dict:
    """The globals after running the notebook's code cells in order, here (otter's own cells left out: its init,
    check and export cells), as the autograder's kernel holds them after running a submission."""
    import contextlib
    import io

    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    env: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb["cells"]:
            src = _source(cell)
            if cell["cell_type"] == "code" and not OTTER_CELL.match(src):
                exec(compile(_python(src), str(path), "exec"), env)
    return env


def autograder_tests(zip_path: Path) -> dict:
    """question -> otter TestFile, read from the autograder zip's tests/ (hidden tests included)."""
    import tempfile
    import zipfile

    from otter.test_files import create_test_file

    out = {}
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(zip_path) as z:
        for name in z.namelist():
            if name.startswith("tests/") and name.endswith(".py"):
                z.extract(name, tmp)
                out[Path(name).stem] = create_test_file(str(Path(tmp) / name), None)
    return out


def grade(tests: dict, env: dict) -> dict[str, float]:
    """question -> points earned by the global environment ``env`` under the test files ``tests``."""
    import contextlib
    import io

    scores = {}
    for q, test in tests.items():
        with contextlib.redirect_stdout(io.StringIO()):
            test.run(env)
        scores[q] = float(test.score)
    return scores


# ---- the book without solutions ----------------------------------------------------------------------------------
def is_solution(cell: dict) -> bool:
    """A solution cell (code, ``# Solution N``) or an answer (markdown opening with a ``{dropdown}``, as
    scripts/hide_solutions.py reads one)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from hide_solutions import DROPDOWN

    src = _source(cell)
    return bool(SOLUTION.match(src)) if cell["cell_type"] == "code" else bool(DROPDOWN.match(src))


def solution_lines(e: Exercise) -> list[str]:
    """The solution's code lines that its stub does not have (comments, imports, blank and short lines left out):
    what must not reach a student."""
    stub = {line.strip() for line in e.stub.splitlines()}
    out = []
    for line in _solution_body(e).splitlines():
        code = line.split("#")[0].strip()
        if len(code) > 12 and line.strip() not in stub and code not in stub and not code.startswith(("import ",
                                                                                                  "from ")):
            out.append(code)
    return out


def student_notebook(nb: dict, exercises: list[Exercise] = ()) -> dict:
    """The notebook without its solutions and answers (:func:`is_solution`), and without the removed cells (tag
    ``remove-cell``: the book never shows them) that quote a build-it solution's code (a check of what an answer
    says): the book's .ipynb download would carry them."""
    lines = [line for e in exercises for line in solution_lines(e)]

    def quotes_a_solution(cell: dict) -> bool:
        tags = set(cell.get("metadata", {}).get("tags", []))
        return cell["cell_type"] == "code" and "remove-cell" in tags and any(x in _source(cell) for x in lines)

    nb = copy.deepcopy(nb)
    nb["cells"] = [c for c in nb["cells"] if not is_solution(c) and not quotes_a_solution(c)]
    return nb


def student_config(config: dict) -> dict:
    """The student book's _config.yml: no launch buttons (they open the repository's notebooks, solutions and all);
    the .ipynb download is the copy without solutions."""
    config = copy.deepcopy(config)
    config["launch_buttons"] = {"notebook_interface": "classic"}
    config.setdefault("html", {})["use_edit_page_button"] = False
    return config


def prepare_student_book(src: Path = STUDENT / "src") -> Path:
    """Copy the book's sources to ``src`` (as scripts/pdf.py does for print) with solutions and answers removed."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from pdf import IGNORED, copied

    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    for name in copied() + ["_vendor"]:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=IGNORED)
        elif p.exists():
            shutil.copy2(p, src / name)
    import yaml

    config = yaml.safe_load((src / "_config.yml").read_text(encoding="utf-8"))
    (src / "_config.yml").write_text(yaml.safe_dump(student_config(config), sort_keys=False, allow_unicode=True),
                                     encoding="utf-8")
    for path in sorted(src.rglob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps(student_notebook(nb, discover(path)), indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    return src


def build_student_book(out: Path = STUDENT) -> Path:
    src = prepare_student_book(out / "src")
    jb = Path(sys.executable).with_name("jupyter-book")
    rc = subprocess.run([str(jb if jb.exists() else "jupyter-book"), "build", str(src), "-W", "-n", "--keep-going"]
                        ).returncode
    if rc:
        raise SystemExit(f"book-student: jupyter-book exited {rc}")
    html = out / "html"
    shutil.rmtree(html, ignore_errors=True)
    shutil.move(str(src / "_build" / "html"), str(html))
    return html


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--wheel", action="store_true", help="put the seqviz wheel in each autograder zip (Gradescope)")
    ap.add_argument("--student-book", action="store_true", help="build the book without solutions instead")
    args = ap.parse_args(argv)
    t = time.time()
    if args.student_book:
        html = build_student_book()
        print(f"The student book (no solutions) is at file://{html}/index.html ({time.time() - t:.0f} s)")
        return 0
    built = build_all(args.out, args.wheel)
    for b in built:
        print(f"{b.chapter}: {len(b.exercises)} question(s) "
              f"({', '.join(f'{e.question}: {e.fn}' for e in b.exercises)})\n"
              f"  student: {b.student.resolve()}\n  autograder: {b.autograder.resolve()}")
    print(f"{len(built)} assignment(s) in {time.time() - t:.0f} s; grade one locally with "
          f"`otter run -a {Path(args.out).resolve()}/CHAPTER/autograder.zip SUBMISSION.ipynb`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
