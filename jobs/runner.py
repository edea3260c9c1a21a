"""The runner: every stage gets the same run layout, atomic commits and counts that reconcile.

The runner writes a stage's rows in one pass, partitioned by outcome, into ``<run>/<stage>.tmp-*/``;
counts the rows per outcome and reason from the written files; writes ``_stats.json``; moves the
folder to ``<run>/<stage>/``; and writes the completion marker last, at the final location, naming
every file it covers with its size and content checksum. On an object store a folder rename is a
copy and a delete, so a killed commit can leave part of the files in place: such a stage has no
marker, or a marker whose files do not match, and is not finished. A stage whose records are
independent (``chunked``) can also run chunk by chunk (``run_chunked_stage``): each chunk is
committed on its own, and a re-run after a crash redoes only the chunks that were not. A stage that
needs its whole input at once but whose costly per-record step does not (dedup: signatures per
chunk, clustering once) commits that step chunk by chunk the same way and then runs whole
(``run_stage_after_chunks``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import uuid
from contextlib import ExitStack, contextmanager
from typing import Callable, Dict, Iterator, Optional, Sequence, Tuple

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from corpusmill.run_folder import MARKER, STATS, is_marker, marker_problem, new_marker
from jobs.fs import HadoopFS, StorageError, storage_error
from jobs.lease import RunLease
from jobs.stage import OVER_LIMIT, Stage, Transformed, conform_bookkeeping, over_limit_as_errors

CHUNKS = "_chunks"  # chunk markers of a stage run chunk by chunk


def read_marker(fs: HadoopFS, path: str) -> Optional[dict]:
    """A marker's content when it is a complete, well-formed marker (``is_marker``). An empty, cut,
    damaged or missing marker is None: whatever it was meant to cover is not finished."""
    try:
        if not fs.exists(path):
            return None
        content = fs.read_json(path)
    except ValueError:  # empty (a full disk), cut short, not JSON, not UTF-8
        return None
    return content if is_marker(content) else None


def stage_problem(fs: HadoopFS, stage_dir: str, fingerprint: Optional[str] = None) -> Optional[str]:
    """What keeps the stage at ``stage_dir`` from being finished (``corpusmill.run_folder.marker_problem``:
    its marker, the files it names with their sizes and checksums), or that it was made with another
    ``fingerprint`` than the one given; None when it is finished."""
    marker = read_marker(fs, f"{stage_dir}/{MARKER}")
    if marker is not None and fingerprint is not None and marker.get("fingerprint") != fingerprint:
        return "it was made with other settings or input"
    return marker_problem(marker, fs.list_files(stage_dir), lambda name: fs.checksum(f"{stage_dir}/{name}"))


def is_complete(fs: HadoopFS, stage_dir: str, fingerprint: str) -> bool:
    return stage_problem(fs, stage_dir, fingerprint) is None


def remove_orphans(fs: HadoopFS, stage_dir: str, keep: Optional[str] = None) -> None:
    """Delete the temporary and partial folders earlier runs of this stage left behind when they were
    killed, except ``keep`` (the partial folder of the chunk plan being resumed). Only the holder of
    the run folder's lease calls this, so no live run owns them."""
    parent, name = stage_dir.rstrip("/").rsplit("/", 1)
    kept_name = keep.rstrip("/").rsplit("/", 1)[-1] if keep else None
    for path in fs.list_dir(parent):
        found = path.rstrip("/").rsplit("/", 1)[-1]
        if found.startswith((f"{name}.tmp-", f"{name}.partial-")) and found != kept_name:
            fs.delete(path)


def commit(fs: HadoopFS, tmp_dir: str, stage_dir: str, fingerprint: str, lease: Optional[RunLease]) -> None:
    """Move a written stage into place; the marker, naming every file with its size and content
    checksum (each file read once, here), is written last.

    The old marker goes first, so that from then on a crash leaves a stage that is not finished.
    """
    if lease is not None:
        lease.check()
    fs.delete(f"{stage_dir}/{MARKER}")
    fs.delete(stage_dir)
    fs.rename(tmp_dir, stage_dir)
    files = fs.list_files(stage_dir)
    checksums = {name: fs.checksum(f"{stage_dir}/{name}") for name in files}
    fs.write_json(f"{stage_dir}/{MARKER}", new_marker(fingerprint, files, checksums, finished_at=time.time()))


