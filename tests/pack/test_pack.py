"""pack: tokenizers, boundary-aware cuts, best-fit packing, token accounting, and MindRecord sequences."""
import gzip
import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from conftest import ROOT, shared
from corpusmill.config import ConfigError
from jobs import config
from jobs.config import PipelineConfig
from jobs.pipeline import run_pipeline
from jobs.stages.pack import KEPT_SCHEMA, BucketFiles, pyarrow_codec
from tools.fixtures.corpus_docs import all_domains, book_parts, forum_threads, news_articles, web_pages, wiki_articles
from udfs.pack.packing import (BestFitPacker, Document, PackConfig, Piece, SequencePacker, assemble,
                               loss_mask_from_segments, position_ids_from_segments, split_document, text_boundaries,
                               token_cuts)
from udfs.pack.tokenizer import BUNDLED, VOCAB_DIR, TokenizerConfig, _checked_bytes, cached_tokenizer, load_tokenizer

# A piece that was cut at a boundary ends with sentence-final punctuation (and closing quotes) or a newline.
ENDS_AT_BOUNDARY = re.compile(r"(?:[.!?…]+[\"'”’)\]]*|[。！？]+[”’」』）)]*)\s*$|\n\s*$")


@pytest.fixture(scope="module")
def cl100k():
    return cached_tokenizer(TokenizerConfig())


def test_bundled_cl100k_is_the_real_vocabulary(cl100k):
    assert cl100k.encode_batch(["hello world"])[0].tolist() == [15339, 1917]  # GPT-4's ids
    assert cl100k.eos_id == 100257 and cl100k.vocab_size == 100277
    text = "中华人民共和国成立了。Tokenizers see <|endoftext|> as plain text here."
    ids = cl100k.encode_batch([text])[0]
    assert cl100k.decode(ids) == text and 100257 not in ids.tolist()
    assert cl100k.token_ends(text, ids)[-1] == len(text.encode("utf-8"))


def test_one_thread_and_a_pool_of_threads_tokenize_alike(cl100k):
    texts = [d["text"] for d in wiki_articles(limit=5)] + ["", "<|endoftext|> as text"]
    pooled = cached_tokenizer(TokenizerConfig(threads=3))
    assert [ids.tolist() for ids in cl100k.encode_batch(texts)] == [ids.tolist() for ids in pooled.encode_batch(texts)]
    assert cl100k.encode_batch(["<|endoftext|>"])[0].tolist() != [cl100k.eos_id]


def test_a_tampered_vocabulary_is_refused(tmp_path):
    spec = BUNDLED["cl100k_base"]
    data = gzip.decompress((VOCAB_DIR / spec["file"]).read_bytes()).replace(b"IQ== 0", b"IQ== 7", 1)
    tampered = tmp_path / "cl100k_base.tiktoken.gz"
    tampered.write_bytes(gzip.compress(data))
    with pytest.raises(ConfigError, match="sha256 mismatch"):
        _checked_bytes(tampered, spec["sha256"], "tokenizer")


def english_lines():
    return [l for l in shared("corpora/en/gutenberg/austen-emma.txt").read_text(encoding="latin-1").splitlines()
            if l.strip()][:4000]


