"""``corpusmill derive-thresholds``: the filter rules' per-language thresholds and stop words, derived
from a reference dataset with Spark quantiles, written as a config preset the filter loads.

    corpusmill derive-thresholds --reference clean.jsonl --output conf/presets/my_languages.yaml
    corpusmill derive-thresholds --reference out/demo/filter --output my_languages.yaml
    corpusmill run --config my_languages.yaml ...

The reference is Parquet or JSONL (``.json``/``.jsonl``) with ``text`` and ``lang`` (the filter's
language codes), or a run's filter output (its ``kept/`` documents are read, with the signals the run
measured). Which rules are derived, and how, is their ``derive:`` in ``conf/filter.yaml``; the
method's settings are ``filter.derivation`` (the arithmetic: ``udfs/filter/thresholds.py``). The
shipped ``conf/presets/languages.yaml``, which ``conf/filter.yaml`` includes, is this command's
output on the UDHR reference (``python -m bench.quality.filter_languages --write-reference``).
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pyarrow as pa
import yaml

from corpusmill.config import ConfigError, shipped_file

DESCRIPTION = "the filter rules' per-language thresholds and stop words, derived from a reference dataset"


def reference_frame(spark, path: str, signals: List[str], segmentation: Dict[str, str]):
    """The reference's documents with ``lang``, ``text`` and ``signals`` (measured here when absent)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructType

    from jobs.fs import HadoopFS
    from jobs.stages.filter import FILTER_FIELDS

    fs = HadoopFS(spark)
    if fs.exists(f"{path}/kept"):  # a run's filter output
        path = f"{path}/kept"
    docs = spark.read.json(path) if path.endswith((".json", ".jsonl")) else spark.read.parquet(path)
    missing = [c for c in ("text", "lang") if c not in docs.columns]
    if missing:
        raise ConfigError(f"--reference {path}: no column {', '.join(missing)} (it needs text and lang)")
    docs = docs.where(F.col("text").isNotNull() & F.col("lang").isNotNull()).select("lang", "text", *[
        c for c in signals if c in docs.columns])
    if all(c in docs.columns for c in signals):
        return docs
    out_fields = [f for f in FILTER_FIELDS if f.name in signals]
    schema = StructType(from_arrow_schema(pa.schema([("lang", pa.string()), ("text", pa.string())] + out_fields)).fields)

    def measure(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from udfs.filter.rules import language_signals

        for batch in batches:
            measured = [language_signals(text, lang, {}, segmentation)
                        for text, lang in zip(batch.column("text").to_pylist(), batch.column("lang").to_pylist())]
            yield pa.RecordBatch.from_arrays(
                [batch.column("lang"), batch.column("text")]
                + [pa.array([m[f.name] for m in measured], type=f.type) for f in out_fields],
                names=["lang", "text"] + [f.name for f in out_fields])

    return docs.select("lang", "text").mapInArrow(measure, schema)


def _bounds(thresholds) -> dict:
    return {key: value for key, value in (("min", thresholds.min), ("max", thresholds.max)) if value is not None}


def derive(spark, reference: str, cfg) -> dict:
    """The preset's ``filter:`` section for the reference at ``reference`` under filter config ``cfg``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    from udfs.filter.thresholds import document_words, finite, following, loosened, scaled, stop_words

    derivation = cfg.derivation
    derived = {name: rule for name, rule in cfg.rules.items() if rule.derive}
    signals = sorted({rule.signal for rule in derived.values()})
    segmentation = cfg.word_segmentation
    docs = reference_frame(spark, reference, signals, segmentation).persist()
    worded = None
    try:
        q = derivation.quantile
        stats = docs.groupBy("lang").agg(F.count(F.lit(1)).alias("documents"), *[
            F.percentile_approx(s, [q, 0.5, 1 - q]).alias(s) for s in signals]).collect()
        languages = {row["lang"]: row for row in stats if row["documents"] >= derivation.min_documents}
        if not languages:
            raise ConfigError(f"--reference {reference}: no language has {derivation.min_documents} documents")
        # Each document's words, found once: for the candidates' frequency, then for which each holds.
        words_udf = F.udf(lambda text, lang: document_words(text, segmentation.get(lang)), ArrayType(StringType()))
        worded = (docs.where(F.col("lang").isin(list(languages)))
                  .select("lang", words_udf("text", "lang").alias("words")).persist())
        frequency = (worded.select("lang", F.explode("words").alias("word"))
                     .groupBy("lang", "word").count()
                     .withColumn("rank", F.row_number().over(
                         Window.partitionBy("lang").orderBy(F.desc("count"), "word")))
                     .where(F.col("rank") <= derivation.stop_word_candidates).collect())
        candidates: Dict[str, list] = {}
        for row in frequency:
            candidates.setdefault(row["lang"], []).append((row["word"], row["count"]))
        # Which candidates each document holds, as (language, words) -> documents holding just those.
        held = {lang: frozenset(word for word, _ in words) for lang, words in candidates.items()}
        held_udf = F.udf(lambda words, lang: sorted(held[lang].intersection(words)), ArrayType(StringType()))
        patterns = (worded.where(F.col("lang").isin(list(held)))
                    .select("lang", held_udf("words", "lang").alias("words"))
                    .groupBy("lang", "words").count().collect())
    finally:
        if worded is not None:
            worded.unpersist()
        docs.unpersist()

    def quantile(signal: str, index: int) -> Dict[str, float]:
        values = {lang: finite((row[signal] or [None] * 3)[index]) for lang, row in languages.items()}
        return {lang: v for lang, v in values.items() if v is not None}

    # Every rule, in conf/filter.yaml's own order: the file it includes (this preset) sets the rules' order.
    shipped = yaml.safe_load(shipped_file("filter").read_text(encoding="utf-8"))["filter"]["rules"]
    rules: dict = {name: {} for name in [*shipped, *cfg.rules] if name in cfg.rules}
    derived_by_language: Dict[str, dict] = {}
    for name, rule in derived.items():  # a rule follows one listed before it (FilterConfig.validate)
        if rule.derive == "scale":
            loosest, by_language = scaled(rule, quantile(rule.signal, 1), derivation.anchor_language)
            rules[name] = _bounds(loosest)
        else:
            by_language = loosened(rule, quantile(rule.signal, 0), quantile(rule.signal, 2), derivation)
        if rule.follows:
            by_language = following(rule, by_language, cfg.rules[rule.follows],
                                    derived_by_language.get(rule.follows, {}))
        derived_by_language[name] = by_language
        if by_language:
            rules[name]["by_language"] = {lang: _bounds(t) for lang, t in sorted(by_language.items())}
    documents: Dict[str, list] = {}
    for row in patterns:
        documents.setdefault(row["lang"], []).append((frozenset(row["words"]), row["count"]))
    # A language's list gives each of its reference documents one stop word more than the rule asks,
    # so that new text of each variety its tag is given to clears the rule too.
    per_document = 1 + max((math.ceil(rule.min) for rule in cfg.rules.values()
                            if rule.signal == "stop_words" and rule.min is not None), default=0)
    return {
        "stop_words": {lang: stop_words(words, derivation, documents.get(lang, ()), per_document)
                       for lang, words in sorted(candidates.items()) if len(words) >= derivation.stop_words},
        "rules": rules,
        "_documents": {lang: row["documents"] for lang, row in sorted(languages.items())},
    }


def write_preset(section: dict, output: Path, reference: str) -> None:
    documents = section.pop("_documents")
    header = (f"# Per-language thresholds and stop words for the filter, written by\n"
              f"#   corpusmill derive-thresholds --reference {reference} --output {output}\n"
              f"# from {sum(documents.values())} documents in {len(documents)} languages. A rule's by_language\n"
              f"# thresholds judge documents confidently tagged in that language (filter.language.confident_min_score);\n"
              f"# the others are judged by its min/max. Use: corpusmill run --config {output.name} ...\n")

    class Flow(yaml.SafeDumper):  # one line per language
        pass

    def represent_dict(dumper, data):
        flow = all(not isinstance(v, (dict, list)) for v in data.values())
        return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)

    def represent_list(dumper, data):
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)

    Flow.add_representer(dict, represent_dict)
    Flow.add_representer(list, represent_list)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(header + yaml.dump({"filter": section}, Dumper=Flow, allow_unicode=True, sort_keys=False,
                                         width=120), encoding="utf-8")
    print(f"derive-thresholds: {len(documents)} languages, {len(section['stop_words'])} stop-word lists, "
          f"{len(section['rules'])} rules -> {output}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="corpusmill derive-thresholds", description=DESCRIPTION)
    parser.add_argument("--reference", required=True,
                        help="Parquet or JSONL with text and lang, or a run's filter output folder")
    parser.add_argument("--output", required=True, type=Path, help="the preset YAML to write")
    parser.add_argument("--config", help="YAML config: its filter rules and filter.derivation (default: conf/local.yaml)")
    args = parser.parse_args(argv)

    from jobs.config import load
    from jobs.spark import get_session

    cfg = load(args.config)
    spark = get_session(cfg.spark)
    write_preset(derive(spark, args.reference, cfg.filter), args.output, args.reference)
    return 0
