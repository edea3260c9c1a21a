"""The pipeline driver: runs the chosen stages in order under ``<output>/<run>/``, resuming finished ones.

Each stage's fingerprint hashes every setting the stage reads (``Stage.config_paths``: its own
section, the I/O settings, the settings of other sections it declares), the files it depends on
and the fingerprint of what it read, so a change anywhere upstream re-runs everything after it and
nothing before.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import reduce
from typing import Any, List, Optional, Sequence

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from corpusmill.config import ConfigError
from corpusmill.run_folder import MARKER, OUTCOMES, STATS, run_name_problem, upstream_stage
from jobs import registry
from jobs.console import summary_line
from jobs.fs import HadoopFS
from jobs.lease import RunLease, lease_settings
from jobs.runner import (is_complete, read_marker, run_chunked_stage, run_stage, run_stage_after_chunks,
                         stage_problem)
from jobs.stage import Stage


def _chain(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _as_data(value: Any) -> Any:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value


def stage_fingerprint(stage: Stage, upstream: str) -> str:
    """Hash of everything the stage's output depends on: the config it reads, its files, its input."""
    settings = {path: _as_data(reduce(getattr, path.split("."), stage.cfg)) for path in stage.config_paths()}
    return _chain(stage.name, settings, upstream, stage.artifact_fingerprint())


def sample_rows(docs, fraction: Optional[float]):
    """Deterministic sample of a Parquet dataset by a hash of the document id."""
    if fraction is None:
        return docs
    return docs.where(F.pmod(F.xxhash64("id"), F.lit(1_000_000)) < F.lit(int(fraction * 1_000_000)))


def run_name(name: str) -> str:
    """``name`` when it can name a run folder (``corpusmill.run_folder.run_name_problem``); else a
    one-line ConfigError."""
    problem = run_name_problem(name)
    if problem is not None:
        raise ConfigError(f"--run: {problem}")
    return name


def plan_stages(requested: Optional[Sequence[str]]) -> List[str]:
    """The stages to run, in pipeline order; without a request, every stage."""
    if not requested:
        return registry.stage_order()
    for name in requested:
        registry.stage_class(name)  # raises a one-line error for an unknown stage
    return [name for name in registry.stage_order() if name in requested]


def run_pipeline(spark: SparkSession, cfg, inputs: Sequence[str], stages: Sequence[str],
                 output: Optional[str] = None, run: Optional[str] = None,
                 sample: Optional[float] = None, echo=print, wait_s: Optional[int] = None) -> List[dict]:
    """Run ``stages`` under ``<output>/<run>/`` while holding the run folder's lease (``wait_s``:
    how long to wait for another run that holds it, over the config's ``lease.wait_s``)."""
    fs = HadoopFS(spark)
    run_dir = fs.qualify(f"{(output or cfg.output).rstrip('/')}/{run_name(run or cfg.run)}")
    if sample is not None and not 0 < sample <= 1:
        raise ConfigError(f"--sample: must be within (0, 1], got {sample}")
    make_run_dir(fs, run_dir)
    with RunLease(fs, run_dir, lease_settings(cfg, wait_s), echo) as lease:
        return _run_stages(spark, fs, cfg, run_dir, inputs, stages, sample, echo, lease)


def _run_stages(spark: SparkSession, fs: HadoopFS, cfg, run_dir: str, inputs: Sequence[str], stages: Sequence[str],
                sample: Optional[float], echo, lease: RunLease) -> List[dict]:
    first = stages[0]
    if registry.stage_class(first).input == "files":
        if not inputs:
            raise ConfigError(f"--input: the {first} stage needs WARC/ARC files, globs or folders")
        source = fs.glob_files(inputs)
        if not source:
            raise ConfigError(f"--input: no files match {' '.join(inputs)}")
        upstream = _chain("warc", source, sample)
    elif inputs:
        if len(inputs) != 1 or not fs.exists(inputs[0]):
            raise ConfigError(f"--input: stage {first!r} reads one Parquet dataset; not found: {' '.join(inputs)}")
        source = fs.qualify(inputs[0])
        upstream = _committed_input_fingerprint(fs, first, source) or _chain("parquet", source, sample)
    else:
        source, upstream = _previous_output(fs, run_dir, first)

    all_stats = []
    for position, name in enumerate(stages):
        stage = registry.stage_class(name)(spark, cfg, sample_fraction=sample)
        reads_documents = stage.input == "documents"
        stage_fp = stage_fingerprint(stage, upstream)
        stage_dir = f"{run_dir}/{name}"
        stats = finished_stats(fs, stage_dir, stage_fp)
        if stats is not None:
            echo(f"{name:>10}: finished earlier with the same config, skipped ({stage_dir})")
        else:
            echo(f"{name:>10}: reads {source if isinstance(source, str) else f'{len(source)} input files'}")

            def load(inputs):
                docs = stage.load(inputs)
                return sample_rows(docs, sample) if position == 0 and reads_documents else docs

            chunks = plan_chunks(fs, stage, source, cfg.io.chunk_files)
            if chunks is not None and stage.chunked:
                stats = run_chunked_stage(stage, chunks, load, reads_documents, stage_dir, stage_fp, echo, lease)
            elif chunks is not None:
                stats = run_stage_after_chunks(stage, chunks, load, load(source), stage_dir, stage_fp, echo, lease)
            else:
                docs = load(source)
                counted = reads_documents and not stage.counts_its_input
                stats = run_stage(stage, docs, stage_dir, stage_fp, docs.count() if counted else None, lease=lease)
            echo(summary_line(stats, stage_dir))
            if stats["kept"] == 0 and stats["records_in"] > 0 and position < len(stages) - 1:
                echo(f"{name:>10}: kept nothing; the stages after it run on no documents")
        all_stats.append(stats)
        source, upstream = f"{stage_dir}/kept", stage_fp
    return all_stats


