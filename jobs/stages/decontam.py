"""decontam: documents that contain an n-gram of an evaluation set (GPT-3 appendix C; udfs/decontam/ngram_index.py).

    spark-submit jobs/stages/decontam.py --input out/demo/dedup/kept --run demo

It runs right after dedup: the fewest documents are left there, so the lookups cost least, and it
comes before score and mix, so neither spends work on documents that go. The driver builds one index
of every benchmark (``decontam.benchmarks``), writes its arrays to a local folder and ships them with
``SparkContext.addFile``; each Python worker memory-maps them, so a machine holds one copy in its page
cache whatever its cores, and each Arrow batch of documents is one vectorised lookup. Every row gets
``decontam_ngrams`` (n-grams found) and ``decontam_benchmark`` (the benchmark with most of them, null
when none); with ``action: reject`` a contaminated document goes to rejected/ with reject_rule
``decontamination`` and its benchmark in reject_value. ``_stats.json`` has, per benchmark, its items,
the items too short to look for and the documents it contaminated. Without benchmarks every document
is kept.
"""
from __future__ import annotations

import shutil
import tempfile
import uuid
from contextlib import ExitStack
from typing import Iterator, List, Optional

import numpy as np
import pyarrow as pa
from pyspark import SparkFiles
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from jobs.fs import HadoopFS
from jobs.report.render import table
from jobs.stage import Stage, Transformed, bookkeeping_fields
from udfs.decontam.ngram_index import RULE, DecontamConfig, NgramIndex, files_fingerprint, match

DECONTAM_FIELDS = pa.schema([("decontam_ngrams", pa.int64()), ("decontam_benchmark", pa.string()),
                             *bookkeeping_fields("reject_rule", "reject_value", "_outcome")])


class DecontamStage(Stage):
    name = "decontam"
    config = DecontamConfig
    order = 50
    required_columns = ("text",)
    chunked = True  # a document's outcome depends on it and the index alone

    @classmethod
    def report_section(cls, facts) -> str:
        benchmarks = facts.stats[cls.name].get("benchmarks")
        if not isinstance(benchmarks, dict) or not benchmarks:
            return ""
        rows = [(name, counts.get("items", 0), counts.get("too_short", 0), counts.get("documents", 0))
                for name, counts in sorted(benchmarks.items())]
        action = "rejected" if facts.stats[cls.name].get("action", "reject") == "reject" else "flagged"
        return (f"<h2>Benchmark contamination</h2><p>Documents sharing an n-gram with an evaluation set, per "
                f"benchmark ({action}).</p>"
                + table(("benchmark", "items", "items too short to look for", "documents"), rows))

    def __init__(self, spark, cfg, sample_fraction=None):
        super().__init__(spark, cfg, sample_fraction)
        self._index: Optional[NgramIndex] = None
        self._shipped: Optional[List[str]] = None  # file names of the index arrays given to addFile

    def artifact_fingerprint(self) -> str:
        return files_fingerprint(self.settings)

    def index(self) -> Optional[NgramIndex]:
        """The index of every benchmark, built once per stage run (every chunk uses it)."""
        if self._index is None and self.settings.benchmarks is not None:
            self._index = NgramIndex.build(self.settings)
        return self._index

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        docs = docs.drop(*[c for c in DECONTAM_FIELDS.names if c in docs.columns])
        index = self.index()
        if index is not None and self._shipped is None:
            folder = tempfile.mkdtemp(prefix="corpusmill-decontam-")
            resources.callback(shutil.rmtree, folder, True)
            resources.callback(setattr, self, "_shipped", None)
            # Unique names: a session keeps every file it was given, and refuses a name given twice.
            self._shipped = index.save(folder, f"decontam-{uuid.uuid4().hex[:12]}")
            for file_name in self._shipped:
                self.spark.sparkContext.addFile(f"{folder}/{file_name}")
        shipped = self._shipped
        names = index.names if index is not None else []
        lengths = index.lengths if index is not None else []
        reject = self.settings.action == "reject"

        def decontaminate(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            mapped = NgramIndex.mapped([SparkFiles.get(n) for n in shipped], names, lengths) if shipped else None
            for batch in batches:
                texts = batch.column("text").to_pylist()
                if mapped is None:
                    found, best = np.zeros(len(texts), np.int64), np.full(len(texts), -1)
                else:
                    found, best = match(texts, mapped)
                benchmark = [names[b] if b >= 0 else None for b in best]
                dropped = [reject and b is not None for b in benchmark]
                added = [pa.array(found, pa.int64()), pa.array(benchmark, pa.string()),
                         pa.array([RULE if d else None for d in dropped], pa.string()),
                         pa.array([b if d else None for b, d in zip(benchmark, dropped)], pa.string()),
                         pa.array(["rejected" if d else "kept" for d in dropped], pa.string())]
                yield pa.RecordBatch.from_arrays(batch.columns + added, names=batch.schema.names + DECONTAM_FIELDS.names)

        schema = StructType(docs.schema.fields + from_arrow_schema(DECONTAM_FIELDS).fields)
        facts = {} if index is None else {"index": {
            "ngram_hashes": int(len(index.hashes)), "index_bytes": index.nbytes(), "ngram_lengths": index.lengths,
            "items": index.items}}
        return Transformed(docs.mapInArrow(decontaminate, schema), facts)

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        if "index" not in facts:
            return {"benchmarks": {}, "note": "decontam.benchmarks is not set: nothing was looked for"}
        fs = HadoopFS(self.spark)
        parts = [f"{stage_dir}/{d}" for d in ("kept", "rejected") if fs.exists(f"{stage_dir}/{d}")]
        written = self.spark.read.parquet(*parts)
        documents = {r[0]: r[1] for r in written.where(F.col("decontam_benchmark").isNotNull())
                     .groupBy("decontam_benchmark").count().collect()}
        index = facts["index"]
        benchmarks = {name: {**counts, "documents": documents.get(name, 0)} for name, counts in index["items"].items()}
        return {"benchmarks": benchmarks, "action": self.settings.action,
                **{k: v for k, v in index.items() if k != "items"}}


if __name__ == "__main__":
    import sys

    from jobs.cli import main_for_stage

    sys.exit(main_for_stage("decontam"))
