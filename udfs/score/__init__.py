"""score: the scoring service's client inside a pandas UDF (``scoring``)."""
