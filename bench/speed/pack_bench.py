"""Tokenize + pack throughput, packing efficiency on real length distributions, and MindRecord
write/read throughput, against the naive ways of making fixed-length sequences.

    python -m bench.speed.pack_bench [--seq-len 2048 4096] [--skip-mindrecord]

Corpora (real length distributions, from ../shared/data):
- **web**: the 923 pages of trafilatura's evaluation set, extracted as the extract stage does
  (main content + boilerplate filter + normalisation);
- **mixture**: web pages + Wikipedia articles + Gutenberg books (whole) + People's Daily articles +
  forum threads + reviews (tools/fixtures/corpus_docs.py, books whole here).

Packing strategies compared (same cl100k tokens, one EOS per document):
- **corpusmill**: ``udfs.pack.packing`` (boundary-aware cuts, best-fit placement), the pack stage's code;
- **pad-truncate**: one document per sequence, cut at seq_len, padded (the simplest approach);
- **pad-chunk**: one document per sequence run, long ones chunked at seq_len, every chunk padded;
- **concat-chunk**: all documents concatenated and cut every seq_len tokens (the common
  concatenate-and-chunk recipe): no padding, but windows cut mid-sentence and documents attend to each other.

MindRecord: the corpusmill sequences and the pad-chunk sequences written with FileWriter (as the
mindrecord stage does) and read back with MindDataset (as ``loader.sequence_dataset`` does, batch 8);
tokens/s counts non-padding tokens, the ones a training step learns from.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import SHARED_DATA

EVAL = SHARED_DATA / "html" / "trafilatura-eval" / "eval"
SENTENCE_END = re.compile(r"(?:[.!?…。！？][\"'”’」』）)\]]*|\n)\s*$")


def web_pages() -> list:
    from udfs.extract.html import decode_html, extract_main_text
    from udfs.extract.text import normalize_text

    texts = []
    for path in sorted(EVAL.glob("*.html")):
        html, _ = decode_html(path.read_bytes(), None)
        text = normalize_text(extract_main_text(html)) if html else ""
        if text:
            texts.append(text)
    return texts


def mixture(web: list) -> list:
    from tools.fixtures.corpus_docs import forum_threads, news_articles, web_pages as reviews, wiki_articles
    from tools.fixtures.shared_data import shared

    books = [shared(f"corpora/en/gutenberg/{n}.txt").read_text(encoding="latin-1")
             for n in ("austen-emma", "melville-moby_dick", "chesterton-thursday", "austen-persuasion")]
    docs = wiki_articles(max_chars=10 ** 9) + news_articles(limit=2000) + forum_threads(limit=2000) + reviews(limit=2000)
    return web + books + [d["text"] for d in docs]  # whole books: the long tail of real corpora


def pack_corpusmill(texts, ids, tokenizer, seq_len):
    from udfs.pack.packing import BestFitPacker, Document, PackConfig

    cfg = PackConfig(seq_len=seq_len)
    packer = BestFitPacker(seq_len, tokenizer.eos_id, cfg.buffer_sequences, cfg.max_open_sequences, cfg.min_piece_tokens)
    sequences = []
    for n, (text, doc_ids) in enumerate(zip(texts, ids)):
        sequences += packer.add(Document(doc_ids, text, str(n), "", tokenizer, cfg))
    return sequences + packer.finish()


def corpusmill_figures(sequences, n_docs, seq_len, tokenizer):
    pieces = [p for s in sequences for p in s.pieces]
    cut_pieces = [p for p in pieces if not p.last]
    hard = sum(p.hard_cuts for p in pieces if p.last)
    tokens = sum(s.n_tokens for s in sequences)
    return {"sequences": len(sequences), "efficiency": tokens / (len(sequences) * seq_len),
            "docs_split": sum(1 for p in pieces if p.last and p.index > 0) / n_docs,
            "mid_sentence_cuts": hard / max(len(cut_pieces), 1), "tokens_lost": 0,
            "cross_doc_windows": 0.0}


def baselines(ids, seq_len, tokenizer):
    lengths = np.array([len(i) + 1 for i in ids])  # with EOS
    real = lengths.sum()
    truncate = {"sequences": len(lengths), "efficiency": np.minimum(lengths, seq_len).sum() / (len(lengths) * seq_len),
                "docs_split": 0.0, "mid_sentence_cuts": float("nan"),
                "tokens_lost": int(np.maximum(lengths - seq_len, 0).sum()), "cross_doc_windows": 0.0}
    chunks = np.ceil(lengths / seq_len).astype(int)
    chunk = {"sequences": int(chunks.sum()), "efficiency": real / (chunks.sum() * seq_len),
             "docs_split": float((chunks > 1).mean()), "mid_sentence_cuts": float("nan"), "tokens_lost": 0,
             "cross_doc_windows": 0.0}
    # concat-chunk: where do window edges fall, and how many windows hold more than one document?
    stream = np.concatenate([np.append(i, tokenizer.eos_id) for i in ids])
    windows = int(np.ceil(len(stream) / seq_len))
    starts = np.cumsum(lengths) - lengths
    doc_of_window_start = np.searchsorted(starts, np.arange(windows) * seq_len, side="right")
    doc_of_window_end = np.searchsorted(starts, np.minimum((np.arange(windows) + 1) * seq_len, len(stream)) - 1,
                                        side="right")
    edges = [tokenizer.decode(stream[max(0, e - 8):e]) for e in range(seq_len, len(stream), seq_len)][:2000]
    concat = {"sequences": windows, "efficiency": len(stream) / (windows * seq_len),
              "docs_split": float("nan"),
              "mid_sentence_cuts": 1 - np.mean([bool(SENTENCE_END.search(e)) or e.endswith("<|endoftext|>")
                                               for e in edges]) if edges else 0.0,
              "tokens_lost": 0, "cross_doc_windows": float((doc_of_window_end > doc_of_window_start).mean())}
    return truncate, chunk, concat


def pad_chunk_sequences(ids, seq_len, eos_id):
    for doc in ids:
        tokens = np.append(doc, eos_id).astype(np.int32)
        for start in range(0, len(tokens), seq_len):
            piece = tokens[start:start + seq_len]
            input_ids = np.full(seq_len, eos_id, np.int32)
            segment_ids = np.zeros(seq_len, np.int32)
            input_ids[:len(piece)], segment_ids[:len(piece)] = piece, 1
            yield input_ids, segment_ids


def mindrecord_figures(name, rows, seq_len, workdir):
    """rows: (input_ids, segment_ids) pairs. Write with FileWriter, read with the loader's pipeline."""
    from mindspore.mindrecord import FileWriter

    from loader.dataset import sequence_dataset
    from udfs.pack.packing import loss_mask_from_segments

    path = workdir / f"{name}.mindrecord"
    records = [{"id": str(i), "input_ids": a, "segment_ids": s, "loss_mask": loss_mask_from_segments(s)}
               for i, (a, s) in enumerate(rows)]
    tokens = int(sum(int((r["segment_ids"] > 0).sum()) for r in records))
    started = time.perf_counter()
    writer = FileWriter(str(path), shard_num=1, overwrite=True)
    writer.set_header_size(1 << 18)
    writer.set_page_size(1 << 22)
    writer.add_schema({"id": {"type": "string"}, **{c: {"type": "int32", "shape": [seq_len]}
                                                     for c in ("input_ids", "segment_ids", "loss_mask")}}, "bench")
    for start in range(0, len(records), 256):
        writer.write_raw_data(records[start:start + 256])
    writer.commit()
    write_s = time.perf_counter() - started
    started = time.perf_counter()
    read = sum(b["input_ids"].shape[0] for b in sequence_dataset(str(path), batch_size=8, shuffle=False,
                                                                 drop_remainder=False)
               .create_dict_iterator(output_numpy=True, num_epochs=1))
    read_s = time.perf_counter() - started
    assert read == len(records)
    return {"samples": len(records), "tokens": tokens, "MB": path.stat().st_size / 1e6,
            "write_samples_s": len(records) / write_s, "write_tokens_s": tokens / write_s,
            "read_samples_s": len(records) / read_s, "read_tokens_s": tokens / read_s}


