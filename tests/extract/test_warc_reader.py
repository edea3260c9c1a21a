"""The per-file WARC/ARC reader on real archives: every record accounted for, nothing crashes."""
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from conftest import SHARED_DATA, shared
from udfs.extract.warc import ExtractConfig, WarcDocumentReader, _ReadAgain, document_id, in_sample


def read(path: Path, cfg: ExtractConfig = ExtractConfig(), sample=None):
    return list(WarcDocumentReader(cfg, sample).read(str(path), lambda: open(path, "rb")))


def outcomes(rows):
    counts = Counter()
    for row in rows:
        counts[(row["_outcome"], row["reject_rule"] or row["error"])] += row["_count"]
    return counts


def warcio_record_count(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in ArchiveIterator(fh, arc2warc=True))


def test_chinese_clueweb_pages_decode_to_chinese_not_mojibake():
    rows = read(shared("warc/clueweb09-zh-sample.warc.gz"))
    kept = [r for r in rows if r["_outcome"] == "kept"]
    assert len(kept) >= 90
    gb_pages = [r for r in kept if r["charset"] == "gb18030"]
    assert len(gb_pages) >= 60
    text = "".join(r["text"] for r in gb_pages)
    # Frequent Chinese characters are there, and GBK-read-as-Latin-1 mojibake is not.
    for char in "的是在中国公司":
        assert char in text
    assert "Ã" not in text and "\ufffd" not in text


def test_english_clueweb_pages_and_record_accounting():
    path = shared("warc/clueweb09-en-sample.warc.gz")
    rows = read(path)
    assert sum(r["_count"] for r in rows) == warcio_record_count(path)
    assert outcomes(rows)[("kept", None)] >= 95
    kept = [r for r in rows if r["_outcome"] == "kept"]
    assert all(r["url"].startswith("http") and r["host"] and r["crawl_date"] is not None for r in kept)
    assert len({r["id"] for r in kept}) == len(kept)


def test_aut_crawl_counts_every_reason_and_reconciles():
    path = shared("warc/aut-archive.org-2008.warc.gz")
    counts = outcomes(read(path))
    assert sum(counts.values()) == warcio_record_count(path)
    assert counts[("kept", None)] >= 80
    assert counts[("rejected", "non_html")] > 50          # images, PDFs, CSS
    assert counts[("rejected", "http_status")] > 10       # redirects, 404s
    assert counts[("skipped", "record_type:request")] > 100


@pytest.mark.parametrize("name, revisits", [("pywb-iana-revisits.warc.gz", 123), ("ukwa-gov.uk-b-revisits.warc.gz", 55)])
def test_revisits_are_counted_not_extracted(name, revisits):
    path = shared(f"warc/{name}")
    rows = read(path)
    assert outcomes(rows)[("rejected", "revisit")] == revisits
    assert sum(r["_count"] for r in rows) == warcio_record_count(path)
    assert all(r["text"] is None for r in rows if r["reject_rule"] == "revisit")


EDGE_CASES = sorted(p.name for p in (SHARED_DATA / "warc" / "edge-cases").glob("*")) or ["(none)"]


@pytest.mark.parametrize("name", EDGE_CASES)
def test_edge_case_files_give_records_or_a_counted_error(name):
    path = shared(f"warc/edge-cases/{name}")
    rows = read(path)
    assert rows, "every file yields at least one outcome row"
    for row in rows:
        assert row["_outcome"] in {"kept", "rejected", "skipped", "error"}
        if row["_outcome"] == "error":
            assert row["error"] == "corrupt_file" and row["record_offset"] is not None and row["reject_value"]
        if row["_outcome"] == "kept":
            assert row["text"]


def test_damaged_file_yields_the_records_before_the_damage_then_an_error():
    rows = [r for r in read(shared("warc/aut-bad.arc.gz")) if r["_outcome"] != "skipped"]
    assert [r["_outcome"] for r in rows] == ["rejected", "rejected", "kept", "error"]
    assert rows[-1]["record_offset"] == 3118 and rows[-1]["reject_value"] == "ArchiveLoadFailed: Invalid ARC record"


