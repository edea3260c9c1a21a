"""No raw personal data after the pii stage: values planted in a real WARC (page text and URL query
strings) go through `corpusmill run` (extract, filter, pii, dedup, score with its real service, mix),
and every file pii and the stages after it wrote, the report, the filter samples and everything the
run printed are scanned for them, Parquet decoded value by value (its pages are compressed, so a
byte grep alone would prove nothing).

The run is a subprocess: the JVM and the Python workers print to the file descriptors of the process
that started them, so only a separate process lets the test capture everything a run prints.
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, Tuple

import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from conftest import ROOT

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SOURCE_WARC = ROOT / "data" / "sample" / "dolma-sample-0000.warc.gz"
STAGES = ["extract", "filter", "pii", "dedup", "score", "mix"]
# Raw values as a page writes them (each valid: Luhn, IBAN mod 97, the resident ID's check digit).
EMAIL, PHONE, CARD = "jane.doe@gmail.com", "(415) 555-0132", "4111 1111 1111 1111"
IBAN, CN_ID, SSN = "DE89 3704 0044 0532 0130 00", "11010519491231002X", "536-90-4399"
TOKEN = "Zx8Kq2Lm9Pw4Rt7Yb3Nc6Vd1"
PLANTED_TEXT = (f"For questions write to {EMAIL} or call {PHONE} during office hours. Payment used the card "
                f"{CARD} and the transfer went to {IBAN}, as the letter to the applicant with identity number "
                f"{CN_ID} and social security number {SSN} explained in detail.")
PLANTED_QUERY = f"?email=jane.doe%40gmail.com&token={TOKEN}&uid={CN_ID}"
# Every form a planted value could be written in: as planted, without separators, percent-encoded.
RAW_FORMS = [EMAIL, "jane.doe%40gmail.com", PHONE, "555-0132", CARD, CARD.replace(" ", ""), IBAN,
             IBAN.replace(" ", ""), CN_ID, SSN, SSN.replace("-", ""), TOKEN]
# A page the filter rejects (under Gopher's 50 words), so its raw text is in filter/rejected/.
SHORT_PAGE_URL = "https://short.example.net/contact" + PLANTED_QUERY
# The longest page of the sample goes over this and becomes a pii error.
MAX_DOC_CHARS = 50_000


def planted_warc(target: Path) -> None:
    """The sample crawl's pages, each with the planted paragraph before its first <p> and the planted
    query string on its URL, plus one short page."""
    with open(SOURCE_WARC, "rb") as source, open(target, "wb") as out:
        writer = WARCWriter(out, gzip=True)

        def write(url: str, body: bytes, content_type: str) -> None:
            http = StatusAndHeaders("200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                          http_headers=http))

        for record in ArchiveIterator(source):
            if record.rec_type != "response":
                continue
            body = record.content_stream().read()
            first_p = re.search(rb"<p[ >]", body)
            if first_p:
                body = body[:first_p.start()] + f"<p>{PLANTED_TEXT}</p>".encode() + body[first_p.start():]
            write(record.rec_headers.get_header("WARC-Target-URI") + PLANTED_QUERY, body,
                  record.http_headers.get_header("Content-Type"))
        write(SHORT_PAGE_URL, f"<html><body><p>{PLANTED_TEXT}</p></body></html>".encode(), "text/html; charset=utf-8")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("leak")
    (work / "in").mkdir()
    planted_warc(work / "in" / "planted.warc.gz")
    config = work / "leak.yaml"
    config.write_text(json.dumps({  # JSON is YAML
        "include": [str(ROOT / "conf" / "local.yaml")],
        "spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": 4, "spark.ui.enabled": "false"}},
        "pii": {"max_doc_chars": MAX_DOC_CHARS},
        "mix": {"buckets": 2},
    }))
    done = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "run", "--config", str(config), "--input", str(work / "in"),
         "--output", str(work / "out"), "--run", "leak", "--stages", ",".join(STAGES)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    return work / "out" / "leak", done.stdout + done.stderr


def strings_in(value) -> Iterator[str]:
    """Every string inside a decoded Parquet value (maps come back as lists of pairs)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bytes):
        yield value.decode("utf-8", "replace")
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings_in(item)


