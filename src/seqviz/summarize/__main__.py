"""``python -m seqviz.summarize pretrain``: the command line of :func:`seqviz.summarize.pretraining.main`."""
from seqviz.summarize.pretraining import main

main()
