"""One writer per run folder: a lease in ``<run>/_lease/``, with an owner, a heartbeat and an expiry.

Stages read each other's committed folders, so the unit of exclusion is the run folder, not a stage:
a second run on the same ``--output``/``--run`` (an Airflow retry beside a zombie task, a double
trigger, two operators) would otherwise delete the first one's temporary folders, write into the
same chunk folders or swap ``kept/`` under a stage that is reading it.

Taking the lease needs no atomic create, which object stores lack: a run writes its own lease file
(``_lease/<attempt>.json``), then lists the folder. It holds the lease when its file is the only
live one there; otherwise it withdraws its file, and looks again after a random pause, so that two
runs that arrived together do not both give up. Any file system whose listing shows a finished
write (local, HDFS, S3, GCS, ABFS) keeps this safe: of two writers, the later one to write sees
the other's file.

A lease is live until its ``expires_at``, and never longer than ``ttl_s`` after it was last written
(its ``renewed_at``, or the file's own modification time if earlier), so a lease file claiming a
far-future expiry cannot block the folder. The holder renews it every ``ttl_s / 5`` seconds from a
thread. After every renewal it checks that the renewal came within ``ttl_s`` of the one before (a
renewal that stalled longer may land after another run took over) and that no other live lease file
taken before its own is there (a run arriving later withdraws its own); if not, it withdraws its
file and has lost the lease. Before each commit it checks the same.
A holder on this host whose process is gone (a killed driver) is taken over at once; one on another
host after its expiry.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable, List, Optional

from corpusmill.config import ConfigError, defaults_from_yaml
from jobs.fs import HadoopFS

LEASE_DIR = "_lease"


@dataclass(frozen=True)
@defaults_from_yaml("lease")
class LeaseConfig:
    # A holder that has not renewed its lease for this long is presumed dead and is taken over. It
    # is renewed every ttl_s / 5 seconds, so a driver stalled longer than that (a long GC pause, a
    # lost network) may lose it: it then stops before its next commit.
    ttl_s: int
    # How long a second run waits for the holder to finish before it stops (0: stop at once).
    wait_s: int

    def validate(self, prefix: str) -> None:
        if self.ttl_s < 10:
            raise ConfigError(f"{prefix}.ttl_s: must be at least 10 seconds, got {self.ttl_s}")
        if self.wait_s < 0:
            raise ConfigError(f"{prefix}.wait_s: must be 0 (stop at once) or a number of seconds")


class RunFolderInUse(Exception):
    """Another live run holds the run folder's lease."""


class LeaseLost(Exception):
    """This run's lease was taken over (it went unrenewed past its expiry): it must not commit."""


