"""Coding exercises with a check the student can call (in the style of Neuromatch Academy's tutorials).

A chapter asks the reader to write one small function (a recurrent step, a mask, one step of a beam, a whole layer),
then to call ``check_...(their_function)``. The check runs it on random inputs of several shapes, compares it with
the package's own implementation, and says what is wrong in words a student can act on: a wrong shape, a missing
nonlinearity, a transposed mask, probabilities added where log-probabilities belong. A right answer prints "✓ ...";
a wrong one raises ``AssertionError`` naming the mistake (so the check works as an autograder's test cell); a function
that still raises ``NotImplementedError`` is reported as "not written yet" and the check returns False, so a chapter
runs top to bottom with its exercises unsolved. One module per chapter.
"""
from seqviz.exercises.ch1 import check_continuation_prob
from seqviz.exercises.ch2 import check_window_forward
from seqviz.exercises.ch3 import check_elman_step
from seqviz.exercises.ch4 import check_gru_step
from seqviz.exercises.ch5 import check_beam_step
from seqviz.exercises.ch6 import check_causal_mask
from seqviz.exercises.ch6 import check_multi_head_attention, check_transformer_block
from seqviz.exercises.ch7 import check_sampling_distribution
from seqviz.exercises.ch8 import check_copy_distribution, check_delta_sequence

__all__ = ["check_continuation_prob", "check_window_forward", "check_elman_step", "check_gru_step", "check_beam_step", "check_causal_mask",
           "check_multi_head_attention", "check_transformer_block", "check_sampling_distribution",
           "check_delta_sequence", "check_copy_distribution"]
