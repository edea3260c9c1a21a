"""The run report: ``<output>/<run>/report.html``, one self-contained page (inline SVG, no scripts, no network).

Built from each stage's ``_stats.json`` plus a few small aggregations of the written outputs
(length, score and language histograms, PII counts per type, samples of rejected documents). It
reads whatever keys and columns exist, so a run with fewer stages, or a stage that reports fewer
figures, still gets a report with the sections that apply.

The report is the file people share, so every excerpt and URL it shows passes through the pii
stage's scrubber (``jobs.transforms.scrub.scrubbed_rows``, with the run's ``pii`` settings) first: the rejected samples
of extract and filter come from before the pii stage and are raw on disk. A stage that writes its own
scrubbed spot-check files (filter's ``samples/``) is shown from them.

    corpusmill report --output out --run demo     # (re)write it for a finished or partial run
"""
from __future__ import annotations

import json
import time
from html import escape
from typing import Dict, List, Optional, Sequence, Tuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import registry
from jobs.console import output_note, stage_units
from jobs.fs import HadoopFS
from jobs.transforms.scrub import scrubbed_rows, spot_check_picks
from jobs.report_svg import KEPT_COLOUR, REJECTED_COLOUR, bar_chart, funnel_chart, histogram, paired_bar_chart
from jobs.stage import STATS
from udfs.pii.scrub import PiiConfig

REPORT = "report.html"
DROP_KINDS = ("rejected", "errors", "skipped")
# Stages whose kept/ holds documents (one row per document, with text) rather than sequences or shards.
DOCUMENT_STAGES = ("extract", "filter", "pii", "dedup", "decontam", "score")
SAMPLES_PER_REASON = 3
EXCERPT_CHARS = 700
SCORE_BINS = 20
PRESAMPLE = 200  # rows per reason that reach the sort which picks the samples
HASH_RANGE = 1_000_000
LENGTH_SAMPLE = 2_000_000  # documents read for the length histogram at most (about)
# Stats keys drawn elsewhere in the report; every other scalar figure goes into the stage's table.
SHOWN_KEYS = {"stage", "fingerprint", "records_in", "kept", "rejected", "errors", "skipped", "wall_s",
              "reconciled", "rules", "languages", "samples", "cluster_size_histogram", "mixture"}


def write_report(spark: SparkSession, run_dir: str, pii: Optional[PiiConfig] = None) -> str:
    """Write ``<run_dir>/report.html`` and return its URI; excerpts are scrubbed with ``pii`` (the
    run's ``cfg.pii``; the defaults when not given)."""
    fs = HadoopFS(spark)
    run_dir = fs.qualify(run_dir.rstrip("/"))
    facts = RunFacts.collect(spark, fs, run_dir, pii or PiiConfig())
    target = f"{run_dir}/{REPORT}"
    fs.write_text(target, render(facts))
    return target


