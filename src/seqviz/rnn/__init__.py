"""Chapter 3: recurrent networks, in the notation of SLP 3rd ed., ch. 9.

An Elman cell computes one step, h_t = g(U h_{t-1} + W x_t) (9.3); a layer loops the cell over time; the models put
embeddings E before it and an output matrix V (or E^T, with weight tying) after it. Every scratch layer has a fused
twin (`torch.nn.RNN` running *our* parameters through `torch.func.functional_call`), proven equal in the tests and
used for training by default. The loop, the layer, the LM and the encoder are generic over the cell (its state a
tensor or a tuple of tensors, as an LSTM's (h, c)): chapter 4 adds only cells and their fused twins.

Read in this order:
- `layer`     scan (forward inference, Fig. 9.4) and RecurrentLayer (stacked, bidirectional, masks), for any cell
- `elman`     ElmanCell and ElmanRNN, the RecurrentLayer of Elman cells (fused twin: torch.nn.RNN)
- `bptt`      backpropagation through time by hand, gradient norms against distance (vanishing gradients)
- `lm`        RecurrentLM and RNNLM (9.6-9.8, tying 9.14-9.16): stateful windows, incremental `step` for decoding
- `labeling`  RecurrentEncoder, RNNTagger and RNNClassifier (last / mean / max pooling, 9.17) with padding masks

Batches come from `seqviz.data` (`sentence_stream`, `lm_batches`, `PaddedBatches`); each is a `Batch(x, y, mask)`.
The trainer's step function for these LMs (`lm_step`) and the tagger's metric (`accuracy`) live with the trainer.

Shapes, batch first: B batch, T time, d_in input width, d_h hidden width, L layers, K directions (1 or 2),
V vocabulary size (the matrix V is the output layer; the context tells which is meant).
"""

from seqviz._checks import IGNORE_INDEX
from .bptt import BPTTGrads, elman_bptt, grad_norm_by_distance, lm_grad_norm_by_distance, rnnlm_manual_gradients
from .elman import ElmanCell, ElmanRNN
from .labeling import RecurrentEncoder, RNNClassifier, RNNClassifierConfig, RNNTagger, RNNTaggerConfig
from .layer import RecurrentLayer, State, map_state, scan, state_h
from .lm import RNNLM, RecurrentLM, RecurrentLMConfig, RNNLMConfig

__all__ = [
    "IGNORE_INDEX",
    "State", "scan", "RecurrentLayer", "map_state", "state_h", "ElmanCell", "ElmanRNN",
    "BPTTGrads", "elman_bptt", "rnnlm_manual_gradients", "grad_norm_by_distance", "lm_grad_norm_by_distance",
    "RecurrentLMConfig", "RecurrentLM", "RNNLMConfig", "RNNLM",
    "RecurrentEncoder", "RNNTaggerConfig", "RNNTagger", "RNNClassifierConfig", "RNNClassifier",
]
