"""Why a document could not be scrubbed: raised by ``udfs.pii.recognizers``, caught by ``udfs.pii.scrub``.

A leaf module (it imports nothing of the project), so the imports point one way: ``udfs.pii.scrub``
builds on ``udfs.pii.recognizers``, and both build on this.
"""


class PiiError(Exception):
    """A document the stage cannot scrub; the message is safe to count (it never holds text)."""


class DocumentTooLong(PiiError):
    pass


class AnalysisTimeout(PiiError):
    """A recognizer ran out of time on a document; the message names the recognizer, never the text."""
