"""Console output: the one summary line per stage, readable under Spark's progress bar."""
import sys
from typing import Tuple

from jobs import registry


def stage_units(stage: str) -> Tuple[str, str]:
    """(unit of records in, unit of records kept) of a stage, as it declares them."""
    return registry.stage_class(stage).units


def output_note(stats: dict) -> str:
    """Where a stage writes something other than what it counts as kept: what, and why."""
    return registry.stage_class(stats["stage"]).output_note(stats)


def summary_line(stats: dict, stage_dir: str) -> str:
    """``<stage>: N <unit> in -> K [<unit>] kept [-> what is written]; <drops by reason>  (wall) <dir>``."""
    unit_in, unit_kept = stage_units(stats["stage"])
    dropped = []
    for kind in ("rejected", "errors", "skipped"):
        if stats.get(kind):
            reasons = ", ".join(f"{r} {n:,}" for r, n in sorted(stats[kind].items(), key=lambda kv: -kv[1]))
            dropped.append(f"{kind}: {reasons}")
    kept = f"{stats['kept']:,} kept" if unit_kept == unit_in else f"{stats['kept']:,} {unit_kept} kept"
    note = output_note(stats)
    balance = "" if stats.get("reconciled", True) else "  [COUNTS DO NOT RECONCILE]"
    return (f"{stats['stage']:>10}: {stats['records_in']:,} {unit_in} in -> {kept}{', ' + note if note else ''}"
            f"{'; ' + '; '.join(dropped) if dropped else ''}  ({stats['wall_s']:.1f} s) {stage_dir}{balance}")


def progress_safe_print(line: str) -> None:
    """Print a summary line so Spark's console progress bar (redrawn on stderr with carriage returns)
    cannot garble it: on a terminal erase the bar's line, in a log end the bar's unterminated line."""
    sys.stderr.write("\r\x1b[2K" if sys.stderr.isatty() else "\n")
    sys.stderr.flush()
    print(line, flush=True)