def percent(value: float) -> str:
    return "n/a" if np.isnan(value) else f"{value:.1%}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-len", type=int, nargs="+", default=[2048, 4096])
    parser.add_argument("--skip-mindrecord", action="store_true")
    args = parser.parse_args(argv)

    from udfs.pack.tokenizer import TokenizerConfig, cached_tokenizer

    tokenizer = cached_tokenizer(TokenizerConfig())
    web = web_pages()
    corpora = {"web": web, "mixture": mixture(web)}
    for name, texts in corpora.items():
        started = time.perf_counter()
        ids = tokenizer.encode_batch(texts)
        tok_s = time.perf_counter() - started
        n_tokens = sum(len(i) for i in ids)
        mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        lengths = np.array([len(i) for i in ids])
        print(f"\n== {name}: {len(texts)} documents, {n_tokens:,} cl100k tokens ({mb:.1f} MB); document length "
              f"p10/p50/p90/max {np.percentile(lengths, 10):.0f}/{np.percentile(lengths, 50):.0f}/"
              f"{np.percentile(lengths, 90):.0f}/{lengths.max()} tokens")
        print(f"tokenize (1 thread): {n_tokens / tok_s / 1e6:.2f} M tokens/s, {mb / tok_s:.2f} MB/s")
        for seq_len in args.seq_len:
            started = time.perf_counter()
            sequences = pack_corpusmill(texts, ids, tokenizer, seq_len)
            pack_s = time.perf_counter() - started
            ours = corpusmill_figures(sequences, len(texts), seq_len, tokenizer)
            print(f"seq_len {seq_len}: pack {n_tokens / pack_s / 1e6:.2f} M tokens/s; tokenize+pack "
                  f"{n_tokens / (tok_s + pack_s) / 1e6:.2f} M tokens/s")
            print(f"  {'strategy':<13} {'sequences':>9} {'efficiency':>10} {'docs split':>10} "
                  f"{'cuts mid-sentence':>17} {'tokens lost':>11} {'windows mixing docs':>19}")
            truncate, chunk, concat = baselines(ids, seq_len, tokenizer)
            for label, f in (("corpusmill", ours), ("pad-truncate", truncate), ("pad-chunk", chunk),
                             ("concat-chunk", concat)):
                print(f"  {label:<13} {f['sequences']:>9,} {f['efficiency']:>10.2%} {percent(f['docs_split']):>10} "
                      f"{percent(f['mid_sentence_cuts']):>17} {f['tokens_lost']:>11,} {percent(f['cross_doc_windows']):>19}")
            if args.skip_mindrecord or name != "mixture" or seq_len != args.seq_len[0]:
                continue
            workdir = Path(tempfile.mkdtemp(prefix="pack_bench_"))
            try:
                print(f"  MindRecord ({seq_len} int32 x 3 per sample; read = loader.sequence_dataset, batch 8):")
                for label, rows in (("corpusmill", [(s.input_ids, s.segment_ids) for s in sequences]),
                                    ("pad-chunk", list(pad_chunk_sequences(ids, seq_len, tokenizer.eos_id)))):
                    m = mindrecord_figures(label, rows, seq_len, workdir)
                    print(f"  {label:<13} {m['samples']:>7,} samples {m['MB']:>7.1f} MB | write "
                          f"{m['write_samples_s']:>7,.0f} samples/s {m['write_tokens_s'] / 1e6:>6.2f} M tokens/s | read "
                          f"{m['read_samples_s']:>7,.0f} samples/s {m['read_tokens_s'] / 1e6:>6.2f} M tokens/s")
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
