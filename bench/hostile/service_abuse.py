"""The scoring service under attack, on loopback: each attack bounded in connections, bytes and time.

    python -m bench.hostile.service_abuse [--bomb-mb 1024] [--slow 64] [--slow-seconds 40] [--burst 200]

Starts the service (``python -m scoring_service serve``, default settings) on a free loopback port and
runs, one after the other: a zstd-compressed Arrow body of one ``--bomb-mb`` MB text; a negative, a
malformed and an oversized ``Content-Length``, then 200 MB streamed after ``Content-Length: -1``;
``--slow`` connections dripping one header byte a second for ``--slow-seconds`` while a normal client
keeps asking for scores (its answers, worst latency, and how many slow connections the service
closed); a 60 MB JSON body of 20 million empty arrays (1.3 GB once parsed); 16 requests of 48 × 1 MB
texts at once (bytes backpressure); ``--burst`` clients connecting at the same moment. For each: the
answers, and the service's resident memory before the attack and its peak during it (VmHWM, reset
before each attack).
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time

from scoring_service.model.artifacts import DEFAULT_MODEL_DIR
from scoring_service.client import LocalService
from tools.fixtures.service_attacks import (SlowClients, bodies_at_once, connection_burst, peak_rss_mb, reset_peak_rss,
                                            score_head, send_head_then_wait, stream_without_answer_mb, timed_post,
                                            zstd_arrow_bomb)


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:"))


def attack(pid: int, name: str, run) -> None:
    reset_peak_rss(pid)
    before = rss_mb(pid)
    started = time.perf_counter()
    outcome = run()
    print(f"{name:<44} {outcome}\n{'':<44} service RSS before {before:.0f} MB, peak during {peak_rss_mb(pid):.0f} MB, "
          f"after {rss_mb(pid):.0f} MB ({time.perf_counter() - started:.1f} s)", flush=True)


def slow_clients_and_a_normal_one(url: str, n: int, seconds: float) -> str:
    latencies, answers = [], collections.Counter()
    with SlowClients(url, n, drip_s=1.0) as slow:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            status, elapsed = timed_post(url, json.dumps({"texts": ["a normal client's text."]}))
            answers[status] += 1
            latencies.append(elapsed)
            time.sleep(0.2)
        still_open = slow.open_count()
    return (f"normal client: {dict(answers)}, max latency {max(latencies):.3f} s; "
            f"slow connections closed by the service: {n - still_open} of {n}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bomb-mb", type=int, default=1024, help="size of the one text in the zstd bomb")
    parser.add_argument("--slow", type=int, default=64, help="slow connections")
    parser.add_argument("--slow-seconds", type=float, default=40.0,
                        help="how long they drip (the service's request deadline is 30 s)")
    parser.add_argument("--burst", type=int, default=200, help="clients connecting at once")
    args = parser.parse_args(argv)

    bomb = zstd_arrow_bomb(args.bomb_mb << 20)
    big_body = json.dumps({"texts": ["word " * 200_000] * 48}).encode()
    service = LocalService(DEFAULT_MODEL_DIR)
    url = service.start()
    pid = service.process.pid
    try:
        print(f"service {url} (pid {pid}), RSS {rss_mb(pid):.0f} MB after start", flush=True)

        def zstd():
            status, _ = timed_post(url, bomb, "application/vnd.apache.arrow.stream")
            return f"{len(bomb)} bytes on the wire for a {args.bomb_mb} MB text: HTTP {status}"

        def lengths():
            answers = {length: send_head_then_wait(url, score_head(length), timeout=10)
                       for length in ("-1", "12abc", str(10 ** 12))}
            taken = stream_without_answer_mb(url, score_head("-1"), limit_mb=200)
            return (f"answers from the headers alone {answers}; after Content-Length -1, {taken} of 200 MB "
                    "went out before the answer")

        attack(pid, "zstd Arrow bomb", zstd)
        attack(pid, "negative/malformed/oversized Content-Length", lengths)
        attack(pid, f"{args.slow} slow connections, {args.slow_seconds:g} s",
               lambda: slow_clients_and_a_normal_one(url, args.slow, args.slow_seconds))
        attack(pid, "60 MB JSON of 20 M empty arrays", lambda: "HTTP {}".format(timed_post(
            url, b'{"texts": [' + b"[]," * (20 << 20) + b"[]]}")[0]))
        attack(pid, "16 x 48 MB requests at once", lambda: "answers " + str(dict(collections.Counter(
            bodies_at_once(url, 16, big_body)))))
        attack(pid, f"{args.burst} clients connecting at once",
               lambda: "outcomes " + str(dict(collections.Counter(connection_burst(url, args.burst)))))
    finally:
        service.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
