"""Input columns of a type the data contract does not name: a one-line error with exit code 2, never a
traceback or a silent cast. Also: a dead scoring service is one line and exit code 7, and null texts
given to dedup alone are no duplicates of each other."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs.cli import main


def write_table(folder, table):
    folder.mkdir()
    pq.write_table(table, folder / "part-0.parquet")
    return str(folder)


def run_alone(stage, path, tmp_path, *extra):
    return main(["run", "--stages", stage, "--input", path, "--output", str(tmp_path / "out"), "--run", "r", *extra])


BASE = {"id": pa.array(["a", "b"]), "url": pa.array(["https://example.org/a", "https://example.org/b"])}


@pytest.mark.parametrize("text, kind", [
    (pa.array([{"body": "Some text."}, {"body": "More text."}]), "struct<body:string>"),
    (pa.array([b"Some text.", b"More text."], pa.binary()), "binary"),
])
def test_a_text_column_that_is_no_string_is_one_line_and_exit_code_2(spark, tmp_path, capsys, text, kind):
    path = write_table(tmp_path / "in", pa.table({**BASE, "text": text}))
    assert run_alone("dedup", path, tmp_path) == 2
    err = capsys.readouterr().err.strip()  # Spark's progress bar may leave a line break before it
    assert err.startswith(f"corpusmill: --input: column 'text' is {kind}; the dedup stage needs string")
    assert "\n" not in err


def test_a_nanosecond_timestamp_is_one_line_and_exit_code_2(spark, tmp_path, capsys):
    dates = pa.array([1_700_000_000_123_456_789, 1_700_000_001_000_000_000], pa.timestamp("ns", tz="UTC"))
    path = write_table(tmp_path / "in", pa.table({**BASE, "text": pa.array(["Some text.", "More text."]),
                                                  "crawl_date": dates}))
    assert run_alone("dedup", path, tmp_path) == 2
    err = capsys.readouterr().err.strip()  # Spark's progress bar may leave a line break before it
    assert err.startswith("corpusmill: --input: a column is a Parquet timestamp in nanoseconds")
    assert "\n" not in err


def test_a_dead_scoring_service_is_one_line_and_exit_code_7(spark, tmp_path, capsys):
    path = write_table(tmp_path / "in", pa.table({**BASE, "text": pa.array(["Some text.", "More text."])}))
    config = tmp_path / "dead.yaml"
    config.write_text(json.dumps({"score": {"service_url": "http://127.0.0.1:1", "threshold": 0.5,
                                            "retries": 1, "backoff_s": 0.01}}))
    assert run_alone("score", path, tmp_path, "--config", str(config)) == 7
    err = capsys.readouterr().err.strip()  # Spark's progress bar may leave a line break before it
    assert err.startswith("corpusmill: the scoring service cannot be reached: scoring service http://127.0.0.1:1")
    assert "\n" not in err


def test_null_texts_are_no_duplicates_in_dedup_alone(spark, tmp_path):
    path = write_table(tmp_path / "in", pa.table({
        "id": pa.array(["a", "b", "c"]), "url": pa.array(["https://example.org/a", "https://example.org/b",
                                                          "https://example.org/c"]),
        "text": pa.array([None, None, "A text of its own."], pa.string())}))
    assert run_alone("dedup", path, tmp_path) == 0
    stats = json.loads((tmp_path / "out" / "r" / "dedup" / "_stats.json").read_text())
    assert stats["reconciled"] and stats["kept"] == 1 and stats["rejected"] == {"no_text": 2}
