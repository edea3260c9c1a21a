"""MindSpore quality model and its scoring sidecar: define, train, export, serve, call.

    python -m tools.quality_corpus                 # the shipped model's data, from the shared corpora
    python -m scoring_service train ...            # checkpoint + MindIR (dynamic shapes) + model card
    python -m scoring_service serve                # HTTP batch scoring on 127.0.0.1:8808
    python -m scoring_service evaluate ...         # AUC / precision / recall on labelled texts

Subpackages by concern: ``model`` (features, the network, a model directory on disk, texts →
scores), ``training`` (labelled corpora, training and export, evaluation metrics) and ``serving``
(the HTTP server, its micro-batcher, model replicas and Prometheus metrics); ``client`` is what
Spark executors call (a client of the service, and the service started locally). The shipped
model's files are in ``models/default``; its data recipe is ``tools.quality_corpus``.
Importing the package does not import MindSpore; only training and serving do.
"""
