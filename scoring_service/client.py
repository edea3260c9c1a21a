"""Client of the scoring service, and the local service process the pipeline starts when none is given.

``ScoringClient`` keeps one HTTP/1.1 connection per replica open (keep-alive), hashes texts itself and
sends the encoded batches as Arrow IPC streams (or the texts, to a service without the encoded
endpoint), and retries connection failures, timeouts, 429 and 5xx on the next replica, with
exponential backoff and jitter (honouring ``Retry-After``) once every replica has failed. When the retries are spent it raises ``ScoringUnavailable`` naming the
service, the attempts and the last error. A 4xx other than 429 is the caller's fault and is raised
at once as ``ScoringRequestError``.

``LocalService`` starts ``python -m scoring_service serve`` on a free loopback port, waits until
it is ready, and stops it (SIGTERM, then SIGKILL) on exit; the service also exits by itself if
this process dies.
"""
from __future__ import annotations

import atexit
import http.client
import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Sequence, Union
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa

from scoring_service.model.features import Bags, FeatureHasher, HashingSpec, NgramMemory

ARROW_STREAM = "application/vnd.apache.arrow.stream"
RETRYABLE_STATUS = {429, 500, 502, 503, 504}
# The most an answer may hold (the n-gram memory has its own, exact size): scores and model facts are far
# smaller, and what is longer is not the service's answer.
MAX_ANSWER_BYTES = 64 << 20


class ScoringUnavailable(RuntimeError):
    """The service could not be reached or kept failing after every retry."""


class ScoringRequestError(RuntimeError):
    """The service refused the request itself (4xx), or answered more than it may: retrying would not
    help."""


