"""The project's shared kernel, importable without PySpark: config plumbing (``config``), URIs to file
systems (``storage``) and the run folder's names and markers (``run_folder``)."""