def test_record_cut_short_by_its_gzip_member_is_the_error_not_a_judged_record():
    # Its headers are one gzip member, its body the next: the record itself is damaged.
    rows = [r for r in read(shared("warc/edge-cases/warcio-example-wrong-chunks.warc.gz")) if r["_outcome"] != "skipped"]
    assert [(r["_outcome"], r["record_offset"]) for r in rows] == [("error", 0)]
    assert "shorter than its Content-Length" in rows[0]["reject_value"]


def test_whole_file_gzip_is_recovered_instead_of_failing():
    # Not one gzip member per record: warcio refuses; the reader re-streams it through one decompressor.
    counts = outcomes(read(shared("warc/edge-cases/warcio-example-bad-non-chunked.warc.gz")))
    assert counts[("kept", None)] == 1 and counts[("rejected", "revisit")] == 1
    assert not any(kind == "error" for kind, _ in counts)


def test_arc_files_get_deterministic_ids():
    path = shared("warc/edge-cases/warcio-example.arc")
    first, second = read(path), read(path)
    assert [r["id"] for r in first] == [r["id"] for r in second]
    assert outcomes(first)[("kept", None)] == 1


def test_oversized_and_non_html_are_rejected_with_reason():
    path = shared("warc/aut-archive.org-2008.warc.gz")
    counts = outcomes(read(path, ExtractConfig(max_payload_bytes=2000)))
    assert counts[("rejected", "oversized")] > 10


def test_sample_is_deterministic_and_proportional():
    ids = [document_id("f.warc.gz", f"<urn:uuid:{i}>", i, "u") for i in range(20000)]
    chosen = [i for i in ids if in_sample(i, 0.1)]
    assert 1800 < len(chosen) < 2200
    assert chosen == [i for i in ids if in_sample(i, 0.1)]
    path = shared("warc/clueweb09-en-sample.warc.gz")
    sampled = read(path, sample=0.3)
    assert sum(r["_count"] for r in sampled) == warcio_record_count(path)
    kept = outcomes(sampled)[("kept", None)]
    assert 15 < kept < 50 and outcomes(sampled)[("skipped", "not_sampled")] > 40


# Every shared file the reader takes for a WARC (not named .arc/.arc.gz): FastWARC reads it first.
WARC_FILES = sorted(str(p.relative_to(SHARED_DATA)) for p in (SHARED_DATA / "warc").rglob("*")
                    if p.is_file() and not p.name.endswith((".arc", ".arc.gz"))) or ["(none)"]


def rows_of_pass(read_pass, path: Path):
    """Rows and skip counts of one way of reading ``path``, and whether it read it to the end."""
    skipped: Counter = Counter()
    rows = []
    try:
        for row in read_pass(str(path), lambda: open(path, "rb"), "warc", path.name.endswith(".gz"), skipped):
            rows.append(row)
    except _ReadAgain:
        return rows, skipped, False
    return rows, skipped, True


@pytest.mark.parametrize("name", WARC_FILES)
def test_fastwarc_pass_gives_the_rows_of_the_checked_warcio_path(name):
    # FastWARC reads .warc/.warc.gz first; what it gives must be exactly what the bounded warcio
    # path gives (ids, offsets, every column, the skip counts), and where its checks fail it must
    # give up before any row the warcio path would not give.
    path = shared(name)
    reader = WarcDocumentReader(ExtractConfig())
    fast, fast_skipped, vouched = rows_of_pass(reader._fastwarc_pass, path)
    checked, checked_skipped, whole = rows_of_pass(reader._warcio_pass, path)
    if not whole:
        checked, checked_skipped, _ = rows_of_pass(reader._whole_file_gzip_pass, path)
    assert fast == checked[:len(fast)]
    if vouched:
        assert fast == checked and fast_skipped == checked_skipped
    if "/edge-cases/" not in f"/{name}":  # real crawls: read by FastWARC to the end
        assert vouched
