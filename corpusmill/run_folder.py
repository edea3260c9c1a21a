"""The run folder's names and markers, for every reader of ``<output>/<run>/<stage>/``.

A stage folder holds one folder per outcome (``OUTCOMES``), its figures (``STATS``) and, written
last, its completion marker (``MARKER``): a JSON object whose ``files`` maps every file of the stage
to its size, and whose ``fingerprint`` names what made it. The runner reads markers through Hadoop's
file system and the loader through pyarrow's; both judge them here, so a marker one accepts is one
the other accepts.
"""
from __future__ import annotations

from typing import Any, Dict

OUTCOMES = {"kept": "kept", "rejected": "rejected", "error": "errors", "skipped": "skipped"}  # outcome -> folder
MARKER = "_COMPLETE.json"
STATS = "_stats.json"


def is_marker(content: Any) -> bool:
    """Whether decoded JSON is a well-formed marker: an object whose ``files`` maps names to sizes
    (and whose ``fingerprint``, where it has one, is a string). Chunk markers share the form."""
    if not isinstance(content, dict) or not isinstance(content.get("files"), dict):
        return False
    if not all(isinstance(name, str) and type(size) is int for name, size in content["files"].items()):
        return False
    return isinstance(content.get("fingerprint", ""), str)


def names_present(marker: dict, present: Dict[str, int]) -> bool:
    """Whether a marker names exactly the files ``present`` in its folder (path → size; the marker
    itself aside), with their sizes: a folder copied in part, or changed since, does not."""
    return marker["files"] == {name: size for name, size in present.items() if name != MARKER}
