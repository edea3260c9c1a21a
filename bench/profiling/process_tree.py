"""Measure a command's whole process tree (driver, JVM, Python workers): wall time, peak RSS, CPU."""
from __future__ import annotations

import subprocess
import threading
import time
from collections import defaultdict

ROLES = ("driver", "jvm", "python_workers", "scoring_service")


def role_of(proc, root_pid: int) -> str:
    """Which part of a Spark run a process is: the driver (the command itself), the JVM, a Python
    worker the JVM forked, or the scoring service the score stage starts."""
    if proc.pid == root_pid:
        return "driver"
    command = " ".join(proc.cmdline())
    if proc.name() == "java" or "/java " in command:
        return "jvm"
    if "scoring_service" in command:
        return "scoring_service"
    return "python_workers"


def measure_tree(command, env=None, cwd=None) -> dict:
    """Run ``command``; wall seconds, peak RSS (all together and per role) and CPU seconds of its
    process tree, sampled every 0.2 s. CPU per document is what a busy shared machine skews least."""
    import psutil

    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak, cpu, role_of_pid = [0], {}, {}
    peak_by_role = dict.fromkeys(ROLES, 0)

    def sample():
        root = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                tree = [root] + root.children(recursive=True)
            except psutil.Error:
                break
            rss, by_role = 0, defaultdict(int)
            for proc in tree:
                try:
                    used = proc.memory_info().rss
                    role = role_of_pid[proc.pid] = role_of(proc, process.pid)  # a script may exec java
                    by_role[role] += used
                    rss += used
                    times = proc.cpu_times()
                    cpu[proc.pid] = times.user + times.system
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], rss)
            for role, used in by_role.items():
                peak_by_role[role] = max(peak_by_role[role], used)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    sampler.join()
    cpu_by_role = dict.fromkeys(ROLES, 0.0)
    for pid, seconds in cpu.items():
        cpu_by_role[role_of_pid[pid]] += seconds
    return {"wall_s": round(time.perf_counter() - started, 2), "peak_rss_mb": round(peak[0] / 2 ** 20),
            "peak_rss_mb_by_role": {role: round(used / 2 ** 20) for role, used in peak_by_role.items()},
            "tree_cpu_s": round(sum(cpu.values()), 1),
            "tree_cpu_s_by_role": {role: round(seconds, 1) for role, seconds in cpu_by_role.items()},
            "returncode": process.returncode, "output": output}
