"""Hostile and broken WARC input on real files: a gzip bomb or an endless line costs bounded memory and
ends as one error row, a file cut anywhere keeps the records before the cut and reports the cut one,
and a file that is not what its name says is a corrupt_file."""
import gzip
import json
import resource
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from conftest import ROOT, shared
from tools.fixtures.hostile_warc import GiB, HOSTILE, MiB, write_all_hostile, write_hostile
from jobs import config
from jobs.pipeline import run_pipeline
from udfs.extract.warc import ExtractConfig, WarcDocumentReader

# The child reading a hostile file may map at most this much: a reader that holds a decompressed
# record whole needs many times the bomb's size.
ADDRESS_SPACE_CAP = GiB
# Peak RSS is the kernel's high-water mark of the child's own image (VmHWM): ru_maxrss would carry
# the size of the forked pytest process over the exec.
READ_IN_CHILD = """
import json, sys
from udfs.extract.warc import ExtractConfig, WarcDocumentReader
path = sys.argv[1]
rows = [{key: row[key] for key in ("_outcome", "error", "reject_rule", "record_offset", "reject_value", "_count")}
        for row in WarcDocumentReader(ExtractConfig()).read(path, lambda: open(path, "rb"))]
peak = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"rows": rows, "peak_rss": peak}))
"""


def read(path: Path, cfg: ExtractConfig = ExtractConfig()):
    return list(WarcDocumentReader(cfg).read(str(path), lambda: open(path, "rb")))