class RunFacts:
    """Everything the page shows, as plain Python values (rendering needs no Spark)."""

    def __init__(self, run_dir: str, stats: Dict[str, dict]):
        self.run_dir = run_dir
        self.stats = stats
        self.length_histogram: List[Tuple[str, int]] = []
        self.length_stage: Optional[str] = None
        self.length_sample = 1.0  # fraction of the documents the length histogram was computed on
        self.score_histogram: List[Tuple[str, Tuple[int, int]]] = []  # bin -> (kept, rejected)
        languages = stats.get("filter", {}).get("languages")
        self.languages: Dict[str, int] = (
            {str(k): int(v) for k, v in languages.items()} if isinstance(languages, dict) else {})
        self.pii_counts: Dict[str, int] = {}
        self.url_pii_counts: Dict[str, int] = {}
        self.samples: Dict[str, List[dict]] = {}

    @classmethod
    def collect(cls, spark: SparkSession, fs: HadoopFS, run_dir: str, pii_config: PiiConfig) -> "RunFacts":
        stats = {name: fs.read_json(f"{run_dir}/{name}/{STATS}") for name in registry.STAGE_ORDER
                 if fs.exists(f"{run_dir}/{name}/{STATS}")}
        facts = cls(run_dir, stats)

        def read(stage: str, *outcomes: str) -> Optional[DataFrame]:
            parts = [f"{run_dir}/{stage}/{o}" for o in outcomes if fs.exists(f"{run_dir}/{stage}/{o}")]
            return spark.read.parquet(*parts) if parts else None

        document_stages = [s for s in DOCUMENT_STAGES if s in stats]
        if document_stages:
            facts.length_stage = document_stages[-1]
            kept = read(facts.length_stage, "kept")
            if kept is not None and "text" in kept.columns:
                # Lengths need the text column: on a large run, a deterministic sample is read instead.
                kept_rows = int(stats[facts.length_stage].get("kept") or 0)
                if kept_rows > LENGTH_SAMPLE:
                    facts.length_sample = LENGTH_SAMPLE / kept_rows
                    kept = kept.sample(False, facts.length_sample, seed=0)
                # filter's rows carry their text's length (n_chars, a later stage may change the text).
                length = F.col("n_chars") if facts.length_stage == "filter" and "n_chars" in kept.columns else None
                facts.length_histogram = length_histogram(kept, length)
        scored = scores_by_outcome(read("score", "kept"), read("score", "rejected"))
        if scored is not None:
            facts.score_histogram = score_histogram(scored)
        if not facts.languages:
            filtered = read("filter", "kept", "rejected")
            if filtered is not None and "lang" in filtered.columns:
                facts.languages = top_counts(filtered, "lang")
        replaced = stats.get("pii", {}).get("pii_replaced")
        if isinstance(replaced, dict):
            facts.pii_counts = {str(k): int(v) for k, v in replaced.items()}
        else:
            pii = read("pii", "kept", "rejected")
            if pii is not None and "pii" in pii.columns:
                facts.pii_counts = pii_counts(pii)
        in_urls = stats.get("pii", {}).get("url_pii_replaced")
        if isinstance(in_urls, dict):
            facts.url_pii_counts = {str(k): int(v) for k, v in in_urls.items()}
        for stage in stats:
            written = stats[stage].get("samples")
            if isinstance(written, dict) and written:  # the stage's own spot-check files, scrubbed already
                facts.samples[stage] = written_samples(fs, f"{run_dir}/{stage}", written)
                continue
            rejected = read(stage, "rejected")
            if rejected is not None:
                facts.samples[stage] = rejected_samples(rejected, pii_config, stats[stage].get("rejected"))
        return facts


def length_histogram(docs: DataFrame, length=None) -> List[Tuple[str, int]]:
    """Documents per power-of-two length bin (characters): web text lengths span five decades.
    ``length``: a column that holds the text's length, read instead of the text where there is one."""
    length = F.length("text") if length is None else length
    bins = docs.select(F.floor(F.log2(F.greatest(length, F.lit(1)))).cast("int").alias("b"))
    counts = {r["b"]: r["count"] for r in bins.groupBy("b").count().collect()}
    if not counts:
        return []
    return [(_short(2 ** b), counts.get(b, 0)) for b in range(min(counts), max(counts) + 1)]


def scores_by_outcome(kept: Optional[DataFrame], rejected: Optional[DataFrame]) -> Optional[DataFrame]:
    """``quality_score`` and ``outcome`` (kept / rejected) of the score stage's rows, as
    ``score_histogram`` reads them; None when neither part has scores."""
    parts = [docs.select("quality_score", F.lit(outcome).alias("outcome"))
             for outcome, docs in (("kept", kept), ("rejected", rejected))
             if docs is not None and "quality_score" in docs.columns]
    return parts[0].unionByName(parts[1]) if len(parts) == 2 else (parts[0] if parts else None)


def score_histogram(docs: DataFrame) -> List[Tuple[str, Tuple[int, int]]]:
    """(kept, rejected) documents per quality-score bin over [0, 1], from ``quality_score`` and
    ``outcome``; unscored rows (null or negative) are left out."""
    score = F.col("quality_score")
    bins = (docs.where(score.isNotNull() & (score >= 0))
            .select(F.least(F.floor(score * SCORE_BINS), F.lit(SCORE_BINS - 1)).cast("int").alias("b"), "outcome"))
    counts = {(r["b"], r["outcome"]): r["count"] for r in bins.groupBy("b", "outcome").count().collect()}
    if not counts:
        return []
    return [(f"{b / SCORE_BINS:.2f}", (counts.get((b, "kept"), 0), counts.get((b, "rejected"), 0)))
            for b in range(SCORE_BINS)]


