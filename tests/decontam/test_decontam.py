"""Benchmark decontamination: the n-gram index on plain values, and the decontam stage on real Spark.

The evaluation sets are written here as a user would give them (a folder of JSONL and text files);
the documents are web-page-like texts that quote a passage, a question, a question with its answer,
or share only short common phrases, in English and in Chinese.
"""
import dataclasses
import gzip
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusmill.config import ConfigError
from jobs import config, registry
from jobs.pipeline import run_pipeline, stage_fingerprint
from udfs.decontam.ngram_index import DecontamConfig, NgramIndex, Tokens, files_fingerprint, match, normalize

PASSAGE = ("The Amazon rainforest covers much of the Amazon basin of South America. This basin encompasses "
           "seven million square kilometres, of which five and a half million square kilometres are covered "
           "by the rainforest. The region includes territory belonging to nine nations.")
QUESTION = "Which element has the highest melting point of all metals found in the periodic table today?"
ANSWER = "Tungsten"
SHORT_QUESTION = "Who painted the ceiling of the Sistine Chapel?"  # 8 tokens: matched whole
CHINESE_QUESTION = "下列关于光合作用的叙述中，正确的是植物在光照条件下把二氧化碳和水合成有机物"
# Holds a 13-character set phrase of Chinese news (以江泽民同志为核心的党中央), which alone is no overlap.
CHINESE_POLITICS = "材料表明，以江泽民同志为核心的党中央高度重视农业和农村工作，这体现了什么道理？"

DOCUMENTS = {
    "passage": "Reading practice. " + PASSAGE.upper().replace(".", "!") + " Discuss with a partner.",
    "question": f"Homework help: {QUESTION} I could not find it in my notes, can anyone help?",
    "question_answer": f"Quiz answers: {QUESTION.split(' of all')[0]} of all metals found in the periodic table "
                       f"today? {ANSWER}. Next question.",
    "short_question": f"Trivia night! {SHORT_QUESTION} Michelangelo, between 1508 and 1512.",
    "chinese": f"生物复习题：{CHINESE_QUESTION}。请同学们课后完成。",
    # Precision: only phrases any text on these subjects shares with the items.
    "common_phrases": ("South America is a continent. The Amazon basin of South America is large, and the "
                       "periodic table lists every element. Which element has the highest price? Gold, perhaps."),
    "chinese_common": "光合作用是植物在光照条件下进行的。二氧化碳和水是原料，有机物是产物。",
    "chinese_set_phrase": "新华社消息：以江泽民同志为核心的党中央作出部署，各地认真落实。",
    "unrelated": "The bakery on Main Street opens at seven and sells bread, cakes and coffee every day.",
}


@pytest.fixture(scope="module")
def benchmarks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("benchmarks")
    with open(folder / "reading.jsonl", "w", encoding="utf-8") as f:
        f.write(json.dumps({"id": "r1", "passage": PASSAGE, "question": "How many nations?", "answer": "nine"}) + "\n")
    (folder / "science").mkdir()  # a sub-folder is one benchmark of its files (splits)
    with open(folder / "science" / "test.jsonl", "w", encoding="utf-8") as f:
        f.write(json.dumps({"question": QUESTION, "choices": ["Iron", "Tungsten", "Gold"], "answer": ANSWER}) + "\n")
        f.write(json.dumps({"question": SHORT_QUESTION, "answer": ""}) + "\n")
        f.write(json.dumps({"question": "Is water wet?", "answer": "Yes"}) + "\n")  # too short to look for
    (folder / "gaokao.txt").write_text(CHINESE_QUESTION + "\n" + CHINESE_POLITICS + "\n", encoding="utf-8")
    (folder / "notes.md").write_text("not an evaluation file")
    return folder


def test_normalisation_lowercases_strips_punctuation_and_splits_chinese_into_characters():
    assert normalize("Hello,  WORLD!\n(It's)") == "hello world it s"
    assert len(Tokens.of(["光合作用 is photosynthesis"]).hashes) == 4 + 2


