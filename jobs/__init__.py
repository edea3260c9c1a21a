"""Spark jobs of corpusmill: one module per pipeline stage, plus the driver and the CLI."""
