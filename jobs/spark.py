"""The Spark session, built from config unless spark-submit or a notebook already made one."""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.find_spark_home import _find_spark_home
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from corpusmill.config import ConfigError
from jobs.config import SparkConfig

# Always on: Arrow batches between the JVM and the Python workers, UTC timestamps.
BASE_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "static",
    "spark.ui.showConsoleProgress": "true",
    # PySpark otherwise records the Python call site of every Column operation for analysis errors:
    # ~4 JVM round trips each, which the stages' bookkeeping queries (a sum per filter rule) and
    # every stage's planning wait for in the driver. Errors still name the failing expression.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # A stage's write splits each task's rows over folders (``_outcome``, ``bucket``): with a writer
    # open per folder Spark does not sort every row, text and token arrays included, by them first.
    # Past this many folders in one task it falls back to sorting.
    "spark.sql.maxConcurrentOutputFileWriters": "8",
}
# Warnings and errors only, without Spark's start-up notices (see the file).
LOG4J2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
# Printed by the JVM itself on every start (Spark's launcher adds that module); not a log line.
JVM_NOTICES = (b"WARNING: Using incubator modules:",)


def _forward_jvm_stderr(read_fd: int) -> None:
    """Copy the JVM's stderr to ours as it comes (the progress bar redraws without newlines),
    leaving out the lines that start with one of ``JVM_NOTICES``."""
    pending = b""
    while True:
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        data, pending, out = pending + chunk, b"", []
        while data:
            end = data.find(b"\n") + 1 or len(data)
            line, data = data[:end], data[end:]
            if not line.endswith(b"\n") and any(n.startswith(line) or line.startswith(n) for n in JVM_NOTICES):
                pending = line  # may turn out to be a notice: wait for the rest of the line
            elif not any(line.startswith(n) for n in JVM_NOTICES):
                out.append(line)
        if out:
            os.write(2, b"".join(out))  # fd 2, whatever it is now (a test may capture it)
    os.close(read_fd)


class ClassArchive:
    """The JVM's loaded classes kept between local runs: a dynamic CDS archive (HotSpot's class data
    sharing) that ``corpusmill warm-up`` writes as its JVM exits and runs map instead of loading and
    verifying Spark's classes from the jars again (the saving: bench/RESULTS.md). Writing it takes a
    JVM's exit tens of seconds, so a run never writes it itself: one that finds none starts the
    warm-up in the background as it ends (``jobs/cli.py``), off the user's clock.

    One archive per Java and Spark installation (its name hashes the java binary and the path and
    names of Spark's jars: HotSpot maps an archive only for the class path it was written with); one
    that no run has used for ``UNUSED_S`` is deleted when another is written. An archive is written
    under a temporary name and renamed only once the JVM that wrote it has exited cleanly: HotSpot
    reads a truncated archive into a crash, so a partial file must never carry the final name. A JVM
    that cannot start with an archive is started again without it, and the archive deleted if that
    start succeeds."""

    STALE_S = 3600  # a temporary archive this old belongs to a run that was killed
    UNUSED_S = 30 * 86400

    def __init__(self, directory: str):
        self.directory = Path(os.path.expanduser(directory))
        java = _java_binary()
        jars = Path(_find_spark_home()) / "jars"
        stat = os.stat(java)
        key = json.dumps([os.path.realpath(java), stat.st_size, stat.st_mtime_ns, pyspark.__version__,
                          os.path.realpath(jars), sorted(os.listdir(jars)) if jars.is_dir() else []])
        self.path = self.directory / f"spark-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"
        self.pending: Optional[Path] = None

    @classmethod
    def for_this_jvm(cls, directory: str) -> Optional["ClassArchive"]:
        """None where archives cannot work: no java, or a JDK without its base CDS archive (then
        HotSpot refuses to write one and would not start)."""
        java = _java_binary()
        if not directory or not java:
            return None
        if not (Path(os.path.realpath(java)).parent.parent / "lib" / "server" / "classes.jsa").exists():
            return None
        return cls(directory)

    def jvm_options(self, write: bool = False) -> str:
        """Map the archive when there is one; else, with ``write``, write one at exit (under a temporary
        name) unless another process is writing it already. HotSpot's notes on classes it cannot
        archive (~1,000 lines) stay off the console."""
        quiet = "-Xlog:cds*=off"
        if self.path.exists():
            try:
                os.utime(self.path)  # in use: see UNUSED_S
            except OSError:
                pass
            return f"-XX:SharedArchiveFile={self.path} {quiet}"
        if not write:
            return ""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if self.being_written():
                return ""
            self.pending = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            self.pending.touch()  # claims the writing from now on; the JVM fills it at exit
        except OSError:  # an unwritable cache: run without
            self.pending = None
            return ""
        return f"-XX:ArchiveClassesAtExit={self.pending} {quiet}"

    def being_written(self) -> bool:
        """Whether a live run is writing this archive; stale temporary files (a killed run's) go."""
        writing = False
        for pending in self.directory.glob(f"{self.path.name}.*.tmp"):
            if time.time() - pending.stat().st_mtime > self.STALE_S:
                pending.unlink(missing_ok=True)
            else:
                writing = True
        return writing

    def finish(self, jvm: subprocess.Popen) -> None:
        """At exit: stop Spark, let the JVM exit (it writes the archive as it does) and give the
        archive its final name if the JVM exited cleanly."""
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
        print("corpusmill: keeping the JVM's classes for faster start-ups (once, ~200 MB in "
              f"{self.directory})", file=sys.stderr)
        try:
            jvm.stdin.close()  # the gateway exits on end of input
            clean = jvm.wait(timeout=300) == 0
        except (OSError, subprocess.TimeoutExpired):
            clean = False
        try:
            if clean and self.pending.exists() and self.pending.stat().st_size > 0:
                os.replace(self.pending, self.path)
                for other in self.directory.glob("spark-*.jsa"):
                    if other != self.path and time.time() - other.stat().st_mtime > self.UNUSED_S:
                        other.unlink(missing_ok=True)
            else:
                self.pending.unlink(missing_ok=True)
        except OSError:  # another run removed a file first: nothing of ours is left half done
            pass


