"""The Spark session, built from config unless spark-submit or a notebook already made one."""
from __future__ import annotations

import os
import sys
import threading

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from jobs.config import SparkConfig
from udfs.config import ConfigError

# Always on: Arrow batches between the JVM and the Python workers, UTC timestamps.
BASE_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "static",
    "spark.ui.showConsoleProgress": "true",
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


def _start_context(conf: SparkConf) -> None:
    """Start the JVM with its stderr through ``_forward_jvm_stderr``, and the SparkContext on it."""
    read_fd, write_fd = os.pipe()
    forwarder = threading.Thread(target=_forward_jvm_stderr, args=(read_fd,), name="jvm-stderr", daemon=True)
    forwarder.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_fd})
    except BaseException:
        os.close(write_fd)
        forwarder.join(timeout=5)  # the JVM's own message first, then ours
        raise
    os.close(write_fd)  # the JVM holds its own copy
    SparkContext(conf=conf, gateway=gateway)


def get_session(cfg: SparkConfig) -> SparkSession:
    # Workers must run the interpreter that has the project's packages (a measured trap here).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    settings = {**BASE_CONF, **{k: str(v) for k, v in cfg.conf.items()}}
    builder = SparkSession.builder.appName(cfg.app_name)
    # Under spark-submit the JVM is already started, with the master from the command line: don't
    # override it. spark-submit hands Python its gateway (PYSPARK_GATEWAY_PORT); before that JVM is
    # reached, SparkConf() here is an empty Python-side dict and cannot tell. Otherwise the context
    # started here takes the config's master unless spark.conf names one.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    try:
        if not submitted and SparkContext._active_spark_context is None:
            java_options = settings.get("spark.driver.extraJavaOptions", "")
            settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{LOG4J2} {java_options}".strip()
            conf = SparkConf().setAppName(cfg.app_name).setAll(settings.items())
            if not conf.contains("spark.master"):
                conf.setMaster(cfg.master)
            _start_context(conf)
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
