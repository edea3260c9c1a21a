"""The ``corpusmill`` command.

    corpusmill run --input 'crawl/*.warc.gz' --output out --run demo
    corpusmill run --stages filter,pii --input some/parquet --run rerun
    corpusmill report --output out --run demo        # (re)write out/demo/report.html
    corpusmill warm-up                               # write the JVM's class archive now (install time)
    corpusmill mixing-law fit runs.csv               # propose a domain mixture from small runs
    corpusmill derive-thresholds --reference clean.jsonl --output my.yaml   # per-language filter thresholds
    spark-submit jobs/stages/extract.py --input ... (same options, one stage)
"""
from __future__ import annotations

import argparse
import atexit
import gc
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from typing import List, Optional

if __name__ == "__main__" and not __package__:
    # ``spark-submit jobs/cli.py``: the driver imports the clone it is submitted from (executors get
    # the same code with --archives, see jobs/package.py), not whatever else is installed.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from corpusmill.config import ConfigError  # noqa: E402
from jobs import registry  # noqa: E402
from jobs.console import progress_safe_print  # noqa: E402


def check_java() -> None:
    """Spark needs a JVM; say so in one line instead of a Py4J traceback."""
    java_home = os.environ.get("JAVA_HOME")
    if not (java_home and os.path.exists(os.path.join(java_home, "bin", "java"))) and not shutil.which("java"):
        raise ConfigError("java: no Java runtime found; install a JDK 17+ (e.g. apt-get install "
                          "openjdk-17-jdk-headless) or set JAVA_HOME")


def add_run_arguments(parser: argparse.ArgumentParser, with_stages: bool = True) -> None:
    parser.add_argument("--config", help="YAML config (default: conf/local.yaml)")
    parser.add_argument("--input", nargs="+", default=[],
                        help="WARC/ARC files, globs or folders (extract), or one Parquet dataset (other stages); "
                             "local paths or any Hadoop-compatible URI")
    parser.add_argument("--output", help="output root (default: config 'output')")
    parser.add_argument("--run", help="run name; outputs go to <output>/<run>/<stage>/ (default: config 'run')")
    parser.add_argument("--sample", type=float, help="deterministic fraction of input records to process, e.g. 0.01")
    parser.add_argument("--wait", type=int, metavar="SECONDS",
                        help="when another run holds the run folder, wait up to this long for it "
                             "(default: config lease.wait_s, 0 = stop at once with exit code 4)")
    if with_stages:
        parser.add_argument("--stages", help=f"comma-separated subset of: {','.join(registry.stage_order())}")


def run_dir_of(args: argparse.Namespace, cfg) -> str:
    from jobs.pipeline import run_name

    return f"{(args.output or cfg.output).rstrip('/')}/{run_name(args.run or cfg.run)}"


def run_command(args: argparse.Namespace, stages: Optional[List[str]], write_class_archive: bool = False) -> int:
    from jobs import config
    from jobs.pipeline import plan_stages, run_pipeline
    from jobs.report import write_report
    from jobs.spark import get_session

    cfg = config.load(args.config)
    planned = plan_stages(stages)
    # Run last at exit: the interpreter's teardown would walk every object the driver holds to collect
    # what the process's end frees anyway, noticeable with Presidio's scrubber loaded.
    atexit.register(gc.freeze)
    check_java()
    for stage in registry.stages():  # what is slow to make is made while the JVM starts
        stage.prepare(cfg, planned)
    spark = get_session(cfg.spark, write_class_archive)
    all_stats = run_pipeline(spark, cfg, args.input, planned, args.output, args.run, args.sample,
                             echo=progress_safe_print, wait_s=args.wait)
    run_dir = run_dir_of(args, cfg)
    progress_safe_print(f"corpusmill: done. Outputs under {run_dir}/<stage>/ (kept/, rejected/, errors/), "
                        f"stats in {run_dir}/<stage>/_stats.json")
    progress_safe_print(f"corpusmill: report {write_report(spark, run_dir, cfg.pii)}")
    if not write_class_archive:
        warm_up_in_background(args.config, cfg, spark)
    return 0 if all(s.get("reconciled", True) for s in all_stats) else 3