def read_in_capped_child(path: Path) -> dict:
    """Rows and peak RSS of reading ``path`` in a child process whose address space is capped."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP))

    result = subprocess.run([sys.executable, "-c", READ_IN_CHILD, str(path)], cwd=ROOT, preexec_fn=cap,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return write_all_hostile(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_bomb_is_one_row_in_bounded_memory(hostile, name):
    got = read_in_capped_child(hostile[name])
    outcome, reason = HOSTILE[name][1]
    assert [(r["_outcome"], r["error"] or r["reject_rule"], r["record_offset"]) for r in got["rows"]] == [(outcome, reason, 0)]
    # Our own words, never the file's bytes (a message quoting the file could carry a 200 MiB line).
    message = got["rows"][0]["reject_value"]
    assert len(message) < 200 and "\0" not in message and "xxxx" not in message
    assert got["peak_rss"] < 256 * MiB, f"{name}: peak RSS {got['peak_rss'] / MiB:.0f} MiB"


def test_record_size_limit_is_configurable(hostile):
    # A record declaring more than max_record_bytes is refused before its body is decompressed.
    rows = read(hostile["claims-more.warc.gz"], ExtractConfig(max_record_bytes=10 * MiB))
    assert [(r["error"], r["record_offset"]) for r in rows] == [("oversized_record", 0)]
    assert "max_record_bytes (10485760)" in rows[0]["reject_value"]


def member_spans(data: bytes):
    """(start, end) of each gzip member of ``data``: one WARC record each in a per-record .warc.gz."""
    spans, start = [], 0
    while start < len(data):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        inflater.decompress(data[start:])
        end = len(data) - len(inflater.unused_data)
        spans.append((start, end))
        start = end
    return spans


def inflates_to(member_prefix: bytes) -> bytes:
    return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(member_prefix)


def judged(rows):
    """Kept and rejected rows as comparable tuples."""
    return [(r["record_offset"], r["_outcome"], r["reject_rule"], r["text"]) for r in rows
            if r["_outcome"] in ("kept", "rejected")]


def assert_cut_reported(full_rows, cut_rows, cut_record_offset: int, records_before: int):
    """The records before the cut as in the whole file; the cut record is one corrupt_file error at its
    offset; nothing else; every record read accounted for once."""
    assert judged(cut_rows) == [row for row in judged(full_rows) if row[0] < cut_record_offset]
    errors = [r for r in cut_rows if r["_outcome"] == "error"]
    assert [(r["error"], r["record_offset"]) for r in errors] == [("corrupt_file", cut_record_offset)]
    assert sum(r["_count"] for r in cut_rows) == records_before + 1


DOLMA = "warc/dolma-sample-0000.warc.gz"


def test_issue_reproduction_cut_at_99000_bytes_is_an_error_not_a_partial_page(tmp_path):
    # A reader that takes a cut gzip member without a word (FastWARC alone does) keeps the cut record
    # as a partial document and reports nothing.
    path = tmp_path / "t.warc.gz"
    path.write_bytes(shared(DOLMA).read_bytes()[:99000])
    rows = read(path)
    spans = member_spans(shared(DOLMA).read_bytes())
    index, (start, _) = next((i, s) for i, s in enumerate(spans) if s[0] < 99000 <= s[1])
    assert_cut_reported(read(shared(DOLMA)), rows, start, index)


@pytest.mark.parametrize("where", ["WARC header", "HTTP header", "body", "deflate end, no trailer", "trailer"])
def test_gzip_file_cut_inside_a_record(tmp_path, where):
    data = shared(DOLMA).read_bytes()
    spans = member_spans(data)
    # The tenth response record: records before it of every kind.
    responses = [i for i, (s, e) in enumerate(spans) if b"WARC-Type: response" in inflates_to(data[s:e])]
    index = responses[10]
    start, end = spans[index]
    record = inflates_to(data[start:end])
    warc_header_end = record.index(b"\r\n\r\n")
    http_header_end = record.index(b"\r\n\r\n", warc_header_end + 4)

    def cut_where_inflated(low: int, high: int) -> int:
        """The shortest cut of the member whose inflated prefix ends between ``low`` and ``high``."""
        for cut in range(start + 1, end):
            if low < len(inflates_to(data[start:cut])) < high:
                return cut
        raise AssertionError(f"no cut of the member inflates to {low}..{high} bytes")

    cut = {
        "WARC header": lambda: cut_where_inflated(20, warc_header_end),
        "HTTP header": lambda: cut_where_inflated(warc_header_end + 10, http_header_end),
        "body": lambda: (start + end) // 2,
        "deflate end, no trailer": lambda: end - 8,
        "trailer": lambda: end - 3,
    }[where]()
    if where == "body":
        assert len(inflates_to(data[start:cut])) > http_header_end + 4
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(data[:cut])
    assert_cut_reported(read(shared(DOLMA)), read(path), start, index)


@pytest.mark.parametrize("where", ["header line", "body"])
def test_uncompressed_file_cut_inside_a_record(tmp_path, where):
    whole = shared("warc/aut-issue-493.warc")
    with open(whole, "rb") as fh:
        records = ArchiveIterator(fh)
        starts = [(records.get_record_offset(), record.rec_type) for record in records]
    # A response record in the second half of the file.
    index = next(i for i, (_, kind) in enumerate(starts) if i > len(starts) // 2 and kind == "response")
    start, next_start = starts[index][0], starts[index + 1][0]
    data = whole.read_bytes()
    cut = start + 30 if where == "header line" else (data.index(b"\r\n\r\n", start) + next_start) // 2
    path = tmp_path / "cut.warc"
    path.write_bytes(data[:cut])
    assert_cut_reported(read(whole), read(path), start, index)


@pytest.mark.parametrize("where", ["header line", "body"])
def test_whole_file_gzip_cut_inside_a_record(tmp_path, where):
    # One gzip member for the whole file: read through one decompressor, offsets are uncompressed.
    plain = shared("warc/aut-issue-493.warc")
    with open(plain, "rb") as fh:
        records = ArchiveIterator(fh)
        starts = [records.get_record_offset() for _ in records]
    data = plain.read_bytes()
    index = len(starts) * 2 // 3
    start = starts[index]
    inside = start + 30 if where == "header line" else (data.index(b"\r\n\r\n", start) + starts[index + 1]) // 2
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(data))
    # The shortest cut of the compressed file that inflates to beyond ``inside``.
    compressed = whole.read_bytes()
    cut = next(c for c in range(1000, len(compressed), 16) if len(inflates_to(compressed[:c])) > inside)
    assert len(inflates_to(compressed[:cut])) < starts[index + 1]
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(compressed[:cut])
    assert_cut_reported(read(whole), read(path), start, index)


@pytest.mark.parametrize("name", ["readme.warc.gz", "readme.warc"])
def test_text_file_named_as_warc_is_corrupt_not_a_record(tmp_path, name):
    # The old reader parsed any line with four spaces as an ARC header: a `no_http_headers` record.
    path = tmp_path / name
    path.write_bytes((ROOT / "README.md").read_bytes())
    rows = read(path)
    assert [(r["_outcome"], r["error"], r["record_offset"]) for r in rows] == [("error", "corrupt_file", 0)]
    assert rows[0]["reject_value"] in ("DamagedArchive: not gzip data", "ArchiveLoadFailed: Invalid WARC record")


def test_extract_stage_on_spark_keeps_the_good_file_and_reports_each_bad_one(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    write_hostile(folder, "zeros.warc.gz")
    (folder / "cut.warc.gz").write_bytes(shared(DOLMA).read_bytes()[:99000])
    good = shared("warc/commoncrawl-whirlwind.warc.gz")
    (folder / "good.warc.gz").write_bytes(good.read_bytes())
    stats = run_pipeline(spark, config.load(), [str(folder)], ["extract"], str(tmp_path / "out"), "hostile",
                         echo=lambda _: None)[0]
    expected_kept = sum(r["_outcome"] == "kept" for r in read(good) + read(folder / "cut.warc.gz"))
    assert stats["reconciled"] and stats["kept"] == expected_kept
    assert stats["errors"] == {"corrupt_file": 2}
    errors = spark.read.parquet(str(tmp_path / "out" / "hostile" / "extract" / "errors")).collect()
    assert sorted(Path(r["source"]).name for r in errors) == ["cut.warc.gz", "zeros.warc.gz"]
    kept_sources = {r["source"] for r in spark.read.parquet(str(tmp_path / "out" / "hostile" / "extract" / "kept"))
                    .select("source").distinct().collect()}
    assert {Path(s).name for s in kept_sources} == {"good.warc.gz", "cut.warc.gz"}


def test_extract_gives_each_file_its_own_task_planned_in_the_jvm(spark):
    """A bad file costs only its own task: one partition per input file, in order. The paths reach
    the JVM as data, not as a Python RDD (whose job would start Python workers just to pass them)."""
    from jobs.stages.extract import ExtractStage

    paths = [f"/in/part-{i}.warc.gz" for i in range(5)] + ["/in/naïve 'quoted' name.warc.gz"]
    files = ExtractStage(spark, config.load()).load(paths)
    assert "ExistingRDD" not in files._jdf.queryExecution().executedPlan().toString()
    assert files.rdd.glom().map(lambda rows: [row.path for row in rows]).collect() == [[p] for p in paths]


def test_a_page_nested_too_deep_is_rejected_before_it_is_parsed(tmp_path):
    """lexbor's parse grows faster than the nesting (tens of thousands of nested divs take seconds; a
    million, the most a 5 MB payload holds, hours): such a page is a counted ``too_deep`` rejection,
    and the file goes on."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from udfs.extract._page_walk import MAX_NESTING_DEPTH

    page = b"<html><body><p>" + b"A paragraph of ordinary prose for the page. " * 20 + b"</p></body></html>"
    path = tmp_path / "deep.warc.gz"
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, payload in (("http://deep.example/", b"<div>" * 990_000), ("http://fine.example/", page)):
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=BytesIO(payload),
                                                          http_headers=http))
    rows = {row["url"]: row for row in read(path)}
    deep, fine = rows["http://deep.example/"], rows["http://fine.example/"]
    assert (deep["_outcome"], deep["reject_rule"]) == ("rejected", "too_deep")
    assert int(deep["reject_value"]) == MAX_NESTING_DEPTH + 1
    assert fine["_outcome"] == "kept" and "ordinary prose" in fine["text"]