def finished_stats(fs: HadoopFS, stage_dir: str, fingerprint: str) -> Optional[dict]:
    """The stats of a stage that finished with this fingerprint; None when it did not, or when its
    stats cannot be read (the stage is then run again)."""
    if not is_complete(fs, stage_dir, fingerprint):
        return None
    try:
        stats = fs.read_json(f"{stage_dir}/{STATS}")
    except ValueError:
        return None
    return stats if isinstance(stats, dict) and "kept" in stats and "records_in" in stats else None


def plan_chunks(fs: HadoopFS, stage: Stage, source, chunk_files: int) -> Optional[List[List[str]]]:
    """The stage's input as groups of ``chunk_files`` files, or None when it is read whole: chunks
    are off, the stage has no per-record step to run by chunks, or the input is a finished stage
    folder."""
    if not (stage.chunked or stage.has_chunk_step) or chunk_files == 0:
        return None
    if isinstance(source, str):
        if fs.exists(f"{source}/{MARKER}"):
            return None
        names = [rel for rel in sorted(fs.list_files(source))
                 if rel.endswith(".parquet") and not any(p.startswith(("_", ".")) for p in rel.split("/"))]
        if any("/" in rel for rel in names):  # partition folders (bucket=3/): their column lives in the path
            return None
        source = [f"{source.rstrip('/')}/{rel}" for rel in names]
    return [list(source[i:i + chunk_files]) for i in range(0, len(source), chunk_files)]


def make_run_dir(fs: HadoopFS, run_dir: str) -> None:
    """Create the run folder now, so that an unusable --output is a one-line error, not a failed job."""
    try:
        fs.mkdirs(run_dir)
        usable = fs.is_dir(run_dir)
        reason = "a file is in the way"
    except Exception as exc:  # noqa: BLE001 — Hadoop's refusal (a file in the way, no permission) as one line
        cause = getattr(exc, "java_exception", exc)  # Py4J's own message only names the call
        usable, reason = False, str(cause).strip().splitlines()[0][:300]
    if not usable:
        raise ConfigError(f"--output: cannot create the run folder {run_dir} ({reason})")


def _committed_input_fingerprint(fs: HadoopFS, first: str, source: str) -> Optional[str]:
    """An --input that is a stage's kept/ (its folder holds a completion marker) is read only when that
    stage is finished, else a one-line ConfigError naming it; its fingerprint is then that stage's, as
    when the stage is read without --input, so that a re-run of it re-runs what reads it. None for any
    other dataset."""
    stage_dir, _, folder = source.rstrip("/").rpartition("/")
    if folder != OUTCOMES["kept"] or not fs.exists(f"{stage_dir}/{MARKER}"):
        return None
    problem = stage_problem(fs, stage_dir)
    if problem is not None:
        raise ConfigError(f"--input: stage {first!r} reads {source}, and the stage there is not finished: "
                          f"{problem}; run that stage again")
    return read_marker(fs, f"{stage_dir}/{MARKER}")["fingerprint"]


def _previous_output(fs: HadoopFS, run_dir: str, first: str):
    """Input of a stage run alone without --input: the kept/ of the stage just before it in the
    pipeline, which must be finished; anything else is a one-line ConfigError naming that folder
    (never a fall back to an older stage, whose documents lack what the later one did)."""
    before = upstream_stage(registry.stage_order(), first)
    if before is None:
        raise ConfigError(f"--input: stage {first!r} is the first stage; it needs --input")
    stage_dir = f"{run_dir}/{before}"
    if not fs.exists(stage_dir):
        raise ConfigError(f"--input: stage {first!r} reads the kept/ of stage {before!r}, and {stage_dir} does "
                          f"not exist: run --stages {before} first, or give --input")
    problem = stage_problem(fs, stage_dir)
    if problem is not None:
        raise ConfigError(f"--input: stage {first!r} reads {stage_dir}/kept, and stage {before!r} there is not "
                          f"finished: {problem}; run --stages {before} again, or give --input")
    return f"{stage_dir}/kept", read_marker(fs, f"{stage_dir}/{MARKER}")["fingerprint"]
