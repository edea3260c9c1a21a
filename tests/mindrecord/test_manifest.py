"""The loader reads exactly the shards a stage's completion marker and manifest name, each once.

Stages are written here as the runner and the mindrecord stage leave them (shard files, ``.db`` index
files, ``_COMPLETE.json`` naming every file with its size, ``manifest.json`` listing the stages of a
dataset); the loader only names the files, so their bytes need not be MindRecord. What a training job
must never get: the shards of an unfinished stage, a stray file in a stage's folder, a shard twice, a
file outside the folders the manifest lists, or a host-local path from a remote stage's manifest.
"""
import json
import os

import pyarrow.fs as pafs
import pytest

from s3_server import s3_server, storage_options
from corpusmill.config import ConfigError
from corpusmill.run_folder import checksum_of_bytes, new_marker
from loader.shards import stage_shard_files
from udfs.mindrecord.manifest import check_compatible
from udfs.mindrecord.records import shard_name


def shard_files(path, cache_dir=None, options=None):
    from loader.dataset import shard_files as loader_shard_files  # imports MindSpore: only where used

    return loader_shard_files(path, cache_dir, options)


def write_stage(folder, shards, stages=None, marked=True):
    """A finished mindrecord stage of ``shards`` shards (with a manifest of ``stages`` when given)."""
    folder.mkdir(parents=True, exist_ok=True)
    for shard in range(shards):
        (folder / shard_name(shard)).write_bytes(b"shard %d" % shard)
        (folder / f"{shard_name(shard)}.db").write_bytes(b"index")
    (folder / "_stats.json").write_text(json.dumps({"mode": "sequences", "seq_len": 8, "shards": entry(".", shards)["shards"]}))
    if stages is not None:
        (folder / "manifest.json").write_text(json.dumps({"stages": stages}))
    if marked:
        (folder / "_COMPLETE.json").write_text(json.dumps(marker_of({p.name: p.read_bytes() for p in folder.iterdir()})))
    return folder


def marker_of(files):
    """The completion marker the runner writes for ``files`` (name -> bytes)."""
    return new_marker("f", {n: len(d) for n, d in files.items()}, {n: checksum_of_bytes(d) for n, d in files.items()})


def entry(stage, shards, names=None):
    names = names if names is not None else [shard_name(s) for s in range(shards)]
    return {"stage": stage, "mode": "sequences", "seq_len": 8, "shards": [{"file": n, "rows": 1, "tokens": 8} for n in names]}


def names(paths):
    return [os.path.relpath(p, os.path.dirname(os.path.dirname(p))) for p in paths]


def test_a_stage_and_the_earlier_stages_of_its_manifest_give_each_of_their_shards_once(tmp_path):
    first = write_stage(tmp_path / "first", 2)
    second = write_stage(tmp_path / "second", 3, [entry(f"file:{first}", 2), entry(".", 3)])
    assert names(shard_files(str(second))) == ["first/shard-00000.mindrecord", "first/shard-00001.mindrecord",
                                                "second/shard-00000.mindrecord", "second/shard-00001.mindrecord",
                                                "second/shard-00002.mindrecord"]
    assert shard_files(str(first / shard_name(0))) == [str(first / shard_name(0))]  # one file: as given


def test_a_local_stage_without_its_completion_marker_is_refused(tmp_path):
    stage = write_stage(tmp_path / "unfinished", 2, marked=False)
    with pytest.raises(FileNotFoundError, match=r"unfinished: no _COMPLETE.json; not a finished mindrecord stage$"):
        shard_files(str(stage))
    finished = write_stage(tmp_path / "next", 1, [entry(str(stage), 2), entry(".", 1)])
    with pytest.raises(FileNotFoundError, match="unfinished: no _COMPLETE.json"):  # listed by a manifest too
        shard_files(str(finished))


def test_a_stray_shard_in_the_folder_is_not_read(tmp_path):
    stage = write_stage(tmp_path / "stage", 2)
    (stage / shard_name(7)).write_bytes(b"left by a copy")
    (stage / f"{shard_name(7)}.db").write_bytes(b"index")
    assert names(shard_files(str(stage))) == ["stage/shard-00000.mindrecord", "stage/shard-00001.mindrecord"]
    (stage / shard_name(1)).write_bytes(b"changed since the stage finished")
    with pytest.raises(OSError, match=r"shard-00001.mindrecord: not the regular file of 7 bytes its _COMPLETE.json names"):
        shard_files(str(stage))


