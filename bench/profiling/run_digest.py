"""A run's outputs as a digest, to show that a change to the code left them unchanged.

    python -m bench.profiling.run_digest out/demo > before.json
    python -m bench.profiling.run_digest out/demo --compare before.json

Per stage and outcome folder (kept/, rejected/, errors/, skipped/): the row count, a SHA-256 of the
sorted ids, a SHA-256 of every row's content columns (text, or the token columns of pack) in id
order, and the schema as Arrow types. MindRecord shards (the mindrecord stage writes no outcome
folders) are read back with MindSpore: per shard file, its rows and a SHA-256 of its rows in order. ``--compare`` prints every difference and exits 1 if there is
one; a column whose type alone changed is reported as such.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import pyarrow.dataset as ds

OUTCOME_FOLDERS = ("kept", "rejected", "errors", "skipped")
CONTENT_COLUMNS = ("text", "input_ids", "segment_ids", "loss_mask", "reject_rule", "reject_value", "error")


def comparable_reject_value(value):
    """A measured value as the same text whether it was written as a number or as text ("3", 3.0):
    its column's type is part of the schema, compared apart."""
    if value is None:
        return None
    try:
        return repr(float(value))
    except ValueError:
        return str(value)


def folder_digest(path: Path) -> dict:
    table = ds.dataset(str(path), format="parquet", partitioning="hive").to_table()
    key = "id" if "id" in table.column_names else table.column_names[0]
    rows = table.to_pylist()
    rows.sort(key=lambda r: (str(r.get(key)), json.dumps(r, sort_keys=True, default=str)))
    ids, content = hashlib.sha256(), hashlib.sha256()
    for row in rows:
        ids.update(str(row.get(key)).encode() + b"\0")
        values = [comparable_reject_value(row.get(c)) if c == "reject_value" else row.get(c)
                  for c in CONTENT_COLUMNS]
        content.update(json.dumps(values, default=str).encode() + b"\0")
    return {"rows": len(rows), "ids": ids.hexdigest()[:16], "content": content.hexdigest()[:16],
            "schema": {f.name: str(f.type) for f in table.schema}}


def shard_digest(path: Path) -> dict:
    from mindspore.mindrecord import FileReader  # only where a run has shards

    reader = FileReader(str(path))
    content, rows = hashlib.sha256(), 0
    try:
        for row in reader.get_next():
            content.update(json.dumps({k: v.tolist() if hasattr(v, "tolist") else v for k, v in sorted(row.items())},
                                      default=str).encode())
            rows += 1
    finally:
        reader.close()
    return {"rows": rows, "ids": path.name, "content": content.hexdigest()[:16], "schema": {}}


def run_digest(run_dir: Path) -> dict:
    digest = {}
    for stage_dir in sorted(p for p in run_dir.iterdir() if p.is_dir() and (p / "_COMPLETE.json").exists()):
        digest[stage_dir.name] = {name: folder_digest(stage_dir / name) for name in OUTCOME_FOLDERS
                                  if (stage_dir / name).is_dir()}
        digest[stage_dir.name].update({shard.name: shard_digest(shard)
                                       for shard in sorted(stage_dir.glob("*.mindrecord"))})
    return digest


def differences(before: dict, after: dict) -> list:
    found = []
    for stage in sorted(set(before) | set(after)):
        for folder in sorted(set(before.get(stage, {})) | set(after.get(stage, {}))):
            old, new = before.get(stage, {}).get(folder), after.get(stage, {}).get(folder)
            if old is None or new is None:
                found.append(f"{stage}/{folder}: only {'after' if old is None else 'before'}")
                continue
            for field in ("rows", "ids", "content"):
                if old[field] != new[field]:
                    found.append(f"{stage}/{folder}: {field} {old[field]} -> {new[field]}")
            for column in sorted(set(old["schema"]) | set(new["schema"])):
                if old["schema"].get(column) != new["schema"].get(column):
                    found.append(f"{stage}/{folder}: column {column}: {old['schema'].get(column)} -> "
                                 f"{new['schema'].get(column)}")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--compare", type=Path, help="a digest written earlier: print the differences")
    args = parser.parse_args(argv)
    digest = run_digest(args.run_dir)
    if not args.compare:
        json.dump(digest, sys.stdout, indent=1, sort_keys=True)
        return 0
    found = differences(json.loads(args.compare.read_text()), digest)
    stages = ", ".join(f"{s} ({sum(d['rows'] for d in folders.values()):,} rows)" for s, folders in digest.items())
    print(f"compared {len(digest)} stages: {stages}")
    print("\n".join(found) if found else "no difference")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
