"""The quality model, shared by training, serving and the Spark-side client.

``features`` (texts → hashed bags, with the compiled ``_features``), ``artifacts`` (a model
directory, readable without MindSpore), ``network`` (the MindSpore network and its MindIR export)
and ``scorer`` (texts → scores through a runtime backend). Only ``network`` and a backend's loading
import MindSpore.
"""
