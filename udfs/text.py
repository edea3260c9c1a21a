"""Unicode normalisation applied to every extracted document (seed 000, layer 1: change, never drop)."""
from __future__ import annotations

import re
import unicodedata

# C0/C1 controls except tab/newline, zero-width and bidi marks, line/paragraph separators, BOM.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_LINE_SEPARATORS = re.compile(r"\r\n?|[\u2028\u2029\x85]")
# Most texts hold none of them: looking costs far less than a substitution pass.
_LINE_SEPARATOR_CHARS = ("\r", "\u2028", "\u2029", "\x85")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def normalize_text(text: str) -> str:
    """NFC, drop control and zero-width characters, collapse spaces, keep paragraph breaks.

    Lines are kept; runs of blank lines become one blank line (a paragraph break).
    """
    text = unicodedata.normalize("NFC", text)
    if any(separator in text for separator in _LINE_SEPARATOR_CHARS):
        text = _LINE_SEPARATORS.sub("\n", text)
    text = _INVISIBLE.sub("", text)
    # Within each line, runs of spaces (str.isspace, which re's \s also is) become one, none at the ends.
    text = "\n".join(" ".join(line.split()) for line in text.split("\n"))
    text = _BLANK_LINES.sub("\n\n", text)
    return text.strip()
