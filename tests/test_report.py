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
from jobs.report import EXCERPT_CHARS, RunFacts, render, rejected_samples, write_report
from udfs.pii import PiiConfig

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
        "mix": {"stage": "mix", "records_in": 35, "kept": 35, "wall_s": 1.0,
                "mixture": {"target": {"web": 0.7, "wiki": 0.3}, "achieved": {"web": 0.65, "wiki": 0.35}}},
        "pack": {"stage": "pack", "records_in": 35, "kept": 12, "wall_s": 1.0, "tokens": 24000,
                 "sequences": 12, "packing_efficiency": 0.97, "mixture_exact": {"web": 0.66, "wiki": 0.34}},
    }
    facts = RunFacts("file:/runs/r", stats)
    facts.pii_counts = {"EMAIL": 4, "PHONE": 2}
    html = render(facts)
    for section in ("Rejections per rule", "Languages", "PII replaced", "Duplicate clusters",
                    "target vs achieved", "packed tokens", "gopher_stop_words", "bands"):
        assert section in html, section
    assert "Quality score" not in html  # no score column in this run: no empty chart

    bare = render(RunFacts("file:/runs/empty", {}))
    assert "No finished stage" in bare and "<svg" not in bare


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
