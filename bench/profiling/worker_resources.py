"""What the per-worker resources cost a Python worker: the first call (the make) and every later one
(the lookup a batch pays), for each thing the stages keep per worker.

    python -m bench.profiling.worker_resources [--calls 200000]

Prints one JSON line: per resource, ``first_call_cpu_s`` and ``hit_ns`` (wall time of one lookup).
"""
from __future__ import annotations

import argparse
import json
import time

from udfs.dedup.minhash import DedupConfig, permutations
from udfs.filter.langid import load_classifier
from udfs.pack.tokenizer import TokenizerConfig, cached_tokenizer
from udfs.pii.scrub import PiiConfig, scrubber_for

RESOURCES = {
    "pack.tokenizer": lambda: cached_tokenizer(TokenizerConfig()),
    "dedup.permutations": lambda: permutations(DedupConfig()),
    "pii.scrubber": lambda: scrubber_for(PiiConfig()),
    "filter.langid": load_classifier,
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args(argv)
    out = {}
    for name, call in RESOURCES.items():
        started = time.process_time()
        first = call()
        made = time.process_time() - started
        started = time.perf_counter()
        for _ in range(args.calls):
            if call() is not first:
                raise AssertionError(f"{name}: made again")
        out[name] = {"first_call_cpu_s": round(made, 3),
                     "hit_ns": round((time.perf_counter() - started) / args.calls * 1e9)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
