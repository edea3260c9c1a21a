"""Peak memory of ``corpusmill run --stages extract`` on hostile WARC files, per process of the run.

    python -m bench.hostile.hostile_extract

Three runs of the real CLI with conf/local.yaml (local[*]), each in a fresh folder under bench/work/hostile/:
0. ``good``: one real WARC (clueweb09-en-sample, 100 pages), the baseline a worker needs anyway.
1. ``bomb``: one file, 1 GiB of zeros gzipped (1 MB on disk): a reader that decompresses a record
   whole needs the whole GiB, and more, in memory.
2. ``mixed``: every file of tools/fixtures/hostile_warc.py (bombs, lying Content-Lengths, 200 MiB lines), a real
   WARC cut at 99,000 bytes and a good one.

Each process's peak is its kernel high-water mark (VmHWM in /proc/<pid>/status), read every 0.1 s, so
a peak between two reads is not missed as long as the process lives to the next read (PySpark reuses
its workers). Reported per role: the largest PySpark worker, the JVM, the CLI's own Python.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench import SHARED_DATA, WORK
from tools.fixtures.hostile_warc import write_all_hostile, write_hostile

HOSTILE_WORK = WORK / "hostile"
SHARED_WARC = SHARED_DATA / "warc"


def high_water_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def role(pid: int, root: int) -> str:
    if pid == root:
        return "cli_python"
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        args = cmdline.read().decode(errors="replace")
    if "pyspark" in args and ("daemon" in args or "worker" in args):
        return "pyspark_worker"
    return "jvm" if "java" in args else "other"


def run_measured(command, env) -> dict:
    """Run ``command``; its exit code, wall time and the peak RSS (MB) of the largest process per role."""
    import psutil

    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peaks = {}

    def sample():
        root = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                pids = [process.pid] + [child.pid for child in root.children(recursive=True)]
            except psutil.Error:
                break
            for pid in pids:
                try:
                    kind = role(pid, process.pid)
                    peaks[kind] = max(peaks.get(kind, 0.0), high_water_mb(pid))
                except OSError:  # the process ended between listing and reading
                    pass
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    sampler.join()
    return {"returncode": process.returncode, "wall_s": round(time.perf_counter() - started, 1),
            "peak_rss_mb": {kind: round(mb) for kind, mb in sorted(peaks.items())}, "output": output}


def prepare(name: str) -> Path:
    folder = HOSTILE_WORK / name / "in"
    shutil.rmtree(HOSTILE_WORK / name, ignore_errors=True)
    folder.mkdir(parents=True)
    if name != "bomb":
        shutil.copy(SHARED_WARC / "clueweb09-en-sample.warc.gz", folder / "good.warc.gz")
    if name == "bomb":
        write_hostile(folder, "zeros.warc.gz")
    elif name == "mixed":
        write_all_hostile(folder)
        (folder / "cut.warc.gz").write_bytes((SHARED_WARC / "dolma-sample-0000.warc.gz").read_bytes()[:99000])
    return folder


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    corpusmill = str(Path(sys.executable).parent / "corpusmill")
    results = {}
    for name in ("good", "bomb", "mixed"):
        folder = prepare(name)
        measured = run_measured([corpusmill, "run", "--input", str(folder), "--stages", "extract",
                                 "--output", str(HOSTILE_WORK / name / "out"), "--run", "r"], env)
        stats_path = HOSTILE_WORK / name / "out" / "r" / "extract" / "_stats.json"
        stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
        results[name] = {"files": sorted(p.name for p in folder.iterdir()), **measured,
                         "kept": stats.get("kept"), "errors": stats.get("errors"),
                         "reconciled": stats.get("reconciled")}
        if measured["returncode"] != 0:
            print(measured["output"][-3000:], file=sys.stderr)
        del results[name]["output"]
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
