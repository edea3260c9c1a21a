"""Hostile clients of the scoring service, on loopback: shared by tests/score/test_scoring_service.py and
bench/service_abuse.py. Each is bounded in connections, bytes and time.
"""
from __future__ import annotations

import http.client
import io
import json
import select
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Tuple
from urllib.parse import urlsplit

import pyarrow as pa


def address(url: str) -> Tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname, parts.port


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory (VmHWM) since it started or since ``reset_peak_rss``."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def reset_peak_rss(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM to the current RSS (Linux, proc(5))


def zstd_arrow_bomb(text_bytes: int) -> bytes:
    """An Arrow IPC stream, zstd-compressed, of one text of ``text_bytes`` bytes: kilobytes on the wire."""
    table = pa.table({"text": pa.array(["a" * text_bytes], type=pa.string())})
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table)
    return sink.getvalue()


def request_head(method: str, path: str, headers: dict) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def score_head(content_length: str) -> bytes:
    """The headers of a JSON POST /v1/score declaring ``content_length`` (sent as given)."""
    return request_head("POST", "/v1/score", {"Content-Type": "application/json", "Content-Length": content_length})


def read_status(sock: socket.socket, timeout: float) -> Optional[int]:
    """The status code of the answer on ``sock`` within ``timeout`` s; None when none came (or the
    connection was closed without one)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionError):
        pass
    if not data.startswith(b"HTTP/1.1 "):
        return None
    return int(data.split(b" ", 2)[1])


def send_head_then_wait(url: str, head: bytes, timeout: float) -> Optional[int]:
    """Send a request's headers and no body: the status the service answers with, if any."""
    with socket.create_connection(address(url), timeout=timeout) as sock:
        sock.sendall(head)
        return read_status(sock, timeout)


def stream_without_answer_mb(url: str, head: bytes, limit_mb: int) -> int:
    """Send ``head`` then up to ``limit_mb`` MB of body while the service lets us: the MB it took."""
    chunk = b"x" * (1 << 20)
    sent = 0
    with socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(head)
        try:
            while sent < limit_mb:
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:  # answered (or closed): the rest would not be read
                    break
                sock.sendall(chunk)
                sent += 1
        except OSError:
            pass
    return sent


class SlowClients:
    """``n`` connections that send a request's first bytes, then one more byte every ``drip_s``
    seconds (slowloris). ``open_count()`` tells how many the service has not closed yet."""

    def __init__(self, url: str, n: int, drip_s: float):
        self.url, self.n, self.drip_s = url, n, drip_s
        self.sockets: List[socket.socket] = []
        self.open: List[bool] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drip, daemon=True)

    def __enter__(self) -> "SlowClients":
        for _ in range(self.n):
            sock = socket.create_connection(address(self.url), timeout=10)
            sock.sendall(b"POST /v1/score HTTP/1.1\r\nHost: localhost\r\n")
            self.sockets.append(sock)
            self.open.append(True)
        self._thread.start()
        return self

    def _drip(self) -> None:
        while not self._stop.wait(self.drip_s):
            for i, sock in enumerate(self.sockets):
                if self.open[i]:
                    try:
                        sock.sendall(b"X")
                        readable, _, _ = select.select([sock], [], [], 0)
                        if readable:  # an answer (408) or the end: the service gave up on it
                            self.open[i] = False
                    except OSError:
                        self.open[i] = False

    def open_count(self) -> int:
        return sum(self.open)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        for sock in self.sockets:
            sock.close()


def timed_post(url: str, body, content_type: str = "application/json", timeout: float = 60.0):
    """(status or the name of the connection error, seconds) of one POST /v1/score on a new connection."""
    started = time.perf_counter()
    try:
        conn = http.client.HTTPConnection(*address(url), timeout=timeout)
        conn.request("POST", "/v1/score", body=body, headers={"Content-Type": content_type})
        response = conn.getresponse()
        response.read()
        conn.close()
        status = response.status
    except OSError as exc:
        status = type(exc).__name__
    return status, time.perf_counter() - started


def connection_burst(url: str, n: int) -> List:
    """``n`` clients open a connection each at the same moment and ask for one score: their outcomes,
    the status code or the name of the connection error."""
    barrier = threading.Barrier(n)
    body = json.dumps({"texts": ["a short text to score."]})

    def one(_):
        barrier.wait()
        return timed_post(url, body)[0]

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


def bodies_at_once(url: str, n: int, body: bytes, content_type: str = "application/json") -> List[Optional[int]]:
    """``n`` connections send a request's headers together, then the body to those not answered
    already: the status of each answer (None where none came)."""
    head = request_head("POST", "/v1/score", {"Content-Type": content_type, "Content-Length": len(body)})
    sockets = [socket.create_connection(address(url), timeout=60) for _ in range(n)]
    try:
        for sock in sockets:
            sock.sendall(head)
        answered_early = set()
        while True:  # answers to the headers alone (429) come at once; stop when none came for a second
            readable, _, _ = select.select([s for s in sockets if s not in answered_early], [], [], 1.0)
            if not readable:
                break
            answered_early.update(readable)
        senders = [threading.Thread(target=send_quietly, args=(sock, body)) for sock in sockets
                   if sock not in answered_early]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        return [read_status(sock, 60) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def send_quietly(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:
        pass  # the service closed the connection: its answer says why