def top_counts(docs: DataFrame, column: str, limit: int = 20) -> Dict[str, int]:
    rows = docs.groupBy(column).count().orderBy(F.desc("count"), column).limit(limit).collect()
    return {str(r[column]) if r[column] is not None else "-": int(r["count"]) for r in rows}


def pii_counts(docs: DataFrame) -> Dict[str, int]:
    """Total replacements per PII type from the ``pii`` map column (type → count per document)."""
    exploded = docs.select(F.explode("pii").alias("type", "n"))
    rows = exploded.groupBy("type").agg(F.sum("n").alias("n")).orderBy(F.desc("n"), "type").collect()
    return {r["type"]: int(r["n"] or 0) for r in rows}


def rejected_samples(rejected: DataFrame, pii: PiiConfig, counts: Optional[Dict[str, int]] = None) -> List[dict]:
    """A few rejected documents per reason, chosen by a hash of the id (the same ones every time, no
    two with the same text), with text and URL scrubbed by ``pii`` before the excerpt is cut (a value cut in half is no longer
    recognised); a document the scrubber cannot finish shows no text and the reason (``unshown``).

    With the per-reason ``counts`` (from _stats.json), rows are first thinned by the same hash to about
    ``PRESAMPLE`` per reason, so a reason with millions of rows never goes through one sort."""
    reason = F.coalesce(F.col("reject_rule").cast("string"), F.lit("-")) if "reject_rule" in rejected.columns \
        else F.lit("-")  # null reasons are counted as "-" in _stats.json
    if counts:
        keep = F.lit(False)
        for name, n in counts.items():
            threshold = int(HASH_RANGE * min(1.0, PRESAMPLE / max(int(n), 1)))
            keep = keep | ((reason == name) & (F.pmod(F.xxhash64("id"), F.lit(HASH_RANGE)) < threshold))
        rejected = rejected.where(keep)
    extra = [c for c in ("url", "reject_value", "survivor_id", "quality_score") if c in rejected.columns]
    text = F.col("text") if "text" in rejected.columns else F.lit(None).cast("string")
    picked = spot_check_picks(rejected.select(F.col("id"), reason.alias("reason"), *extra, text.alias("text"),
                                              F.coalesce(F.length(text), F.lit(0)).alias("chars")),
                              "reason", SAMPLES_PER_REASON)
    shown = []
    for doc in sorted(scrubbed_rows(picked.collect(), pii), key=lambda d: (d["reason"], d["_rank"])):
        text, error = doc.pop("text"), doc.pop("error")
        shown.append({**{k: v for k, v in doc.items() if k not in ("_hash", "_rank")},
                      "text": text[:EXCERPT_CHARS] if text else text, "unshown": error if doc["chars"] > 0 else None})
    return shown


def written_samples(fs: HadoopFS, stage_dir: str, files: Dict[str, str]) -> List[dict]:
    """The first ``SAMPLES_PER_REASON`` documents of each of a stage's spot-check files (reason ->
    file under ``stage_dir``; written scrubbed, in the order of the hash ``rejected_samples`` picks
    by), as ``rejected_samples`` gives them."""
    shown = []
    for reason in sorted(files):
        for line in fs.read_lines(f"{stage_dir}/{files[reason]}", SAMPLES_PER_REASON):
            doc = json.loads(line)
            text = doc.get("text")
            shown.append({"id": doc.get("id"), "reason": reason, "url": doc.get("url"),
                          "reject_value": doc.get("reject_value"), "chars": doc.get("chars"),
                          "text": text[:EXCERPT_CHARS] if text else text, "unshown": doc.get("error")})
    return shown


def _short(n: float) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(int(n))


def _num(value) -> str:
    if isinstance(value, bool) or value is None:
        return escape(str(value))
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return escape(str(value))


def drops_of(stats: dict) -> List[Tuple[str, int]]:
    """Every reason a stage dropped records, largest first, prefixed with its kind unless rejected."""
    drops = []
    for kind in DROP_KINDS:
        reasons = stats.get(kind) or {}
        if isinstance(reasons, dict):
            for reason, n in reasons.items():
                drops.append((reason if kind == "rejected" else f"{kind}: {reason}", int(n)))
    return sorted(drops, key=lambda d: -d[1])


# ---------------------------------------------------------------- rendering

