"""Development code, never shipped (setup.py packages none of it): run from the repository root.

    python -m tools.quality_corpus ...          # the quality model's training and evaluation sets
    python -m tools.ngram_lm_train ...          # Kneser-Ney n-gram models for the perplexity signal
    python -m tools.train_block_classifier ...  # the boilerplate filter's block model
    python -m tools.build_url_words ...         # the URL filter's word lists

``tools.extraction_devsets`` loads the two extraction development sets; ``tools.fixtures`` builds the
inputs tests and benchmarks share. Never imported by ``corpusmill/``, ``jobs/``, ``udfs/``,
``scoring_service/`` or ``loader/``: tools import the runtime packages, never the other way round.
"""
