"""pii: scrubbing and typed replacement (``scrub``), the Presidio recognizers (``recognizers``) and
why a document could not be scrubbed (``errors``)."""
