"""The Spark session, built from config unless spark-submit or a notebook already made one."""
from __future__ import annotations

import os
import sys

from pyspark import SparkConf
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


def get_session(cfg: SparkConfig) -> SparkSession:
    # Workers must run the interpreter that has the project's packages (a measured trap here).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(cfg.app_name)
    # Under spark-submit the master comes from the command line; don't override it. spark-submit starts
    # the JVM first and hands Python its gateway (PYSPARK_GATEWAY_PORT); before that JVM is reached,
    # SparkConf() here is an empty Python-side dict and cannot tell.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if not submitted and not SparkConf().contains("spark.master"):
        builder = builder.master(cfg.master)
    for key, value in {**BASE_CONF, **{k: str(v) for k, v in cfg.conf.items()}}.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except RuntimeError as exc:  # PySparkRuntimeError: the JVM refused a property and exited
        if "JAVA_GATEWAY_EXITED" not in str(exc):
            raise
        raise ConfigError("spark: the JVM did not start (its own message is printed above); "
                          "check spark.master and spark.conf in the config") from None
    spark.sparkContext.setLogLevel("WARN")
    return spark