def test_a_shard_changed_since_its_stage_finished_is_refused_in_one_line_naming_it(tmp_path):
    stage = write_stage(tmp_path / "stage", 2)
    shard = stage / shard_name(1)
    shard.write_bytes(bytes(b ^ 0xFF for b in shard.read_bytes()))  # same size, other bytes
    with pytest.raises(OSError, match=r"stage: shard-00001.mindrecord does not match its xxh3_64 checksum") as refused:
        shard_files(str(stage))
    assert "\n" not in str(refused.value)
    later = write_stage(tmp_path / "later", 1, [entry(str(stage), 2), entry(".", 1)])
    with pytest.raises(OSError, match=r"stage: shard-00001.mindrecord does not match"):  # listed by a manifest too
        shard_files(str(later))


def test_a_marker_without_checksums_is_not_a_finished_stage(tmp_path):
    stage = write_stage(tmp_path / "stage", 1)
    marker = json.loads((stage / "_COMPLETE.json").read_text())
    (stage / "_COMPLETE.json").write_text(json.dumps({"fingerprint": "f", "files": marker["files"]}))
    with pytest.raises(ValueError, match="has no xxh3_64 checksum for each file"):
        shard_files(str(stage))


@pytest.mark.parametrize("listed, message", [
    (lambda first: [entry(str(first), 2), entry(f"file://{first}/", 2), entry(".", 1)], "lists the stage .*first/ twice"),
    (lambda first: [entry(str(first), 2, [shard_name(0), shard_name(0)]), entry(".", 1)], "lists a shard of .*first twice"),
    (lambda first: [entry(str(first), 1, [f"{first}/{shard_name(0)}"]), entry(".", 1)],
     r"shard '/.*' is not a \*.mindrecord file of its stage's folder"),
    (lambda first: [entry(str(first), 1, [f"../first/{shard_name(0)}"]), entry(".", 1)],
     r"shard '../first/shard-00000.mindrecord' is not a \*.mindrecord file of its stage's folder"),
    (lambda first: [entry(str(first), 1, [shard_name(5)]), entry(".", 1)],
     r"first/shard-00005.mindrecord: not among the files of its _COMPLETE.json"),
    (lambda first: [entry("first", 2), entry(".", 1)], "lists the relative path first"),
    (lambda first: [entry(str(first), 2)], r"does not list the stage's own shards \('.'\)"),
    (lambda first: [entry(str(first), 0, []), entry(".", 1)], "lists no shards of"),
    (lambda first: {"stages": "all"}, "no 'stages' list of objects"),
])
def test_a_manifest_naming_a_shard_twice_or_outside_its_stages_is_a_one_line_error(tmp_path, listed, message):
    first = write_stage(tmp_path / "first", 2)
    stages = listed(first)
    second = write_stage(tmp_path / "second", 1, stages if isinstance(stages, list) else None)
    if not isinstance(stages, list):
        (second / "manifest.json").write_text(json.dumps(stages))
    with pytest.raises((ValueError, OSError), match=message) as refused:
        shard_files(str(second))
    assert "\n" not in str(refused.value)


def test_a_remote_stage_cannot_point_the_loader_at_local_files(tmp_path):
    local = write_stage(tmp_path / "here", 1)
    with s3_server("manifests") as endpoint:  # moto's objects outlive a server: a bucket no other test uses
        options = storage_options(endpoint)
        s3 = pafs.S3FileSystem(**options)
        files = {}
        for name, data in ((shard_name(0), b"shard"), (f"{shard_name(0)}.db", b"index"),
                           ("manifest.json", json.dumps({"stages": [entry(f"file:{local}", 1), entry(".", 1)]}).encode())):
            with s3.open_output_stream(f"manifests/run/mindrecord/{name}") as out:
                out.write(data)
            files[name] = data
        with s3.open_output_stream("manifests/run/mindrecord/_COMPLETE.json") as out:
            out.write(json.dumps(marker_of(files)).encode())
        with pytest.raises(ValueError, match=r"manifest.json: lists the local path file:.*/here; a remote stage's "
                                             r"manifest may list remote stages only"):
            stage_shard_files("s3://manifests/run/mindrecord", str(tmp_path / "cache"), options)


def test_a_run_that_would_list_an_earlier_stage_twice_is_refused_before_writing():
    earlier = [entry("file:/runs/one/mindrecord", 2), entry("file:/runs/two/mindrecord", 2),
               entry("file:/runs/one/mindrecord/", 2)]  # "two"'s manifest lists "one", named again
    with pytest.raises(ConfigError, match=r"mindrecord.earlier: file:/runs/one/mindrecord/ is listed twice"):
        check_compatible(earlier, "sequences", 8)
    check_compatible(earlier[:2], "sequences", 8)
