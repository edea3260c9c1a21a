"""Nothing lost or doubled whatever happens around a run: a second run on the same folder, damaged or
empty markers, a full disk. Each test breaks a run the way an operator's day does and checks that
the committed stage is what one clean run commits."""
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import ROOT
from corpusmill.config import ConfigError
from jobs import config, pipeline, runner
from jobs.fs import HadoopFS, StorageError
from jobs.lease import LEASE_DIR, LeaseConfig, LeaseLost, RunFolderInUse, RunLease
from run_outputs import fingerprint_of_output, split_sample_warcs
from jobs.pipeline import run_pipeline

pytestmark = pytest.mark.spark
FILES = 6
CHUNK_FILES = 2

# A real `corpusmill run` that stops at a chosen point, holding its lease, until a file appears:
# PAUSE_AT=commit pauses before a stage's commit (its temporary folder written), PAUSE_AT=chunk after
# its first chunk is committed.
DRIVER_PAUSED = '''
import os, sys, time
from pathlib import Path

from jobs import runner
from jobs.cli import main

paused, go = Path(os.environ["PAUSED_FLAG"]), Path(os.environ["GO_FLAG"])


def pause():
    paused.touch()
    while not go.exists():
        time.sleep(0.2)


if os.environ["PAUSE_AT"] == "commit":
    real_commit = runner.commit

    def commit(*args, **kwargs):
        pause()
        real_commit(*args, **kwargs)

    runner.commit = commit
else:
    real_write_chunk_marker = runner.write_chunk_marker

    def write_chunk_marker(fs, path, content):
        real_write_chunk_marker(fs, path, content)
        if path.endswith("/00000.json"):
            pause()

    runner.write_chunk_marker = write_chunk_marker
sys.exit(main(sys.argv[1:]))
'''