def hf_tokenizer_file(path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(english_lines(), trainers.BpeTrainer(
        vocab_size=600, special_tokens=["</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer.save(str(path))
    return path


def sentencepiece_file(directory):
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(sentence_iterator=iter(english_lines()), model_prefix=str(directory / "sp"),
                                   vocab_size=700, model_type="unigram", byte_fallback=True,
                                   character_coverage=1.0, minloglevel=2)
    return directory / "sp.model"


@pytest.mark.parametrize("kind", ["huggingface", "sentencepiece"])
def test_tokenizer_files_load_checked_and_pack(kind, tmp_path):
    import hashlib

    path = hf_tokenizer_file(tmp_path / "tokenizer.json") if kind == "huggingface" else sentencepiece_file(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(ConfigError, match="sha256 mismatch"):
        load_tokenizer(TokenizerConfig(path=str(path), sha256="0" * 64))
    tokenizer = load_tokenizer(TokenizerConfig(path=str(path), sha256=digest))
    text = book_parts(limit=1)[0]["text"]
    ids = tokenizer.encode_batch([text])[0]
    assert tokenizer.decode(ids).split() == text.split()
    assert tokenizer.token_ends(text, ids)[-1] == len(text.encode("utf-8"))
    cfg = PackConfig(seq_len=64, tokenizer=TokenizerConfig(path=str(path)))
    pieces = split_document(Document(ids, text, "d", "books", tokenizer, cfg), 64)
    assert np.concatenate([p.tokens for p in pieces]).tolist() == ids.tolist() + [tokenizer.eos_id]
    assert all(len(p.tokens) <= 64 for p in pieces)


def test_bad_tokenizer_config_is_a_one_line_error(tmp_path):
    with pytest.raises(ConfigError, match="pack.tokenizer.name: no bundled vocabulary 'gpt5'"):
        config.build(PipelineConfig, {"pack": {"tokenizer": {"name": "gpt5"}}})
    with pytest.raises(ConfigError, match="pack.tokenizer.path: file not found"):
        config.build(PipelineConfig, {"pack": {"tokenizer": {"path": str(tmp_path / "missing.json")}}})
    with pytest.raises(ConfigError, match="pack.seq_len"):
        config.build(PipelineConfig, {"pack": {"seq_len": 4}})


def test_text_boundaries_paragraphs_sentences_lines():
    text = "First one. Second one!\n\nNew paragraph, e.g. this.\nA line\n第一句。“第二句！”"
    paragraphs, sentences = text_boundaries(text)
    at = lambda s: len(text[:text.index(s)].encode("utf-8"))
    after = lambda s: at(s) + len(s.encode("utf-8"))
    assert paragraphs.tolist() == [after("one!"), at("New paragraph")]
    assert sentences.tolist() == sorted([after("First one."), at("Second"), after("one!"), at("New paragraph"),
                                         after("this."), at("A line"), after("A line"), at("第一句"), after("第一句。")])


def test_only_boundaries_between_tokens_are_cut_points(cl100k):
    text = "北京城。“背篓”"  # cl100k has one token for '。“'
    ids = cl100k.encode_batch([text])[0]
    ends = cl100k.token_ends(text, ids)
    _, sentences = text_boundaries(text)
    assert sentences.tolist() == [len("北京城。".encode("utf-8"))] and sentences[0] not in ends
    assert token_cuts(ends, sentences).tolist() == []
    assert token_cuts(ends, ends[:2]).tolist() == [1, 2]


def test_long_documents_are_cut_at_paragraph_or_sentence_boundaries(cl100k):
    cfg = PackConfig(seq_len=256)
    for doc in book_parts(limit=40) + wiki_articles(limit=10) + news_articles(limit=40, lines_per_article=30):
        ids = cl100k.encode_batch([doc["text"]])[0]
        pieces = split_document(Document(ids, doc["text"], doc["id"], "x", cl100k, cfg), 256)
        assert np.concatenate([p.tokens for p in pieces]).tolist() == ids.tolist() + [cl100k.eos_id]
        assert all(len(p.tokens) <= 256 for p in pieces) and pieces[-1].last
        if pieces[-1].hard_cuts == 0:
            for piece in pieces[:-1]:
                assert ENDS_AT_BOUNDARY.search(cl100k.decode(piece.tokens)), cl100k.decode(piece.tokens)[-80:]


def test_only_a_sentence_longer_than_the_window_is_cut_inside(cl100k):
    words = re.sub(r"[^A-Za-z ]+", " ", book_parts(limit=1)[0]["text"]).split()
    run_on = " ".join(words[:400]) + ". Then a short sentence follows."
    ids = cl100k.encode_batch([run_on])[0]
    pieces = split_document(Document(ids, run_on, "d", "x", cl100k, PackConfig(seq_len=128)), 128)
    assert pieces[-1].hard_cuts == sum(1 for p in pieces[:-1] if len(p.tokens) == 128) >= 2
    assert cl100k.decode(pieces[-1].tokens).endswith(" Then a short sentence follows.<|endoftext|>")


def test_truncation_keeps_whole_sentences_and_counts_the_rest(cl100k):
    text = book_parts(limit=1)[0]["text"]
    ids = cl100k.encode_batch([text])[0]
    document = Document(ids, text, "d", "x", cl100k, PackConfig(seq_len=2048, max_doc_tokens=100))
    pieces = split_document(document, 2048)
    assert len(pieces) == 1 and len(pieces[0].tokens) - 1 + pieces[0].truncated == len(ids)
    assert len(pieces[0].tokens) - 1 <= 100 and ENDS_AT_BOUNDARY.search(cl100k.decode(pieces[0].tokens[:-1]))


def pack_all(docs, tokenizer, cfg):
    ids = tokenizer.encode_batch([d["text"] for d in docs])
    packer = BestFitPacker(cfg.seq_len, tokenizer.eos_id, cfg.buffer_sequences, cfg.max_open_sequences,
                           cfg.min_piece_tokens)
    sequences = []
    for doc, doc_ids in zip(docs, ids):
        sequences += packer.add(Document(doc_ids, doc["text"], doc["id"], doc["expected"], tokenizer, cfg))
    return ids, sequences + packer.finish()


def test_packing_real_documents_loses_no_token_and_fills_windows(cl100k):
    docs = all_domains()
    ids, sequences = pack_all(docs, cl100k, PackConfig(seq_len=2048))
    non_padding = sum(int((s.segment_ids > 0).sum()) for s in sequences)
    assert non_padding == sum(s.n_tokens for s in sequences)
    # input tokens = output non-padding tokens - EOS + truncated (none truncated here)
    assert sum(len(i) for i in ids) == non_padding - len(docs)
    pieces = {}
    for s in sequences:
        for p in s.pieces:
            pieces.setdefault(p.sample_id, []).append(p)
    for doc, doc_ids in zip(docs, ids):
        parts = sorted(pieces[doc["id"]], key=lambda p: p.index)
        assert [p.index for p in parts] == list(range(len(parts))) and parts[-1].last
        assert np.concatenate([p.tokens for p in parts]).tolist() == doc_ids.tolist() + [cl100k.eos_id]
    efficiency = non_padding / (len(sequences) * 2048)
    assert efficiency >= 0.99, efficiency


def test_copies_of_a_document_never_share_a_sequence(cl100k):
    """Three copies of every document (as mix repeats them) in one packer: best-fit would put copies of
    equal length side by side; no sequence may hold two pieces of one document, and windows still fill."""
    docs = all_domains()
    cfg = PackConfig(seq_len=2048)
    ids = cl100k.encode_batch([d["text"] for d in docs])
    packer = BestFitPacker(cfg.seq_len, cl100k.eos_id, cfg.buffer_sequences, cfg.max_open_sequences,
                           cfg.min_piece_tokens)
    sequences = []
    for epoch in range(3):
        for doc, doc_ids in zip(docs, ids):
            sequences += packer.add(Document(doc_ids, doc["text"], f"{doc['id']}#{epoch}", doc["expected"],
                                             cl100k, cfg, doc_id=doc["id"]))
    sequences += packer.finish()
    for s in sequences:
        documents = [p.sample_id.split("#")[0] for p in s.pieces]
        assert len(documents) == len(set(documents)), documents
    copies = {p.sample_id for s in sequences for p in s.pieces if p.last}
    assert len(copies) == 3 * len(docs)
    assert sum(s.n_tokens for s in sequences) / (len(sequences) * 2048) >= 0.99


def test_segments_mask_and_positions_of_an_assembled_sequence():
    pieces = [Piece(np.array([5, 6, 7], np.int32), "a", "web", 0, True),
              Piece(np.array([8, 9], np.int32), "b", "web", 2, False)]
    s = assemble(pieces, 8, pad_id=0)
    assert s.input_ids.tolist() == [5, 6, 7, 8, 9, 0, 0, 0]
    assert s.segment_ids.tolist() == [1, 1, 1, 2, 2, 0, 0, 0]
    assert s.loss_mask.tolist() == [0, 1, 1, 0, 1, 0, 0, 0]
    assert position_ids_from_segments(s.segment_ids).tolist()[:5] == [0, 1, 2, 0, 1]
    assert loss_mask_from_segments(np.array([[1, 1, 2], [0, 0, 0]])).tolist() == [[0, 1, 0], [0, 0, 0]]


# The stages mix -> pack -> mindrecord on real documents (seq_len 512, so books and wiki are cut).
@pytest.fixture(scope="module")
def packed(spark, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pack")
    docs = wiki_articles(limit=20) + book_parts(limit=60) + news_articles(limit=60) + forum_threads(limit=80) + web_pages(limit=80)
    docs.append({**docs[-1], "id": "empty", "url": "https://example.com/empty", "text": ""})
    spark.createDataFrame(pd.DataFrame(docs).drop(columns="expected")).write.parquet(str(tmp / "docs"))
    sections = {**yaml.safe_load((ROOT / "conf" / "mix.yaml").read_text()), **yaml.safe_load((ROOT / "conf" / "pack.yaml").read_text())}
    sections["mix"]["buckets"] = 2
    sections["pack"]["seq_len"] = 512
    cfg = config.build(PipelineConfig, sections)
    stats = run_pipeline(spark, cfg, [str(tmp / "docs")], ["mix", "pack", "mindrecord"], str(tmp), "run", echo=lambda _: None)
    return tmp / "run", dict(zip(["mix", "pack", "mindrecord"], stats))


def test_pack_stage_accounts_for_every_token(spark, packed, cl100k):
    run_dir, stats = packed
    pack = stats["pack"]
    assert pack["reconciled"] and pack["rejected"] == {"empty_text": 1} and not pack["errors"]
    samples = spark.read.parquet(str(run_dir / "mix" / "kept")).where("text != ''").select("sample_id", "text").collect()
    exact = {r["sample_id"]: cl100k.encode_batch([r["text"]])[0] for r in samples}
    assert pack["input_tokens"] == sum(len(i) for i in exact.values())
    assert pack["input_tokens"] == pack["tokens"] - pack["eos_tokens"] + pack["truncated_tokens"]
    assert pack["documents"] == len(exact) and pack["split_fraction"] > 0 and pack["hard_cut_fraction"] < 0.05
    rows = spark.read.parquet(str(run_dir / "pack" / "kept")).collect()
    pieces = {}
    for row in rows:
        ids, segments = np.array(row["input_ids"]), np.array(row["segment_ids"])
        assert len(ids) == 512 and int((segments > 0).sum()) == row["n_tokens"]
        for number, segment in enumerate(row["segments"], start=1):
            pieces.setdefault(segment["sample_id"], []).append((segment["piece"], ids[segments == number]))
    for sample_id, tokens in exact.items():
        joined = np.concatenate([t for _, t in sorted(pieces[sample_id], key=lambda p: p[0])])
        assert joined.tolist() == tokens.tolist() + [cl100k.eos_id]
    assert pack["packing_efficiency"] == pytest.approx(pack["tokens"] / (512 * len(rows)), abs=1e-6)
    assert set(pack["mixture_exact"]) <= set(stats["mix"]["domains"])


def test_a_pack_of_empty_texts_commits_an_empty_kept_with_the_sequence_columns(spark, tmp_path):
    docs = [{"id": f"d{i}", "url": f"https://example.com/{i}", "text": ""} for i in range(5)]
    spark.createDataFrame(pd.DataFrame(docs)).write.parquet(str(tmp_path / "docs"))
    cfg = config.build(PipelineConfig, yaml.safe_load((ROOT / "conf" / "pack.yaml").read_text()))
    pack = run_pipeline(spark, cfg, [str(tmp_path / "docs")], ["pack"], str(tmp_path), "run", echo=lambda _: None)[0]
    assert pack["reconciled"] and pack["kept"] == 0 and pack["rejected"] == {"empty_text": 5}
    kept = spark.read.parquet(str(tmp_path / "run" / "pack" / "kept"))
    assert kept.count() == 0
    assert set(kept.columns) == {"id", "bucket", "input_ids", "segment_ids", "loss_mask", "n_tokens", "segments"}


def test_a_bucket_file_written_again_replaces_the_first(cl100k, tmp_path):
    """A packing task writes its bucket's sequences under the bucket's own name, so a retried task's
    file replaces the failed attempt's: one file, the last attempt's rows, only the sequence columns."""
    cfg = PackConfig(seq_len=64, min_piece_tokens=8)

    def sequences(texts):
        packer, closed = SequencePacker(cfg, cl100k), []
        for n, (text, ids) in enumerate(zip(texts, cl100k.encode_batch(texts))):
            closed += packer.add_document(ids, text, f"s{n}", "web", f"d{n}")
        return closed + packer.finish()

    attempts = [sequences([f"The first attempt wrote line {n} of it." for n in range(40)]),
                sequences([f"The second attempt, which finished, wrote sentence number {n}." for n in range(30)])]
    for attempt in attempts:
        files = BucketFiles(str(tmp_path / "kept"), "zstd", {})
        files.write(3, attempt[:2])
        files.finish(3, attempt[2:])
        files.close()
    written = sorted(p.relative_to(tmp_path / "kept").as_posix() for p in (tmp_path / "kept").rglob("*") if p.is_file())
    assert written == ["bucket=3/part-00003.parquet"]
    table = pq.read_table(tmp_path / "kept" / written[0])
    assert table.schema.equals(KEPT_SCHEMA) and table.num_rows == len(attempts[1])
    assert table.column("id").to_pylist() == [s.sequence_id for s in attempts[1]]
    assert table.column("input_ids").to_pylist() == [s.input_ids.tolist() for s in attempts[1]]
    assert (tmp_path / "kept" / written[0]).stat().st_mode & 0o777 == 0o644


def test_the_parquet_codec_is_named_for_pyarrow_or_refused():
    assert pyarrow_codec("zstd") == "zstd" and pyarrow_codec("SNAPPY") == "snappy"
    assert pyarrow_codec("uncompressed") == "none" and pyarrow_codec("lz4_raw") == "lz4"
    for unknown in ("lzo", "zip"):
        with pytest.raises(ConfigError, match=f"io.parquet_compression: .*'{unknown}'"):
            pyarrow_codec(unknown)


def test_mindrecord_sequences_read_back_equal_the_parquet(spark, packed):
    import mindspore.dataset as ds

    run_dir, stats = packed
    assert stats["mindrecord"]["mode"] == "sequences" and stats["mindrecord"]["reconciled"]
    shards = sorted(str(p) for p in (run_dir / "mindrecord").glob("shard-*.mindrecord"))
    assert len(shards) == 2
    parquet = {r["id"]: r for r in spark.read.parquet(str(run_dir / "pack" / "kept")).collect()}
    read = list(ds.MindDataset(shards, shuffle=False).create_dict_iterator(output_numpy=True))
    assert len(read) == len(parquet) == stats["mindrecord"]["kept"]
    for row in read:
        expected = parquet[str(row["id"])]
        for column in ("input_ids", "segment_ids", "loss_mask"):
            assert row[column].dtype == np.int32 and row[column].shape == (512,)
            assert row[column].tolist() == list(expected[column])


def test_repeats_land_in_different_sequences_and_shards(spark, packed):
    """mix repeats documents (epoch >= 1); pack puts no two pieces of a document in one sequence, and
    the copies of a document that has no more copies than there are shards land in different shard files,
    after mindrecord has evened out the rows per shard."""
    import mindspore.dataset as ds

    run_dir, stats = packed
    kept = spark.read.parquet(str(run_dir / "pack" / "kept"))
    # Only what a trainer or a person reads: no bookkeeping columns of the write (_count, reject_rule…).
    assert set(kept.columns) == {"id", "bucket", "input_ids", "segment_ids", "loss_mask", "n_tokens", "segments"}
    shards = sorted((run_dir / "mindrecord").glob("shard-*.mindrecord"))
    shard_of = {str(row["id"]): path.name for path in shards
                for row in ds.MindDataset(str(path), columns_list=["id"], shuffle=False)
                .create_dict_iterator(output_numpy=True)}
    copies = {}  # document id -> epoch -> [(sequence id, bucket, shard file)] of its pieces
    moved = 0
    for row in kept.select("id", "bucket", "segments").collect():
        shard = shard_of[row["id"]]
        moved += shard != shards[row["bucket"]].name
        for segment in row["segments"]:
            doc, epoch = segment["sample_id"].rsplit("#", 1)
            copies.setdefault(doc, {}).setdefault(epoch, []).append((row["id"], row["bucket"], shard))
    repeated = {doc: by_epoch for doc, by_epoch in copies.items() if len(by_epoch) > 1}
    assert stats["mix"]["repeat_rows"] > 0 and len(repeated) >= 10
    # The balancing moved sequences between shards, so the shard files are not just pack's buckets.
    assert moved and stats["mindrecord"]["rows_per_shard"]["max"] - stats["mindrecord"]["rows_per_shard"]["min"] <= 1
    for doc, by_epoch in copies.items():
        pieces = [place for places in by_epoch.values() for place in places]
        assert len({sequence for sequence, _, _ in pieces}) == len(pieces), f"{doc}: two pieces in one sequence"
    spread = [(doc, by_epoch) for doc, by_epoch in repeated.items() if len(by_epoch) <= len(shards)]
    assert spread
    for doc, by_epoch in spread:
        buckets = [{bucket for _, bucket, _ in places} for places in by_epoch.values()]
        assert all(len(b) == 1 for b in buckets) and len(set.union(*buckets)) == len(buckets), (doc, buckets)
        files = [{shard for _, _, shard in places} for places in by_epoch.values()]
        assert sum(map(len, files)) == len(set.union(*files)), f"{doc}: two copies in one shard file: {files}"