def warm_up_in_background(config_path: Optional[str], cfg, spark) -> None:
    """Start ``corpusmill warm-up`` in a process of its own when a local run found no class archive:
    the archive is written on no one's clock, and the runs after it start from it. Not after a run
    whose JVM spark-submit started (its master is the command line's, and it maps no archive of ours)."""
    from jobs.spark import ClassArchive, under_spark_submit

    if under_spark_submit() or not spark.sparkContext.master.startswith("local"):
        return
    archive = ClassArchive.for_this_jvm(cfg.spark.class_archive_dir)
    if archive is None or archive.path.exists() or archive.being_written():
        return
    log = archive.directory / "warm-up.log"
    try:
        archive.directory.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            config = ["--config", os.path.abspath(config_path)] if config_path else []
            nice = ["nice", "-n", "10"] if shutil.which("nice") else []  # behind the user's next run
            subprocess.Popen([*nice, sys.executable, "-m", "jobs.cli", "warm-up", *config],
                             stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    except OSError as exc:  # an unwritable cache: runs go on without an archive
        progress_safe_print(f"corpusmill: the JVM's class archive is not written ({exc})")
        return
    progress_safe_print(f"corpusmill: writing the JVM's class archive in the background, for faster start-ups "
                        f"(once; log {log})")


def report_command(args: argparse.Namespace) -> int:
    from jobs import config
    from jobs.report import write_report
    from jobs.spark import get_session

    cfg = config.load(args.config)
    check_java()
    progress_safe_print(f"corpusmill: report {write_report(get_session(cfg.spark), run_dir_of(args, cfg), cfg.pii)}")
    return 0


SAMPLE_WARCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "sample")


def warm_up_command(args: argparse.Namespace) -> int:
    """Write the JVM's class archive (``spark.class_archive_dir``) now, by running every stage on the
    bundled sample WARCs into a temporary folder: the archive is written as a run's JVM exits, which
    takes a first run seconds longer, and then every run, the first included, starts from it."""
    from jobs import config
    from jobs.spark import ClassArchive

    cfg = config.load(args.config)
    archive = ClassArchive.for_this_jvm(cfg.spark.class_archive_dir)
    if archive is None or not cfg.spark.master.startswith("local"):
        print("corpusmill warm-up: no class archive with this config or Java (nothing to do)", file=sys.stderr)
        return 0
    if archive.path.exists():
        return 0
    if not os.path.isdir(SAMPLE_WARCS):
        raise ConfigError(f"warm-up: the bundled sample WARCs are missing ({SAMPLE_WARCS})")
    print(f"corpusmill warm-up: every stage on the sample WARCs, to keep the JVM's classes in {archive.directory} "
          "(once)", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="corpusmill-warm-up-") as out:
        run = argparse.Namespace(config=args.config, input=[SAMPLE_WARCS], output=out, run="warm-up",
                                 sample=None, wait=None)
        return run_command(run, None, write_class_archive=True)


def run_description() -> str:
    """The run command's help: the stages in their declared order."""
    return f"""\
Run every stage, or the stages named in --stages, in this order:
  {' -> '.join(registry.stage_order())}
Outputs go to <output>/<run>/<stage>/ (kept/, rejected/, errors/, _stats.json). A re-run skips the
stages that finished with the same config and input and resumes at the first unfinished one. Prints
one summary line per stage and writes <output>/<run>/report.html at the end."""


RUN_EXAMPLES = """\
examples:
  corpusmill run --input data/sample --output out --run demo                    # the bundled sample WARCs
  corpusmill run --input 'crawl/*.warc.gz' --output out --run cc-2026-48        # every stage
  corpusmill run --input crawl/ --stages extract --run try --sample 0.01        # 1 % deterministic sample
  corpusmill run --stages filter,pii --input some/docs.parquet --run rerun      # stages alone on Parquet
  corpusmill run --config conf/yarn.yaml --input 'hdfs:///crawl/*.warc.gz' --output hdfs:///out --run r1

exit codes: 0 done, 2 configuration or input error (one line on stderr), 3 counts did not reconcile,
  4 another run holds the run folder (or took it over from this one), 5 the output storage refused a
  write (no space left, no permission), 6 an input file could not be read (network, credentials,
  permission, gone since listed; after retries), 7 the scoring service could not be reached after
  retries; 4 to 7 leave every finished stage and chunk in place"""


