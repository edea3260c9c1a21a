"""Why a document could not be scrubbed: raised by ``udfs.pii_recognizers``, caught by ``udfs.pii``.

A leaf module (it imports nothing of the project), so the imports point one way: ``udfs.pii``
builds on ``udfs.pii_recognizers``, and both build on this.
"""


class PiiError(Exception):
    """A document the stage cannot scrub; the message is safe to count (it never holds text)."""


class DocumentTooLong(PiiError):
    pass


class AnalysisTimeout(PiiError):
    """A recognizer ran out of time on a document; the message names the recognizer, never the text."""
