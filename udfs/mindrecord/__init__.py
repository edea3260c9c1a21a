"""mindrecord: MindRecord schemas and Arrow → MindRecord rows (``records``); a finished stage's marker and
manifest as the stage and the loader read them (``manifest``)."""
