"""Where a run's wall time goes: each thread's CPU, read from /proc four times a second and shown per second, for a command's
whole process tree (Linux). JVM threads are grouped by name (``Executor task launch worker``,
``C2 CompilerThread``, ``GC Thread``…), every other process is one column (a Spark run's Python
workers are the two busiest).

    python -m bench.profiling.thread_timeline -- python -m jobs.cli run --config conf/local.yaml \\
        --input bench/work/extract-bench-20000.parts --output /tmp/runs --run timeline \\
        --stages extract,filter

prints one row a second (the CPU seconds each column used in it) and, at the end, the run's
core-seconds, the CPU they were used for and the idle rest: the phases where the cores wait
(start-up, between stages, bookkeeping) show as rows where the Python workers' columns fall to 0.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import time
from typing import Dict, Set, Tuple

_TICKS = os.sysconf("SC_CLK_TCK")
_COLUMNS = 8


def process_tree(root: int) -> Set[int]:
    tree, grew = {root}, True
    while grew:
        grew = False
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in tree:
                try:
                    parent = int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                if parent in tree:
                    tree.add(int(entry))
                    grew = True
    return tree


def thread_cpu(pids: Set[int]) -> Dict[Tuple[int, str], Tuple[str, float]]:
    """(pid, tid) -> (column, CPU seconds so far)."""
    found = {}
    for pid in pids:
        try:
            process = open(f"/proc/{pid}/comm").read().strip()
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                stat = open(f"/proc/{pid}/task/{tid}/stat").read()
            except OSError:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat.rsplit(")", 1)[1].split()
            column = f"java:{re.sub(r'[0-9]+', '#', name)}" if process == "java" else f"{process}:{pid}"
            found[(pid, tid)] = (column, (int(fields[11]) + int(fields[12])) / _TICKS)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    started = time.time()
    child = subprocess.Popen(command)
    seen: Dict[Tuple[int, str], Tuple[str, float]] = {}
    # Read 4 times a second into per-second rows: what a thread used after the last read before the
    # command ended is lost, so the reads are close together.
    rows: Dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    while child.poll() is None:
        now = thread_cpu(process_tree(child.pid))
        second = int(time.time() - started)
        for key, (column, cpu) in now.items():
            rows[second][column] += cpu - seen.get(key, (column, 0.0))[1]
        seen.update(now)
        time.sleep(0.25)
    wall = time.time() - started
    totals: collections.Counter = collections.Counter()
    for used in rows.values():
        totals.update(used)
    columns = [column for column, _ in totals.most_common(_COLUMNS)]
    print("    s " + " ".join(f"{column[-12:]:>12}" for column in columns))
    for second in range(int(wall) + 1):
        print(f"{second:5d} " + " ".join(f"{rows[second].get(column, 0):12.2f}" for column in columns))
    cpu = sum(totals.values())
    print(f"wall {wall:.1f} s x {args.cores} cores = {wall * args.cores:.1f} core-s; CPU {cpu:.1f} s; "
          f"idle {wall * args.cores - cpu:.1f} core-s; exit status {child.returncode}")
    print("CPU s by column: " + ", ".join(f"{column} {totals[column]:.1f}" for column in columns))


if __name__ == "__main__":
    main()
