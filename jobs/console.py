"""Console output that stays readable under Spark's progress bar."""
import sys


def progress_safe_print(line: str) -> None:
    """Print a summary line so Spark's console progress bar (redrawn on stderr with carriage returns)
    cannot garble it: on a terminal erase the bar's line, in a log end the bar's unterminated line."""
    sys.stderr.write("\r\x1b[2K" if sys.stderr.isatty() else "\n")
    sys.stderr.flush()
    print(line, flush=True)
