"""Browser-side widgets: the interaction lives in hand-written ES modules (``static/*.js``), so the widgets stay live
in JupyterLab/Notebook and in the static HTML book with no kernel. Python checks inputs and packs compact state.

- :class:`AttentionHeatmap`: attention weights (L, H, Tq, Tk) with layer/head selectors, all-heads grid, masking.
- :class:`LSTMGates`: an LSTM's gates and states (SLP 9.22-9.29) over units and time, with a time-step slider.
- :class:`PositionalMatrix`: sine/cosine positional encodings computed in the browser (reference:
  :func:`sinusoidal_encoding`).
- :class:`NextTokenDistribution`: top-k next-token probabilities with a temperature slider and sampling.
- :class:`BeamTree`: a recorded beam search (``seqviz.decode.beam_search(..., trace=True)``) as a tree with a step
  slider: kept, pruned and finished hypotheses, both scores, greedy's path overlaid.
- :class:`Quiz`: a check-your-understanding question, each choice with why it is right or wrong, answered in the
  browser.
- :class:`AttentionSteps`: one query's attention computed in front of the reader, SLP (9.30)-(9.39): q_i, every
  k_j, the dot products, the scaling by sqrt(d_k), the softmax, the weighted values and their sum.

Each has ``.to_figure()``, a static matplotlib rendering for print.
"""
from .attention import AttentionHeatmap, causal_mask, prepare_attention
from .attention_steps import AttentionSteps, prepare_steps
from .beam_tree import BeamTree, prepare_beam
from .lstm_gates import GATES, LSTMGates, prepare_gates
from .next_token import NextTokenDistribution, prepare_logits
from .positional import PositionalMatrix, sinusoidal_encoding
from .quiz import Choice, Quiz

__all__ = ["AttentionHeatmap", "LSTMGates", "PositionalMatrix", "NextTokenDistribution", "sinusoidal_encoding",
           "causal_mask", "prepare_attention", "prepare_gates", "prepare_logits", "GATES", "BeamTree", "prepare_beam",
           "AttentionSteps", "prepare_steps", "Quiz", "Choice"]
