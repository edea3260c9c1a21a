"""The run report's page: one self-contained HTML file (inline SVG, no scripts, no network) from
``RunFacts``. The overview, the funnel, the length histogram, wall times, every stage's figures and
the rejected samples are the same for every stage; each stage adds its own cards and section
(``Stage.report_cards``, ``Stage.report_section``), in pipeline order. Helpers here (``table``,
``number``) are what those sections are written with.
"""
from __future__ import annotations

import time
from html import escape
from typing import List, Optional, Sequence, Tuple

from jobs import registry
from jobs.console import output_note, stage_units
from jobs.report.facts import EXCERPT_CHARS, SAMPLES_PER_REASON, RunFacts
from jobs.report.svg import bar_chart, funnel_chart, histogram

DROP_KINDS = ("rejected", "errors", "skipped")
# Stats keys drawn elsewhere in the report; every other scalar figure goes into the stage's table.
SHOWN_KEYS = {"stage", "fingerprint", "records_in", "kept", "rejected", "errors", "skipped", "wall_s",
              "reconciled", "rules", "languages", "samples", "cluster_size_histogram", "mixture"}


def number(value) -> str:
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
    stages = [s for s in registry.stages() if s.name in facts.stats]
    sections = [_overview(facts, stages), _funnel(facts), *[s.report_section(facts) for s in stages],
                _lengths(facts), _wall_time(facts), _stage_figures(facts), _samples(facts)]
    generated = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>corpusmill run {escape(run)}</title><style>{STYLE}</style></head><body>"
            f"<h1>corpusmill run <code>{escape(run)}</code></h1>"
            f'<div class="meta">{escape(facts.run_dir)} · generated {generated} · stages: '
            f'{escape(", ".join(facts.stats) or "none finished")}</div>'
            f'{"".join(s for s in sections if s)}</body></html>\n')


def table(header: Sequence[str], rows: Sequence[Sequence], numeric_from: int = 1, total: Optional[Sequence] = None) -> str:
    def cells(row, tag="td"):
        return "".join(f'<{tag}{" class=n" if i >= numeric_from else ""}>{number(v)}</{tag}>' for i, v in enumerate(row))
    body = "".join(f"<tr>{cells(r)}</tr>" for r in rows)
    if total:
        body += f'<tr class="total">{cells(total)}</tr>'
    return f"<table><tr>{cells(header, 'th')}</tr>{body}</table>"


def _overview(facts: RunFacts, stages) -> str:
    stats = facts.stats
    cards: List[Tuple[str, object]] = []
    for stage in stages:
        cards += stage.report_cards(stats[stage.name])
        if stage.name == facts.length_stage and stage.input == "documents":
            cards.append((f"documents after {stage.name}", stats[stage.name].get("kept")))
    total_wall = sum(float(s.get("wall_s") or 0) for s in stats.values())
    cards.append(("stage wall time", f"{total_wall:.1f} s"))
    unreconciled = [name for name, s in stats.items() if s.get("reconciled") is False]
    warning = (f'<p class="warn">Counts do not reconcile in: {escape(", ".join(unreconciled))}</p>'
               if unreconciled else "")
    return '<div class="cards">' + "".join(
        f"<div class=card><b>{number(v)}</b><span>{escape(label)}</span></div>" for label, v in cards
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
    return ("<h2>Funnel: from WARC records to documents to training sequences</h2>"
            "<p>Each bar is a stage's input, counted in its own unit: WARC records into extract, documents "
            "from filter to mix, document copies (a repeated document counts once per copy) into pack. The "
            "kept part is green, every reason a record was dropped has its own colour (hover for counts). "
            "Packed sequences, pack's output and mindrecord's rows, are in the table, not on this axis.</p>"
            + funnel_chart(bars, "records per stage by outcome")
            + table(("stage", "outcome / reason", "unit", "count", "share of stage input"), rows, numeric_from=3))


def _lengths(facts: RunFacts) -> str:
    if not facts.length_histogram:
        return ""
    sampled = f", a {facts.length_sample:.2%} sample" if facts.length_sample < 1 else ""
    return (f"<h2>Document length</h2><h3>Characters (log scale), kept after {escape(facts.length_stage)}"
            f"{sampled}</h3>"
            + histogram(facts.length_histogram, "document length histogram", "characters (bin start)"))


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
            parts.append(f"<h3>{escape(name)}</h3>" + table(("figure", "value"), rows))
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
