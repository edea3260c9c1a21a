"""Per-record logic applied inside Arrow batches; pure Python/numpy, no Spark imports.

Layers point one way: ``jobs/`` builds on ``udfs/``; nothing here imports ``jobs``. Each stage's
config class sits beside the logic that reads it. Which module serves which stage:

==========  ====================================================================  ===============
stage       per-record logic                                                      config class
==========  ====================================================================  ===============
extract     ``warc`` (records → documents), ``html``, ``boilerplate``, ``text``,      ExtractConfig
            ``url_filter`` (block-listed domains, banned URL words)
filter      ``filter`` (rules), ``langid``, ``quality`` (signals), ``perplexity``,    FilterConfig
            ``ngram_lm`` (the n-gram LM it scores with), ``badwords`` (C4's rule)
pii         ``pii`` (scrubbing, replacement), ``pii_recognizers`` (Presidio ones),   PiiConfig
            ``pii_errors`` (why a document could not be scrubbed)
dedup       ``minhash`` (normalisation, shingles, signatures, LSH bands)            DedupConfig
decontam    ``decontam`` (evaluation sets, the n-gram index, lookups)              DecontamConfig
score       ``score`` (the service client inside a pandas UDF)                      ScoreConfig
mix         ``mixture`` (domain rules, the mixture plan, sampling)                  MixConfig
pack        ``packing`` (splitting, best-fit packing), ``tokenizer``                PackConfig
mindrecord  ``mindrecord`` (schemas, Arrow → MindRecord rows)                       MindRecordConfig
==========  ====================================================================  ===============

``config`` is the plumbing every config class uses (a leaf: it imports nothing of the project);
``mixing_law`` fits the data mixing law behind ``corpusmill mixing-law``.
"""
