"""Every stage's door on real Spark: the data contract's column types (a one-line error), ids shared
by several rows (never multiplied by a join; dedup keeps one copy and rejects the others as
``duplicate_id``), and texts over ``io.max_text_chars`` (an errors/ row with the reason, counted,
never sent to a Python worker)."""
import shutil
from contextlib import ExitStack
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from conftest import ROOT, shared
from corpusmill.config import ConfigError
from jobs import config, registry
from jobs.cli import main
from jobs.pipeline import run_pipeline
from jobs.runner import transformed
from jobs.stage import TEXT_TOO_LONG
from jobs.stages.dedup import DUPLICATE_ID, DedupStage
from tools.fixtures.dedup_corpus import wiki_paragraphs

DOCUMENT_STAGES = [name for name in registry.stage_order() if registry.stage_class(name).input == "documents"]
LIMIT = 2000  # io.max_text_chars in these tests: the paragraphs are shorter, the long document longer
BUCKETS = 2
TWINS = 3  # rows sharing the id "twin"


def paragraphs(count: int, longest: int = LIMIT):
    found = [p for p in wiki_paragraphs(shared("corpora/en/enwiki-head-articles.xml"), min_words=60) if len(p) < longest]
    return found[:count]


def write_docs(spark, path: Path, rows) -> str:
    """(id, text) rows as a Parquet dataset with the contract's columns and a mix bucket."""
    (spark.createDataFrame([(i, f"https://example.org/{i}/{n}", t, n % BUCKETS) for n, (i, t) in enumerate(rows)],
                           "id string, url string, text string, bucket int").repartition(2).write.parquet(str(path)))
    return str(path)


def stage_rows(spark, stage_dir: Path, folder: str):
    return spark.read.parquet(str(stage_dir / folder)) if (stage_dir / folder).exists() else None


@pytest.fixture(scope="module")
def contract_input(spark, tmp_path_factory):
    texts = paragraphs(13)
    rows = [(f"doc{n:02d}", t) for n, t in enumerate(texts[:10])]
    rows += [("twin", texts[10])] * TWINS
    long_text = " ".join(texts)[:3 * LIMIT]
    rows.append(("long", long_text))
    return {"path": write_docs(spark, tmp_path_factory.mktemp("contract") / "in", rows), "n": len(rows),
            "long_chars": len(long_text)}


@pytest.mark.parametrize("stage", DOCUMENT_STAGES)
def test_every_stage_makes_a_text_over_the_limit_an_error_row_and_multiplies_no_row(spark, contract_input, stage,
                                                                                    tmp_path):
    cfg = config.load(overrides={"io": {"max_text_chars": LIMIT}, "mix": {"buckets": BUCKETS},
                                 "mindrecord": {"mode": "documents"}})
    stats = run_pipeline(spark, cfg, [contract_input["path"]], [stage], str(tmp_path), "r", echo=lambda _: None)[0]
    n = contract_input["n"]
    assert stats["records_in"] == n and stats["reconciled"], stats
    assert stats["errors"] == {TEXT_TOO_LONG: 1}, stats
    if stage == "dedup":  # the copies of "twin" beyond the first
        assert stats["rejected"].get(DUPLICATE_ID) == TWINS - 1
    if stage == "mindrecord":  # it writes shards, no errors/ rows: the document is counted and left out
        assert stats["kept"] == n - 1
        return
    error = stage_rows(spark, tmp_path / "r" / stage, "errors").collect()
    assert len(error) == 1
    assert (error[0]["id"], error[0]["error"], error[0]["reject_value"]) == \
        ("long", TEXT_TOO_LONG, str(contract_input["long_chars"]))
    if "text" in error[0]:
        assert error[0]["text"] is None


def test_extract_makes_a_page_whose_text_is_over_the_limit_an_error_row(spark, tmp_path):
    cfg = config.load(overrides={"io": {"max_text_chars": LIMIT}})
    stats = run_pipeline(spark, cfg, [str(ROOT / "data" / "sample")], ["extract"], str(tmp_path), "r",
                         echo=lambda _: None)[0]
    assert stats["reconciled"] and stats["errors"].get(TEXT_TOO_LONG, 0) > 0
    stage_dir = tmp_path / "r" / "extract"
    kept = stage_rows(spark, stage_dir, "kept")
    assert kept.agg(F.max(F.length("text"))).first()[0] <= LIMIT
    errors = stage_rows(spark, stage_dir, "errors").where(F.col("error") == TEXT_TOO_LONG)
    assert errors.count() == stats["errors"][TEXT_TOO_LONG]
    assert errors.where(F.col("text").isNotNull() | (F.col("reject_value").cast("long") <= LIMIT)).count() == 0


def test_the_limit_counts_characters_not_bytes(spark):
    cfg = config.load(overrides={"io": {"max_text_chars": LIMIT}})
    texts = {"cjk_at_limit": "字" * LIMIT, "cjk_over": "字" * (LIMIT + 1), "ascii_at_limit": "a" * LIMIT,
             "ascii_over": "a" * (LIMIT + 1), "emoji_over": "🙂" * (LIMIT + 1), "empty": "", "null": None}
    docs = spark.createDataFrame(list(texts.items()), "id string, text string")
    found = dict(docs.select("id", DedupStage(spark, cfg).too_long().alias("over")).collect())
    assert found == {"cjk_at_limit": None, "cjk_over": LIMIT + 1, "ascii_at_limit": None, "ascii_over": LIMIT + 1,
                     "emoji_over": LIMIT + 1, "empty": None, "null": None}


