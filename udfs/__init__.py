"""Per-record logic applied inside Arrow batches; pure Python/numpy, no Spark imports."""
