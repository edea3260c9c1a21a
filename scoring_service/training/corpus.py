"""Training and evaluation texts from files and globs: plain text, JSONL or Parquet.

* ``.txt`` — one document per non-empty line (fastText's convention).
* ``.jsonl`` / ``.json`` — one object per line with a text field; optional ``source``, ``licence``,
  ``group`` and ``lang`` fields are kept (the model card counts documents per source and licence
  and gives figures per language; the held-out split never separates documents of one group, e.g.
  the pages of one site). Without a ``group``, a ``url`` field's host is the group (a run's stages
  keep the page's URL), else each document is its own.
* ``.parquet`` (file or folder, e.g. a run's ``filter/kept/``) — a text column, same optional columns.

Files are read as a stream (``iter_examples``), a Parquet file by record batches, so a large sample
never has to fit in memory as text.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional
from urllib.parse import urlsplit



@dataclass(frozen=True)
class Example:
    text: str
    source: str
    licence: str = "unknown"
    group: str = ""
    lang: str = ""  # "" when the source does not say


def expand(patterns: Iterable[str]) -> List[str]:
    files: List[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, recursive=True)) or ([pattern] if os.path.exists(pattern) else [])
        if not matches:
            raise FileNotFoundError(f"no file matches {pattern}")
        files.extend(matches)
    return files


def read_examples(patterns: Iterable[str], text_column: str = "text") -> List[Example]:
    return list(iter_examples(patterns, text_column))


def iter_examples(patterns: Iterable[str], text_column: str = "text") -> Iterator[Example]:
    for path in expand(patterns):
        name = os.path.basename(path.rstrip("/"))
        if path.endswith(".txt"):
            with open(path, encoding="utf-8") as fh:
                yield from (Example(line.strip(), name, group=f"{name}:{i}") for i, line in enumerate(fh) if line.strip())
        elif path.endswith((".jsonl", ".json")):
            with open(path, encoding="utf-8") as fh:
                yield from _from_rows((json.loads(line) for line in fh if line.strip()), name, text_column)
        elif path.endswith(".parquet") or os.path.isdir(path):
            yield from _from_rows(_parquet_rows(path, text_column), name, text_column)
        else:
            raise ValueError(f"{path}: expected .txt, .jsonl or .parquet")


def _parquet_rows(path: str, text_column: str, batch_rows: int = 1024) -> Iterator[dict]:
    """The rows of a Parquet file or folder (a dataset's files, partition folders included), batch by batch."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(path, format="parquet", partitioning="hive")
    wanted = [c for c in dataset.schema.names if c in (text_column, "source", "licence", "group", "lang", "url")]
    for batch in dataset.to_batches(columns=wanted, batch_size=batch_rows):
        yield from batch.to_pylist()


def _from_rows(rows: Iterable[dict], name: str, text_column: str) -> Iterator[Example]:
    for i, row in enumerate(rows):
        text = row.get(text_column)
        if text_column not in row:
            raise ValueError(f"{name}: no {text_column!r} field in row {i}")
        if text and text.strip():
            yield Example(text, _opt(row.get("source")) or name, _opt(row.get("licence")) or "unknown",
                          _opt(row.get("group")) or _site(row.get("url")) or f"{name}:{i}", _opt(row.get("lang")) or "")


def _site(url) -> Optional[str]:
    """A page's group when none is given: its host, so that a site's pages (their shared furniture and
    near-copies) stay in one split."""
    try:
        host = urlsplit(str(url)).hostname if url else None
    except ValueError:  # not a URL: no site to keep together
        return None
    return f"site:{host}" if host else None


def _opt(value) -> Optional[str]:
    return str(value) if value not in (None, "") else None


def write_jsonl(path: str, examples: Iterable[Example]) -> int:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for ex in examples:
            row = {"text": ex.text, "source": ex.source, "licence": ex.licence, "group": ex.group}
            if ex.lang:
                row["lang"] = ex.lang
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
