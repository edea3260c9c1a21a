"""mindrecord's balancing of rows per shard moves the rows of documents without copies, so the copies
(repeats) of a document that pack put in different buckets stay in different shards."""
import dataclasses
import random

import pyarrow as pa
import pytest

from jobs.stages import mindrecord
from jobs.stages.mindrecord import balanced, summarize, with_stays

# Rows as pack writes them: a bucket and the copies (``<document>#<epoch>``) of each sequence's pieces.
# A, B and C have copies in several buckets; the U documents have one copy each.
ROWS = [
    (0, ["A#0"]), (0, ["A#0", "B#0"]), (0, ["C#0"]), (0, ["U1#0"]), (0, ["U2#0", "U3#0"]), (0, ["U4#0"]),
    (1, ["A#1"]), (1, ["B#1", "U5#0"]),
    (2, ["C#1"]),
]


def shards_of(spark, rows, buckets):
    frame = spark.createDataFrame(rows, "bucket int, _copies array<string>")
    placed = balanced(frame.withColumn("copies", frame["_copies"]), buckets, ("copies",), summarize(frame))
    assert "_copies" not in placed.columns
    return [(r["bucket"], list(r["copies"]), r["shard"]) for r in placed.collect()]


def shared_shards(placed):
    """The documents with two copies in one shard."""
    copies = {}  # (document, shard) -> its copies there
    for _, row_copies, shard in placed:
        for copy in row_copies:
            copies.setdefault((copy.split("#")[0], shard), set()).add(copy)
    return sorted(document for (document, _), held in copies.items() if len(held) > 1)


def test_the_rows_moved_hold_no_document_with_copies(spark):
    placed = shards_of(spark, ROWS, 3)
    assert sorted(sum(shard == s for _, _, shard in placed) for s in range(3)) == [3, 3, 3]
    moved = [copies for bucket, copies, shard in placed if shard != bucket]
    assert sorted(moved) == [["U1#0"], ["U2#0", "U3#0"], ["U4#0"]]
    assert shared_shards(placed) == []


def test_rows_with_copies_move_when_nothing_else_can(spark):
    """Every row holds a document with copies: the counts are still evened out (and two copies then
    share a shard), the same way on every run."""
    rows = [(0, [f"D{n}#0"]) for n in range(5)] + [(1, ["D0#1"]), (1, ["D1#1"]), (1, ["D2#1", "D3#1", "D4#1"])]
    placed = shards_of(spark, rows, 2)
    assert [sum(shard == s for _, _, shard in placed) for s in range(2)] == [4, 4]
    assert len(shared_shards(placed)) == 1
    assert sorted(placed) == sorted(shards_of(spark, rows, 2))


def skewed_rows(seed):
    """Sequences with ids spread over 4 buckets far from even; one document in 5 has a copy elsewhere."""
    rng = random.Random(seed)
    rows = []
    for n in range(300):
        bucket = rng.choice([0, 0, 0, 1, 1, 2, 3])
        copies = [f"D{n}#0"] + ([f"R{rng.randrange(40)}#{rng.randrange(2)}"] if rng.random() < 0.2 else [])
        rows.append((f"seq-{n}", bucket, copies))
    return rows


def placements(placed):
    return sorted((r["id"], r["bucket"], r["shard"]) for r in placed.collect())


def whole_rows_numbered(placed) -> bool:
    return "Window" in placed._jdf.queryExecution().optimizedPlan().toString()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_moved_rows_named_by_key_are_those_numbering_whole_rows_moves(spark, monkeypatch, seed):
    frame = spark.createDataFrame(skewed_rows(seed), "id string, bucket int, _copies array<string>")
    by_key = balanced(frame, 4, ("id", "_copies"), summarize(frame))
    assert not whole_rows_numbered(by_key)
    monkeypatch.setattr(mindrecord, "MAX_LISTED_MOVES", 0)
    by_numbering = balanced(frame, 4, ("id", "_copies"), summarize(frame))
    assert whole_rows_numbered(by_numbering)
    assert placements(by_key) == placements(by_numbering)
    shards = [shard for _, _, shard in placements(by_key)]
    assert [shards.count(s) for s in range(4)] == [75, 75, 75, 75]


def test_rows_that_share_a_key_are_placed_one_by_one(spark):
    """Repeated rows (same id, same copies) in an overfull bucket: looked up by key they would all move
    or all stay (or be doubled by the lookup), so the whole rows are numbered and the counts still even out."""
    rows = [("same", 0, ["S#0"])] * 6 + [("other", 1, ["O#0"])]
    frame = spark.createDataFrame(rows, "id string, bucket int, _copies array<string>")
    placed = balanced(frame, 2, ("id", "_copies"), summarize(frame))
    assert whole_rows_numbered(placed)
    shards = [shard for _, _, shard in placements(placed)]
    assert len(shards) == 7 and sorted(shards.count(s) for s in range(2)) == [3, 4]


def test_where_every_copy_is_a_first_copy_no_row_is_looked_up_as_a_repeat(spark, monkeypatch):
    """Only first copies (``#0``): no document has another copy, so the rows are placed without the
    search for repeats, and exactly where that search would place them."""
    rows = [(f"seq-{n}", n % 3 and 1, [f"D{n}#0", f"E{n}#0"]) for n in range(40)]
    frame = spark.createDataFrame(rows, "id string, bucket int, _copies array<string>")
    summary = summarize(frame)
    assert summary.first_copies_only and summary.rows_per_bucket == {0: 14, 1: 26}
    searches = []
    monkeypatch.setattr(mindrecord, "with_stays", lambda rows: searches.append(1) or with_stays(rows))
    quick = placements(balanced(frame, 2, ("id", "_copies"), summary))
    assert searches == []
    full = placements(balanced(frame, 2, ("id", "_copies"), dataclasses.replace(summary, first_copies_only=False)))
    assert searches == [1] and quick == full
    assert not summarize(spark.createDataFrame([(0, ["A#0"]), (1, ["A#1"])], "bucket int, _copies array<string>")
                         ).first_copies_only
    assert not summarize(spark.createDataFrame([(0, ["A#00"])], "bucket int, _copies array<string>")).first_copies_only


def test_tokens_are_the_non_padding_positions_or_the_documents_estimates():
    sequences = pa.RecordBatch.from_pydict({"segment_ids": [[1, 1, 2, 0], [1, 0, 0, 0], [0, 0, 0, 0]]})
    assert mindrecord.token_count(sequences) == 4
    documents = pa.RecordBatch.from_pydict({"_tokens": pa.array([120, None, 7], pa.int64())})
    assert mindrecord.token_count(documents) == 127
