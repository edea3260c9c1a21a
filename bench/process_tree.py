"""Measure a command's whole process tree (driver, JVM, Python workers): wall time, peak RSS, CPU."""
from __future__ import annotations

import subprocess
import threading
import time


def measure_tree(command, env=None, cwd=None) -> dict:
    """Run ``command``; wall seconds, peak RSS and CPU seconds of its process tree, sampled every 0.2 s.
    CPU per document is what a busy shared machine skews least."""
    import psutil

    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak, cpu = [0], {}

    def sample():
        root = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                tree = [root] + root.children(recursive=True)
            except psutil.Error:
                break
            rss = 0
            for proc in tree:
                try:
                    rss += proc.memory_info().rss
                    times = proc.cpu_times()
                    cpu[proc.pid] = times.user + times.system
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], rss)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    sampler.join()
    return {"wall_s": round(time.perf_counter() - started, 2), "peak_rss_mb": round(peak[0] / 2 ** 20),
            "tree_cpu_s": round(sum(cpu.values()), 1), "returncode": process.returncode, "output": output}
