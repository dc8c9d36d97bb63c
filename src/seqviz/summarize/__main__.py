"""``python -m seqviz.summarize pretrain`` (the δ LM, :func:`seqviz.summarize.pretraining.main`),
``python -m seqviz.summarize copy`` (the copy summarizer, :func:`seqviz.summarize.copy_checkpoint.main`) or
``python -m seqviz.summarize smollm`` (SmolLM2's headline adapter, :func:`seqviz.summarize.smollm_headlines.main`)."""
import sys

if sys.argv[1:2] == ["smollm"]:
    from seqviz.summarize.smollm_headlines import main

    main(sys.argv[2:])
elif sys.argv[1:2] == ["copy"]:
    from seqviz.summarize.copy_checkpoint import main

    main(sys.argv[2:])
else:
    from seqviz.summarize.pretraining import main

    main()
