"""Unicode normalisation applied to every extracted document: it changes text, never drops a document
(dropping is left to the filter rules, so a rejection can always be traced to one rule)."""
from __future__ import annotations

import array
import re
import unicodedata

from udfs.common.worker import worker_resource
from udfs.extract import _text_spaces

# C0/C1 controls except tab/newline, soft hyphens (a word broken by one is still one word), zero-width and
# bidi marks, BOM.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_LINE_SEPARATORS = re.compile(r"\r\n?|[\u2028\u2029\x85]")
# Most texts hold none of them: looking costs far less than a substitution pass.
_LINE_SEPARATOR_CHARS = ("\r", "\u2028", "\u2029", "\x85")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def normalize_text(text: str) -> str:
    """NFC, drop control and zero-width characters, collapse spaces, keep paragraph breaks.

    Lines are kept; runs of blank lines become one blank line (a paragraph break). The last three
    steps run in one compiled pass (``udfs/extract/_text_spaces.pyx``; its cost per page is in
    ``bench/profiling/e2e_profile.py``'s normalisation row); ``normalize_text_reference`` defines them.
    """
    return _text_spaces.collapse(_unified(text), _dropped_table())


def normalize_text_reference(text: str) -> str:
    """``normalize_text`` in Python: the definition the compiled pass reproduces."""
    text = _INVISIBLE.sub("", _unified(text))
    # Within each line, runs of spaces (str.isspace, which re's \s also is) become one, none at the ends.
    text = "\n".join(" ".join(line.split()) for line in text.split("\n"))
    text = _BLANK_LINES.sub("\n\n", text)
    return text.strip()


def _unified(text: str) -> str:
    """NFC, and every line separator a newline."""
    text = unicodedata.normalize("NFC", text)
    if any(separator in text for separator in _LINE_SEPARATOR_CHARS):
        text = _LINE_SEPARATORS.sub("\n", text)
    return text


def _dropped_table() -> bytes:
    """1 for each code point ``_INVISIBLE`` matches, 0 for the others (built once per process)."""
    def make() -> bytes:
        every_char = array.array("I", range(0x110000)).tobytes().decode("utf-32-le", "surrogatepass")
        table = bytearray(0x110000)
        for match in _INVISIBLE.finditer(every_char):
            table[match.start()] = 1
        return bytes(table)
    return worker_resource("extract.dropped_chars", _INVISIBLE.pattern, make)