def texts_of(path: Path) -> Iterator[str]:
    """The file's bytes as text and, for Parquet, every value of every column."""
    yield path.read_bytes().decode("utf-8", "replace")
    if path.suffix == ".parquet":
        for column in pq.read_table(path).columns:
            for value in column.to_pylist():
                yield from strings_in(value)


def leaks(texts: Iterator[str]) -> List[str]:
    return sorted({form for text in texts for form in RAW_FORMS if form in text})


def scanned_files(run_dir: Path) -> List[Path]:
    after_pii = [p for stage in STAGES[STAGES.index("pii"):] for p in (run_dir / stage).rglob("*") if p.is_file()]
    return after_pii + sorted((run_dir / "filter" / "samples").glob("*.jsonl")) + [run_dir / "report.html"]


def test_the_planted_values_went_in_raw(run):
    """The scan below means something: the values are in extract's output and pii replaced them."""
    run_dir, _ = run
    extracted = (t for f in (run_dir / "extract" / "kept").glob("*.parquet") for t in texts_of(f))
    assert set(leaks(extracted)) >= {EMAIL, "jane.doe%40gmail.com", PHONE, CARD, IBAN, CN_ID, SSN, TOKEN}
    stats = json.loads((run_dir / "pii" / "_stats.json").read_text())
    assert set(stats["pii_replaced"]) >= {"EMAIL", "PHONE", "CREDIT_CARD", "IBAN", "CN_ID", "US_SSN"}
    assert stats["url_pii_replaced"]["EMAIL"] == stats["url_pii_replaced"]["API_KEY"] == stats["kept"] > 0
    assert stats["url_pii_replaced"]["CN_ID"] == stats["kept"]
    assert sum(stats["errors"].values()) == 1  # the page over max_doc_chars
    for stage in ("dedup", "score", "mix"):
        assert json.loads((run_dir / stage / "_stats.json").read_text())["kept"] > 0


def test_no_raw_value_in_any_file_after_pii_nor_in_the_report_and_samples(run):
    run_dir, _ = run
    files = scanned_files(run_dir)
    parquet = [f for f in files if f.suffix == ".parquet"]
    assert len(parquet) >= 6 and any("errors" in f.parts for f in parquet)
    found: List[Tuple[str, List[str]]] = [(str(f.relative_to(run_dir)), hits) for f in files
                                          for hits in [leaks(texts_of(f))] if hits]
    assert found == []


def test_nothing_the_run_printed_holds_a_raw_value(run):
    _, printed = run
    assert "pii:" in printed and "corpusmill: report" in printed
    assert leaks(iter([printed])) == []


def test_pii_errors_keep_id_scrubbed_url_and_reason_but_no_text(run):
    run_dir, _ = run
    errors = pq.read_table(run_dir / "pii" / "errors").to_pylist()
    assert len(errors) == 1
    assert errors[0]["text"] is None and errors[0]["id"]
    assert errors[0]["error"] == f"DocumentTooLong: document longer than max_doc_chars={MAX_DOC_CHARS}"
    assert errors[0]["url"].endswith("?email=<EMAIL>&token=<API_KEY>&uid=<CN_ID>")


def test_a_rejected_page_is_shown_scrubbed_in_the_samples_and_the_report(run):
    run_dir, _ = run
    rejected = pq.read_table(run_dir / "filter" / "rejected").to_pylist()
    short = [r for r in rejected if r["url"] == SHORT_PAGE_URL]
    assert len(short) == 1 and EMAIL in short[0]["text"]  # raw on disk: the audit trail
    rule = short[0]["reject_rule"]
    samples = [json.loads(line) for line in (run_dir / "filter" / "samples" / f"{rule}.jsonl").read_text().splitlines()]
    sample = next(s for s in samples if s["id"] == short[0]["id"])
    scrubbed_url = "https://short.example.net/contact?email=<EMAIL>&token=<API_KEY>&uid=<CN_ID>"
    assert sample["url"] == scrubbed_url
    assert sample["text"].startswith("For questions write to <EMAIL> or call <PHONE> during office hours. "
                                     "Payment used the card <CREDIT_CARD> and the transfer went to <IBAN>,")
    html = (run_dir / "report.html").read_text()
    assert f"url: {scrubbed_url.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}" in html
    assert "For questions write to &lt;EMAIL&gt; or call &lt;PHONE&gt;" in html
    assert "PII replacements per type, in the URL" in html
