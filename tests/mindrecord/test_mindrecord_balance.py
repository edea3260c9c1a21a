"""mindrecord's balancing of rows per shard moves the rows of documents without copies, so the copies
(repeats) of a document that pack put in different buckets stay in different shards."""
from jobs.stages.mindrecord import balanced

# Rows as pack writes them: a bucket and the copies (``<document>#<epoch>``) of each sequence's pieces.
# A, B and C have copies in several buckets; the U documents have one copy each.
ROWS = [
    (0, ["A#0"]), (0, ["A#0", "B#0"]), (0, ["C#0"]), (0, ["U1#0"]), (0, ["U2#0", "U3#0"]), (0, ["U4#0"]),
    (1, ["A#1"]), (1, ["B#1", "U5#0"]),
    (2, ["C#1"]),
]


def shards_of(spark, rows, buckets):
    frame = spark.createDataFrame(rows, "bucket int, _copies array<string>")
    placed = balanced(frame.withColumn("copies", frame["_copies"]), buckets)
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
