"""Spark's Python daemon started from the installed pyspark (jobs/python_daemon.py): the zip and jar
copies Spark puts on the workers' path are dropped only where they are files of an installed pyspark."""
import os

from jobs.python_daemon import without_installed_copies


def test_only_archives_inside_an_installed_pyspark_leave_the_path(tmp_path):
    site = tmp_path / "site-packages"
    (site / "pyspark" / "python" / "lib").mkdir(parents=True)
    (site / "pyspark" / "jars").mkdir()
    (site / "pyspark" / "__init__.py").write_text("")
    cluster_lib = tmp_path / "opt" / "spark" / "python" / "lib"  # a cluster's own Spark: not installed here
    cluster_lib.mkdir(parents=True)
    installed_copies = [str(site / "pyspark" / "python" / "lib" / "pyspark.zip"),
                        str(site / "pyspark" / "python" / "lib" / "py4j-0.10.9.9-src.zip"),
                        str(site / "pyspark" / "jars" / "spark-core_2.13-4.3.0.jar")]
    others = ["", str(cluster_lib / "pyspark.zip"), str(tmp_path / "stdlib.zip"), str(site),
              str(site / "pyspark" / "python")]  # a folder inside the package stays: only archives go
    path = installed_copies[:2] + others[:3] + installed_copies[2:] + others[3:]
    assert without_installed_copies(path) == others
    # No installed pyspark on the path (a cluster's executors): nothing is dropped.
    assert without_installed_copies(installed_copies + others[:3]) == installed_copies + others[:3]


def test_the_session_s_python_workers_import_the_installed_pyspark(spark):
    """The suite's session runs this daemon, as conf/local.yaml does: its workers' pyspark is a
    package folder, and no jar is on their path (with Spark's own daemon: pyspark.zip and the jar)."""
    def where(_):
        import sys

        import pyspark
        yield pyspark.__file__, [entry for entry in sys.path if entry.endswith((".zip", ".jar"))]

    (pyspark_file, archives), = spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()
    assert os.path.isfile(pyspark_file) and ".zip" not in pyspark_file, pyspark_file
    assert not [a for a in archives if a.endswith(".jar") or "pyspark" in os.path.basename(a)], archives