def stage_stats(stage: Stage, fingerprint: str, counts: Dict[str, Dict[str, int]],
                records_in: Optional[int], wall_s: float) -> dict:
    records_out = sum(sum(reasons.values()) for reasons in counts.values())
    stats = {
        "stage": stage.name,
        "fingerprint": fingerprint,
        "records_in": records_out if records_in is None else records_in,
        "kept": sum(counts.get("kept", {}).values()),
        "rejected": counts.get("rejected", {}),
        "errors": counts.get("error", {}),
        "skipped": counts.get("skipped", {}),
        "wall_s": round(wall_s, 3),
    }
    stats["reconciled"] = stats["records_in"] == records_out
    return stats


def admitted(stage: Stage, docs: DataFrame) -> DataFrame:
    """``docs`` through the stage's door: its columns checked, and every text over ``io.max_text_chars``
    held back (null, its length in ``OVER_LIMIT``), so that no Python worker of any stage receives it."""
    stage.check_input(docs)
    return stage.hold_back_long_texts(docs) if stage.input == "documents" and "text" in docs.columns else docs


def with_over_limit_errors(stage: Stage, rows: DataFrame, held_back: bool) -> DataFrame:
    """The stage's output with each over-long text an errors/ row (``text_too_long``): the ones held back
    at the door, or for a stage reading files, each kept text over the limit."""
    if stage.makes_over_limit_errors:  # its rows may carry the mark on to its own tasks
        return rows
    if stage.input == "files" and "text" in rows.columns:
        rows = rows.withColumn(OVER_LIMIT, F.when(F.col("_outcome") == "kept", stage.too_long()))
    if OVER_LIMIT in rows.columns:
        return over_limit_as_errors(rows)
    if held_back:
        raise TypeError(f"stage {stage.name}: its transform dropped the {OVER_LIMIT} column the runner added, "
                        f"so its over-long texts would be lost; keep the column (or declare makes_over_limit_errors)")
    return rows


def transformed(stage: Stage, docs: DataFrame, resources: ExitStack) -> Transformed:
    """The stage's ``transform`` under the contract every stage keeps: ``docs`` admitted at the door,
    over-long texts made errors, the bookkeeping columns in their declared types."""
    admitted_docs = admitted(stage, docs)
    out = stage.transform(admitted_docs, resources)
    out.rows = conform_bookkeeping(with_over_limit_errors(stage, out.rows, OVER_LIMIT in admitted_docs.columns))
    return out


def write_outcomes(stage: Stage, docs: DataFrame, tmp_dir: str, resources: ExitStack,
                   release: bool) -> Tuple[Transformed, Dict[str, Dict[str, int]]]:
    """Transform (``transformed``) and write ``docs`` into ``tmp_dir`` by outcome; count the rows per
    outcome and reason, and rename the outcome folders. With ``release``, ``resources`` are closed as
    soon as the write is done: services and caches live for the one pass over the data, not the
    bookkeeping."""
    out = transformed(stage, docs, resources)
    stage.write(out, tmp_dir)
    if release:
        resources.close()
    counts = stage.count_outcomes(tmp_dir, out.rows.schema)
    stage.finalize(tmp_dir, out.rows.schema)
    return out, counts


@dataclasses.dataclass(frozen=True)
class ChunkSteps:
    """The chunk-by-chunk first step of a ``run_stage_after_chunks`` run, as ``run_stage`` sees it."""
    partial_dir: str   # kept by run_stage's clean-up, deleted once the stage is committed
    chunks: int
    started: float


