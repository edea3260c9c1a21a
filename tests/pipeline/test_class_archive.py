"""The JVM's class archive (jobs/spark.py, ClassArchive): written by the warm-up's JVM as it exits and
renamed only then, never on a run's clock (a run that finds none starts the warm-up in the background),
mapped by the runs after it (which mark it as used), written by one process at a time, others unused for
a month deleted, and a damaged one deleted while the run goes on without it."""
import os
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from jobs.spark import ClassArchive

# A session in its own process that writes the archive when its JVM exits, as the warm-up's does: the
# JVM's options, then a count.
RUN = """
import sys
from jobs.config import load
from jobs.spark import get_session
spark = get_session(load(overrides={"spark": {"master": "local[1]", "class_archive_dir": sys.argv[1]}}).spark,
                    write_class_archive=True)
jvm = spark.sparkContext._jvm
print("options:", " ".join(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()))
print("count:", spark.range(7).count())
"""


def run(cache, cwd):
    result = subprocess.run([sys.executable, "-c", RUN, str(cache)], cwd=cwd, capture_output=True, text=True,
                            timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 0 and "count: 7" in result.stdout, result.stderr[-3000:]
    return result


@pytest.mark.service  # JVMs of their own
def test_first_run_writes_the_archive_at_exit_later_runs_map_it_a_damaged_one_is_dropped(tmp_path):
    cache = tmp_path / "jvm"
    cache.mkdir()
    unused, recent = cache / "spark-unused.jsa", cache / "spark-recent.jsa"  # other installations' archives
    unused.write_bytes(b"x")
    recent.write_bytes(b"x")
    month_ago = time.time() - ClassArchive.UNUSED_S - 60
    os.utime(unused, (month_ago, month_ago))
    first = run(cache, tmp_path)
    assert not unused.exists() and recent.exists()
    recent.unlink()
    archives = list(cache.glob("spark-*.jsa"))
    assert len(archives) == 1 and archives[0].stat().st_size > 10 ** 6
    os.utime(archives[0], (month_ago, month_ago))
    assert f"-XX:ArchiveClassesAtExit={archives[0]}." in first.stdout  # written under a temporary name
    assert "keeping the JVM's classes" in first.stderr
    assert not list(cache.glob("*.tmp"))

    second = run(cache, tmp_path)
    assert f"-XX:SharedArchiveFile={archives[0]}" in second.stdout
    assert time.time() - archives[0].stat().st_mtime < ClassArchive.UNUSED_S  # marked as in use
    assert "keeping" not in second.stderr and "[cds]" not in second.stdout + second.stderr

    archives[0].write_bytes(archives[0].read_bytes()[:10 ** 6])  # cut short: HotSpot crashes on it
    third = run(cache, tmp_path)
    assert "did not start with the class archive" in third.stderr
    assert "SharedArchiveFile" not in third.stdout and not archives[0].exists()


@pytest.mark.service  # a JVM of its own
def test_a_jvm_that_refuses_a_property_leaves_the_archive_alone(tmp_path):
    """A start that fails without the archive too is the property's fault: its error, the archive kept."""
    archive = ClassArchive(str(tmp_path))
    archive.path.write_bytes(b"not an archive")
    config = tmp_path / "c.yaml"
    config.write_text(f"spark:\n  class_archive_dir: {tmp_path}\n  conf:\n    spark.driver.memory: 12 parsecs\n")
    result = subprocess.run([sys.executable, "-m", "jobs.cli", "run", "--config", str(config), "--input", "x.warc.gz"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 2 and "the JVM did not start" in result.stderr, result.stderr[-2000:]
    assert "class archive" not in result.stderr and archive.path.exists()


def test_one_process_writes_at_a_time_and_a_killed_ones_claim_expires(tmp_path):
    archive = ClassArchive(str(tmp_path))
    assert archive.jvm_options() == "" and archive.pending is None  # a run without an archive writes none
    claim = archive.path.with_name(f"{archive.path.name}.1.tmp")
    claim.touch()
    assert ClassArchive(str(tmp_path)).jvm_options(write=True) == ""  # another process is writing it
    old = time.time() - ClassArchive.STALE_S - 60
    os.utime(claim, (old, old))
    options = archive.jvm_options(write=True)
    assert not claim.exists() and archive.pending.exists()
    assert options == f"-XX:ArchiveClassesAtExit={archive.pending} -Xlog:cds*=off"


def warm_up(config, tmp):
    return subprocess.run([sys.executable, "-m", "jobs.cli", "warm-up", "--config", str(config)], cwd=tmp,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp)))


@pytest.mark.slow  # every stage on the bundled sample, in a JVM of its own
@pytest.mark.service  # the warm-up runs in a process of its own
def test_a_run_without_an_archive_leaves_the_warm_up_to_the_background_which_writes_it_once(tmp_path):
    cache = tmp_path / "jvm"
    config = tmp_path / "warm.yaml"
    config.write_text(f"include: [{ROOT / 'conf' / 'local.yaml'}]\nspark:\n  class_archive_dir: {cache}\n")
    run = subprocess.run([sys.executable, "-m", "jobs.cli", "run", "--config", str(config), "--stages", "extract",
                          "--input", str(ROOT / "data" / "sample"), "--output", str(tmp_path / "out")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path)))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "keeping the JVM's classes" not in run.stderr and "class archive in the background" in run.stdout
    deadline = time.time() + 600
    while not list(cache.glob("spark-*.jsa")) and time.time() < deadline:
        time.sleep(5)
    log = (cache / "warm-up.log").read_text()
    archives = list(cache.glob("spark-*.jsa"))
    assert len(archives) == 1 and archives[0].stat().st_size > 10 ** 6, log[-3000:]
    while list(cache.glob("*.tmp")) and time.time() < deadline:  # renamed before the warm-up exits
        time.sleep(1)
    assert "every stage on the sample WARCs" in log and "mindrecord:" in log
    while list(tmp_path.glob("corpusmill-warm-up-*")) and time.time() < deadline:
        time.sleep(1)
    assert not list(tmp_path.glob("corpusmill-warm-up-*"))  # its outputs went with its temporary folder
    written = archives[0].stat().st_mtime_ns
    again = warm_up(config, tmp_path)  # the archive is there: nothing runs
    assert again.returncode == 0 and again.stdout == "" and archives[0].stat().st_mtime_ns == written


def test_warm_up_without_an_archive_setting_does_nothing(tmp_path):
    config = tmp_path / "off.yaml"
    config.write_text(f"include: [{ROOT / 'conf' / 'local.yaml'}]\nspark:\n  class_archive_dir: ''\n")
    done = warm_up(config, tmp_path)
    assert done.returncode == 0 and "nothing to do" in done.stderr and done.stdout == ""