STYLE = """
body{font-family:system-ui,sans-serif;margin:24px auto;max-width:980px;color:#222;line-height:1.4}
h1{font-size:24px;margin-bottom:4px} h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:18px 0 6px} .meta{color:#666;font-size:13px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:10px 14px;min-width:140px}
.card b{display:block;font-size:20px} .card span{color:#666;font-size:12px}
table{border-collapse:collapse;font-size:13px;margin:8px 0} td,th{border-bottom:1px solid #eee;padding:3px 10px;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums} tr.total td{font-weight:600;border-top:1px solid #999}
.warn{color:#b8423a;font-weight:600} .sample{border-left:3px solid #d9822b;padding:4px 10px;margin:8px 0;background:#fafafa}
.sample pre{white-space:pre-wrap;font-size:12px;max-height:9em;overflow:auto;margin:4px 0}
.sample .head{font-size:12px;color:#555;word-break:break-all}
"""


def render(facts: RunFacts) -> str:
    run = facts.run_dir.rstrip("/").rsplit("/", 1)[-1]
    sections = [_overview(facts), _funnel(facts), _filter_rules(facts), _distributions(facts), _pii(facts),
                _dedup(facts), _decontamination(facts), _mixture(facts), _wall_time(facts), _stage_figures(facts), _samples(facts)]
    generated = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>corpusmill run {escape(run)}</title><style>{STYLE}</style></head><body>"
            f"<h1>corpusmill run <code>{escape(run)}</code></h1>"
            f'<div class="meta">{escape(facts.run_dir)} · generated {generated} · stages: '
            f'{escape(", ".join(facts.stats) or "none finished")}</div>'
            f'{"".join(s for s in sections if s)}</body></html>\n')


def _table(header: Sequence[str], rows: Sequence[Sequence], numeric_from: int = 1, total: Optional[Sequence] = None) -> str:
    def cells(row, tag="td"):
        return "".join(f'<{tag}{" class=n" if i >= numeric_from else ""}>{_num(v)}</{tag}>' for i, v in enumerate(row))
    body = "".join(f"<tr>{cells(r)}</tr>" for r in rows)
    if total:
        body += f'<tr class="total">{cells(total)}</tr>'
    return f"<table><tr>{cells(header, 'th')}</tr>{body}</table>"


def _overview(facts: RunFacts) -> str:
    stats = facts.stats
    cards = []
    if "extract" in stats:
        cards.append(("WARC records read", stats["extract"].get("records_in")))
        cards.append(("documents extracted", stats["extract"].get("kept")))
    if facts.length_stage and facts.length_stage != "extract":
        cards.append((f"documents after {facts.length_stage}", stats[facts.length_stage].get("kept")))
    pack = stats.get("pack", {})
    for key, label in (("tokens", "packed tokens"), ("sequences", "packed sequences"),
                       ("packing_efficiency", "packing efficiency")):
        if isinstance(pack.get(key), (int, float)):
            cards.append((label, pack[key]))
    shards = stats.get("mindrecord", {}).get("shards")
    if isinstance(shards, list):
        cards.append(("MindRecord shards", len(shards)))
        cards.append(("MindRecord rows", stats["mindrecord"].get("kept")))
    total_wall = sum(float(s.get("wall_s") or 0) for s in stats.values())
    cards.append(("stage wall time", f"{total_wall:.1f} s"))
    unreconciled = [name for name, s in stats.items() if s.get("reconciled") is False]
    warning = (f'<p class="warn">Counts do not reconcile in: {escape(", ".join(unreconciled))}</p>'
               if unreconciled else "")
    return '<div class="cards">' + "".join(
        f"<div class=card><b>{_num(v)}</b><span>{escape(label)}</span></div>" for label, v in cards
        if v is not None) + f"</div>{warning}"


