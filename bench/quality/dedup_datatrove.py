"""datatrove's MinHash dedup on a folder of JSONL files, for bench/quality/dedup_quality.py (the anchor).

Runs in the benchmark's own environment, never the project's:

    python -m venv /root/.cache/corpusmill/bench-venv
    /root/.cache/corpusmill/bench-venv/bin/pip install 'datatrove[io,processing]==0.10.1' spacy \
        lxml_html_clean aiohttp requests 'jieba==0.42.1'
    /root/.cache/corpusmill/bench-venv/bin/python -m bench.quality.dedup_datatrove IN_DIR WORK_DIR \
        --language en --buckets 14 --rows 8 --norm datatrove

Prints one JSON line: the ids datatrove removed and its wall time. ``--norm datatrove`` is its
default text normalisation (lowercase, no punctuation, digits → 0, diacritics folded);
``--norm corpusmill`` keeps punctuation, digits and diacritics like corpusmill's default. Chinese
needs ``--language zh_Hani``: datatrove 0.10.1 maps plain ``zh`` to a tokenizer that does not
split Chinese at all (its tokenizer table lets the Latin-script Hakka row override ``zh``).
"""
import argparse
import json
import sys
import time
from pathlib import Path
from typing import Optional

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                              MinhashDedupFilter, MinhashDedupSignature)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.hashing import HashConfig
from datatrove.utils.text import TextNormConfig


def minhash_dedup(input_dir: str, work: Path, config: MinhashConfig, language: str = "en", workers: int = 2,
                  kept_output: Optional[str] = None) -> None:
    """datatrove's four MinHash steps over the JSONL files of ``input_dir``; the removed documents go to
    ``work/removed``, the kept ones to ``kept_output`` when given."""
    tasks = len(list(Path(input_dir).glob("*.jsonl*")))
    LocalPipelineExecutor(pipeline=[JsonlReader(input_dir, id_key="id"),
                                    MinhashDedupSignature(str(work / "sigs"), config=config, language=language)],
                          tasks=tasks, workers=workers, logging_dir=str(work / "logs/sigs")).run()
    LocalPipelineExecutor(pipeline=[MinhashDedupBuckets(str(work / "sigs"), str(work / "buckets"), config=config)],
                          tasks=config.num_buckets, workers=workers, logging_dir=str(work / "logs/buckets")).run()
    LocalPipelineExecutor(pipeline=[MinhashDedupCluster(str(work / "buckets"), str(work / "remove"), config=config)],
                          tasks=1, logging_dir=str(work / "logs/cluster")).run()
    LocalPipelineExecutor(pipeline=[JsonlReader(input_dir, id_key="id"),
                                    MinhashDedupFilter(str(work / "remove"),
                                                       exclusion_writer=JsonlWriter(str(work / "removed"), compression=None)),
                                    *([JsonlWriter(kept_output)] if kept_output else [])],
                          tasks=tasks, workers=workers, logging_dir=str(work / "logs/filter")).run()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("work")
    parser.add_argument("--language", default="en")
    parser.add_argument("--buckets", type=int, default=14)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--norm", choices=["datatrove", "corpusmill"], default="datatrove")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    norm = TextNormConfig() if args.norm == "datatrove" else TextNormConfig(
        remove_punctuation=False, norm_numbers=False, norm_unicode_diacritics=False)
    config = MinhashConfig(n_grams=5, num_buckets=args.buckets, hashes_per_bucket=args.rows,
                           hash_config=HashConfig(precision=64), norm_config=norm)
    work = Path(args.work)
    started = time.time()
    minhash_dedup(args.input, work, config, args.language, args.workers)
    wall = time.time() - started
    removed = [json.loads(line)["id"] for f in sorted((work / "removed").glob("*.jsonl"))
               for line in f.read_text().splitlines()]
    print(json.dumps({"removed": removed, "wall_s": wall}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
