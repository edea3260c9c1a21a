"""Peak memory and outcome of reading hostile benchmark files for ``decontam``, one subprocess per file.

    python -m bench.hostile.hostile_inputs [--timeout 90] [--rss-cap-mb 8192] [--cases bomb,fifo,...]

Each case is a folder holding one evaluation file, read as the decontam stage reads it on the driver:
``files_fingerprint`` (the stage's fingerprint) and then ``NgramIndex.build`` with the default settings.

* ``control``: a real-looking JSONL file of 2,000 questions, the baseline (imports, the index).
* ``bomb``: 4 GiB of zero bytes gzipped (4 MB on disk), no newline anywhere.
* ``huge_line``: one JSONL line of 200 MB of words.
* ``newlines``: 4 GiB of newlines gzipped (4 MB on disk): no item at all, every line blank.
* ``fifo``: a named pipe with no writer, named ``.jsonl``.
* ``symlink_loop``: ``loop.jsonl`` -> ``loop2.jsonl`` -> ``loop.jsonl``.
* ``deep_json``: one line of 100,000 nested arrays.
* ``line_at_bound``: one JSONL line of words just under the default ``max_line_bytes`` (8 MiB): what
  the largest item allowed costs.
* ``file_at_bound``: a JSONL file of distinct questions just under the default ``max_file_bytes``
  (256 MiB): what the largest file allowed costs (minutes: every token is hashed).

The peak is the child's kernel high-water mark (VmHWM in /proc/<pid>/status), read every 0.05 s; a
child still running after ``--timeout`` seconds, or past ``--rss-cap-mb`` (which protects the machine),
is killed and reported so. The outcome is the child's last line of stderr: a one-line error
(``ConfigError``, printed as the CLI prints it) or the last line of a traceback.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import ROOT

GIB = 1 << 30

CHILD = """
import sys
from corpusmill.config import ConfigError
from udfs.decontam.ngram_index import DecontamConfig, NgramIndex, files_fingerprint
cfg = DecontamConfig(benchmarks=sys.argv[1])
try:
    files_fingerprint(cfg)
    index = NgramIndex.build(cfg)
except ConfigError as exc:
    print(f"corpusmill: {exc}", file=sys.stderr)
    sys.exit(2)
print(f"ok: {len(index.hashes)} n-grams, items {index.items}", file=sys.stderr)
"""


def repeated_gzip(path: Path, unit: bytes, total: int) -> None:
    """``total`` bytes of ``unit`` repeated, as a gzip file of many members (gzip readers read them as
    one stream): one member compressed once and written again, so writing 4 GiB takes a second."""
    block = unit * ((64 << 20) // len(unit))
    member = gzip.compress(block, compresslevel=9)
    with open(path, "wb") as out:
        for _ in range(total // len(block)):
            out.write(member)


def make_control(folder: Path) -> None:
    with open(folder / "control.jsonl", "w", encoding="utf-8") as out:
        for i in range(2000):
            out.write(json.dumps({"question": f"Question {i}: which of the following rivers flows through the "
                                              f"city number {i * 7} on the map of the northern provinces?",
                                  "choices": ["Rhine", "Danube", "Elbe", f"River {i}"], "answer": "Danube"}) + "\n")


def make_bomb(folder: Path) -> None:
    repeated_gzip(folder / "bomb.jsonl.gz", b"\0", 4 * GIB)


def make_huge_line(folder: Path) -> None:
    (folder / "huge.jsonl").write_bytes(words_line(200 << 20))


def make_newlines(folder: Path) -> None:
    repeated_gzip(folder / "newlines.jsonl.gz", b"\n", 4 * GIB)


def make_fifo(folder: Path) -> None:
    os.mkfifo(folder / "fifo.jsonl")


def make_symlink_loop(folder: Path) -> None:
    os.symlink("loop2.jsonl", folder / "loop.jsonl")
    os.symlink("loop.jsonl", folder / "loop2.jsonl")


def make_deep_json(folder: Path) -> None:
    (folder / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")


def words_line(size: int) -> bytes:
    words = b"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
    return b'{"question": "' + (words * (size // len(words)))[:size - 20] + b'"}\n'


def make_line_at_bound(folder: Path) -> None:
    (folder / "long.jsonl").write_bytes(words_line(8 << 20))


def make_file_at_bound(folder: Path) -> None:
    with open(folder / "large.jsonl", "w", encoding="utf-8") as out:
        written, i = 0, 0
        while True:
            line = json.dumps({"question": f"Question {i}: what does the {i * 7919 % 100003}th entry of table "
                                           f"{i % 977} in appendix {i % 31} say about the river {i * 13 % 7001} "
                                           f"and the town {i * 101 % 9973} it flows through?",
                               "answer": f"It says {i}."}) + "\n"
            if written + len(line) > (256 << 20) - 1024:
                break
            out.write(line)
            written, i = written + len(line), i + 1


CASES = {"control": make_control, "bomb": make_bomb, "huge_line": make_huge_line, "newlines": make_newlines,
         "fifo": make_fifo, "symlink_loop": make_symlink_loop, "deep_json": make_deep_json,
         "line_at_bound": make_line_at_bound, "file_at_bound": make_file_at_bound}


def high_water_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0.0


def run_case(folder: Path, timeout: float, cap_mb: float) -> dict:
    with tempfile.TemporaryFile("w+") as errors:  # a file, not a pipe: a chatty child never blocks
        started = time.monotonic()
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=errors, text=True)
        peak, killed = 0.0, None
        while child.poll() is None:
            peak = max(peak, high_water_mb(child.pid))
            if peak > cap_mb:
                killed = f"killed at RSS cap {cap_mb:.0f} MB"
            elif time.monotonic() - started > timeout:
                killed = f"killed after timeout {timeout:.0f} s"
            if killed:
                child.kill()
                break
            time.sleep(0.05)
        child.wait()
        errors.seek(0)
        stderr = errors.read()
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    traceback = any(line.startswith("Traceback") for line in lines)
    outcome = killed or (("traceback: " if traceback else "") + (lines[-1] if lines else f"exit {child.returncode}"))
    return {"wall_s": round(time.monotonic() - started, 1), "peak_rss_mb": round(peak), "exit": child.returncode,
            "stderr_lines": len(lines), "outcome": outcome[:300]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per case before the child is killed")
    parser.add_argument("--rss-cap-mb", type=float, default=8192.0, help="kill a child whose peak RSS passes this")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    args = parser.parse_args()
    results = {}
    for name in args.cases.split(","):
        with tempfile.TemporaryDirectory(prefix=f"corpusmill-hostile-{name}-") as work:
            folder = Path(work)
            CASES[name](folder)
            on_disk = sum(p.lstat().st_size for p in folder.iterdir())
            results[name] = {"on_disk_mb": round(on_disk / (1 << 20), 1), **run_case(folder, args.timeout,
                                                                                      args.rss_cap_mb)}
        r = results[name]
        print(f"{name:13} {r['on_disk_mb']:>8} MB on disk  {r['wall_s']:>6} s  peak RSS {r['peak_rss_mb']:>6} MB  "
              f"exit {r['exit']}  {r['outcome']}", flush=True)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
