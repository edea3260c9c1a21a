"""MindSpore quality model and its scoring sidecar: define, train, export, serve, call.

    python -m tools.quality_corpus                 # the shipped model's data, from the shared corpora
    python -m scoring_service train ...            # checkpoint + MindIR (dynamic shapes) + model card
    python -m scoring_service serve                # HTTP batch scoring on 127.0.0.1:8808
    python -m scoring_service evaluate ...         # AUC / precision / recall on labelled texts

Modules: ``features`` (vectorised hashed n-grams), ``artifacts`` (a model directory, readable
without MindSpore), ``model`` (the network and its export), ``train``, ``metrics``, ``backend``
(runtime seam + batching), ``server``, ``model_process`` (a model replica of ``serve --workers``), ``client`` (Spark-side client and the locally started
service) and ``corpus`` (reading and writing labelled text; the shipped model's data recipe is
``tools.quality_corpus``).
Importing the package does not import MindSpore; only training and serving do.
"""