def _java_binary() -> Optional[str]:
    """The java that Spark's launcher runs: $JAVA_HOME/bin/java, else the one on the PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.exists(os.path.join(java_home, "bin", "java")):
        return os.path.join(java_home, "bin", "java")
    return shutil.which("java")


def _start_context(conf: SparkConf, archive: Optional[ClassArchive] = None, write_archive: bool = False) -> None:
    """Start the JVM with its stderr through ``_forward_jvm_stderr`` (and the class archive's option),
    and the SparkContext on it."""
    java_options = conf.get("spark.driver.extraJavaOptions", "")
    archive_option = archive.jvm_options(write_archive) if archive else ""
    if archive_option:
        conf.set("spark.driver.extraJavaOptions", f"{java_options} {archive_option}".strip())
    read_fd, write_fd = os.pipe()
    forwarder = threading.Thread(target=_forward_jvm_stderr, args=(read_fd,), name="jvm-stderr", daemon=True)
    forwarder.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_fd})
    except BaseException as exc:
        os.close(write_fd)
        forwarder.join(timeout=5)  # the JVM's own message first, then ours
        if archive is not None and archive.pending is not None:
            archive.pending.unlink(missing_ok=True)
        if archive_option.startswith("-XX:SharedArchiveFile") and "JAVA_GATEWAY_EXITED" in str(exc):
            # Without the archive: if the JVM fails again (a property it refuses), that error stands
            # and the archive stays; if it starts, the archive was the cause.
            conf.set("spark.driver.extraJavaOptions", java_options)
            _start_context(conf)
            print(f"corpusmill: the JVM did not start with the class archive {archive.path}; "
                  "started without it and deleted it", file=sys.stderr)
            archive.path.unlink(missing_ok=True)
            return
        raise
    os.close(write_fd)  # the JVM holds its own copy
    if archive is not None and archive.pending is not None:
        atexit.register(archive.finish, gateway.proc)
    SparkContext(conf=conf, gateway=gateway)


def under_spark_submit() -> bool:
    """Whether spark-submit started this driver's JVM: it hands Python its gateway (PYSPARK_GATEWAY_PORT)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def get_session(cfg: SparkConfig, write_class_archive: bool = False) -> SparkSession:
    """The active session, else a new one from ``cfg``; a JVM started here maps the class archive, or
    with ``write_class_archive`` writes it at exit when there is none (``corpusmill warm-up``)."""
    # Workers must run the interpreter that has the project's packages (a measured trap here).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    settings = {**BASE_CONF, **{k: str(v) for k, v in cfg.conf.items()}}
    builder = SparkSession.builder.appName(cfg.app_name)
    # Under spark-submit the JVM is already started, with the master from the command line: don't
    # override it. Before that JVM is reached, SparkConf() here is an empty Python-side dict and cannot
    # tell. Otherwise the context started here takes the config's master unless spark.conf names one.
    try:
        if not under_spark_submit() and SparkContext._active_spark_context is None:
            java_options = settings.get("spark.driver.extraJavaOptions", "")
            settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{LOG4J2} {java_options}".strip()
            conf = SparkConf().setAppName(cfg.app_name).setAll(settings.items())
            if not conf.contains("spark.master"):
                conf.setMaster(cfg.master)
            _start_context(conf, ClassArchive.for_this_jvm(cfg.class_archive_dir), write_class_archive)
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    except RuntimeError as exc:  # PySparkRuntimeError: the JVM refused a property and exited
        if "JAVA_GATEWAY_EXITED" not in str(exc):
            raise
        raise ConfigError("spark: the JVM did not start (its own message is printed above); "
                          "check spark.master and spark.conf in the config") from None
    spark.sparkContext.setLogLevel("WARN")
    return spark
