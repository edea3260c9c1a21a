"""Training and evaluation texts from files and globs: plain text, JSONL or Parquet.

* ``.txt`` — one document per non-empty line (fastText's convention).
* ``.jsonl`` / ``.json`` — one object per line with a text field; optional ``source``, ``licence``
  and ``group`` fields are kept (the model card counts documents per source and licence; the
  held-out split never separates documents of one group, e.g. the pages of one site).
* ``.parquet`` (file or folder) — a text column, same optional columns.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from typing import Iterable, List, Optional

import pyarrow.parquet as pq


@dataclass(frozen=True)
class Example:
    text: str
    source: str
    licence: str = "unknown"
    group: str = ""


def expand(patterns: Iterable[str]) -> List[str]:
    files: List[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, recursive=True)) or ([pattern] if os.path.exists(pattern) else [])
        if not matches:
            raise FileNotFoundError(f"no file matches {pattern}")
        files.extend(matches)
    return files


def read_examples(patterns: Iterable[str], text_column: str = "text") -> List[Example]:
    examples: List[Example] = []
    for path in expand(patterns):
        name = os.path.basename(path.rstrip("/"))
        if path.endswith(".txt"):
            with open(path, encoding="utf-8") as fh:
                examples.extend(Example(line.strip(), name, group=f"{name}:{i}")
                                for i, line in enumerate(fh) if line.strip())
        elif path.endswith((".jsonl", ".json")):
            with open(path, encoding="utf-8") as fh:
                rows = [json.loads(line) for line in fh if line.strip()]
            examples.extend(_from_rows(rows, name, text_column))
        elif path.endswith(".parquet") or os.path.isdir(path):
            examples.extend(_from_rows(pq.read_table(path).to_pylist(), name, text_column))
        else:
            raise ValueError(f"{path}: expected .txt, .jsonl or .parquet")
    return examples


def _from_rows(rows: List[dict], name: str, text_column: str) -> Iterable[Example]:
    for i, row in enumerate(rows):
        text = row.get(text_column)
        if text_column not in row:
            raise ValueError(f"{name}: no {text_column!r} field in row {i}")
        if text and text.strip():
            yield Example(text, _opt(row.get("source")) or name, _opt(row.get("licence")) or "unknown",
                          _opt(row.get("group")) or f"{name}:{i}")


def _opt(value) -> Optional[str]:
    return str(value) if value not in (None, "") else None


def write_jsonl(path: str, examples: Iterable[Example]) -> int:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for ex in examples:
            fh.write(json.dumps({"text": ex.text, "source": ex.source, "licence": ex.licence,
                                 "group": ex.group}, ensure_ascii=False) + "\n")
            n += 1
    return n
