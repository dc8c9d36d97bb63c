"""Shared pytest set-up: deterministic property tests, modest CPU use, and grouping for pytest-xdist."""
import os

import pytest
import torch
from hypothesis import HealthCheck, settings

# Property tests draw the same examples every run (CI must not flake), with no per-example deadline (the CI
# machine is noisy; speed lives in bench/, not in tests).
settings.register_profile("seqviz", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "seqviz"))


def torch_threads(have: int, cpus: int, workers: int) -> int:
    """Threads for torch in one test process: at most two (and no more than it has), the cores shared out among
    pytest-xdist's workers (`make test`: one per core): two workers on two threads each would crowd a 2-core machine,
    where torch's threads spin waiting for each other."""
    return max(1, min(2, have, cpus // max(1, workers)))


torch.set_num_threads(torch_threads(torch.get_num_threads(), os.cpu_count() or 1,
                                    int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
# Tests run on the CPU even where a GPU is present (seqviz.default_device reads this).
os.environ.setdefault("SEQVIZ_DEVICE", "cpu")


def shared_fixture_home(item: pytest.Item) -> str | None:
    """The test file that defines a fixture this test shares with others (scope module, class or session: a loaded
    model, an export, a JupyterLab server), or None when every fixture it uses is its own or a conftest's."""
    for defs in item._fixtureinfo.name2fixturedefs.values():
        home = getattr(defs[-1], "node", None)
        if defs[-1].scope != "function" and isinstance(home, (pytest.Module, pytest.Class)):
            return home.nodeid.split("::")[0]
    return None


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test`: --dist loadfile, so a file's fixtures made once for all its tests are made
    once), the files that make such a thing (a model, an export, a JupyterLab server: the slow ones) are handed out
    first, so no worker is left with one at the end while the other idles. Every worker sorts alike (a stable sort)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    slow_first = {home for item in items if (home := shared_fixture_home(item)) is not None}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow_first)
