"""Per-record logic applied inside Arrow batches; pure Python/numpy, no Spark imports.

One sub-package per stage, named after it (``udfs/extract/``, ``udfs/filter/`` …), holding the logic
its job module (``jobs/stages/<stage>.py``) applies to each record and the stage's config class;
``udfs/common/`` holds what several stages use. Layers point one way: ``jobs/`` builds on ``udfs/``;
nothing here imports ``jobs``.
"""