def version() -> str:
    try:
        return metadata.version("corpusmill")
    except metadata.PackageNotFoundError:  # run from a clone that was never installed
        return "unknown (not installed)"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="corpusmill", description="Web crawl → LLM pre-training data on Spark.")
    parser.add_argument("--version", action="version", version=f"corpusmill {version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the pipeline, one stage or a list of stages",
                              description=run_description(), epilog=RUN_EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(run)
    report = commands.add_parser("report", help="(re)write <output>/<run>/report.html from a run's outputs")
    report.add_argument("--config", help="YAML config (default: conf/local.yaml)")
    report.add_argument("--output", help="output root (default: config 'output')")
    report.add_argument("--run", help="run name (default: config 'run')")
    commands.add_parser("mixing-law", help="fit a data mixing law to small runs and propose a mixture")
    commands.add_parser("derive-thresholds", help="derive the filter's per-language thresholds and stop words "
                                                  "from a reference dataset, as a config preset")
    warm_up = commands.add_parser("warm-up", help="write the JVM's class archive now, so that the first run "
                                                  "starts as fast as later ones (the set-up scripts do)")
    warm_up.add_argument("--config", help="YAML config (default: conf/local.yaml)")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["mixing-law"]:  # its own parser takes every option that follows
        from jobs.mixing_law_command import main as mixing_law

        return mixing_law(argv[1:])
    if argv[:1] == ["derive-thresholds"]:
        from jobs.thresholds_command import main as derive_thresholds

        return one_line_errors(derive_thresholds, argv[1:])
    args = parser.parse_args(argv)
    if args.command == "report":
        return one_line_errors(report_command, args)
    if args.command == "warm-up":
        return one_line_errors(warm_up_command, args)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()] if args.stages else None
    return one_line_errors(run_command, args, stages)


# What Spark says about an input it cannot read that the operator fixes in the input: -> the one line.
INPUT_ERRORS = (("TIMESTAMP(NANOS", "--input: a column is a Parquet timestamp in nanoseconds, which Spark does not "
                                    "read; write it in microseconds (pyarrow: coerce_timestamps='us')"),)


def one_line_errors(command, *args) -> int:
    """Run a command; the failures an operator acts on are one line on stderr and an exit code."""
    from corpusmill.storage import UnreadableInput, error_raised
    from jobs.fs import StorageError
    from jobs.lease import LeaseLost, RunFolderInUse
    from scoring_service.client import ScoringUnavailable

    try:
        return command(*args)
    except ConfigError as exc:
        print(f"corpusmill: {exc}", file=sys.stderr)
        return 2
    except (RunFolderInUse, LeaseLost) as exc:
        print(f"corpusmill: {exc}", file=sys.stderr)
        return 4
    except StorageError as exc:
        print(f"corpusmill: {exc}; free space (or fix the permission) and run again: finished stages "
              f"and chunks are kept", file=sys.stderr)
        return 5
    except Exception as exc:  # noqa: BLE001 — raised on the driver or in a Spark task; others go on as they were
        for error_type, code, advice in ((UnreadableInput, 6, "an input file cannot be read"),
                                         (ScoringUnavailable, 7, "the scoring service cannot be reached")):
            message = error_raised(exc, error_type)
            if message is not None:
                print(f"corpusmill: {advice}: {message}; run again once it is back: finished stages and "
                      f"chunks are kept", file=sys.stderr)
                return code
        for needle, line in INPUT_ERRORS:
            if needle in str(exc):
                print(f"corpusmill: {line}", file=sys.stderr)
                return 2
        raise


def main_for_stage(stage: str, argv: Optional[List[str]] = None) -> int:
    """Entry of ``spark-submit jobs/stages/<stage>.py`` (``<stage>/__main__.py`` for a stage that is a
    package): the run options, one stage."""
    module = sys.modules[registry.stage_class(stage).__module__]
    entry = f"jobs/stages/{stage}/__main__.py" if hasattr(module, "__path__") else f"jobs/stages/{stage}.py"
    parser = argparse.ArgumentParser(prog=entry, description=f"corpusmill stage {stage}")
    add_run_arguments(parser, with_stages=False)
    args = parser.parse_args(argv)
    return one_line_errors(run_command, args, [stage])


if __name__ == "__main__":
    sys.exit(main())
