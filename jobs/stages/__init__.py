"""One module per pipeline stage: a ``Stage`` class that declares itself (see ``jobs/stage.py``)."""
