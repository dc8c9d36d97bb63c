"""Shared pytest set-up: deterministic property tests, modest CPU use."""
import os

import torch
from hypothesis import HealthCheck, settings

# Property tests draw the same examples every run (CI must not flake), with no per-example deadline (the CI
# machine is noisy; speed lives in bench/, not in tests).
settings.register_profile("seqviz", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "seqviz"))

torch.set_num_threads(min(2, torch.get_num_threads()))
# Tests run on the CPU even where a GPU is present (seqviz.default_device reads this).
os.environ.setdefault("SEQVIZ_DEVICE", "cpu")
