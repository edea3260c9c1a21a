"""Offline model-building tools: the recipes and trainers that make the shipped models' data and files.

    python -m tools.quality_corpus ...     # the quality model's training and evaluation sets
    python -m tools.ngram_lm_train ...     # Kneser-Ney n-gram models for the perplexity signal

Never imported by ``jobs/``, ``udfs/``, ``scoring_service/`` or ``loader/``, and not shipped to
executors: tools import the runtime packages, never the other way round.
"""