class ScoringClient:
    """Scores texts on one service or spread over several replicas (``urls``).

    Requests go to one replica (``prefer`` picks it, e.g. by partition id, so that a job's tasks
    spread over the replicas) and stay there while it answers. A connection error, timeout, 429 or
    5xx moves the request to the next replica at once; only when every replica has failed it in a
    round does the client back off and start another round (``retries`` more rounds at most).
    With ``encode`` (and a service that publishes its hashing spec), texts are hashed here and sent
    to ``/v1/score/encoded``: the service only runs the network (a model with an n-gram memory sends it
    once, from ``/v1/model/memory``).
    """

    def __init__(self, urls: Union[str, Sequence[str]], timeout_s: float = 60.0, retries: int = 4,
                 backoff_s: float = 0.5, backoff_max_s: float = 10.0, token: Optional[str] = None,
                 batch_size: int = 256, encode: bool = True):
        self.urls = [u.rstrip("/") for u in ([urls] if isinstance(urls, str) else urls)]
        if not self.urls:
            raise ValueError("scoring service: no URL given")
        self._hosts = []
        for url in self.urls:
            parts = urlsplit(url)
            if parts.scheme != "http" or not parts.hostname:
                raise ValueError(f"scoring service URL must be http://host:port, got {url!r}")
            self._hosts.append((parts.hostname, parts.port or 80))
        self.timeout_s, self.retries = timeout_s, retries
        self.backoff_s, self.backoff_max_s = backoff_s, backoff_max_s
        self.token, self.batch_size, self.encode = token, batch_size, encode
        self._conns: Dict[int, http.client.HTTPConnection] = {}
        self._current = 0
        self._info: Optional[dict] = None
        self._hasher: Optional[FeatureHasher] = None
        self._request_texts = batch_size
        self._request_bytes = 0

    @property
    def url(self) -> str:
        """The replica requests go to now."""
        return self.urls[self._current]

    def prefer(self, key: int) -> None:
        """Send to replica ``key mod len(urls)`` from now on (while it answers)."""
        self._current = key % len(self.urls)

    # -- transport

    def _connection(self, replica: int) -> http.client.HTTPConnection:
        if replica not in self._conns:
            self._conns[replica] = http.client.HTTPConnection(*self._hosts[replica], timeout=self.timeout_s)
        return self._conns[replica]

    def _drop(self, replica: int) -> None:
        conn = self._conns.pop(replica, None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        for replica in list(self._conns):
            self._drop(replica)

    def _request_once(self, replica: int, method: str, path: str, body: Optional[bytes],
                      content_type: Optional[str], max_bytes: int):
        headers = {"Connection": "keep-alive"}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        conn = self._connection(replica)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read(max_bytes + 1)
        except (OSError, http.client.HTTPException):
            self._drop(replica)  # a broken keep-alive connection is replaced on the next attempt
            raise
        if len(data) > max_bytes:
            self._drop(replica)  # the rest of the answer is never read
            raise ScoringRequestError(f"scoring service {self.urls[replica]}{path} answered more than "
                                      f"{max_bytes} bytes")
        if response.getheader("Connection", "").lower() == "close":
            self._drop(replica)
        return response.status, response.getheader("Retry-After"), response.getheader("Content-Type", ""), data

    def request(self, method: str, path: str, body: Optional[bytes] = None,
                content_type: Optional[str] = None, max_bytes: int = MAX_ANSWER_BYTES) -> bytes:
        last_error = "no attempt made"
        for attempt in range(self.retries + 1):
            retry_after = None
            for _ in range(len(self.urls)):  # a round: each replica once, from the current one
                replica = self._current
                try:
                    status, retry_after, _, data = self._request_once(replica, method, path, body, content_type,
                                                                      max_bytes)
                except (OSError, http.client.HTTPException) as exc:
                    last_error = f"{self.urls[replica]}: {type(exc).__name__}: {exc}"
                else:
                    if status == 200:
                        return data
                    message = _error_text(data)
                    if status not in RETRYABLE_STATUS:
                        raise ScoringRequestError(f"scoring service {self.urls[replica]}{path} answered "
                                                  f"{status}: {message}")
                    last_error = f"{self.urls[replica]}: HTTP {status}: {message}"
                self._current = (replica + 1) % len(self.urls)
            if attempt < self.retries:
                time.sleep(self._backoff(attempt, retry_after))
        attempts = self.retries + 1
        where = self.urls[0] if len(self.urls) == 1 else f"({len(self.urls)} replicas)"
        raise ScoringUnavailable(f"scoring service {where} unavailable after {attempts} "
                                 f"attempt{'s' if attempts > 1 else ''} ({path}): {last_error}")

    def _backoff(self, attempt: int, retry_after: Optional[str]) -> float:
        delay = min(self.backoff_max_s, self.backoff_s * (2 ** attempt)) * random.uniform(0.5, 1.0)
        if retry_after:
            try:
                delay = max(delay, min(float(retry_after), self.backoff_max_s))
            except ValueError:
                pass
        return delay

    # -- API

    def model_info(self) -> dict:
        return json.loads(self.request("GET", "/v1/model"))

    def _limits(self) -> dict:
        if self._info is None:
            info = self.model_info()
            limits = info["limits"]
            # Requests no larger than the service accepts; texts cut to what the model reads.
            self._request_texts = min(self.batch_size, int(limits["max_request_texts"]),
                                      int(limits["max_queue_texts"]))
            self._request_bytes = int(limits["max_request_bytes"])
            if self.encode and "hashing" in info:  # a service that takes encoded texts
                spec = HashingSpec.from_dict(info["hashing"])
                memory = None
                if spec.memory_log2_bits:
                    size = NgramMemory.bytes_of(spec.memory_log2_bits)
                    memory = NgramMemory.from_bytes(self.request("GET", "/v1/model/memory", max_bytes=size), spec)
                self._hasher = FeatureHasher(spec, memory)
            self._info = info
        return self._info

    def score(self, texts: Sequence[str]) -> np.ndarray:
        """Scores of ``texts`` (float32), in requests of at most ``batch_size`` texts (and of at most
        what the service accepts)."""
        info = self._limits()
        chars = int(info["text_chars_used"])
        out = np.empty(len(texts), dtype=np.float32)
        step = self._request_texts
        for start in range(0, len(texts), step):
            part = [("" if t is None else t)[:chars] for t in texts[start:start + step]]
            if self._hasher is not None:
                out[start:start + len(part)] = self.score_bags(self._hasher.encode_bags(part))
            else:
                out[start:start + len(part)] = self._score_request(part)
        return out

    def score_bags(self, bags: Bags) -> np.ndarray:
        """Scores of encoded texts; a batch whose body would pass the service's size limit goes in halves."""
        info = self._limits()
        body = encoded_body(bags, info["hashing_digest"])
        if len(body) > self._request_bytes and bags.rows > 1:
            half = bags.rows // 2
            return np.concatenate([self.score_bags(bags.take(0, half)), self.score_bags(bags.take(half, bags.rows))])
        return self._scores_of(self.request("POST", "/v1/score/encoded", body, ARROW_STREAM), bags.rows)

    def _score_request(self, texts: List[str]) -> np.ndarray:
        table = pa.table({"text": pa.array(texts, type=pa.string())})
        return self._scores_of(self.request("POST", "/v1/score", _arrow_stream(table), ARROW_STREAM), len(texts))

    def _scores_of(self, data: bytes, count: int) -> np.ndarray:
        scores = pa.ipc.open_stream(data).read_all().column("score").to_numpy()
        if len(scores) != count:
            raise ScoringUnavailable(f"scoring service {self.url} returned {len(scores)} scores for {count} texts")
        return scores.astype(np.float32)


def encoded_body(bags: Bags, hashing_digest: str) -> bytes:
    """The Arrow body of ``/v1/score/encoded``: one list<int32> column per bag, and the content's
    count classes (list<uint8>)."""
    def column(ids, offsets, value_type=pa.int32()):
        return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), pa.array(ids, type=value_type))

    width = bags.layout.shape[1]
    table = pa.table({"content": column(bags.content, bags.content_offsets),
                      "content_classes": column(bags.content_classes, bags.content_offsets, pa.uint8()),
                      "lines": column(bags.lines, bags.lines_offsets),
                      "layout": column(bags.layout.reshape(-1), np.arange(0, width * (bags.rows + 1), width))})
    return _arrow_stream(table.replace_schema_metadata({"hashing": hashing_digest}))


