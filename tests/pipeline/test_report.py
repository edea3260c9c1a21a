"""The run report: built from a real run, self-contained, and rendered by a real headless Chromium."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import ROOT
from jobs import config
from jobs.cli import main
from jobs.pipeline import run_pipeline
from jobs.console import summary_line
from jobs.report import EXCERPT_CHARS, RunFacts, render, rejected_samples, write_report
from jobs.report.svg import KEPT_COLOUR, REJECTED_COLOUR, histogram, nice_ticks
from udfs.pii.scrub import PiiConfig

SAMPLE = str(ROOT / "data" / "sample")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--hide-scrollbars"]


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    cfg = config.load(overrides={"mix": {"buckets": 2}})
    run_pipeline(spark, cfg, [SAMPLE], ["extract", "mix"], str(out), "rep", echo=lambda _: None)
    uri = write_report(spark, str(out / "rep"))
    path = out / "rep" / "report.html"
    return uri, path, path.read_text()


def test_report_is_written_beside_the_stages_and_is_self_contained(report):
    uri, path, html = report
    assert uri.endswith("/rep/report.html") and path.exists()
    assert html.count("<svg") >= 3  # funnel, length histogram, wall time
    # Nothing that makes a browser fetch anything (document URLs in the samples are plain text).
    assert not re.search(r"<script|<link|<img|<iframe|\bsrc=|\bhref=|@import|url\(", html)


def test_report_shows_every_reason_and_the_counts(report):
    _, _, html = report
    assert "skipped: record_type:request" in html
    assert "Funnel" in html and "Wall time per stage" in html and "Document length" in html


def test_report_degrades_to_the_sections_the_stats_support(tmp_path):
    """Stats of later stages (as their _stats.json carries them) add their sections; absent ones don't."""
    stats = {
        "extract": {"stage": "extract", "records_in": 100, "kept": 60, "rejected": {"non_html": 10},
                    "skipped": {"record_type:request": 30}, "errors": {}, "wall_s": 2.0},
        "filter": {"stage": "filter", "records_in": 60, "kept": 40, "rejected": {"gopher_stop_words": 15,
                   "c4_lorem_ipsum": 5}, "wall_s": 1.5, "languages": {"en": 50, "zh": 10},
                   "rules": [{"rule": "gopher_stop_words", "first_hit": 15, "alone": 17},
                             {"rule": "c4_lorem_ipsum", "first_hit": 5, "alone": 5}]},
        "dedup": {"stage": "dedup", "records_in": 40, "kept": 35, "rejected": {"near_duplicate": 5},
                  "wall_s": 3.0, "clusters": 3, "cluster_size_histogram": {"2": 2, "4": 1}, "bands": 20},
        "decontam": {"stage": "decontam", "records_in": 35, "kept": 35, "rejected": {}, "wall_s": 1.0,
                     "action": "reject", "benchmarks": {"mmlu": {"items": 140, "too_short": 3, "documents": 0}}},
        "pii": {"stage": "pii", "records_in": 40, "kept": 40, "wall_s": 1.0},
        "mix": {"stage": "mix", "records_in": 35, "kept": 35, "wall_s": 1.0,
                "mixture": {"target": {"web": 0.7, "wiki": 0.3}, "achieved": {"web": 0.65, "wiki": 0.35}}},
        "pack": {"stage": "pack", "records_in": 35, "kept": 12, "wall_s": 1.0, "tokens": 24000,
                 "sequences": 12, "packing_efficiency": 0.97, "mixture_exact": {"web": 0.66, "wiki": 0.34}},
    }
    facts = RunFacts("file:/runs/r", stats)
    facts.stage_facts = {"filter": {"languages": {"en": 50, "zh": 10}}, "pii": {"pii": {"EMAIL": 4, "PHONE": 2}}}
    html = render(facts)
    for section in ("Rejections per rule", "Languages", "PII replaced", "Duplicate clusters",
                    "Benchmark contamination", "mmlu", "target vs achieved", "packed tokens", "gopher_stop_words", "bands"):
        assert section in html, section
    assert "Quality score" not in html  # no score column in this run: no empty chart

    bare = render(RunFacts("file:/runs/empty", {}))
    assert "No finished stage" in bare and "<svg" not in bare


# The stats of the last three stages as a run writes them: 18 documents, 2 of them repeated once.
LATE_STAGES = {
    "score": {"stage": "score", "records_in": 24, "kept": 18, "rejected": {"quality_score": 6}, "wall_s": 5.0,
              "threshold": 0.5223},
    "mix": {"stage": "mix", "records_in": 18, "kept": 18, "rows_written": 20, "repeat_rows": 2, "wall_s": 4.0},
    "pack": {"stage": "pack", "records_in": 20, "kept": 20, "wall_s": 2.4, "sequences": 15, "seq_len": 2048,
             "tokens": 28641, "packing_efficiency": 0.932324},
    "mindrecord": {"stage": "mindrecord", "records_in": 15, "kept": 15, "wall_s": 8.9,
                   "shards": [{"file": f"shard-{i:05d}.mindrecord", "rows": 2} for i in range(8)]},
}