def cli(*args: str, driver: Path = None, env: dict = None, **popen) -> subprocess.Popen:
    command = [sys.executable, str(driver)] if driver else [sys.executable, "-m", "jobs.cli"]
    return subprocess.Popen([*command, *args], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def wait_for(path: Path, process: subprocess.Popen, timeout: float = 600) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def warc_dir(tmp_path_factory) -> Path:
    return split_sample_warcs(tmp_path_factory.mktemp("warcs"), FILES)


@pytest.fixture(scope="module")
def confs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("conf")
    plain, chunked = folder / "plain.yaml", folder / "chunked.yaml"
    plain.write_text(f"include: {ROOT / 'conf' / 'local.yaml'}\n")
    chunked.write_text(f"include: {ROOT / 'conf' / 'local.yaml'}\nio:\n  chunk_files: {CHUNK_FILES}\n")
    return {"plain": plain, "chunked": chunked}


@pytest.fixture(scope="module")
def single_run(spark, warc_dir, confs, tmp_path_factory):
    """What one undisturbed run commits: the stats and the output digest of extract."""
    out = tmp_path_factory.mktemp("single")
    stats = run_pipeline(spark, config.load(str(confs["plain"])), [str(warc_dir)], ["extract"], str(out), "r",
                         echo=lambda _: None)[0]
    return stats, fingerprint_of_output(spark, out / "r" / "extract")


def same_as_single_run(spark, run_dir: Path, single_run) -> None:
    stats = json.loads((run_dir / "extract" / "_stats.json").read_text())
    assert stats["reconciled"] and (stats["records_in"], stats["kept"], stats["skipped"], stats["errors"]) == (
        single_run[0]["records_in"], single_run[0]["kept"], single_run[0]["skipped"], single_run[0]["errors"])
    assert fingerprint_of_output(spark, run_dir / "extract") == single_run[1]
    assert runner.stage_problem(HadoopFS(spark), str(run_dir / "extract")) is None
    assert not list(run_dir.glob("extract.tmp-*")) and not list(run_dir.glob("extract.partial-*"))
    assert not list((run_dir / LEASE_DIR).glob("*.json"))  # every lease given back


@pytest.mark.parametrize("first, pause_at", [("chunked", "chunk"), ("plain", "commit")])
def test_a_second_run_on_a_held_folder_stops_at_once_naming_the_holder(
        spark, warc_dir, confs, single_run, tmp_path, first, pause_at):
    """The second run comes while the first is mid-stage (a chunk committed, or its temporary folder
    written and not yet moved); it must leave it alone and say who holds the folder."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER_PAUSED)
    flags = {"PAUSED_FLAG": str(tmp_path / "paused"), "GO_FLAG": str(tmp_path / "go"), "PAUSE_AT": pause_at}
    args = ["run", "--input", str(warc_dir), "--output", str(tmp_path), "--run", "r", "--stages", "extract"]
    holder = cli(*args, "--config", str(confs[first]), driver=driver, env=flags)
    try:
        wait_for(tmp_path / "paused", holder)
        other = "plain" if first == "chunked" else "chunked"
        second = cli(*args, "--config", str(confs[other]))
        out, err = second.communicate(timeout=600)
        assert second.returncode == 4, err[-3000:]
        message = [line for line in err.splitlines() if line.startswith("corpusmill:")]
        assert len(message) == 1 and "is in use by another run" in message[0] and f"pid {holder.pid}" in message[0]
        assert "--wait" in message[0] and "_lease/" in message[0]
        assert "Traceback" not in err
    finally:
        (tmp_path / "go").touch()
    _, err = holder.communicate(timeout=600)
    assert holder.returncode == 0, err[-3000:]
    same_as_single_run(spark, tmp_path / "r", single_run)


@pytest.mark.parametrize("first, pause_at", [("plain", "commit"), ("chunked", "chunk")])
def test_a_second_run_told_to_wait_runs_after_the_first_and_commits_one_runs_output(
        spark, warc_dir, confs, single_run, tmp_path, first, pause_at):
    """With --wait the second run queues behind the first; it then finds the stage committed (chunking
    is not part of a stage's fingerprint), skips it and leaves one run's output."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER_PAUSED)
    flags = {"PAUSED_FLAG": str(tmp_path / "paused"), "GO_FLAG": str(tmp_path / "go"), "PAUSE_AT": pause_at}
    args = ["run", "--input", str(warc_dir), "--output", str(tmp_path), "--run", "r", "--stages", "extract"]
    holder = cli(*args, "--config", str(confs[first]), driver=driver, env=flags)
    second = None
    try:
        wait_for(tmp_path / "paused", holder)
        other = "plain" if first == "chunked" else "chunked"
        second = cli(*args, "--config", str(confs[other]), "--wait", "900")
        waiting = second.stdout.readline()
        while waiting and "waiting up to" not in waiting:
            waiting = second.stdout.readline()
        assert f"pid {holder.pid}" in waiting
    finally:
        (tmp_path / "go").touch()
    _, err = holder.communicate(timeout=600)
    assert holder.returncode == 0, err[-3000:]
    out, err = second.communicate(timeout=900)
    assert second.returncode == 0, err[-3000:]
    assert "finished earlier with the same config, skipped" in out
    same_as_single_run(spark, tmp_path / "r", single_run)


# --- damaged chunk markers --------------------------------------------------------------------------

class Crash(BaseException):
    """Stands for the driver dying: nothing after it runs, no clean-up catches it."""


@pytest.fixture(scope="module")
def crashed_after_two_chunks(spark, warc_dir, confs, tmp_path_factory):
    """A run folder whose extract committed chunks 0 and 1 of 3, then died."""
    out = tmp_path_factory.mktemp("crashed")
    real, written = runner.write_chunk_marker, []

    def write_chunk_marker(fs, path, content):
        real(fs, path, content)
        written.append(path)
        if len(written) == 2:
            raise Crash()

    runner.write_chunk_marker = write_chunk_marker
    try:
        with pytest.raises(Crash):
            run_pipeline(spark, config.load(str(confs["chunked"])), [str(warc_dir)], ["extract"], str(out), "r",
                         echo=lambda _: None)
    finally:
        runner.write_chunk_marker = real
    return out / "r"


def _other_chunks_files(marker: dict, partial: Path) -> dict:
    other = json.loads((partial / "_chunks" / "00001.json").read_text())
    return {**marker, "files": other["files"]}


DAMAGE = {
    "empty (a full disk)": lambda marker, partial: "",
    "cut short": lambda marker, partial: json.dumps(marker)[:40],
    "not an object": lambda marker, partial: json.dumps([marker]),
    "no files": lambda marker, partial: json.dumps({k: v for k, v in marker.items() if k != "files"}),
    "files empty while rows were written": lambda marker, partial: json.dumps({**marker, "files": {}}),
    "another chunk's files": lambda marker, partial: json.dumps(_other_chunks_files(marker, partial)),
    "other inputs than the plan's": lambda marker, partial: json.dumps({**marker, "inputs": marker["inputs"][:1]}),
    "a size that is not the file's": lambda marker, partial: json.dumps(
        {**marker, "files": {name: size + 1 for name, size in marker["files"].items()}}),
    "no counts": lambda marker, partial: json.dumps({k: v for k, v in marker.items() if k != "counts"}),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_chunk_marker_means_the_chunk_is_done_again(spark, confs, warc_dir, crashed_after_two_chunks,
                                                             single_run, tmp_path, damage):
    run_dir = tmp_path / "r"
    shutil.copytree(crashed_after_two_chunks, run_dir)
    partial = next(run_dir.glob("extract.partial-*"))
    marker_path = partial / "_chunks" / "00000.json"
    marker = json.loads(marker_path.read_text())
    assert marker["files"] and marker["counts"]["kept"]
    marker_path.write_text(DAMAGE[damage](marker, partial))

    lines = []
    stats = run_pipeline(spark, config.load(str(confs["chunked"])), [str(warc_dir)], ["extract"], str(tmp_path), "r",
                         echo=lines.append)[0]
    assert any("resuming: 1 of 3 chunks were committed earlier" in line for line in lines)
    assert [line.split(": ", 1)[1].split(" (")[0] for line in lines if "extract: chunk" in line] == [
        "chunk 1/3 committed", "chunk 3/3 committed"]
    assert stats["chunks"] == 3 and stats["reconciled"]
    same_as_single_run(spark, run_dir, single_run)


# --- damaged completion markers ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def finished_run(spark, warc_dir, confs, tmp_path_factory):
    out = tmp_path_factory.mktemp("finished")
    run_pipeline(spark, config.load(str(confs["plain"])), [str(warc_dir)], ["extract"], str(out), "r",
                 echo=lambda _: None)
    return out / "r"


@pytest.mark.parametrize("damage", ["empty", "not JSON", "a list", "files not a map", "stats cut short"])
def test_a_damaged_completion_marker_means_the_stage_is_run_again(spark, confs, warc_dir, finished_run,
                                                                 single_run, tmp_path, damage):
    run_dir = tmp_path / "r"
    shutil.copytree(finished_run, run_dir)
    marker = run_dir / "extract" / "_COMPLETE.json"
    content = json.loads(marker.read_text())
    if damage == "stats cut short":  # the marker lists the stats file with its size: a cut one no longer matches
        stats = run_dir / "extract" / "_stats.json"
        stats.write_text(stats.read_text()[:50])
    else:
        marker.write_text({"empty": "", "not JSON": "{\"fingerprint\": ", "a list": "[]",
                           "files not a map": json.dumps({**content, "files": ["kept"]})}[damage])

    # A stage run alone without --input reads the stage before it, which must be finished.
    with pytest.raises(ConfigError, match=f"stage 'extract' there is not finished: .*; run --stages extract again"):
        run_pipeline(spark, config.load(str(confs["plain"])), [], ["filter"], str(tmp_path), "r", echo=lambda _: None)

    lines = []
    run_pipeline(spark, config.load(str(confs["plain"])), [str(warc_dir)], ["extract"], str(tmp_path), "r",
                 echo=lines.append)
    assert not any("finished earlier" in line for line in lines)
    same_as_single_run(spark, run_dir, single_run)


# --- what a stage reads -----------------------------------------------------------------------------

def commit_copy_as(spark, run_dir: Path, stage: str, name: str) -> None:
    """Commit a copy of ``stage``'s folder as the stage ``name``, as the runner commits any stage."""
    copy = run_dir / f"{name}.tmp-copy"
    shutil.copytree(run_dir / stage, copy)
    (copy / "_COMPLETE.json").unlink()
    runner.commit(HadoopFS(spark), f"file://{copy}", f"file://{run_dir / name}", f"copy of {stage}", None)


def a_kept_file(stage_dir: Path) -> Path:
    return sorted((stage_dir / "kept").glob("*.parquet"))[0]


def test_a_stage_alone_reads_the_stage_before_it_or_stops_in_one_line_naming_it(
        spark, confs, finished_run, tmp_path):
    run_dir = tmp_path / "r"
    shutil.copytree(finished_run, run_dir)
    cfg = config.load(str(confs["plain"]))
    # The stage before pii (filter) was never run: said so, never a fall back to extract's kept/.
    with pytest.raises(ConfigError, match=f"stage 'pii' reads the kept/ of stage 'filter', and file:{run_dir}/filter "
                                          f"does not exist: run --stages filter first, or give --input"):
        run_pipeline(spark, cfg, [], ["pii"], str(tmp_path), "r", echo=lambda _: None)

    # Finished but for one missing Parquet file: one line naming the folder and the file.
    commit_copy_as(spark, run_dir, "extract", "filter")
    missing = a_kept_file(run_dir / "filter")
    missing.unlink()
    with pytest.raises(ConfigError) as refused:
        run_pipeline(spark, cfg, [], ["pii"], str(tmp_path), "r", echo=lambda _: None)
    assert str(refused.value) == (
        f"--input: stage 'pii' reads file:{run_dir}/filter/kept, and stage 'filter' there is not finished: "
        f"kept/{missing.name} is missing; run --stages filter again, or give --input")
    # The same kept/ given as --input: judged the same way.
    with pytest.raises(ConfigError, match=f"the stage there is not finished: kept/{missing.name} is missing"):
        run_pipeline(spark, cfg, [str(run_dir / "filter" / "kept")], ["pii"], str(tmp_path), "r", echo=lambda _: None)
    assert not (run_dir / "pii").exists()


def test_a_finished_stage_given_as_input_is_read_with_its_own_fingerprint(spark, finished_run, tmp_path):
    """--input <run>/extract/kept (what each task of the Airflow DAG passes) chains extract's fingerprint,
    as reading it without --input does: a re-run of extract re-runs filter, whichever way it is read."""
    run_dir = tmp_path / "r"
    shutil.copytree(finished_run, run_dir)
    fs = HadoopFS(spark)
    source, upstream = pipeline._previous_output(fs, f"file://{run_dir}", "filter")
    assert pipeline._committed_input_fingerprint(fs, "filter", fs.qualify(str(run_dir / "extract" / "kept"))) \
        == upstream == json.loads((run_dir / "extract" / "_COMPLETE.json").read_text())["fingerprint"]
    assert pipeline._committed_input_fingerprint(fs, "filter", fs.qualify(str(run_dir / "extract" / "rejected"))) is None


def test_a_file_changed_since_its_stage_finished_makes_the_stage_unfinished_and_a_rerun_recovers(
        spark, confs, warc_dir, finished_run, single_run, tmp_path):
    run_dir = tmp_path / "r"
    shutil.copytree(finished_run, run_dir)
    changed = a_kept_file(run_dir / "extract")
    assert (changed.parent / f".{changed.name}.crc").exists()  # Spark's own checksum file is there too
    data = bytearray(changed.read_bytes())
    data[len(data) // 2:len(data) // 2 + 8] = bytes(b ^ 0xFF for b in data[len(data) // 2:len(data) // 2 + 8])
    changed.write_bytes(bytes(data))  # the same size, other content

    fs = HadoopFS(spark)
    assert runner.stage_problem(fs, f"file://{run_dir}/extract") == (
        f"kept/{changed.name} does not match its xxh3_64 checksum (changed since the stage finished)")
    with pytest.raises(ConfigError, match=f"stage 'extract' there is not finished: kept/{changed.name} does not "
                                          f"match its xxh3_64 checksum"):
        run_pipeline(spark, config.load(str(confs["plain"])), [], ["filter"], str(tmp_path), "r", echo=lambda _: None)

    lines = []
    run_pipeline(spark, config.load(str(confs["plain"])), [str(warc_dir)], ["extract"], str(tmp_path), "r",
                 echo=lines.append)
    assert not any("finished earlier" in line for line in lines)
    assert any(line.strip().startswith(f"extract: reads {FILES} input files") for line in lines)
    same_as_single_run(spark, run_dir, single_run)


def test_every_marker_names_each_file_with_its_checksum(spark, finished_run):
    from corpusmill.run_folder import checksum_of_bytes

    stage = finished_run / "extract"
    marker = json.loads((stage / "_COMPLETE.json").read_text())
    assert marker["checksum"] == "xxh3_64" and set(marker["checksums"]) == set(marker["files"])
    assert all(checksum_of_bytes((stage / name).read_bytes()) == digest for name, digest in marker["checksums"].items())


def test_a_checksum_read_through_hadoop_is_the_checksum_of_the_bytes(spark, tmp_path):
    """HDFS and object stores are hashed through Hadoop's stream (a path without a scheme goes there,
    to the default file system), a block at a time: the same checksum as of the bytes."""
    from corpusmill.run_folder import CHECKSUM_BLOCK, checksum_of_bytes

    data = os.urandom(CHECKSUM_BLOCK + 12345)
    (tmp_path / "f").write_bytes(data)
    (tmp_path / "empty").write_bytes(b"")
    fs = HadoopFS(spark)
    assert fs.checksum(str(tmp_path / "f")) == checksum_of_bytes(data) == fs.checksum(f"file://{tmp_path}/f")
    assert fs.checksum(str(tmp_path / "empty")) == checksum_of_bytes(b"")


@pytest.mark.parametrize("run", ["A/dedup", "..", ".hidden", "x" * 129, "a b", "r\\x"])
def test_a_run_name_must_be_one_safe_folder_name(spark, confs, warc_dir, tmp_path, run):
    with pytest.raises(ConfigError, match=r"^--run: .* is not a run name: one folder name of letters"):
        run_pipeline(spark, config.load(str(confs["plain"])), [str(warc_dir)], ["extract"], str(tmp_path / "out"),
                     run, echo=lambda _: None)
    assert not (tmp_path / "out").exists()


def test_a_run_name_that_is_not_one_folder_is_exit_code_2_with_one_line(spark, warc_dir, tmp_path, capsys):
    from jobs.cli import main

    for command in (["run", "--input", str(warc_dir), "--stages", "extract"], ["report"]):
        for run in ("A/dedup", ".."):
            assert main([*command, "--output", str(tmp_path / "out"), "--run", run]) == 2
            err = capsys.readouterr().err.strip()
            assert err.startswith(f"corpusmill: --run: {run!r} is not a run name") and "\n" not in err, err
    assert not (tmp_path / "out").exists()


# --- a full disk ------------------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A real 256 KiB file system (tmpfs); the test skips where this process may not mount one."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.strip()[:200]})")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path, leave: int) -> Path:
    """Fill ``folder``'s file system up to ``leave`` bytes free; returns the filler file."""
    filler = folder / "filler"
    free = shutil.disk_usage(folder).free
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


def test_a_full_disk_during_a_marker_write_keeps_the_old_marker_whole(spark, small_disk):
    fs = HadoopFS(spark)
    marker = small_disk / "stage" / "_COMPLETE.json"
    fs.write_json(f"file://{marker}", {"fingerprint": "old", "files": {}})
    before = marker.read_bytes()
    filler = fill(small_disk, leave=0)
    with pytest.raises(StorageError, match=f"no space left on device while writing file://{marker}"):
        fs.write_json(f"file://{marker}", {"fingerprint": "new", "files": {"x": 1}, "pad": "x" * 10_000})
    assert marker.read_bytes() == before  # never an empty or cut marker under the real name
    assert sorted(p.name for p in marker.parent.iterdir()) == ["_COMPLETE.json"]  # no temporary left behind
    filler.unlink()


def test_a_full_disk_stops_the_run_with_one_line_and_a_rerun_after_freeing_space_commits_one_runs_output(
        spark, warc_dir, confs, single_run, small_disk):
    filler = fill(small_disk, leave=48 * 1024)  # the lease and the first files fit, the stage's rows do not
    args = ["run", "--input", str(warc_dir), "--output", str(small_disk), "--run", "r", "--stages", "extract"]
    full = cli(*args, "--config", str(confs["chunked"]))
    _, err = full.communicate(timeout=600)
    assert full.returncode == 5, err[-3000:]
    message = [line for line in err.splitlines() if line.startswith("corpusmill:")]
    assert len(message) == 1 and "no space left on device while writing file:" in message[0], err[-3000:]
    assert "Traceback" not in err and "finished stages and chunks are kept" in message[0]
    assert not (small_disk / "r" / "extract").exists()

    filler.unlink()
    again = cli(*args, "--config", str(confs["chunked"]))
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err[-3000:]
    same_as_single_run(spark, small_disk / "r", single_run)


# --- the lease itself -------------------------------------------------------------------------------

def lease_file(run_dir: Path, **fields) -> Path:
    record = {"attempt": uuid.uuid4().hex[:12], "host": "other-host", "pid": 4242, "pid_started": None,
              "acquired_at": time.time() - 60, "renewed_at": time.time(), "expires_at": time.time() + 300, **fields}
    path = run_dir / LEASE_DIR / f"{record['attempt']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


def test_a_live_lease_of_another_host_is_respected_and_an_expired_one_taken_over(spark, tmp_path):
    fs, lines = HadoopFS(spark), []
    live = lease_file(tmp_path)
    with pytest.raises(RunFolderInUse, match="other-host pid 4242"):
        RunLease(fs, f"file://{tmp_path}", LeaseConfig(), lines.append).acquire()
    assert live.exists() and len(list((tmp_path / LEASE_DIR).glob("*.json"))) == 1  # ours withdrawn

    live.write_text(json.dumps({**json.loads(live.read_text()), "expires_at": time.time() - 1}))
    with RunLease(fs, f"file://{tmp_path}", LeaseConfig(), lines.append) as lease:
        assert not live.exists() and Path(lease.path[len("file://"):]).exists()
    assert any("taking over" in line and "other-host pid 4242" in line for line in lines)
    assert not list((tmp_path / LEASE_DIR).glob("*.json"))


def test_a_lease_of_a_dead_process_on_this_host_is_taken_over_at_once(spark, tmp_path):
    import socket

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lease_file(tmp_path, host=socket.gethostname(), pid=int(gone.stdout))
    with RunLease(HadoopFS(spark), f"file://{tmp_path}", LeaseConfig(), lambda _: None):
        assert len(list((tmp_path / LEASE_DIR).glob("*.json"))) == 1


def test_an_unreadable_lease_counts_as_live_until_a_ttl_after_it_was_written(spark, tmp_path):
    fs = HadoopFS(spark)
    damaged = tmp_path / LEASE_DIR / "0123456789ab.json"
    damaged.parent.mkdir()
    damaged.write_text("")
    with pytest.raises(RunFolderInUse, match="unreadable lease file"):
        RunLease(fs, f"file://{tmp_path}", LeaseConfig(ttl_s=60), lambda _: None).acquire()
    os.utime(damaged, (time.time() - 120, time.time() - 120))
    with RunLease(fs, f"file://{tmp_path}", LeaseConfig(ttl_s=60), lambda _: None):
        assert not damaged.exists()


def test_a_waiting_run_takes_the_lease_when_the_holder_lets_go(spark, tmp_path):
    fs, lines = HadoopFS(spark), []
    live = lease_file(tmp_path)
    threading.Timer(2.0, live.unlink).start()
    started = time.time()
    with RunLease(fs, f"file://{tmp_path}", LeaseConfig(wait_s=120), lines.append):
        assert time.time() - started >= 2.0
    assert any("waiting up to" in line for line in lines)


def test_of_runs_that_arrive_together_exactly_one_holds_the_lease(spark, tmp_path):
    fs = HadoopFS(spark)
    for round_ in range(4):
        run_dir = f"file://{tmp_path}/round-{round_}"
        outcomes, barrier = [], threading.Barrier(3)

        def contend():
            lease = RunLease(fs, run_dir, LeaseConfig(), lambda _: None)
            barrier.wait()
            try:
                lease.acquire()
            except RunFolderInUse:
                outcomes.append("refused")
                return
            except Exception as exc:  # noqa: BLE001 — shown in the assertion rather than lost in a thread
                outcomes.append(repr(exc))
                return
            outcomes.append("held")
            time.sleep(3)  # hold it while the others decide
            lease.release()

        threads = [threading.Thread(target=contend) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["held", "refused", "refused"]


def test_a_lease_file_withdrawn_between_the_listing_and_the_read_is_nobodys_lease(spark, tmp_path):
    withdrawn = lease_file(tmp_path)

    class WithdrawnOnRead(HadoopFS):
        def read_text(self, uri):
            if uri.endswith(withdrawn.name):
                withdrawn.unlink()  # its writer saw another lease and took its own back
            return super().read_text(uri)

    with RunLease(WithdrawnOnRead(spark), f"file://{tmp_path}", LeaseConfig(), lambda _: None) as lease:
        assert Path(lease.path[len("file://"):]).exists()


def test_a_lease_file_removed_while_its_holder_renews_it_marks_the_lease_lost(spark, tmp_path):
    class RemovedOnRead(HadoopFS):
        armed = False

        def read_text(self, uri):
            if self.armed:
                Path(uri[len("file://"):]).unlink()  # taken over between the renewer's check and its read
            return super().read_text(uri)

    fs = RemovedOnRead(spark)
    lease = RunLease(fs, f"file://{tmp_path}", LeaseConfig(ttl_s=10), lambda _: None)
    lease.acquire()
    fs.armed = True
    lease._renewer.join(timeout=10)  # the renewer's first beat is at ttl_s / 5; it ends once the lease is lost
    assert not lease._renewer.is_alive() and "was removed" in (lease._lost or "")  # said by the renewer
    with pytest.raises(LeaseLost, match="no longer holds"):
        lease.check()
    lease.release()


def test_a_far_future_expiry_counts_only_until_a_ttl_after_the_last_renewal(spark, tmp_path):
    fs, lines = HadoopFS(spark), []
    years = 10 * 365 * 86400
    claimed = lease_file(tmp_path, renewed_at=time.time() - 120, expires_at=time.time() + years)
    with RunLease(fs, f"file://{tmp_path}", LeaseConfig(ttl_s=60), lines.append):
        assert not claimed.exists()
    # A renewal time in the future too: the file system's time of its last write bounds it.
    claimed = lease_file(tmp_path, renewed_at=time.time() + years, expires_at=time.time() + years)
    os.utime(claimed, (time.time() - 120, time.time() - 120))
    with RunLease(fs, f"file://{tmp_path}", LeaseConfig(ttl_s=60), lines.append):
        assert not claimed.exists()
    assert sum("taking over" in line for line in lines) == 2


def test_a_renewal_that_stalls_past_the_ttl_loses_the_lease_to_the_run_that_took_over(spark, tmp_path):
    """A slow PUT (a GC pause, an NFS hang) lands after another run took the expired lease over: the
    stalled holder must find out and withdraw, and only the new holder may commit."""
    class StallingFS(HadoopFS):
        stall = threading.Event()
        go = threading.Event()

        def write_text(self, uri, text):
            if self.stall.is_set():
                self.go.wait(60)
            super().write_text(uri, text)

    run_dir, settings = f"file://{tmp_path}", LeaseConfig(ttl_s=10)
    stalled = RunLease(StallingFS(spark), run_dir, settings, lambda _: None)
    stalled.acquire()
    StallingFS.stall.set()  # its first renewal, at ttl_s / 5, hangs
    time.sleep(settings.ttl_s + 1)
    lines = []
    taker = RunLease(HadoopFS(spark), run_dir, settings, lines.append)
    taker.acquire()  # the stalled holder's file says it expired: taken over
    assert any("taking over" in line for line in lines)
    StallingFS.go.set()  # the stalled renewal lands now, after the take-over
    stalled._renewer.join(timeout=10)
    assert not stalled._renewer.is_alive() and "without a renewal, past its ttl" in (stalled._lost or "")
    with pytest.raises(LeaseLost, match="no longer holds"):
        stalled.check()
    taker.check()  # the stalled holder withdrew its file: the new holder is alone
    assert [p.name for p in (tmp_path / LEASE_DIR).glob("*.json")] == [f"{taker.attempt}.json"]
    stalled.release()
    taker.release()


def test_a_holder_that_sees_an_earlier_live_lease_after_renewing_stops(spark, tmp_path):
    fs = HadoopFS(spark)
    lease = RunLease(fs, f"file://{tmp_path}", LeaseConfig(ttl_s=10), lambda _: None)
    lease.acquire()
    lease_file(tmp_path, acquired_at=time.time() - 600)  # a live lease taken before this one's
    lease._renewer.join(timeout=10)
    assert "another run holds it too: other-host pid 4242" in (lease._lost or "")
    assert not Path(lease.path[len("file://"):]).exists()  # withdrawn
    with pytest.raises(LeaseLost, match="no longer holds"):
        lease.check()
    lease.release()


def test_a_run_whose_lease_was_taken_over_does_not_commit(spark, tmp_path):
    lease = RunLease(HadoopFS(spark), f"file://{tmp_path}", LeaseConfig(), lambda _: None)
    lease.acquire()
    Path(lease.path[len("file://"):]).unlink()  # another run took over after this one stalled
    with pytest.raises(LeaseLost, match="no longer holds"):
        runner.commit(HadoopFS(spark), f"file://{tmp_path}/x.tmp-1", f"file://{tmp_path}/x", "fp", lease)
    lease.release()


def test_small_files_on_a_hadoop_file_system_are_replaced_in_one_rename(spark, tmp_path):
    """The path HDFS takes (FileContext's rename with OVERWRITE), exercised on Hadoop's local file system."""
    fs = HadoopFS(spark)
    target = tmp_path / "_stats.json"
    target.write_text("old")
    fs._replace(f"file://{target}", '{"new": true}')
    assert json.loads(target.read_text()) == {"new": True}
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".crc")) == ["_stats.json"]
