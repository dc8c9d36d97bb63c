"""`make test` runs pytest on every core with pytest-xdist (issue 40, item 7): the Makefile's options, the pins a
fresh clone installs, and tests/conftest.py's share of the cores and order of the files."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _conftest(request):
    path = str(ROOT / "tests" / "conftest.py")
    return next(p for p in request.config.pluginmanager.get_plugins() if getattr(p, "__file__", None) == path)


def test_make_test_runs_pytest_on_a_worker_per_core_by_file_and_lists_the_slowest():
    target = (ROOT / "Makefile").read_text().split("\ntest:")[1].split("\n\n")[0]
    pytest_line = next(line for line in target.splitlines() if "-m pytest tests" in line)
    for opt in ("-n logical", "--dist loadfile", "--no-loadscope-reorder", "--durations=25"):
        assert opt in pytest_line, f"make test's pytest lacks {opt}: {pytest_line.strip()}"
    # pytest-xdist 3.8's --dist loadgroup renames item._nodeid, which pytest 9 no longer reads: groups are ignored



def test_make_test_starts_the_chapters_before_it_builds_the_book():
    """The chain of chapters from the wheel needs no built book: it runs beside the book's build, and pytest (which
    reads the book) starts once the book is built. Before: `test: book chromium` built the book first, ~2 min with a
    core idle."""
    makefile = (ROOT / "Makefile").read_text()
    head, body = makefile.split("\ntest:")[1].split("\n", 1)
    body = body.split("\n\n")[0]
    assert "book" not in head.split(), f"make test waits for the book before the chapters start: test:{head}"
    chain, build, tests = (body.index(s) for s in ("scripts/outside_repo.py", "$(MAKE) --no-print-directory book",
                                                     "-m pytest tests"))
    assert chain < build < tests and ") &" in body[chain:build], body

def test_pytest_xdist_is_pinned_for_a_fresh_clone():
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    lock = (ROOT / "requirements" / "constraints.txt").read_text().split()
    assert "pytest-xdist==3.8.0" in dev and "pytest-xdist==3.8.0" in lock
    assert any(line.startswith("execnet==") for line in lock)  # xdist's one dependency


@pytest.mark.parametrize("have, cpus, workers, want", [
    (2, 2, 1, 2),     # no xdist, 2 cores: two threads, as before
    (2, 2, 2, 1),     # make test on 2 cores: one thread per worker
    (1, 2, 1, 1),     # OMP_NUM_THREADS=1 is kept
    (8, 16, 2, 2),    # never more than two
    (2, 2, 4, 1),     # more workers than cores: still one
])
def test_torch_threads_share_the_cores_among_the_workers(request, have, cpus, workers, want):
    assert _conftest(request).torch_threads(have, cpus, workers) == want


@pytest.fixture(scope="module")
def made_once():
    return object()


def test_a_test_sharing_a_fixture_of_its_file_is_told_apart(request, made_once, tmp_path):
    conftest = _conftest(request)
    assert conftest.shared_fixture_home(request.node) == "tests/test_xdist_setup.py"


def test_a_test_with_only_its_own_fixtures_is_not(request, tmp_path):
    assert _conftest(request).shared_fixture_home(request.node) is None


def test_under_xdist_the_files_that_make_something_once_come_first_in_order(request, monkeypatch):
    """On this session's own items: files with a shared fixture first, each file's tests together and in order."""
    conftest = _conftest(request)
    items = list(request.session.items)
    before = [i.nodeid for i in items]
    conftest.pytest_collection_modifyitems(request.config, items)       # not a worker: nothing moves
    assert [i.nodeid for i in items] == before
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    conftest.pytest_collection_modifyitems(request.config, items)
    after = [i.nodeid for i in items]
    assert sorted(after) == sorted(before)
    heavy = {conftest.shared_fixture_home(i) for i in items} - {None}
    assert "tests/test_xdist_setup.py" in heavy
    first = [i.nodeid.split("::")[0] in heavy for i in items]
    assert first == sorted(first, reverse=True), "a file with a shared fixture comes after one without"
    for group in (True, False):                                         # stable: the collection's order within each
        assert [n for n, f in zip(after, first) if f is group] == [n for n in before
                                                                   if (n.split("::")[0] in heavy) is group]


def test_no_recipe_inherits_pythondontwritebytecode(tmp_path):
    """With PYTHONDONTWRITEBYTECODE set (this image sets it) and pip's --no-compile, no compiled module is ever kept:
    every process of `make test` (kernels, workers, subprocesses) compiled torch, numpy, matplotlib... again on
    import, ~2.5 CPU-s each. The Makefile's recipes must not see it: run make on a target appended to the Makefile."""
    import os
    import subprocess

    probe = tmp_path / "probe.mk"
    probe.write_text("probe:\n\t@echo \"[$$PYTHONDONTWRITEBYTECODE]\"\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(["make", "--no-print-directory", "-f", "Makefile", "-f", str(probe), "probe"], cwd=ROOT,
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