@contextmanager
def storage_errors(path: str) -> Iterator[None]:
    """An out-of-space, quota or permission failure inside as one StorageError naming ``path``."""
    try:
        yield
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 — anything else goes on as it was
        refused = storage_error(exc, path)
        if refused is None:
            raise
        raise refused from None


def run_stage(stage: Stage, docs: DataFrame, stage_dir: str, fingerprint: str,
              records_in: Optional[int], after: Optional[ChunkSteps] = None,
              lease: Optional[RunLease] = None) -> dict:
    """Run one stage into ``stage_dir`` atomically and return its stats."""
    fs = HadoopFS(stage.spark)
    remove_orphans(fs, stage_dir, keep=after.partial_dir if after else None)
    tmp_dir = f"{stage_dir}.tmp-{uuid.uuid4().hex[:12]}"
    started = after.started if after else time.time()
    stage.spark.sparkContext.setJobGroup(stage.name, f"corpusmill stage {stage.name}")
    resources = ExitStack()
    try:
        with storage_errors(tmp_dir):
            out, counts = write_outcomes(stage, docs, tmp_dir, resources, release=True)
            records_in = out.facts["records_in"] if stage.counts_its_input else records_in
            stats = stage_stats(stage, fingerprint, counts, records_in, time.time() - started)
            if after:
                stats["chunks"] = after.chunks
            stats.update(stage.extra_stats(tmp_dir, out.facts))
            fs.write_json(f"{tmp_dir}/{STATS}", stats)
            commit(fs, tmp_dir, stage_dir, fingerprint, lease)
        if after:
            fs.delete(after.partial_dir)
        return stats
    except BaseException:
        fs.delete(tmp_dir)
        raise
    finally:
        resources.close()


def _merge_counts(total: Dict[str, Dict[str, int]], counts: Dict[str, Dict[str, int]]) -> None:
    for outcome, reasons in counts.items():
        for reason, n in reasons.items():
            total.setdefault(outcome, {})[reason] = total.get(outcome, {}).get(reason, 0) + n


def write_chunk_marker(fs: HadoopFS, path: str, content: dict) -> None:
    """The last write of a chunk's commit: from here on a re-run skips the chunk. (Its own function so
    that the crash tests can stop the driver right after it.)"""
    fs.write_json(path, content)


def _rows_written(marker: dict) -> Optional[int]:
    """The rows a chunk marker says were written (its outcome counts, else the rows it read); None
    when its counts are not well-formed."""
    counts = marker.get("counts")
    if counts is None:
        rows = marker.get("records_in")
        return rows if type(rows) is int and rows >= 0 else None
    if not (isinstance(counts, dict) and all(isinstance(reasons, dict) for reasons in counts.values())):
        return None
    numbers = [n for reasons in counts.values() for n in reasons.values()]
    return sum(numbers) if all(type(n) is int and n >= 0 for n in numbers) else None


def _valid_chunk_marker(marker: Optional[dict], index: int, inputs: Sequence[str], keys: Sequence[str],
                        present: Dict[str, int]) -> bool:
    """A chunk is finished only when its marker is complete (every key its stage writes), names the
    input files the plan gives that chunk, lists only files of its own chunk and at least one where
    it says rows were written, and every listed file is there with its size."""
    if marker is None or any(key not in marker for key in keys) or marker.get("inputs") != list(inputs):
        return False
    rows = _rows_written(marker)
    files = marker["files"]
    own = f"c{index:05d}-"
    return (rows is not None and (rows == 0 or bool(files))
            and all(name.rpartition("/")[2].startswith(own) and present.get(name) == size
                    for name, size in files.items()))


