"""extract and filter fused into one Python pass (``corpusmill run --stages extract,filter``) give
exactly the outputs of the two stages run one after the other: every row, every column, the stats."""
import json
from pathlib import Path

import pytest

from conftest import ROOT, shared
from jobs import config
from jobs.extract import ExtractStage, FusedBatches
from jobs.filter import FILTER_FIELDS, FilterStage
from jobs.fs import HadoopFS
from jobs.pipeline import fuse_next, run_pipeline, stage_fingerprint
from jobs.stage import MARKER
from udfs.filter import DocumentFilter

SAMPLE = ROOT / "data" / "sample"
# Stats that differ between any two runs.
RUN_FIELDS = ("wall_s", "finished_at")


def rows_of(spark, folder: Path) -> list:
    """Every row of a Parquet folder as a dict, in id order (row order in files is not part of the output)."""
    if not folder.exists():
        return []
    return sorted((row.asDict(recursive=True) for row in spark.read.parquet(str(folder)).collect()),
                  key=lambda row: row["id"])


def stats_of(run_dir: Path, stage: str) -> dict:
    stats = json.loads((run_dir / stage / "_stats.json").read_text())
    return {k: v for k, v in stats.items() if k not in RUN_FIELDS}


@pytest.fixture(scope="module")
def inputs():
    return [str(SAMPLE), str(shared("warc/clueweb09-zh-sample.warc.gz"))]


@pytest.mark.slow
def test_fused_run_writes_what_the_two_stages_write_one_after_the_other(spark, tmp_path, inputs):
    cfg = config.load()
    fused_lines, apart_lines = [], []
    run_pipeline(spark, cfg, inputs, ["extract", "filter"], str(tmp_path), "fused", echo=fused_lines.append)
    run_pipeline(spark, cfg, inputs, ["extract"], str(tmp_path), "apart", echo=apart_lines.append)
    run_pipeline(spark, cfg, [], ["filter"], str(tmp_path), "apart", echo=apart_lines.append)
    fused, apart = tmp_path / "fused", tmp_path / "apart"

    for stage, folders in (("extract", ("kept", "rejected", "errors", "skipped")),
                           ("filter", ("kept", "rejected", "errors"))):
        for folder in folders:
            expected = rows_of(spark, apart / stage / folder)
            assert rows_of(spark, fused / stage / folder) == expected, f"{stage}/{folder}"
        assert stats_of(fused, stage) == stats_of(apart, stage), stage
        marker = json.loads((fused / stage / MARKER).read_text())
        assert marker["fingerprint"] == json.loads((apart / stage / MARKER).read_text())["fingerprint"]
        assert sorted(p.name for p in (fused / stage / "samples").glob("*")) == \
            sorted(p.name for p in (apart / stage / "samples").glob("*"))
    filtered = stats_of(fused, "filter")
    assert filtered["kept"] > 20 and filtered["rejected"], "the input must exercise both outcomes"
    assert len(filtered["languages"]) >= 2 and filtered["ppl_cutoffs"], "and more than one language model"

    # A re-run finds both stages finished; filter alone then runs from extract/kept as before.
    rerun = []
    run_pipeline(spark, cfg, inputs, ["extract", "filter"], str(tmp_path), "fused", echo=rerun.append)
    assert all("finished earlier" in line for line in rerun)


def test_filter_is_fused_into_extract_only_when_it_will_run(spark, tmp_path, inputs):
    cfg = config.load()
    fs = HadoopFS(spark)
    extract = ExtractStage(spark, cfg)
    assert fuse_next(fs, extract, "fp", FilterStage(spark, cfg), str(tmp_path)) is not None
    assert extract.fused_filter is not None

    # A filter stage already finished with the fingerprint it would get: nothing to fuse.
    finished = FilterStage(spark, cfg)
    (tmp_path / "filter").mkdir()
    fs.write_json(f"{tmp_path}/filter/{MARKER}", {"fingerprint": stage_fingerprint(finished, "fp"), "files": {}})
    assert fuse_next(fs, ExtractStage(spark, cfg), "fp", finished, str(tmp_path)) is None
    # Stages extract cannot take on are not fused.
    assert not ExtractStage(spark, cfg).fuse(ExtractStage(spark, cfg))


def test_fused_batch_carries_the_filter_columns_of_kept_rows_only():
    cfg = config.load()
    texts = ["The quick brown fox jumps over the lazy dog. " * 30, "这是一个中文句子，用来测试语言识别和困惑度。" * 20, "ok"]
    rows = [{"id": str(i), "_outcome": "kept", "text": t} for i, t in enumerate(texts)]
    rows.insert(1, {"id": "x", "_outcome": "rejected", "text": None, "reject_rule": "non_html"})
    batch = FusedBatches(cfg.filter)(rows).to_pylist()
    expected = DocumentFilter(cfg.filter).apply(texts)
    assert batch[1]["_filter"] is None
    for row, index in zip([batch[0], batch[2], batch[3]], range(3)):
        assert row["_filter"] == {name: expected[name][index] for name in FILTER_FIELDS.names}
