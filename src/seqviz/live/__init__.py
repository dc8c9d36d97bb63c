"""The book's own trained models, live in the page: exports of the shipped checkpoints that the browser runs with
onnxruntime-web, offline (``static/live.js`` and ``static/live_decode.js`` in ``seqviz.widgets``).

- :mod:`seqviz.live.graphs`  the forward passes exported, restated on each model's own parameters, with the traces the
  widgets draw (attention weights, q/k/v, LSTM gates and states, cross-attention) as extra outputs;
- :mod:`seqviz.live.export`  ``export_all(out)``: the ``.onnx`` files and ``manifest.json`` (each checkpoint's
  SHA-256, vocabularies, sizes); ``stale`` / ``check_folder``: is an export still the package's?

``python -m seqviz.live export [--out DIR]`` writes an export (``make live-models``; DIR defaults to
``_build/live-models``); ``python -m seqviz.live check [--dir DIR]`` fails when it is stale. Exporting needs the dev
extras (onnx, onnxscript); importing this package does not.
"""
from .export import DEFAULT_OUT, MODELS, StaleExport, check_folder, export_all, read_manifest, stale

__all__ = ["MODELS", "DEFAULT_OUT", "export_all", "stale", "check_folder", "read_manifest", "StaleExport"]