def _funnel(facts: RunFacts) -> str:
    if not facts.stats:
        return "<p>No finished stage in this run yet.</p>"
    bars, rows = [], []
    for name, stats in facts.stats.items():
        records_in, kept = int(stats.get("records_in") or 0), int(stats.get("kept") or 0)
        unit_in, unit_kept = stage_units(name)
        drops = drops_of(stats)
        if unit_in != "sequences":  # sequences are not documents: they stay off the documents' axis
            bars.append((name, records_in, drops, unit_kept))
        rows.append((name, "in", unit_in, records_in, ""))
        for reason, n in drops:
            rows.append(("", reason, unit_in, -n, f"{100 * n / records_in:.1f} %" if records_in else ""))
        rows.append(("", "kept", unit_kept, kept, f"{100 * kept / records_in:.1f} %" if records_in else ""))
        note = output_note(stats)
        if note:
            rows.append(("", note, "", "", ""))
    pack = facts.stats.get("pack", {})
    if isinstance(pack.get("tokens"), int):
        rows.append(("pack", "tokens in packed sequences", "tokens", pack["tokens"], ""))
    return ("<h2>Funnel: from WARC records to documents to training sequences</h2>"
            "<p>Each bar is a stage's input, counted in its own unit: WARC records into extract, documents "
            "from filter to mix, document copies (a repeated document counts once per copy) into pack. The "
            "kept part is green, every reason a record was dropped has its own colour (hover for counts). "
            "Packed sequences, pack's output and mindrecord's rows, are in the table, not on this axis.</p>"
            + funnel_chart(bars, "records per stage by outcome")
            + _table(("stage", "outcome / reason", "unit", "count", "share of stage input"), rows, numeric_from=3))


def _filter_rules(facts: RunFacts) -> str:
    rules = facts.stats.get("filter", {}).get("rules")
    rejected = {}
    for name, stats in facts.stats.items():
        for reason, n in (stats.get("rejected") or {}).items():
            rejected[f"{name}: {reason}"] = int(n)
    if isinstance(rules, list) and rules and all(isinstance(r, dict) for r in rules):
        # The chart shows the rules that fired; the table lists every rule, in evaluation order.
        items = [(r.get("rule", "?"), int(r.get("first_hit") or 0)) for r in rules if r.get("first_hit")]
        table = _table(("rule (evaluation order)", "rejected (first rule hit)", "would reject alone"),
                       [(r.get("rule", "?"), r.get("first_hit", 0), r.get("alone", "")) for r in rules])
        chart = bar_chart(items, "filter rejections per rule (first rule hit)", colour="#b8423a") if items else ""
        return "<h2>Rejections per rule</h2>" + chart + table
    if rejected:
        items = sorted(rejected.items(), key=lambda kv: -kv[1])
        return "<h2>Rejections per rule</h2>" + bar_chart(items, "rejections per stage and rule", colour="#b8423a")
    return ""


def _distributions(facts: RunFacts) -> str:
    parts = []
    if facts.length_histogram:
        sampled = f", a {facts.length_sample:.2%} sample" if facts.length_sample < 1 else ""
        parts.append(f"<h3>Document length (characters, log scale), kept after {escape(facts.length_stage)}"
                     f"{sampled}</h3>"
                     + histogram(facts.length_histogram, "document length histogram", "characters (bin start)"))
    if facts.score_histogram:
        threshold = facts.stats.get("score", {}).get("threshold")
        known = isinstance(threshold, (int, float))
        parts.append(f"<h3>Quality score: kept and rejected{f' by the threshold {_num(threshold)}' if known else ''}"
                     f"</h3>"
                     + histogram(facts.score_histogram, "quality score histogram", "quality score (bin start)",
                                 parts=(("kept", KEPT_COLOUR), ("rejected", REJECTED_COLOUR)),
                                 marker=(threshold * SCORE_BINS, f"threshold {_num(threshold)}") if known else None))
    if facts.languages:
        items = sorted(facts.languages.items(), key=lambda kv: -kv[1])[:20]
        parts.append("<h3>Languages (top 20, filter input)</h3>"
                     + bar_chart(items, "documents per language", colour="#2aa3b5", label_width=80))
    return "<h2>Distributions</h2>" + "".join(parts) if parts else ""


def _pii(facts: RunFacts) -> str:
    charts = [bar_chart(sorted(counts.items(), key=lambda kv: -kv[1]), title, colour="#d9822b", label_width=160)
              for counts, title in ((facts.pii_counts, "PII replacements per type, in the text"),
                                    (facts.url_pii_counts, "PII replacements per type, in the URL")) if counts]
    return "<h2>PII replaced, per type</h2>" + "".join(charts) if charts else ""


