"""filter: language ID and heuristic quality rules over documents (Gopher, C4, FineWeb, a table of
simple thresholds, n-gram perplexity).

    spark-submit jobs/stages/filter/__main__.py --input out/demo/extract/kept --run demo

Every document passes once through ``udfs.filter.rules.DocumentFilter`` inside an Arrow batch
(``mapInArrow``): fastText LID, the quality signals, the rules. Kept and rejected rows both carry
``lang``, ``lang_score`` and every signal (so a new threshold needs no recomputation); rejected rows
carry the first failing rule in ``reject_rule`` and its measured value in ``reject_value`` (as text),
and ``failed_rules`` lists every rule a document fails. ``_stats.json`` gets, per rule, the documents
it rejected first (``first_hit``) and would have rejected alone (``alone``), and the stage writes a
deterministic sample of rejected documents per rule to ``<stage>/samples/<rule>.jsonl``. The samples
are for people to read, so their text and URL are scrubbed with the ``pii`` settings (the stage
declares that read) whether or not the run has a pii stage; the Parquet rows stay raw.

Documents in a language with an n-gram model also get ``perplexity``; a second pass
(``perplexity.py`` beside this class) cuts each language's perplexities of the kept documents at
``perplexity.bucket_quantiles`` into CCNet's ``ppl_bucket`` (head / middle / tail) on every row, and
``_stats.json`` records the cut-offs (``ppl_cutoffs``).
"""
from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Iterator, Optional, Tuple

import pyarrow as pa
from pyspark import StorageLevel, inheritable_thread_target
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from jobs.fs import HadoopFS
from jobs.report.facts import top_counts
from jobs.report.render import table
from jobs.report.svg import bar_chart
from jobs.scrubbing import scrubbed_rows, spot_check_picks
from jobs.stage import Stage, Transformed, bookkeeping_fields, measured_values, over_limit_as_errors
from jobs.stages.filter.perplexity import with_ppl_bucket
from udfs.filter.rules import FILTER_SIGNALS, DocumentFilter, FilterConfig

_ARROW_KINDS = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
# The columns this stage adds (replacing same-named input columns), in output order.
FILTER_FIELDS = pa.schema(
    [("lang", pa.string()), ("lang_script", pa.string()), ("lang_score", pa.float64()), ("lang_confident", pa.bool_())]
    + [(name, _ARROW_KINDS[kind]) for name, kind in FILTER_SIGNALS.items()]
    + [("perplexity", pa.float64())]
    + [("failed_rules", pa.list_(pa.string()))]
    + bookkeeping_fields("reject_rule", "reject_value", "error", "_outcome"))
# What a spot-check sample shows of each rejected document.
SAMPLE_COLUMNS = ["id", "url", "lang", "lang_score", "reject_rule", "reject_value", "failed_rules", "text"]
_TOP_LANGUAGES = 50
_TOP_RULES_PER_LANGUAGE = 3


