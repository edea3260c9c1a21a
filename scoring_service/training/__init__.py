"""Building a model: ``corpus`` (labelled texts from files), ``train`` (fit, export, model card) and
``evaluation`` (AUC, the P-R curve and the threshold of a binary scorer; the service's Prometheus
metrics are ``serving.metrics``).
"""