def _finished_chunks(fs: HadoopFS, partial_dir: str, chunks: Sequence[Sequence[str]],
                     keys: Sequence[str]) -> Dict[int, dict]:
    """The chunks whose markers are valid (``_valid_chunk_marker``). Every other marker, and every
    data file no valid marker covers (the debris of a chunk killed while its files were being moved,
    or of a damaged marker), is deleted: those chunks are done again."""
    present = fs.list_files(partial_dir)
    finished, covered = {}, set()
    for rel in present:
        if not rel.startswith(f"{CHUNKS}/"):
            continue
        number = rel[len(CHUNKS) + 1:-len(".json")] if rel.endswith(".json") else ""
        index = int(number) if number.isdigit() else -1
        marker = read_marker(fs, f"{partial_dir}/{rel}") if 0 <= index < len(chunks) else None
        if _valid_chunk_marker(marker, index, chunks[index] if marker else (), keys, present):
            finished[index] = marker
            covered.update(marker["files"])
        else:
            fs.delete(f"{partial_dir}/{rel}")
    for rel in present:
        if not rel.startswith(f"{CHUNKS}/") and rel not in covered:
            fs.delete(f"{partial_dir}/{rel}")
    return finished


def _partial_dir(stage_dir: str, fingerprint: str, chunks: Sequence[Sequence[str]]) -> str:
    """The folder chunks are committed into: named by the chunk plan, so a changed plan starts afresh."""
    plan = hashlib.sha256(json.dumps([fingerprint, list(map(list, chunks))]).encode()).hexdigest()[:12]
    return f"{stage_dir}.partial-{plan}"


def _commit_chunks(stage: Stage, fs: HadoopFS, chunks: Sequence[Sequence[str]], partial_dir: str,
                   write_chunk: Callable[[Sequence[str], str], dict], keys: Sequence[str], echo,
                   lease: Optional[RunLease]) -> Dict[int, dict]:
    """Run every chunk that has no valid marker in ``partial_dir`` yet: ``write_chunk(files, tmp_dir)``
    writes it into a temporary folder of this attempt's own and returns what its marker records
    besides the files (``keys``); its data files are moved into ``partial_dir`` and its marker (with
    the files and the chunk's input files) is written last. Returns every chunk's marker."""
    finished = _finished_chunks(fs, partial_dir, chunks, keys)
    if finished:
        echo(f"{stage.name:>10}: resuming: {len(finished)} of {len(chunks)} chunks were committed earlier")
    attempt = lease.attempt if lease is not None else uuid.uuid4().hex[:12]
    for index, files in enumerate(chunks):
        if index in finished:
            continue
        tmp_dir = f"{partial_dir}/chunk-tmp-{index:05d}-{attempt}"
        try:
            with storage_errors(tmp_dir):
                written = write_chunk(files, tmp_dir)
                if lease is not None:
                    lease.check()
                finished[index] = {"files": _move_chunk_files(fs, tmp_dir, partial_dir, index), **written,
                                   "inputs": list(files)}
        finally:
            fs.delete(tmp_dir)
        write_chunk_marker(fs, f"{partial_dir}/{CHUNKS}/{index:05d}.json", finished[index])
        echo(f"{stage.name:>10}: chunk {index + 1}/{len(chunks)} committed ({len(files)} input files)")
    return finished


