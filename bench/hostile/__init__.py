"""Memory and outcome of a stage or the scoring service under hostile input."""