class FilterStage(Stage):
    name = "filter"
    config = FilterConfig
    order = 20
    # The samples are scrubbed with the pii settings: a change there rewrites them.
    reads = ("pii",)
    required_columns = ("text",)
    # The text's length as filtered (a later stage may change the text).
    text_length_column = "n_chars"
    makes_over_limit_errors = True  # before the perplexity cut-offs, which read the kept rows

    @classmethod
    def report_facts(cls, read, stats: dict) -> dict:
        languages = stats.get("languages")
        if isinstance(languages, dict):
            return {"languages": {str(k): int(v) for k, v in languages.items()}}
        filtered = read("kept", "rejected")
        return {"languages": top_counts(filtered, "lang") if filtered is not None and "lang" in filtered.columns
                else {}}

    @classmethod
    def report_section(cls, facts) -> str:
        parts = []
        rules = facts.stats[cls.name].get("rules")
        if isinstance(rules, list) and rules and all(isinstance(r, dict) for r in rules):
            # The chart shows the rules that fired; the table lists every rule, in evaluation order.
            items = [(r.get("rule", "?"), int(r.get("first_hit") or 0)) for r in rules if r.get("first_hit")]
            if items:
                parts.append(bar_chart(items, "filter rejections per rule (first rule hit)", colour="#b8423a"))
            parts.append(table(("rule (evaluation order)", "rejected (first rule hit)", "would reject alone"),
                               [(r.get("rule", "?"), r.get("first_hit", 0), r.get("alone", "")) for r in rules]))
        languages = facts.stage_facts.get(cls.name, {}).get("languages")
        if languages:
            items = sorted(languages.items(), key=lambda kv: -kv[1])[:20]
            parts.append("<h3>Languages (top 20, filter input)</h3>"
                         + bar_chart(items, "documents per language", colour="#2aa3b5", label_width=80))
        outcomes = facts.stats[cls.name].get("language_outcomes")
        if isinstance(outcomes, dict) and outcomes:
            parts.append("<h3>Per language (top 50)</h3>" + table(
                ("language", "documents", "kept", "confident tag", "top rejecting rules"),
                [(lang, o.get("documents", 0), f"{o.get('kept', 0) / max(o.get('documents', 0), 1):.1%}",
                  f"{o.get('confident', 0) / max(o.get('documents', 0), 1):.1%}",
                  ", ".join(f"{rule} {n}" for rule, n in (o.get("rejected_by") or {}).items()))
                 for lang, o in outcomes.items() if isinstance(o, dict)]))
        return "<h2>Rejections per rule</h2>" + "".join(parts) if parts else ""

    def transform(self, docs: DataFrame, resources: ExitStack) -> Transformed:
        docs = docs.drop(*[c for c in FILTER_FIELDS.names + ["ppl_bucket"] if c in docs.columns])
        settings = self.settings
        out_fields = FILTER_FIELDS

        def filter_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            doc_filter = DocumentFilter(settings)  # the LID model itself is cached per worker
            for batch in batches:
                columns = doc_filter.apply(batch.column("text").to_pylist())
                added = [measured_values(columns[f.name]) if f.name == "reject_value" else
                         pa.array(columns[f.name], type=f.type) for f in out_fields]
                yield pa.RecordBatch.from_arrays(batch.columns + added,
                                                 names=batch.schema.names + out_fields.names)

        schema = StructType(docs.schema.fields + from_arrow_schema(FILTER_FIELDS).fields)
        # Persisted so the bucket cut-offs (an action) and the write share one pass of the filter.
        filtered = over_limit_as_errors(docs.mapInArrow(filter_batches, schema)).persist(StorageLevel.MEMORY_AND_DISK)
        facts: dict = {}

        def release() -> None:  # by the runner, once the write is done (or failed)
            if "from_cache" in facts:  # it reads the cache too
                facts["from_cache"].add_done_callback(lambda _: filtered.unpersist())
            else:
                filtered.unpersist()
        resources.callback(release)
        out, facts["ppl_cutoffs"] = with_ppl_bucket(filtered, settings.perplexity,
                                                    reference=F.col("_outcome") == "kept")
        # The cut-offs have filled the cache: the per-rule counts and the samples are read from it (the
        # rows the runner writes) while the runner writes and counts. (inheritable_thread_target: their
        # jobs run in the stage's job group.)
        pool = ThreadPoolExecutor(max_workers=1)
        facts["from_cache"] = pool.submit(inheritable_thread_target(self.spark)(self.facts_from_cache), filtered)
        pool.shutdown(wait=False)  # its one thread ends with them
        return Transformed(out, facts)

    def facts_from_cache(self, filtered: DataFrame) -> Tuple[list, Optional[list]]:
        """The per-rule counts of the kept and rejected rows, and the samples (None when off)."""
        rules = self.settings.rule_names()
        # One query for both figures: a few rows per (rule, language), each with how many of its
        # documents fail each rule.
        counts = filtered.where(F.col("_outcome").isin("kept", "rejected")).groupBy("reject_rule", "lang").agg(
            F.count(F.lit(1)).alias("n"), F.sum(F.col("lang_confident").cast("long")).alias("confident"),
            *[F.sum(F.array_contains("failed_rules", rule).cast("long")).alias(f"fails_{i}")
              for i, rule in enumerate(rules)]).collect()
        samples = (self.sample_rows(filtered.where(F.col("_outcome") == "rejected"))
                   if self.settings.samples_per_rule else None)
        return counts, samples

    def extra_stats(self, stage_dir: str, facts: dict) -> dict:
        counts, samples = facts["from_cache"].result()
        rules = self.settings.rule_names()
        first_hit: Counter = Counter()
        alone: Counter = Counter()
        languages: Counter = Counter()
        outcomes: dict = {}
        for row in counts:
            lang = row["lang"] or "-"
            if row["reject_rule"]:
                first_hit[row["reject_rule"]] += row["n"]
            languages[lang] += row["n"]
            seen = outcomes.setdefault(lang, {"documents": 0, "kept": 0, "confident": 0, "rejected_by": Counter()})
            seen["documents"] += row["n"]
            seen["confident"] += row["confident"] or 0
            if row["reject_rule"]:
                seen["rejected_by"][row["reject_rule"]] += row["n"]
            else:
                seen["kept"] += row["n"]
            for i, rule in enumerate(rules):
                alone[rule] += row[f"fails_{i}"] or 0
        stats = {
            # In evaluation order: the funnel reads top to bottom.
            "rules": [{"rule": name, "first_hit": first_hit.get(name, 0), "alone": alone.get(name, 0)}
                      for name in rules],
            "languages": dict(sorted(languages.items(), key=lambda item: (-item[1], item[0]))[:_TOP_LANGUAGES]),
            # Documents whose tag is not confident: no rule keyed by language judged them.
            "not_confident": sum(o["documents"] - o["confident"] for o in outcomes.values()),
            # Per language (the most frequent): kept, tagged confidently (judged by its language's rules; the
            # others by the language-agnostic rules only) and the rules that rejected most.
            "language_outcomes": {
                lang: {**{k: outcomes[lang][k] for k in ("documents", "kept", "confident")},
                       "rejected_by": dict(outcomes[lang]["rejected_by"].most_common(_TOP_RULES_PER_LANGUAGE))}
                for lang, _ in sorted(languages.items(), key=lambda item: (-item[1], item[0]))[:_TOP_LANGUAGES]},
            "ppl_cutoffs": facts["ppl_cutoffs"],
        }
        fs = HadoopFS(self.spark)
        if samples is not None and fs.exists(f"{stage_dir}/rejected"):
            stats["samples"] = self.write_samples(fs, stage_dir, samples)
        return stats

    def sample_rows(self, rejected: DataFrame) -> list:
        """Up to ``samples_per_rule`` of the ``rejected`` rows per rule, chosen by a hash of the id (the
        same documents on every run, no two with the same text), with text and URL scrubbed and the
        raw text's length in ``chars``; in the order of rule, then hash."""
        # Picked from the rows themselves, not joined back on id: ids need not be unique.
        samples = spot_check_picks(rejected.select(*SAMPLE_COLUMNS), "reject_rule",
                                   self.settings.samples_per_rule).select(
            *SAMPLE_COLUMNS, F.coalesce(F.length("text"), F.lit(0)).alias("chars"), "_hash")
        return sorted(scrubbed_rows(samples.collect(), self.cfg.pii),
                      key=lambda r: (r["reject_rule"], r["_hash"], r["id"]))

    @staticmethod
    def write_samples(fs: HadoopFS, stage_dir: str, rows: list) -> dict:
        """``sample_rows`` as ``samples/<rule>.jsonl`` (a document the scrubber cannot finish shows no
        text and the reason in ``error``); returns rule -> file. The run report shows the first few
        of each file."""
        by_rule: dict = {}
        for row in rows:
            record = {c: row[c] for c in SAMPLE_COLUMNS + ["chars"]}
            if row["error"]:
                record["error"] = row["error"]
            by_rule.setdefault(row["reject_rule"], []).append(json.dumps(record, ensure_ascii=False))
        files = {}
        for rule, lines in by_rule.items():
            files[rule] = f"samples/{rule}.jsonl"
            fs.write_text(f"{stage_dir}/{files[rule]}", "\n".join(lines) + "\n")
        return files