def run_chunked_stage(stage: Stage, chunks: Sequence[Sequence[str]], load_chunk: Callable[[Sequence[str]], DataFrame],
                      count_input: bool, stage_dir: str, fingerprint: str, echo=print,
                      lease: Optional[RunLease] = None) -> dict:
    """Run a stage chunk by chunk; each chunk is committed on its own and a re-run skips it.

    A chunk is written like a stage (into a temporary folder), its data files are moved into
    ``<stage>.partial-<plan>/`` under names prefixed with the chunk number, and then its marker
    (``_chunks/<n>.json``: the input files, the files written with their sizes, the counts) is
    written last. When every chunk is there, the folder gets its stats and is committed like any stage.
    """
    fs = HadoopFS(stage.spark)
    partial_dir = _partial_dir(stage_dir, fingerprint, chunks)
    remove_orphans(fs, stage_dir, keep=partial_dir)
    started = time.time()
    stage.spark.sparkContext.setJobGroup(stage.name, f"corpusmill stage {stage.name}")
    resources = ExitStack()

    def write_chunk(files: Sequence[str], tmp_dir: str) -> dict:
        docs = load_chunk(files)
        records_in = docs.count() if count_input else None
        # The resources (e.g. a started service) serve every chunk; closed once all are done.
        out, counts = write_outcomes(stage, docs, tmp_dir, resources, release=False)
        return {"counts": counts, "records_in": records_in, "facts": out.facts}

    try:
        finished = _commit_chunks(stage, fs, chunks, partial_dir, write_chunk, ("counts", "records_in", "facts"),
                                  echo, lease)
        resources.close()
        counts: Dict[str, Dict[str, int]] = {}
        for marker in finished.values():
            _merge_counts(counts, marker["counts"])
        records_in = sum(m["records_in"] for m in finished.values()) if count_input else None
        stats = stage_stats(stage, fingerprint, counts, records_in, time.time() - started)
        stats["chunks"] = len(chunks)
        stats.update(stage.extra_stats(partial_dir, finished[len(chunks) - 1]["facts"] if chunks else {}))
        fs.write_json(f"{partial_dir}/{STATS}", stats)
        commit(fs, partial_dir, stage_dir, fingerprint, lease)
        return stats
    finally:
        resources.close()


def run_stage_after_chunks(stage: Stage, chunks: Sequence[Sequence[str]],
                           load_chunk: Callable[[Sequence[str]], DataFrame], docs: DataFrame,
                           stage_dir: str, fingerprint: str, echo=print, lease: Optional[RunLease] = None) -> dict:
    """Run a ``has_chunk_step`` stage in two steps: its per-record step chunk by chunk, each chunk
    committed into ``<stage>.partial-<plan>/`` as in ``run_chunked_stage``; then the stage on its
    whole input ``docs``, with every chunk's rows in ``stage.chunk_results``, committed like any
    stage. A re-run after a crash redoes only the chunks not committed, then the whole-input step."""
    fs = HadoopFS(stage.spark)
    partial_dir = _partial_dir(stage_dir, fingerprint, chunks)
    remove_orphans(fs, stage_dir, keep=partial_dir)
    started = time.time()
    stage.spark.sparkContext.setJobGroup(stage.name, f"corpusmill stage {stage.name}")
    results_schema = stage.chunk_step(admitted(stage, docs)).schema

    def write_chunk(files: Sequence[str], tmp_dir: str) -> dict:
        chunk = load_chunk(files)
        (stage.chunk_step(admitted(stage, chunk)).write
            .option("compression", stage.cfg.io.parquet_compression).parquet(tmp_dir))
        return {"records_in": chunk.count()}

    finished = _commit_chunks(stage, fs, chunks, partial_dir, write_chunk, ("records_in",), echo, lease)
    saved = [f"{partial_dir}/{name}" for marker in finished.values() for name in marker["files"]]
    stage.chunk_results = (stage.spark.read.schema(results_schema).parquet(*saved) if saved
                           else stage.spark.createDataFrame([], results_schema))
    return run_stage(stage, docs, stage_dir, fingerprint, sum(m["records_in"] for m in finished.values()),
                     after=ChunkSteps(partial_dir, len(chunks), started), lease=lease)


def _move_chunk_files(fs: HadoopFS, tmp_dir: str, partial_dir: str, index: int) -> Dict[str, int]:
    """Move a chunk's data files from ``tmp_dir`` into the partial folder under names prefixed with the
    chunk number; returns them with their sizes."""
    moved = {}
    for rel, size in sorted(fs.list_files(tmp_dir).items()):
        folder, _, name = rel.rpartition("/")
        if name.startswith(("_", ".")):  # _SUCCESS and the like: not data
            continue
        target = f"{folder}/c{index:05d}-{name}" if folder else f"c{index:05d}-{name}"
        fs.mkdirs(f"{partial_dir}/{folder}" if folder else partial_dir)
        fs.rename(f"{tmp_dir}/{rel}", f"{partial_dir}/{target}")
        moved[target] = size
    return moved
