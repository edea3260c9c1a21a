"""The pii stage on real Spark: scrubbed text and URL, the pii maps, pass-through columns, errors, stats."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs import config
from jobs.pipeline import run_pipeline
from jobs.scrubbing import scrubbed as scrubbed_docs, scrubbed_rows
from udfs.pii.scrub import PiiConfig

DOCS = [
    ("zh", "张先生的手机号是138-1234-5678，身份证号是11010519491231002X，邮箱zhangsan@163.com，请联系。", "zh"),
    ("en", "Reach Jane at jane.doe@gmail.com or (415) 555-0132; docs use user@example.com.", "en"),
    ("clean", "Nothing personal here, only version 1.2.3.4 and ISBN 978-3-16-148410-0.", "en"),
    ("long", "Call (415) 555-0132. " + "filler text " * 200, "en"),
    ("null", None, None),
]
# URLs of the documents above: personal data in the query and the path of two of them.
URLS = {"zh": "https://bbs.example.cn/thread?uid=11010519491231002X&mail=zhangsan%40163.com",
        "long": "https://example.org/u/jane.doe@gmail.com/call"}


@pytest.fixture(scope="module")
def scrubbed(spark, tmp_path_factory):
    work = tmp_path_factory.mktemp("pii")
    table = pa.table({
        "id": [d[0] for d in DOCS], "url": [URLS.get(d[0], f"https://example.org/{d[0]}") for d in DOCS],
        "text": [d[1] for d in DOCS], "lang": [d[2] for d in DOCS], "source": ["test"] * len(DOCS),
    })
    pq.write_table(table, work / "docs.parquet")
    cfg = config.load(overrides={"pii": {"max_doc_chars": 1000}})
    stats = run_pipeline(spark, cfg, [str(work / "docs.parquet")], ["pii"], str(work / "out"), "r1",
                         echo=lambda line: None)
    stage_dir = work / "out" / "r1" / "pii"
    kept = spark.read.parquet(str(stage_dir / "kept")).toPandas().set_index("id")
    errors = spark.read.parquet(str(stage_dir / "errors")).toPandas().set_index("id")
    return stats[0], kept, errors, json.loads((stage_dir / "_stats.json").read_text())


def test_text_is_scrubbed_in_place_and_other_columns_pass_through(scrubbed):
    _, kept, _, _ = scrubbed
    assert kept.loc["zh", "text"] == "张先生的手机号是<PHONE>，身份证号是<CN_ID>，邮箱<EMAIL>，请联系。"
    assert kept.loc["en", "text"] == "Reach Jane at <EMAIL> or <PHONE>; docs use user@example.com."
    assert kept.loc["clean", "text"] == DOCS[2][1]
    assert list(kept.columns[:4]) == ["url", "text", "lang", "source"]
    assert (kept["source"] == "test").all() and kept.loc["en", "url"] == "https://example.org/en"


def test_url_is_scrubbed_and_counted_apart_from_the_text(scrubbed):
    _, kept, errors, written = scrubbed
    assert kept.loc["zh", "url"] == "https://bbs.example.cn/thread?uid=<CN_ID>&mail=<EMAIL>"
    assert dict(kept.loc["zh", "url_pii"]) == {"CN_ID": 1, "EMAIL": 1}
    assert dict(kept.loc["en", "url_pii"]) == {}
    assert errors.loc["long", "url"] == "https://example.org/u/<EMAIL>/call"  # errors/ too
    assert written["url_pii_replaced"] == {"CN_ID": 1, "EMAIL": 1}


def test_pii_column_counts_types_per_document(scrubbed):
    _, kept, _, _ = scrubbed
    assert dict(kept.loc["zh", "pii"]) == {"PHONE": 1, "CN_ID": 1, "EMAIL": 1}
    assert dict(kept.loc["en", "pii"]) == {"EMAIL": 1, "PHONE": 1}
    assert dict(kept.loc["clean", "pii"]) == {}


def test_documents_the_analyzer_cannot_finish_are_errors_and_the_job_goes_on(scrubbed):
    stats, kept, errors, _ = scrubbed
    assert sorted(errors.index) == ["long", "null"]
    assert errors.loc["long", "error"] == "DocumentTooLong: document longer than max_doc_chars=1000"
    # No raw text in errors/: the document is still in the input (filter/kept/, the audit trail) by id.
    assert errors["text"].isna().all()
    assert sorted(kept.index) == ["clean", "en", "zh"]
    assert stats["records_in"] == 5 and stats["kept"] == 3 and stats["reconciled"] is True
    assert stats["errors"] == {errors.loc["long", "error"]: 1, "text is null": 1}


def test_stats_count_replacements_per_type_without_values(scrubbed):
    _, _, _, written = scrubbed
    assert written["pii_replaced"] == {"CN_ID": 1, "EMAIL": 2, "PHONE": 2}
    assert written["documents_with_pii"] == 2
    dumped = json.dumps(written, ensure_ascii=False)
    for value in ("138-1234-5678", "11010519491231002X", "zhangsan@163.com", "zhangsan%40163.com",
                  "jane.doe@gmail.com", "555-0132"):
        assert value not in dumped


def test_filter_fingerprint_covers_the_pii_settings_its_samples_are_scrubbed_with(spark):
    """filter writes its samples scrubbed with the pii settings: changing them must rewrite the samples."""
    from jobs.stages.filter import FilterStage
    from jobs.pipeline import stage_fingerprint

    cfg = config.load()
    other = config.load(overrides={"pii": {"placeholders": {"EMAIL": "[EMAIL]"}}})
    assert "pii" in FilterStage.config_paths()
    assert stage_fingerprint(FilterStage(spark, cfg), "up") != stage_fingerprint(FilterStage(spark, other), "up")


def test_spot_check_rows_are_scrubbed_in_the_driver_as_the_pii_stage_scrubs_them(spark):
    """The few samples the filter and the report show are scrubbed in the driver, after collecting:
    text, URL and error come out as the pii stage's Spark UDF writes the very same documents."""
    rows = [(f"d{i}", f"mail jane.doe{i}@gmail.com", f"https://example.org/?mail=jane{i}%40gmail.com") for i in range(3)]
    rows += [("long", "x" * 60, None), ("null", None, "https://example.org/u/jane.doe@gmail.com/x")]
    docs = spark.createDataFrame(rows, "id string, text string, url string")
    settings = PiiConfig(max_doc_chars=50)
    shown = {doc["id"]: doc for doc in scrubbed_rows(docs.collect(), settings)}
    written = {row["id"]: row for row in scrubbed_docs(docs, settings).collect()}
    assert sorted(shown) == sorted(written)
    for doc_id, doc in shown.items():
        assert (doc["text"], doc["url"], doc["error"]) == (written[doc_id]["text"], written[doc_id]["url"],
                                                          written[doc_id]["error"]), doc_id
    assert shown["d0"]["text"] == "mail <EMAIL>" and shown["d0"]["url"] == "https://example.org/?mail=<EMAIL>"
    assert shown["long"]["text"] is None and "max_doc_chars" in shown["long"]["error"]
    assert shown["null"]["text"] is None and "gmail" not in shown["null"]["url"]