def _arrow_stream(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _error_text(data: bytes) -> str:
    try:
        return str(json.loads(data).get("error", data[:200]))
    except (ValueError, AttributeError):
        return data[:200].decode("utf-8", "replace")


class LocalService:
    """``with LocalService(model_dir) as url:`` — a scoring service on a free loopback port."""

    def __init__(self, model_dir: str, device: str = "CPU", startup_timeout_s: float = 180.0,
                 extra_args: Sequence[str] = ()):
        self.model_dir, self.device = model_dir, device
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = list(extra_args)
        self.process: Optional[subprocess.Popen] = None
        self.url: Optional[str] = None
        self._log = None
        self._ready = threading.Event()
        self._found: List[str] = []

    def start(self) -> str:
        """Launch the service (unless ``launch`` has) and wait until it is ready; its URL."""
        if self.process is None:
            self.launch()
        if self.url is None:
            self.url = self._wait_ready()
        return self.url

    def launch(self) -> "LocalService":
        """Start the service's process without waiting for it (``start`` waits)."""
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env.pop("CORPUSMILL_SCORE_TOKEN", None)  # loopback only; the embedded service needs none
        # The service's stderr, in a file without a name: the system removes it once closed, even
        # when this process is killed, and its tail explains a failed start.
        self._log = tempfile.TemporaryFile(prefix="scoring-service-", suffix=".log")
        cmd = [sys.executable, "-m", "scoring_service", "serve", "--model", self.model_dir,
               "--host", "127.0.0.1", "--port", "0", "--device", self.device, "--exit-with-parent",
               *self.extra_args]
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log, env=env, text=True)
        atexit.register(self.stop)
        self._ready.clear()
        self._found.clear()
        threading.Thread(target=self._read_stdout, args=(self.process.stdout,), name="scoring-service-stdout",
                         daemon=True).start()
        return self

    def _read_stdout(self, stdout) -> None:
        # Keep reading after the ready line so that the child never blocks on a full pipe.
        for line in stdout:
            if not self._found and line.startswith("{") and '"ready"' in line:
                self._found.append(json.loads(line)["url"])
                self._ready.set()
        self._ready.set()

    def _wait_ready(self) -> str:
        self._ready.wait(self.startup_timeout_s)
        if not self._found:
            tail = self.log_tail()
            self.stop()
            raise ScoringUnavailable(f"local scoring service did not become ready within "
                                     f"{self.startup_timeout_s:.0f} s; end of its log:\n{tail}")
        return self._found[0]

    def log_tail(self, lines: int = 20, max_bytes: int = 64 << 10) -> str:
        if not self._log:
            return ""
        size = os.fstat(self._log.fileno()).st_size
        self._log.seek(max(0, size - max_bytes))
        text = self._log.read(max_bytes).decode("utf-8", "replace")
        return "".join(text.splitlines(keepends=True)[-lines:])

    def stop(self, grace_s: float = 15.0) -> None:
        if self.process is None:
            return
        atexit.unregister(self.stop)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()
        self.process, self.url = None, None
        if self._log:
            self._log.close()
            self._log = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