def _process_started(pid: int) -> Optional[str]:
    """The start time of a local process (clock ticks since boot), telling a reused pid from the
    process that wrote a lease; None where /proc does not say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _alive_here(pid: int, started: Optional[str]) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    return started is None or _process_started(pid) in (None, started)


@dataclass(frozen=True)
class Holder:
    """What a lease file says of its owner, and where it is."""
    path: str
    attempt: str
    host: str
    pid: int
    pid_started: Optional[str]
    acquired_at: float
    expires_at: float  # as the holder wrote it, bounded by its last renewal + ttl_s (``RunLease._read``)

    def describe(self, now: float) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.acquired_at))
        return (f"{self.host} pid {self.pid} (attempt {self.attempt}, since {since}, lease expires in "
                f"{max(0, round(self.expires_at - now))} s unless renewed)")

    def is_stale(self, now: float) -> bool:
        if self.expires_at <= now:
            return True
        return self.host == socket.gethostname() and not _alive_here(self.pid, self.pid_started)


class RunLease:
    """The lease on one run folder, held from ``acquire`` to ``release`` (or the end of a ``with``)."""

    def __init__(self, fs: HadoopFS, run_dir: str, settings: LeaseConfig, echo: Callable[[str], None] = print):
        self.fs, self.run_dir, self.settings, self.echo = fs, run_dir.rstrip("/"), settings, echo
        self.attempt = uuid.uuid4().hex[:12]
        self.path = f"{self.run_dir}/{LEASE_DIR}/{self.attempt}.json"
        self._acquired_at = 0.0
        self._renewed_at = 0.0  # when this run last wrote its lease file
        self._stop = threading.Event()
        self._lost: Optional[str] = None
        self._renewer: Optional[threading.Thread] = None

    def __enter__(self) -> "RunLease":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def _record(self) -> dict:
        now = time.time()
        return {"attempt": self.attempt, "host": socket.gethostname(), "pid": os.getpid(),
                "pid_started": _process_started(os.getpid()), "acquired_at": self._acquired_at,
                "renewed_at": now, "expires_at": now + self.settings.ttl_s}

    def holders(self) -> List[Holder]:
        """The live leases of other runs; stale ones (expired, or of a dead process on this host)
        are deleted on the way, each with a line saying whose it was."""
        live, now = [], time.time()
        for path in self.fs.list_dir(f"{self.run_dir}/{LEASE_DIR}"):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if not name.endswith(".json") or name.startswith(".") or path.endswith(f"/{self.attempt}.json"):
                continue
            holder = self._read(path, now)
            if holder is None:
                continue
            if holder.is_stale(now):
                self.echo(f"corpusmill: taking over {self.run_dir} from {holder.host} pid {holder.pid} "
                          f"(attempt {holder.attempt}): its lease expired or its process is gone")
                self.fs.delete(path)
                continue
            live.append(holder)
        return sorted(live, key=lambda h: (h.acquired_at, h.attempt))

    def _read(self, path: str, now: float) -> Optional[Holder]:
        """A lease file as a Holder, live until its ``expires_at`` but never past ``ttl_s`` after its last
        renewal (its ``renewed_at``, or the file system's time of its last write if earlier). One that
        cannot be read (cut short, damaged) counts as live until a ttl after it was last written."""
        try:
            text = self.fs.read_text(path)
        except Exception:  # noqa: BLE001 — local and Hadoop file systems raise different errors
            if not self.fs.exists(path):
                return None  # withdrawn by its writer between the listing and the read
            raise
        try:
            written = self.fs.modified_at(path)
        except Exception:  # noqa: BLE001 — deleted meanwhile: nobody's lease
            return None
        try:
            record = json.loads(text)
            acquired_at = float(record["acquired_at"])
            renewed_at = min(float(record.get("renewed_at", acquired_at)), written)
            return Holder(path, str(record["attempt"]), str(record["host"]), int(record["pid"]),
                          record.get("pid_started"), acquired_at,
                          min(float(record["expires_at"]), renewed_at + self.settings.ttl_s))
        except (ValueError, KeyError, TypeError, OverflowError):
            return Holder(path, path.rsplit("/", 1)[-1][:-len(".json")], "unknown (unreadable lease file)", -1,
                          None, written, written + self.settings.ttl_s)

    def _try_once(self) -> Optional[Holder]:
        """Write this run's lease file and keep it if no other live one is there; else withdraw it
        and return the other holder."""
        self._acquired_at = time.time()
        record = self._record()
        self.fs.write_json(self.path, record)
        self._renewed_at = record["renewed_at"]
        others = self.holders()
        if not others:
            return None
        self.fs.delete(self.path)
        return others[0]

    def acquire(self) -> None:
        deadline = time.time() + self.settings.wait_s
        told = False
        while True:
            holder = None
            for _ in range(8):  # runs that arrived together withdraw, then try again apart
                holder = self._try_once()
                if holder is None:
                    self._start_renewing()
                    return
                time.sleep(random.uniform(0.2, 1.0))
                if self.holders():
                    break
            now = time.time()
            if now >= deadline:
                raise RunFolderInUse(
                    f"{self.run_dir} is in use by another run: {holder.describe(now)}. Wait for it to end, or "
                    f"give --wait SECONDS (lease.wait_s) to queue behind it. If that run is dead (killed, its "
                    f"host lost), its lease is taken over once it expires; to take over at once, delete "
                    f"{holder.path}")
            if not told:
                self.echo(f"corpusmill: {self.run_dir} is in use by {holder.describe(now)}; waiting up to "
                          f"{round(deadline - now)} s")
                told = True
            time.sleep(min(5.0, max(0.5, deadline - now)))

    def _start_renewing(self) -> None:
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew_until_released, name="corpusmill-lease", daemon=True)
        self._renewer.start()

    def _renew_until_released(self) -> None:
        while not self._stop.wait(self.settings.ttl_s / 5):
            try:
                current = json.loads(self.fs.read_text(self.path)) if self.fs.exists(self.path) else None
            except Exception:  # noqa: BLE001 — unreadable, or removed since the check: not ours any more
                current = None
            if not isinstance(current, dict) or current.get("attempt") != self.attempt:
                self._lost = f"its lease file {self.path} was removed (taken over by another run?)"
                return
            record = self._record()
            try:
                self.fs.write_json(self.path, record)
            except Exception as exc:  # noqa: BLE001 — a failed renewal is tried again at the next beat
                self.echo(f"corpusmill: could not renew the lease {self.path}: {str(exc).splitlines()[0][:200]}")
                continue
            self._lost = self._still_held()
            if self._lost is not None:
                self._withdraw()
                return
            self._renewed_at = record["renewed_at"]

    def _still_held(self) -> Optional[str]:
        """Why this run no longer holds the lease, or None while it does. It does not when its last
        renewal lies more than ``ttl_s`` back (its file said it expired meanwhile: a renewal that
        stalled, or a stalled driver, and another run may have taken over), or when another live
        lease file there was taken before this one (a run arriving after it withdraws its own)."""
        now = time.time()
        if now - self._renewed_at > self.settings.ttl_s:
            return (f"its lease went {now - self._renewed_at:.0f} s without a renewal, past its ttl of "
                    f"{self.settings.ttl_s} s (another run may have taken over)")
        ours = (self._acquired_at, self.attempt)
        earlier = [h for h in self.holders() if (h.acquired_at, h.attempt) < ours]
        if earlier:
            return f"another run holds it too: {earlier[0].describe(now)}"
        return None

    def _withdraw(self) -> None:
        """Delete this run's lease file: released, or lost (so that the run that took over does not
        see two holders)."""
        try:
            self.fs.delete(self.path)
        except Exception as exc:  # noqa: BLE001 — the file expires on its own
            self.echo(f"corpusmill: could not withdraw the lease {self.path}: {str(exc).splitlines()[0][:200]}")

    def check(self) -> None:
        """Raise LeaseLost unless this run still holds the lease (``_still_held``, and its file is
        there): called before every commit."""
        if self._lost is None and not self.fs.exists(self.path):
            self._lost = f"its lease file {self.path} is gone (taken over by another run?)"
        if self._lost is None:
            self._lost = self._still_held()
        if self._lost is not None:
            raise LeaseLost(f"this run no longer holds {self.run_dir}: {self._lost}; it stops without committing")

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None
        self._withdraw()  # its own attempt's file: no other run writes it


def lease_settings(cfg, wait_s: Optional[int] = None) -> LeaseConfig:
    """The config's lease section, with ``--wait`` over its wait_s."""
    settings = cfg.lease
    return settings if wait_s is None else dataclasses.replace(settings, wait_s=wait_s)
