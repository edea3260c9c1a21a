"""The run folder, judged one way for every reader of ``<output>/<run>/<stage>/``: its names, its
markers, the content checksums they carry, and which stage a stage reads.

A stage folder holds one folder per outcome (``OUTCOMES``), its figures (``STATS``) and, written
last, its completion marker (``MARKER``): a JSON object whose ``files`` maps every file of the stage
to its size, whose ``checksums`` maps the same files to their ``CHECKSUM`` (xxh3-64, hex), and whose
``fingerprint`` names what made it. The runner reads markers through Hadoop's file system
(``jobs.fs``), the loader through pyarrow's (``corpusmill.storage``); both judge them here
(``marker_problem``), so a marker one accepts is one the other accepts. This module imports nothing
of the project: the file systems are passed in as the two readings a judgement needs.
"""
from __future__ import annotations

import re
from typing import Any, BinaryIO, Callable, Dict, Optional, Sequence

import xxhash

OUTCOMES = {"kept": "kept", "rejected": "rejected", "error": "errors", "skipped": "skipped"}  # outcome -> folder
MARKER = "_COMPLETE.json"
STATS = "_stats.json"
CHECKSUM = "xxh3_64"
# What a file is hashed by, a block at a time: large enough that a remote read is few calls.
CHECKSUM_BLOCK = 8 << 20

# A run is one folder under --output: one path segment, never "..", never hidden.
RUN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def run_name_problem(name: Any) -> Optional[str]:
    """Why ``name`` cannot name a run (``RUN_NAME``: one path segment of letters, digits, ``._-``, not
    starting with ``.``, at most 128 characters), or None when it can."""
    if isinstance(name, str) and RUN_NAME.fullmatch(name):
        return None
    return (f"{name!r} is not a run name: one folder name of letters, digits, '.', '_' and '-' (not starting "
            f"with '.', at most 128 characters)")


def checksum_of_stream(stream: BinaryIO, block: int = CHECKSUM_BLOCK) -> str:
    """The ``CHECKSUM`` of everything ``stream`` yields, read once, a block at a time."""
    digest = xxhash.xxh3_64()
    while True:
        data = stream.read(block)
        if not data:
            return digest.hexdigest()
        digest.update(data)


def checksum_of_bytes(data: bytes) -> str:
    return xxhash.xxh3_64_hexdigest(data)


def new_marker(fingerprint: str, files: Dict[str, int], checksums: Dict[str, str], **more: Any) -> dict:
    """A completion marker's content: ``files`` (name -> size) and their ``checksums``."""
    return {"fingerprint": fingerprint, "files": files, "checksum": CHECKSUM, "checksums": checksums, **more}


def is_marker(content: Any) -> bool:
    """Whether decoded JSON is a well-formed marker: an object whose ``files`` maps names to sizes
    (and whose ``fingerprint``, where it has one, is a string). Chunk markers share the form."""
    if not isinstance(content, dict) or not isinstance(content.get("files"), dict):
        return False
    if not all(isinstance(name, str) and type(size) is int for name, size in content["files"].items()):
        return False
    return isinstance(content.get("fingerprint", ""), str)


def marker_form_problem(content: Any) -> Optional[str]:
    """Why decoded JSON (None: no marker, or not JSON) is not a stage's completion marker: a
    well-formed marker (``is_marker``) with a fingerprint and a ``CHECKSUM`` checksum for each file it
    names; None when it is one."""
    if content is None:
        return f"no readable {MARKER}"
    if not is_marker(content) or not isinstance(content.get("fingerprint"), str):
        return f"its {MARKER} is damaged"
    checksums = content.get("checksums")
    if (content.get("checksum") != CHECKSUM or not isinstance(checksums, dict)
            or set(checksums) != set(content["files"]) or not all(isinstance(c, str) for c in checksums.values())):
        return f"its {MARKER} has no {CHECKSUM} checksum for each file (written by an older corpusmill?)"
    return None


def file_problem(content: dict, name: str, size: Optional[int],
                 checksum_of: Optional[Callable[[str], str]]) -> Optional[str]:
    """Why the file ``name`` of a stage (``size`` bytes; None when it is not there) is not the one its
    marker ``content`` (well-formed: ``marker_form_problem``) names; None when it is. The size is
    judged first, so a file copied in part is told apart without reading it; its content only with
    ``checksum_of``."""
    if name not in content["files"]:
        return f"{name} is not among the files its {MARKER} names"
    if size is None:
        return f"{name} is missing"
    if size != content["files"][name]:
        return f"{name} has {size:,} bytes, its {MARKER} says {content['files'][name]:,}"
    if checksum_of is not None and checksum_of(name) != content["checksums"][name]:
        return f"{name} does not match its {CHECKSUM} checksum (changed since the stage finished)"
    return None


def marker_problem(content: Any, present: Dict[str, int], checksum_of: Callable[[str], str]) -> Optional[str]:
    """What keeps a stage folder from being finished, in a few words, or None when it is finished.

    ``content`` is its decoded ``MARKER`` (None when there is none or it is not JSON), ``present``
    the files in the folder (path -> size), ``checksum_of(path)`` the ``CHECKSUM`` of one of them.
    Finished: a well-formed marker (``marker_form_problem``), the files present exactly those it
    names, each with its size and checksum (``file_problem``); every size is judged before any file
    is read.
    """
    problem = marker_form_problem(content)
    if problem is not None:
        return problem
    present = {name: size for name, size in present.items() if name != MARKER}
    unlisted = sorted(set(present) - set(content["files"]))
    if unlisted:
        return f"{unlisted[0]} is not among the files its {MARKER} names"
    for read in (None, checksum_of):  # every size first, then the content
        for name in sorted(content["files"]):
            problem = file_problem(content, name, present.get(name), read)
            if problem is not None:
                return problem
    return None


def upstream_stage(order: Sequence[str], stage: str) -> Optional[str]:
    """The stage whose kept/ ``stage`` reads when it is run without --input: the one just before it in
    the pipeline ``order``; None for the first."""
    position = list(order).index(stage)
    return order[position - 1] if position > 0 else None