def test_rows_sharing_one_id_in_dedup_are_one_kept_and_the_rest_rejected(spark, tmp_path):
    texts = paragraphs(30)
    rows = [("same", t) for t in texts[:27]] + [(f"other{n}", t) for n, t in enumerate(texts[27:])]
    path = write_docs(spark, tmp_path / "in", rows)
    stats = run_pipeline(spark, config.load(), [path], ["dedup"], str(tmp_path / "out"), "r", echo=lambda _: None)[0]
    assert stats["records_in"] == 30 and stats["reconciled"]
    assert stats["kept"] == 1 + 3 and stats["rejected"] == {DUPLICATE_ID: 26}
    rejected = stage_rows(spark, tmp_path / "out" / "r" / "dedup", "rejected")
    assert {tuple(r) for r in rejected.select("id", "survivor_id", "reject_rule").distinct().collect()} == \
        {("same", "same", DUPLICATE_ID)}
    # The copy kept is the same whatever the input's partitioning.
    kept = stage_rows(spark, tmp_path / "out" / "r" / "dedup", "kept").where("id = 'same'").select("text").collect()
    for partitions in (1, 5):
        docs = spark.read.parquet(path).repartition(partitions)
        out = transformed(DedupStage(spark, config.load()), docs, ExitStack()).rows
        assert out.where("id = 'same' AND _outcome = 'kept'").select("text").collect() == kept


def test_the_same_warcs_given_twice_dedup_to_what_one_copy_gives(spark, tmp_path):
    for copy in ("a", "b"):  # the bundled sample WARCs, in two folders
        shutil.copytree(ROOT / "data" / "sample", tmp_path / copy)
    cfg = config.load()
    once = run_pipeline(spark, cfg, [str(tmp_path / "a")], ["extract", "dedup"], str(tmp_path / "out"), "once",
                        echo=lambda _: None)
    twice = run_pipeline(spark, cfg, [str(tmp_path / "a"), str(tmp_path / "b")], ["extract", "dedup"],
                         str(tmp_path / "out"), "twice", echo=lambda _: None)
    documents = once[0]["kept"]
    assert documents > 0 and twice[0]["kept"] == 2 * documents
    dedup = twice[1]
    assert dedup["records_in"] == 2 * documents and dedup["reconciled"]
    assert dedup["rejected"].pop(DUPLICATE_ID) == documents
    assert (dedup["kept"], dedup["rejected"], dedup["errors"]) == (once[1]["kept"], once[1]["rejected"], once[1]["errors"])

    def kept_ids(run):
        return sorted(r["id"] for r in spark.read.parquet(str(tmp_path / "out" / run / "dedup" / "kept"))
                      .select("id").collect())
    assert kept_ids("twice") == kept_ids("once")


def test_a_20_million_character_text_is_an_error_row_under_the_default_limit(spark, tmp_path):
    huge = ("All work and no play makes Jack a dull boy. " * 460_000)[:20_000_000]
    texts = paragraphs(3)
    path = write_docs(spark, tmp_path / "in", [("huge", huge)] + [(f"doc{n}", t) for n, t in enumerate(texts)])
    cfg = config.load()
    assert cfg.io.max_text_chars < len(huge)
    stats = run_pipeline(spark, cfg, [path], ["dedup"], str(tmp_path / "out"), "r", echo=lambda _: None)[0]
    assert stats["reconciled"] and stats["errors"] == {TEXT_TOO_LONG: 1} and stats["kept"] == 3
    error = stage_rows(spark, tmp_path / "out" / "r" / "dedup", "errors").select("id", "reject_value").first()
    assert tuple(error) == ("huge", "20000000")


@pytest.mark.parametrize("stage", DOCUMENT_STAGES)
@pytest.mark.parametrize("column, kind", [("id", "bigint"), ("text", "binary"), ("url", "int")])
def test_a_contract_column_of_another_type_is_refused_at_every_stage_door(spark, stage, column, kind):
    columns = {"id": "string", "url": "string", "text": "string", "bucket": "int", column: kind}
    docs = spark.createDataFrame([], ", ".join(f"{name} {kind}" for name, kind in columns.items()))
    with pytest.raises(ConfigError) as refused:
        registry.stage_class(stage)(spark, config.load()).check_input(docs)
    assert str(refused.value).startswith(f"--input: column {column!r} is {kind}; the {stage} stage needs string")


def test_an_int64_id_is_one_line_on_stderr_and_exit_code_2(spark, tmp_path, capsys):
    spark.createDataFrame([(1, "https://example.org/1", "Some text.")], "id bigint, url string, text string") \
        .write.parquet(str(tmp_path / "in"))
    code = main(["run", "--stages", "dedup", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                 "--run", "r"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err.startswith("corpusmill: --input: column 'id' is bigint; the dedup stage needs string")
    assert not (tmp_path / "out" / "r" / "dedup" / "_stats.json").exists()


def test_the_limit_is_a_validated_io_setting():
    assert config.load().io.max_text_chars == 1_000_000
    with pytest.raises(ConfigError, match="io.max_text_chars"):
        config.load(overrides={"io": {"max_text_chars": 0}})