def test_the_index_holds_each_benchmark_with_its_items(benchmarks):
    index = NgramIndex.build(DecontamConfig(benchmarks=str(benchmarks)))
    assert index.names == ["gaokao", "reading", "science"]
    assert index.items == {"gaokao": {"items": 2, "too_short": 0}, "reading": {"items": 1, "too_short": 0},
                           "science": {"items": 3, "too_short": 1}}
    assert index.lengths == [8, 13, 25]  # the short item whole, 13 words, 25 Chinese characters
    assert list(index.hashes) == sorted(index.hashes)


def test_passages_questions_and_answers_are_found_and_common_phrases_are_not(benchmarks):
    index = NgramIndex.build(DecontamConfig(benchmarks=str(benchmarks)))
    found, best = match(list(DOCUMENTS.values()), index)
    verdict = {name: (index.names[b] if b >= 0 else None) for name, b in zip(DOCUMENTS, best)}
    assert verdict == {"passage": "reading", "question": "science", "question_answer": "science",
                       "short_question": "science", "chinese": "gaokao", "common_phrases": None,
                       "chinese_common": None, "chinese_set_phrase": None, "unrelated": None}
    assert dict(zip(DOCUMENTS, found))["passage"] == len(Tokens.of([PASSAGE]).hashes) - 13 + 1


def test_chinese_set_phrases_of_13_characters_would_match_with_english_sized_ngrams(benchmarks):
    words_sized = NgramIndex.build(DecontamConfig(benchmarks=str(benchmarks), cjk_ngram=13, cjk_min_item_chars=8))
    assert match([DOCUMENTS["chinese_set_phrase"]], words_sized)[0][0] == 1