def _dedup(facts: RunFacts) -> str:
    sizes = facts.stats.get("dedup", {}).get("cluster_size_histogram")
    if not isinstance(sizes, dict) or not sizes:
        return ""
    items = sorted(((str(k), int(v)) for k, v in sizes.items()), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0)
    clusters = facts.stats["dedup"].get("clusters", sum(v for _, v in items))
    return (f"<h2>Duplicate clusters by size</h2><p>{_num(clusters)} clusters of two or more documents; "
            "one survivor is kept per cluster.</p>"
            + histogram(items, "duplicate cluster sizes", "documents in the cluster", colour="#8c6d46"))


def _decontamination(facts: RunFacts) -> str:
    benchmarks = facts.stats.get("decontam", {}).get("benchmarks")
    if not isinstance(benchmarks, dict) or not benchmarks:
        return ""
    rows = [(name, counts.get("items", 0), counts.get("too_short", 0), counts.get("documents", 0))
            for name, counts in sorted(benchmarks.items())]
    action = "rejected" if facts.stats["decontam"].get("action", "reject") == "reject" else "flagged"
    return (f"<h2>Benchmark contamination</h2><p>Documents sharing an n-gram with an evaluation set, per "
            f"benchmark ({action}).</p>"
            + _table(("benchmark", "items", "items too short to look for", "documents"), rows))


def _mixture(facts: RunFacts) -> str:
    mixture = facts.stats.get("mix", {}).get("mixture")
    if not isinstance(mixture, dict) or not isinstance(mixture.get("target"), dict):
        return ""
    target = mixture["target"]
    achieved = mixture.get("achieved") or {}
    series = [("target", [float(target.get(d) or 0) for d in target]),
              ("achieved (mix, estimated tokens)", [float(achieved.get(d) or 0) for d in target])]
    exact = facts.stats.get("pack", {}).get("mixture_exact")
    if isinstance(exact, dict):
        series.append(("achieved (pack, exact tokens)", [float(exact.get(d) or 0) for d in target]))
    domains = facts.stats["mix"].get("domains")
    table = ""
    if isinstance(domains, dict):
        keys = [k for k in ("available_docs", "docs_out", "rows_out", "tokens_out", "planned_epochs", "max_epochs",
                            "capped") if any(k in (d or {}) for d in domains.values())]
        table = _table(("domain", *keys), [(name, *[(d or {}).get(k, "") for k in keys]) for name, d in domains.items()])
    return ("<h2>Domain mixture: target vs achieved</h2>"
            + paired_bar_chart(list(target), series, "domain weights, target vs achieved") + table)


def _wall_time(facts: RunFacts) -> str:
    items = [(name, float(s.get("wall_s") or 0)) for name, s in facts.stats.items()]
    if not items:
        return ""
    return ("<h2>Wall time per stage</h2>"
            + bar_chart(items, "wall time per stage", unit=" s", colour="#6f7a82", label_width=110))


def _stage_figures(facts: RunFacts) -> str:
    parts = []
    for name, stats in facts.stats.items():
        rows = [(k, v) for k, v in sorted(stats.items())
                if k not in SHOWN_KEYS and (v is None or isinstance(v, (int, float, str, bool)))]
        if rows:
            parts.append(f"<h3>{escape(name)}</h3>" + _table(("figure", "value"), rows))
    return "<h2>Stage figures</h2>" + "".join(parts) if parts else ""


def _samples(facts: RunFacts) -> str:
    parts = []
    for stage, samples in facts.samples.items():
        if not samples:
            continue
        parts.append(f"<h3>{escape(stage)}</h3>")
        for sample in samples:
            head = " · ".join(f"{k}: {escape(str(sample[k]))}" for k in
                              ("reason", "reject_value", "url", "id", "survivor_id", "quality_score", "chars",
                               "unshown") if sample.get(k) not in (None, ""))
            parts.append(f'<div class="sample"><div class="head">{head}</div>'
                         f'<pre>{escape(sample.get("text") or "(no text)")}</pre></div>')
    if not parts:
        return ""
    return ("<h2>Spot-check: rejected documents</h2>"
            f"<p>Up to {SAMPLES_PER_REASON} documents per stage and reason, picked by a hash of the id "
            f"(the same documents on every run); text and URL scrubbed of personal data as the pii stage "
            f"does it, then cut at {EXCERPT_CHARS} characters.</p>" + "".join(parts))

