"""mindrecord: MindRecord schemas and Arrow → MindRecord rows (``records``)."""
