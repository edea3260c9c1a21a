"""The anchors a regex recognizer runs its rules around: a plain-text anchor found with str.find must
give the windows a regex scan gives."""
import random

import regex

from udfs.pii.recognizers import PATTERN_RECOGNIZERS
from udfs.pii.recognizers.rules import AnchorFinder


def test_plain_text_anchors_are_found_as_text_and_the_rest_as_patterns():
    assert AnchorFinder(r"hooks\.slack\.com", 1).literal == "hooks.slack.com"
    assert AnchorFinder("PRIVATE KEY", 1).literal == "PRIVATE KEY"
    assert AnchorFinder(r"sk\-", 1).literal == "sk-"
    for pattern in (r"gh[pousr]_", r"(?i)bearer", r"k_(?:live|test)_", r"\d\d", "a|b", "ab?", r"\bkey"):
        assert AnchorFinder(pattern, 1).literal is None, pattern


def test_every_anchor_gives_the_spans_of_a_regex_scan():
    anchors = {rule.anchor for cls in PATTERN_RECOGNIZERS.values() for rule in cls.RULES if rule.anchor}
    assert any(AnchorFinder(a, 1).literal for a in anchors) and any(not AnchorFinder(a, 1).literal for a in anchors)
    rng = random.Random(7)
    # Texts made of the anchors' own pieces, so that they occur back to back and overlapping.
    pieces = ["npm_", "sk-", "@", ":AA", "SG.", "xox", "PRIVATE KEY", "hooks.slack.com", "ghp_", "AIza", "1",
              "23", "-", " ", ":", "o", "A", "key", "Bearer", "dot ", "(at)", "eyJ", "x", "DE89"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 60))) for _ in range(300)]
    for anchor in anchors:
        finder = AnchorFinder(anchor, 5)
        for text in texts:
            assert list(finder.spans(text)) == [m.span() for m in regex.finditer(anchor, text)], (anchor, text)