def test_summary_lines_say_what_they_count_and_why_it_changes():
    lines = {name: summary_line(stats, f"out/demo/{name}") for name, stats in LATE_STAGES.items()}
    assert "score: 24 documents in -> 18 kept; rejected: quality_score 6" in lines["score"]
    assert "mix: 18 documents in -> 18 kept, written as 20 document copies (2 repeats)" in lines["mix"]
    assert ("pack: 20 document copies in -> 20 kept, packed into 15 sequences of 2,048 tokens (93.2% full)"
            in lines["pack"])
    assert "mindrecord: 15 sequences in -> 15 kept, in 8 shard files" in lines["mindrecord"]
    extract = {"stage": "extract", "records_in": 87, "kept": 39, "skipped": {"record_type:request": 38}, "wall_s": 7.9}
    assert "extract: 87 WARC records in -> 39 documents kept; skipped: record_type:request 38" in summary_line(extract, "x")


def test_funnel_keeps_sequences_off_the_documents_axis():
    html = render(RunFacts("file:/runs/r", LATE_STAGES))
    funnel = html[html.index("<h2>Funnel"):html.index("</table>")]
    assert "<title>pack kept: 20</title>" in funnel and "mindrecord kept" not in funnel.split("<table>")[0]
    for row in ("document copies", "packed into 15 sequences of 2,048 tokens", "sequences", "in 8 shard files"):
        assert row in funnel, row


def test_score_histogram_shows_kept_and_rejected_the_threshold_and_y_ticks():
    assert nice_ticks(13) == [0, 5, 10, 15] and nice_ticks(3) == [0, 1, 2, 3] and nice_ticks(240) == [0, 50, 100, 150, 200, 250]
    bins = [(f"{b / 20:.2f}", (0, 3) if b < 10 else (5, 0)) for b in range(20)]
    svg = histogram(bins, "quality score histogram", "quality score", parts=(("kept", KEPT_COLOUR), ("rejected", REJECTED_COLOUR)),
                    marker=(0.5223 * 20, "threshold 0.5223"))
    assert svg.count(f'fill="{KEPT_COLOUR}"') == 10 + 1 and svg.count(f'fill="{REJECTED_COLOUR}"') == 10 + 1  # + legend
    assert 'stroke-dasharray="5,3"' in svg and "threshold 0.5223" in svg
    assert all(f">{tick}</text>" in svg for tick in (0, 1, 2, 3, 4, 5))  # every y tick labelled
    facts = RunFacts("file:/runs/r", LATE_STAGES)
    facts.stage_facts = {"score": {"histogram": bins}}
    html = render(facts)
    assert "Quality score: kept and rejected by the threshold 0.5223" in html and "threshold 0.5223</text>" in html


def test_spot_check_shows_distinct_texts(spark):
    """One page crawled under several ids is one sample, not several."""
    rows = [(f"same-{i}", "too_short", "https://allenai.org/", "the same page") for i in range(6)]
    rows += [("other", "too_short", "https://example.org/", "another page")]
    rejected = spark.createDataFrame(rows, "id string, reject_rule string, url string, text string")
    assert sorted(s["text"] for s in rejected_samples(rejected, PiiConfig())) == ["another page", "the same page"]


@pytest.mark.service  # Chromium
def test_report_renders_in_headless_chromium(report, tmp_path):
    from PIL import Image

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    _, path, _ = report
    shot = tmp_path / "report.png"
    result = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1100,1600",
         f"--screenshot={shot}", path.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.exists(), result.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1100, 1600)
    colours = image.getcolors(maxcolors=1 << 20)
    # Not blank: many distinct colours, and the funnel's kept green (#3f9b5a) is painted somewhere.
    assert len(colours) > 50
    assert any(rgb == (0x3F, 0x9B, 0x5A) for _, rgb in colours)


def test_corpusmill_run_writes_the_report_and_prints_where(spark, tmp_path, capsys):
    assert main(["run", "--input", SAMPLE, "--output", str(tmp_path), "--run", "cli", "--stages", "extract"]) == 0
    out = capsys.readouterr().out
    assert f"corpusmill: report file:{tmp_path}/cli/report.html" in out
    assert "<svg" in (tmp_path / "cli" / "report.html").read_text()


def test_rejected_samples_are_scrubbed_before_the_excerpt_is_cut(spark):
    """Rows of stages before pii are raw on disk: what the report shows of them is scrubbed, the
    whole text first (a card number cut in half at the excerpt's end would no longer be recognised),
    and a document the scrubber cannot finish shows no text, only why."""
    card = "4111 1111 1111 1111"
    cut_through_card = "x" * (EXCERPT_CHARS - 8) + f" card {card} end"
    rows = [("a", "too_short", "https://shop.example.net/?email=jane.doe%40gmail.com", f"mail jane.doe@gmail.com {card}"),
            ("b", "too_long", "https://shop.example.net/b", cut_through_card),
            ("c", "huge", "https://shop.example.net/c", "call (415) 555-0132 " * 60)]
    rejected = spark.createDataFrame(rows, "id string, reject_rule string, url string, text string")
    samples = {s["id"]: s for s in rejected_samples(rejected, PiiConfig(max_doc_chars=1000))}
    assert samples["a"]["text"] == "mail <EMAIL> <CREDIT_CARD>"
    assert samples["a"]["url"] == "https://shop.example.net/?email=<EMAIL>"
    assert samples["b"]["text"] == "x" * (EXCERPT_CHARS - 8) + " card <C" and samples["b"]["chars"] == len(cut_through_card)
    assert samples["c"]["text"] is None
    assert samples["c"]["unshown"] == "DocumentTooLong: document longer than max_doc_chars=1000"
    facts = RunFacts("file:/runs/r", {"filter": {"stage": "filter", "records_in": 3, "kept": 0}})
    facts.samples = {"filter": list(samples.values())}
    html = render(facts)
    assert "unshown: DocumentTooLong" in html and "555-0132" not in html and "jane.doe" not in html