def test_an_empty_index_and_null_texts_match_nothing(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    index = NgramIndex.build(DecontamConfig(benchmarks=str(tmp_path)))
    found, best = match([PASSAGE, None, ""], index)
    assert list(found) == [0, 0, 0] and list(best) == [-1, -1, -1]


@pytest.mark.parametrize("settings, message", [
    ({"benchmarks": "/no/such/folder"}, "decontam.benchmarks: folder not found"),
    ({"ngram": 0}, "decontam.ngram: must be at least 1"),
    ({"min_item_tokens": 14}, r"decontam.min_item_tokens: must be within \[1, ngram=13\]"),
    ({"cjk_min_item_chars": 0}, r"decontam.cjk_min_item_chars: must be within \[1, cjk_ngram=25\]"),
    ({"action": "delete"}, "decontam.action: must be one of reject, flag"),
    ({"max_line_bytes": 0}, "decontam.max_line_bytes: must be at least 1"),
    ({"max_json_depth": 1000}, r"decontam.max_json_depth: must be within \[1, 200\]"),
])
def test_invalid_settings_are_one_line_naming_the_key(settings, message):
    with pytest.raises(ConfigError, match=message):
        config.load(overrides={"decontam": settings})


def test_a_folder_without_evaluation_files_or_with_broken_json_is_a_config_error(tmp_path):
    (tmp_path / "readme.md").write_text("x")
    with pytest.raises(ConfigError, match="no .jsonl, .json, .txt files"):
        NgramIndex.build(DecontamConfig(benchmarks=str(tmp_path)))
    (tmp_path / "bad.jsonl").write_text('{"q": "fine"}\n{broken\n')
    with pytest.raises(ConfigError, match="bad.jsonl line 2: not JSON"):
        NgramIndex.build(DecontamConfig(benchmarks=str(tmp_path)))


def repeated_gzip(path, unit: bytes, total: int) -> None:
    """``total`` bytes of ``unit`` gzipped, small on disk: one member written again and again."""
    block = unit * ((16 << 20) // len(unit))
    member = gzip.compress(block, compresslevel=9)
    with open(path, "wb") as out:
        for _ in range(total // len(block)):
            out.write(member)


def hostile_zeros(folder):  # 1 GiB of zero bytes, no newline: one line as long as the file
    repeated_gzip(folder / "bomb.jsonl.gz", b"\0", 1 << 30)


def hostile_newlines(folder):  # 1 GiB of newlines: no item, every line blank
    repeated_gzip(folder / "newlines.jsonl.gz", b"\n", 1 << 30)


def hostile_long_line(folder):
    (folder / "long.jsonl").write_text(json.dumps({"q": "word " * (2 << 20)}) + "\n")


def hostile_fifo(folder):  # no writer: open() for reading would wait forever
    os.mkfifo(folder / "pipe.jsonl")


def hostile_link_loop(folder):
    (folder / "split").mkdir()  # inside a benchmark's folder too
    os.symlink("b.jsonl", folder / "split" / "a.jsonl")
    os.symlink("a.jsonl", folder / "split" / "b.jsonl")


def hostile_deep_json(folder):
    (folder / "deep.jsonl").write_text(json.dumps({"q": QUESTION}) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")


@pytest.mark.parametrize("make, message", [
    (hostile_zeros, r"bomb.jsonl.gz line 1: more than decontam.max_line_bytes = 8,388,608 bytes$"),
    (hostile_newlines, r"newlines.jsonl.gz: more than decontam.max_file_bytes = 268,435,456 bytes \(decompressed\)$"),
    (hostile_long_line, r"long.jsonl line 1: more than decontam.max_line_bytes = 8,388,608 bytes$"),
    (hostile_fifo, r"pipe.jsonl: not a regular file \(a named pipe\)$"),
    (hostile_link_loop, r"a.jsonl: cannot be read \(Too many levels of symbolic links\)$"),
    (hostile_deep_json, r"deep.jsonl line 2: JSON nested more than decontam.max_json_depth = 32 deep$"),
])
def test_a_hostile_benchmark_file_is_a_one_line_error_naming_it_and_the_bound(tmp_path, make, message):
    """Refused, not skipped: a benchmark left out would let the documents it contaminates through.
    The fingerprint (which the stage takes first) refuses what it can tell from the file's stat."""
    make(tmp_path)
    cfg = DecontamConfig(benchmarks=str(tmp_path))
    with pytest.raises(ConfigError, match=r"^decontam.benchmarks: .*" + message) as refused:
        files_fingerprint(cfg)
        NgramIndex.build(cfg)
    assert "\n" not in str(refused.value)


def test_the_bounds_are_settings_and_files_within_them_are_read_whole(tmp_path):
    (tmp_path / "deep.jsonl").write_text(json.dumps({"q": [[[SHORT_QUESTION]]], "a": {"b": [ANSWER]}}) + "\n")
    with gzip.open(tmp_path / "lines.txt.gz", "wt", encoding="utf-8") as out:
        out.write("\n" * (3 << 20) + QUESTION + "\n" + "\n" * 1000 + PASSAGE)  # blank blocks, no final newline
    index = NgramIndex.build(DecontamConfig(benchmarks=str(tmp_path)))
    assert index.items == {"deep": {"items": 1, "too_short": 0}, "lines": {"items": 2, "too_short": 0}}
    assert match([f"Homework: {QUESTION}"], index)[0][0] > 0
    with pytest.raises(ConfigError, match=r"deep.jsonl line 1: JSON nested more than decontam.max_json_depth = 3 deep"):
        NgramIndex.build(DecontamConfig(benchmarks=str(tmp_path), max_json_depth=3))
    with pytest.raises(ConfigError, match=r"lines.txt.gz line 3146730: more than decontam.max_line_bytes = 96 bytes"):
        NgramIndex.build(DecontamConfig(benchmarks=str(tmp_path), max_line_bytes=96))  # the passage, not the question
    with pytest.raises(ConfigError, match=r"lines.txt.gz: more than decontam.max_file_bytes = 1,000,000 bytes \(decompressed\)"):
        files_fingerprint(DecontamConfig(benchmarks=str(tmp_path), max_file_bytes=1_000_000))
        NgramIndex.build(DecontamConfig(benchmarks=str(tmp_path), max_file_bytes=1_000_000))


def test_a_cut_or_broken_gzip_file_is_a_one_line_error(tmp_path):
    data = gzip.compress((json.dumps({"q": QUESTION}) + "\n").encode() * 1000)
    (tmp_path / "cut.jsonl.gz").write_bytes(data[:len(data) // 2])
    with pytest.raises(ConfigError, match=r"cut.jsonl.gz: not readable \(EOFError"):
        NgramIndex.build(DecontamConfig(benchmarks=str(tmp_path)))
    (tmp_path / "cut.jsonl.gz").write_bytes(b"not gzip at all")
    with pytest.raises(ConfigError, match=r"cut.jsonl.gz: not readable \(BadGzipFile"):
        NgramIndex.build(DecontamConfig(benchmarks=str(tmp_path)))


def test_changed_evaluation_files_change_the_stage_fingerprint(tmp_path):
    (tmp_path / "a.txt").write_text(QUESTION + "\n")
    cfg = config.load(overrides={"decontam": {"benchmarks": str(tmp_path)}})
    stage = registry.stage_class("decontam")
    before = stage_fingerprint(stage(None, cfg), "upstream")
    (tmp_path / "a.txt").write_text(PASSAGE + "\n")
    assert stage_fingerprint(stage(None, cfg), "upstream") != before
    (tmp_path / "a.txt").unlink()
    tmp_path.rmdir()
    with pytest.raises(ConfigError, match="decontam.benchmarks: folder not found"):
        stage_fingerprint(stage(None, cfg), "upstream")


# ---------------------------------------------------------------- the stage on Spark

@pytest.fixture(scope="module")
def docs_parquet(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.parquet"
    pq.write_table(pa.table({"id": list(DOCUMENTS), "url": [f"https://example.com/{k}" for k in DOCUMENTS],
                             "text": list(DOCUMENTS.values())}), path)
    return str(path)


def test_the_stage_rejects_contaminated_documents_by_benchmark_and_counts_them(spark, benchmarks, docs_parquet, tmp_path):
    cfg = config.load(overrides={"decontam": {"benchmarks": str(benchmarks)}})
    stats = run_pipeline(spark, cfg, [docs_parquet], ["decontam"], str(tmp_path), "r", echo=lambda line: None)[0]
    assert stats["reconciled"] and stats["kept"] == 4 and stats["rejected"] == {"decontamination": 5}
    assert stats["benchmarks"] == {"gaokao": {"items": 2, "too_short": 0, "documents": 1},
                                   "reading": {"items": 1, "too_short": 0, "documents": 1},
                                   "science": {"items": 3, "too_short": 1, "documents": 3}}
    assert stats["ngram_lengths"] == [8, 13, 25] and stats["index_bytes"] > 0
    rejected = {r["id"]: (r["reject_rule"], r["reject_value"], r["decontam_benchmark"]) for r in
                spark.read.parquet(str(tmp_path / "r" / "decontam" / "rejected")).collect()}
    assert rejected["chinese"] == ("decontamination", "gaokao", "gaokao")
    assert set(rejected) == {"passage", "question", "question_answer", "short_question", "chinese"}
    kept = spark.read.parquet(str(tmp_path / "r" / "decontam" / "kept"))
    assert {r["id"]: r["decontam_ngrams"] for r in kept.collect()} == {
        "common_phrases": 0, "chinese_common": 0, "chinese_set_phrase": 0, "unrelated": 0}


def test_flag_mode_keeps_every_document_and_names_the_benchmark(spark, benchmarks, docs_parquet, tmp_path):
    cfg = config.load(overrides={"decontam": {"benchmarks": str(benchmarks), "action": "flag"}})
    stats = run_pipeline(spark, cfg, [docs_parquet], ["decontam"], str(tmp_path), "r", echo=lambda line: None)[0]
    assert stats["kept"] == len(DOCUMENTS) and stats["rejected"] == {}
    assert stats["benchmarks"]["science"]["documents"] == 3
    kept = spark.read.parquet(str(tmp_path / "r" / "decontam" / "kept"))
    assert kept.where("decontam_benchmark is not null").count() == 5


def test_without_benchmarks_every_document_is_kept(spark, docs_parquet, tmp_path):
    cfg = dataclasses.replace(config.PipelineConfig())
    stats = run_pipeline(spark, cfg, [docs_parquet], ["decontam"], str(tmp_path), "r", echo=lambda line: None)[0]
    assert stats["kept"] == len(DOCUMENTS) and stats["benchmarks"] == {}
