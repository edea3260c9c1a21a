"""Arrays a Python worker derives from a shipped file or from the interpreter itself (an n-gram
model's sorted hashes, the character classes of every code point), kept on local disk between
processes: every worker of every run would otherwise build them again, at a cost that dominates a
worker's first filter batch.

Entries live under ``$XDG_CACHE_HOME/corpusmill/tables`` (``~/.cache`` by default), one ``.npz`` per
key, written whole and renamed into place, so workers starting together never read half a file. The
key names everything the arrays depend on (a file's SHA-256, library versions); an entry that
cannot be read is built again, and where nothing can be written (a read-only home on a cluster
node) each process builds its own, as it would without the cache.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Dict, Optional

import numpy as np

Arrays = Dict[str, np.ndarray]


def cache_dir() -> Optional[Path]:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "corpusmill" / "tables" if os.path.isabs(base) else None  # "~": no home


def file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def cached_arrays(key: str, build: Callable[[], Arrays]) -> Arrays:
    """``build()``'s arrays for ``key``: from the cache where its entry reads back whole (each array
    is checked against the CRC the ``.npz`` stores), else built, stored and returned."""
    folder = cache_dir()
    path = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:40]}.npz" if folder else None
    if path is not None:
        with contextlib.suppress(OSError, ValueError, EOFError, zipfile.BadZipFile):
            with np.load(path, allow_pickle=False) as stored:
                return {name: stored[name] for name in stored.files}
    arrays = build()
    if path is not None:
        _store(path, arrays)
    return arrays


def _store(path: Path, arrays: Arrays) -> None:
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".", suffix=".tmp", delete=False) as f:
            tmp = f.name
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except OSError:  # read-only or full: the next process builds its own
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
