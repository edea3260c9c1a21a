"""The scoring service as a real subprocess on loopback, its client, and the score stage in Spark.

One service (the shipped model, small limits so that limit errors are cheap to provoke) serves the
whole module; tests that kill or re-bind a service start their own.
"""
import collections
import http.client
import http.server
import io
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import numpy as np
import pyarrow as pa
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import ROOT, shared
from corpusmill.config import build
from jobs.config import PipelineConfig
from jobs.runner import run_stage, transformed
from jobs.stages.score import ScoreStage
from scoring_service.client import LocalService, ScoringClient, ScoringRequestError, ScoringUnavailable, encoded_body
from scoring_service.model.artifacts import DEFAULT_MODEL_DIR, MINDIR, SHIPPED_MODELS_DIR, read_info
from scoring_service.model.features import COUNT_BITS, LAYOUT_FEATURES, FeatureHasher, HashingSpec
from tools.fixtures.service_attacks import (SlowClients, address, bodies_at_once, connection_burst, peak_rss_mb,
                                            request_head, reset_peak_rss, score_head, send_head_then_wait,
                                            stream_without_answer_mb, zstd_arrow_bomb)

pytestmark = pytest.mark.service  # the scoring service as a subprocess
LIMITS = ["--max-request-texts", "64", "--max-queue-texts", "48", "--max-request-bytes", "300000",
          "--max-text-bytes", "20000", "--max-wait-ms", "20"]


@pytest.fixture(scope="module")
def service_process():
    local = LocalService(DEFAULT_MODEL_DIR, extra_args=LIMITS)
    local.start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def service(service_process):
    return service_process.url


def corpus_texts(n: int = 120):
    """Prose paragraphs and boilerplate-like lines from real text."""
    book = shared("corpora/en/gutenberg/chesterton-brown.txt").read_text(encoding="utf-8", errors="replace")
    paragraphs = [" ".join(p.split()) for p in book.split("\n\n") if len(p) > 300]
    with open(shared("corpora/low/sms-spam-collection.tsv"), encoding="utf-8") as fh:
        sms = [line.split("\t", 1)[1] for line in fh.read().splitlines()[1:]]
    texts = []
    for i in range(n // 2):
        texts += [paragraphs[i], sms[i]]
    return texts


def post(url, path, body, content_type, headers=None):
    parts = url.split("//", 1)[1]
    conn = http.client.HTTPConnection(*parts.split(":"), timeout=30)
    conn.request("POST", path, body=body, headers={"Content-Type": content_type, **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data, response


def get(url, path, headers=None):
    request = urllib.request.Request(url + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def metric_samples(url):
    """{(name, sorted labels): value} of every sample on the service's /metrics."""
    status, data = get(url, "/metrics")
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(data.decode()) for s in family.samples}


def arrow_body(texts):
    return arrow_table_body(pa.table({"text": pa.array(texts, type=pa.string())}))


def arrow_body_with_bytes(values):
    """A string column holding raw bytes (Arrow does not check UTF-8 when writing a cast view)."""
    binary = pa.array(values, type=pa.binary())
    return arrow_table_body(pa.table({"text": pa.Array.from_buffers(pa.string(), len(binary), binary.buffers())}))


def arrow_table_body(table):
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


SPEC = read_info(DEFAULT_MODEL_DIR).hashing


def encoded_table(texts):
    """The columns of a valid /v1/score/encoded body for ``texts``, as Python lists (easy to spoil)."""
    bags = FeatureHasher(SPEC).encode_bags(texts)
    body = encoded_body(bags, SPEC.digest)
    return pa.ipc.open_stream(body).read_all().to_pydict()


def encoded_arrow(columns, digest=SPEC.digest, kind=pa.int32(), compression=None):
    table = pa.table({name: pa.array(values, type=pa.list_(pa.uint8() if name == "content_classes" else kind))
                      for name, values in columns.items()})
    if digest is not None:
        table = table.replace_schema_metadata({"hashing": digest})
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=compression)) as writer:
        writer.write_table(table)
    return sink.getvalue()


def spoiled(**changes):
    columns = encoded_table(["A sentence of prose.", "Home | About"])
    for name, change in changes.items():
        columns[name] = change(columns[name])
    return columns


# ---------------------------------------------------------------- HTTP API

def test_json_and_arrow_requests_give_the_same_scores_and_model(service):
    texts = corpus_texts(10)
    status, data, response = post(service, "/v1/score", json.dumps({"texts": texts}), "application/json")
    assert status == 200
    answer = json.loads(data)
    status, data, response = post(service, "/v1/score", arrow_body(texts), "application/vnd.apache.arrow.stream")
    assert status == 200
    table = pa.ipc.open_stream(data).read_all()
    assert np.allclose(table.column("score").to_numpy(), answer["scores"], atol=1e-5)
    assert table.schema.metadata[b"model"].decode() == answer["model"] == response.getheader("X-Model-Name")
    assert answer["version"] == response.getheader("X-Model-Version")
    assert all(0.0 <= s <= 1.0 for s in answer["scores"])


def test_concurrent_clients_get_the_same_scores_as_one_sequential_client(service):
    texts = corpus_texts(160)
    sequential = ScoringClient(service, batch_size=8).score(texts)
    chunks = [texts[i::4] for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda part: ScoringClient(service, batch_size=8).score(part), chunks))
    concurrent = np.empty(len(texts), dtype=np.float32)
    for i, scores in enumerate(results):
        concurrent[i::4] = scores
    assert np.abs(concurrent - sequential).max() < 1e-5


@pytest.mark.parametrize("body, content_type, status, message", [
    (json.dumps({"texts": ["x"] * 65}), "application/json", 413, "exceed the limit of 64"),
    (json.dumps({"texts": ["y" * 20001]}), "application/json", 413, "bytes per text"),
    (json.dumps({"texts": ["z" * 19000] * 16}), "application/json", 413, "request body"),
    ("{not json", "application/json", 400, "malformed JSON"),
    (json.dumps({"documents": ["a"]}), "application/json", 400, "texts"),
    (json.dumps({"texts": [1, 2]}), "application/json", 400, "expected a string"),
    (b"\x00\x01 not arrow", "application/vnd.apache.arrow.stream", 400, "malformed Arrow"),
    ("texts=a", "application/x-www-form-urlencoded", 415, "unsupported Content-Type"),
    # malformed in every other way: 400, never a 500
    ('{"texts": ' + "[" * 100000 + "]" * 100000 + "}", "application/json", 400, "arrays and objects"),
    (b'{"texts": ["caf\xe9"]}', "application/json", 400, "malformed JSON"),
    (arrow_body(["complete"])[:-20], "application/vnd.apache.arrow.stream", 400, "malformed Arrow"),
    (arrow_body_with_bytes([b"caf\xe9"]), "application/vnd.apache.arrow.stream", 400, "malformed Arrow"),
    (arrow_table_body(pa.table({"text": [1, 2]})), "application/vnd.apache.arrow.stream", 400, "string column 'text'"),
    (arrow_table_body(pa.table({"words": ["a"]})), "application/vnd.apache.arrow.stream", 400, "string column 'text'"),
    (zstd_arrow_bomb(1000), "application/vnd.apache.arrow.stream", 415, "compressed Arrow"),
], ids=["texts", "text-bytes", "body-bytes", "json", "json-shape", "json-types", "arrow", "content-type", "nested",
        "non-utf8-json", "cut-arrow", "non-utf8-arrow", "int-arrow", "no-text-arrow", "zstd-arrow"])
def test_oversized_and_malformed_requests_get_clear_4xx(service, body, content_type, status, message):
    got, data, _ = post(service, "/v1/score", body, content_type)
    assert got == status and message in json.loads(data)["error"]
    # and the service goes on serving
    assert post(service, "/v1/score", json.dumps({"texts": ["fine"]}), "application/json")[0] == 200


def test_overload_is_answered_429_and_the_client_reports_it(service):
    status, data, response = post(service, "/v1/score", json.dumps({"texts": ["t"] * 50}), "application/json")
    assert status == 429 and response.getheader("Retry-After") == "1"
    client = ScoringClient(service, retries=1, backoff_s=0.01, batch_size=50)
    with pytest.raises(ScoringUnavailable, match="after 2 attempts.*HTTP 429"):
        client._score_request(["t"] * 50)
    # score() reads the service's limits first and sends requests that fit them.
    assert client.score(["t"] * 50).shape == (50,)
    with pytest.raises(ScoringRequestError, match="413"):
        ScoringClient(service, batch_size=64)._score_request(["x"] * 65)


def test_health_readiness_model_and_metrics_endpoints(service):
    assert get(service, "/healthz")[0] == 200
    assert get(service, "/readyz")[0] == 200
    status, data = get(service, "/v1/model")
    model = json.loads(data)
    assert status == 200 and model["loaded_from"] == MINDIR and 0 < model["threshold"] < 1
    assert get(service, "/nope")[0] == 404 and get(service, "/v1/score")[0] == 405
    assert "memory_log2_bits" not in model["hashing"] and get(service, "/v1/model/memory")[0] == 404  # none
    assert post(service, "/v1/score", json.dumps({"texts": ["hello there."]}), "application/json")[0] == 200
    samples = metric_samples(service)
    assert samples[("scoring_requests_total", (("code", "200"), ("endpoint", "/v1/score")))] >= 1
    assert samples[("scoring_errors_total", (("kind", "404"),))] >= 1
    assert samples[("scoring_texts_total", ())] >= 1
    assert samples[("scoring_batch_size_count", ())] >= 1 and samples[("scoring_inference_seconds_sum", ())] > 0
    assert samples[("scoring_request_seconds_count", ())] >= 1 and samples[("scoring_queue_texts", ())] == 0


def test_binding_off_loopback_requires_a_token_and_it_is_checked(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CORPUSMILL_SCORE_TOKEN"}
    refused = subprocess.run([sys.executable, "-m", "scoring_service", "serve", "--host", "0.0.0.0", "--port", "0"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "without a token" in refused.stderr

    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    with LocalService(DEFAULT_MODEL_DIR, extra_args=["--host", "0.0.0.0", "--token-file", str(token_file)]) as url:
        port = url.rsplit(":", 1)[1]
        local = f"http://127.0.0.1:{port}"
        body = json.dumps({"texts": ["hello there."]})
        assert post(local, "/v1/score", body, "application/json")[0] == 401
        assert post(local, "/v1/score", body, "application/json", {"Authorization": "Bearer wrong"})[0] == 401
        assert post(local, "/v1/score", body, "application/json", {"Authorization": "Bearer s3cret-token"})[0] == 200
        # RFC 7235: the scheme is case-insensitive
        assert post(local, "/v1/score", body, "application/json", {"Authorization": "bearer s3cret-token"})[0] == 200
        assert post(local, "/v1/score", body, "application/json", {"Authorization": "Basic s3cret-token"})[0] == 401
        assert get(local, "/healthz")[0] == 200 and get(local, "/metrics")[0] == 401
        assert ScoringClient(local, token="s3cret-token").score(["hello there."]).shape == (1,)


def service_children():
    """This process's child scoring services, by pid."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and b"scoring_service" in command and b"serve" in command:
            pids.append(int(entry))
    return pids


def test_a_service_launched_ahead_is_taken_over_not_started_twice():
    from udfs.score import scoring as score_module
    settings = build(PipelineConfig, {}).score
    key = score_module._service_key(settings)
    score_module.launch_local_service(settings, "yarn")  # executors elsewhere could not reach it
    assert key not in score_module._LAUNCHED
    before = set(service_children())  # the module's own service
    score_module.launch_local_service(settings, "local[2]")
    service = score_module._LAUNCHED[key]
    try:
        pid = service.process.pid
        score_module.launch_local_service(settings, "local[2]")
        assert score_module._LAUNCHED[key] is service
        assert set(service_children()) - before == {pid}  # no second process
        url = service.start()  # waits for the launched process
        assert service.process.pid == pid and get(url, "/readyz")[0] == 200
    finally:
        score_module._LAUNCHED.pop(key, None)
        service.stop()
    assert service.process is None and service.url is None


def test_sigterm_drains_and_exits_cleanly():
    service = LocalService(DEFAULT_MODEL_DIR)
    url = service.start()
    texts = corpus_texts(64)
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(lambda: ScoringClient(url, retries=0, batch_size=64).score(texts))
        time.sleep(0.05)
        service.process.send_signal(signal.SIGTERM)
        assert service.process.wait(30) == 0
        try:
            assert pending.result().shape == (64,)  # accepted before SIGTERM: answered
        except ScoringUnavailable as exc:
            assert "Connection refused" in str(exc) or "503" in str(exc)  # arrived after: refused
    service.stop()


# ---------------------------------------------------------------- hostile clients
# Each attack runs against the real service process; where memory is the point, its peak RSS
# (VmHWM, reset before the attack) is what is asserted.

def test_a_compressed_arrow_bomb_is_refused_before_it_is_decompressed(service_process):
    bomb = zstd_arrow_bomb(256 << 20)  # one 256 MB text: a few KB on the wire
    assert len(bomb) < 100_000
    pid = service_process.process.pid
    reset_peak_rss(pid)
    before = peak_rss_mb(pid)
    status, data, _ = post(service_process.url, "/v1/score", bomb, "application/vnd.apache.arrow.stream")
    grown = peak_rss_mb(pid) - before
    assert grown < 64, grown  # it was never decompressed (that would take hundreds of MB)
    assert status == 415 and "compressed Arrow" in json.loads(data)["error"]


def test_negative_malformed_and_oversized_content_lengths_are_answered_before_any_body(service_process):
    url, pid = service_process.url, service_process.process.pid
    # answered from the headers alone, at once: no body is read (a "-1" taken as "read until EOF"
    # would let a client stream without end)
    assert send_head_then_wait(url, score_head("-1"), timeout=10) == 400
    assert send_head_then_wait(url, score_head("12abc"), timeout=10) == 400
    assert send_head_then_wait(url, score_head(str(10 ** 12)), timeout=10) == 413
    chunked = request_head("POST", "/v1/score", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    assert send_head_then_wait(url, chunked, timeout=10) == 411
    reset_peak_rss(pid)
    before = peak_rss_mb(pid)
    taken = stream_without_answer_mb(url, score_head("-1"), limit_mb=200)
    assert taken < 200 and peak_rss_mb(pid) - before < 64
    assert post(url, "/v1/score", json.dumps({"texts": ["fine"]}), "application/json")[0] == 200


def test_slow_clients_do_not_lock_other_clients_out(service):
    # 64 connections dripping their headers must not crowd out a normal client.
    with SlowClients(service, 64, drip_s=0.5) as slow:
        for _ in range(5):
            assert post(service, "/v1/score", json.dumps({"texts": ["a normal client"]}), "application/json")[0] == 200
        assert slow.open_count() == 64  # still within their deadline


@pytest.fixture(scope="module")
def short_deadline_service():
    with LocalService(DEFAULT_MODEL_DIR, extra_args=["--request-timeout-s", "2", "--max-connections", "80"]) as url:
        yield url


def test_a_request_must_arrive_whole_within_its_deadline(short_deadline_service):
    url = short_deadline_service
    with SlowClients(url, 64, drip_s=0.5) as slow:
        deadline = time.monotonic() + 30  # bound of the test only: the service's limit is 2 s
        while slow.open_count() and time.monotonic() < deadline:
            assert post(url, "/v1/score", json.dumps({"texts": ["a normal client"]}), "application/json")[0] == 200
        assert slow.open_count() == 0  # every dripping connection was closed (408) by the service
    # a body that never comes whole is cut off too, and so is a connection that says nothing
    head = score_head("100")
    with socket.create_connection(address(url)) as dribbling, socket.create_connection(address(url)) as silent:
        dribbling.sendall(head + b'{"texts": [')
        for sock in (dribbling, silent):
            sock.settimeout(30)
            assert sock.recv(4096) == b""
    samples = metric_samples(url)
    assert samples[("scoring_request_timeouts_total", ())] >= 65
    # past the connection cap a connection is answered 503 at once, and that slot frees when it closes
    with SlowClients(url, 80, drip_s=0.5):
        assert send_head_then_wait(url, request_head("GET", "/healthz", {}), timeout=10) == 503
    assert get(url, "/healthz")[0] == 200


@pytest.fixture(scope="module")
def roomy_service():
    """Default limits but for the size of one text (the test sends 1 MB texts)."""
    local = LocalService(DEFAULT_MODEL_DIR, extra_args=["--max-text-bytes", str(2 << 20)])
    local.start()
    yield local
    local.stop()


def test_backpressure_counts_the_bytes_of_requests_in_hand(roomy_service):
    body = json.dumps({"texts": ["word " * 200_000] * 48}).encode()  # 48 texts of 1 MB
    pid = roomy_service.process.pid
    reset_peak_rss(pid)
    before = peak_rss_mb(pid)
    statuses = bodies_at_once(roomy_service.url, 16, body)
    grown = peak_rss_mb(pid) - before
    assert grown < 1024, (grown, statuses)  # 16 accepted bodies took 2.6 GB
    # 256 MB of requests in hand (the default): 5 of these 48 MB bodies; the rest 429 from their headers
    assert statuses.count(200) == 5 and statuses.count(429) == 11, statuses
    assert metric_samples(roomy_service.url)[("scoring_queue_bytes", ())] == 0


def test_a_json_body_of_many_tiny_values_is_refused_before_it_is_parsed(roomy_service):
    body = b'{"texts": [' + b"[]," * (20 << 20) + b"[]]}"  # 60 MB: 20 M lists of 56 bytes once parsed
    pid = roomy_service.process.pid
    reset_peak_rss(pid)
    before = peak_rss_mb(pid)
    status, data, _ = post(roomy_service.url, "/v1/score", body, "application/json")
    grown = peak_rss_mb(pid) - before
    assert grown < 400, grown  # parsed, it took 1.3 GB
    assert status == 400 and "arrays and objects" in json.loads(data)["error"]


def test_a_burst_of_200_connections_is_accepted_without_resets(roomy_service):
    outcomes = connection_burst(roomy_service.url, 200)
    assert outcomes == [200] * 200, collections.Counter(outcomes)


def test_client_disconnects_leave_no_traceback_in_the_log(service_process):
    url = service_process.url
    body = json.dumps({"texts": corpus_texts(40)}).encode()
    head = score_head(str(len(body)))
    for _ in range(20):
        with socket.create_connection(address(url)) as sock:
            sock.sendall(head + body)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
    assert post(url, "/v1/score", json.dumps({"texts": ["still here"]}), "application/json")[0] == 200
    log = service_process.log_tail(lines=1000)
    assert "Traceback" not in log and "BrokenPipe" not in log and "ConnectionReset" not in log, log[-2000:]


def test_a_model_that_does_not_answer_in_time_gets_503_not_a_hang():
    # The batch waits 5 s for company, past the 0.5 s the service waits for an answer: a wedged or
    # dead batching thread looks the same to the request.
    with LocalService(DEFAULT_MODEL_DIR, extra_args=["--max-wait-ms", "5000", "--answer-timeout-s", "0.5"]) as url:
        status, data, response = post(url, "/v1/score", json.dumps({"texts": ["waits"]}), "application/json")
        assert status == 503 and "no answer from the model within 0.5 s" in json.loads(data)["error"]
        assert response.getheader("Retry-After") == "1"


def test_the_local_service_leaves_no_log_file_even_when_its_parent_is_killed(tmp_path):
    script = ("import os, signal\n"
              "from scoring_service.client import LocalService\n"
              "from scoring_service.model.artifacts import DEFAULT_MODEL_DIR\n"
              "LocalService(DEFAULT_MODEL_DIR).start()\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([sys.executable, "-c", script], env=env, timeout=180)
    assert killed.returncode == -signal.SIGKILL
    assert not list(tmp_path.iterdir())
    # a service that cannot start explains why, from the tail of its log
    with pytest.raises(ScoringUnavailable, match="(?s)did not become ready.*not a model directory"):
        LocalService(str(tmp_path / "nonexistent"), startup_timeout_s=60).start()
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- the score stage in Spark

def test_score_settings_are_validated():
    from corpusmill.config import ConfigError

    with pytest.raises(ConfigError, match="score.on_failure: must be one of fail, null"):
        build(PipelineConfig, {"score": {"on_failure": "retry"}})
    with pytest.raises(ConfigError, match=r"score.threshold: must be within \[0, 1\]"):
        build(PipelineConfig, {"score": {"threshold": 1.5}})
    with pytest.raises(ConfigError, match="score.model: file not found"):
        build(PipelineConfig, {"score": {"model": "/nonexistent/model"}})
    with pytest.raises(ConfigError, match="score.model: file not found"):
        build(PipelineConfig, {"score": {"model": "no-such-shipped-model"}})
    shipped = build(PipelineConfig, {"score": {"model": "fluency"}}).score  # by name, from any directory
    assert shipped.model_dir == os.path.join(SHIPPED_MODELS_DIR, "fluency")
    with pytest.raises(ConfigError, match="score.service_url"):
        build(PipelineConfig, {"score": {"service_url": "127.0.0.1:8808"}})
    with pytest.raises(ConfigError, match="score.service_url: must be http://host:port, got 'h:1'"):
        build(PipelineConfig, {"score": {"service_url": ["http://a:1", "h:1"]}})
    with pytest.raises(ConfigError, match="score.service_url: must be a URL or a non-empty list of URLs"):
        build(PipelineConfig, {"score": {"service_url": []}})
    with pytest.raises(ConfigError, match="score.mode: must be one of service, local"):
        build(PipelineConfig, {"score": {"mode": "remote"}})
    with pytest.raises(ConfigError, match="score.device: must be one of CPU, GPU, Ascend"):
        build(PipelineConfig, {"score": {"device": "TPU"}})
    urls = build(PipelineConfig, {"score": {"service_url": ["http://a:1", "http://b:2"]}}).score
    assert urls.service_urls == ("http://a:1", "http://b:2") and hash(urls)  # hashable: one client per worker


def test_batch_policy_keeps_known_scores_and_applies_the_failure_policy():
    import pandas as pd

    from udfs.score.scoring import score_texts

    dead = ScoringClient("http://127.0.0.1:9", retries=0)
    texts = pd.Series(["a text", "another"], index=[5, 6])
    known = pd.Series([0.25, 0.75], index=[5, 6])
    assert score_texts(texts, known, dead, "fail").tolist() == [0.25, 0.75]  # nothing sent
    assert score_texts(texts, None, dead, "null").isna().all()
    with pytest.raises(ScoringUnavailable, match="after 1 attempt "):
        score_texts(texts, pd.Series([0.5, None], index=[5, 6]), dead, "fail")


class EndlessAnswers(http.server.BaseHTTPRequestHandler):
    """A server that is not a scoring service: its model names an n-gram memory, and every other answer
    claims 2 GiB and streams bytes until the client hangs up (at most 256 MiB)."""

    spec = HashingSpec(memory_log2_bits=20, memory_sha256="0" * 64).to_dict()
    sent: list = []

    def do_GET(self):
        if self.path == "/v1/model":
            body = json.dumps({"limits": {"max_request_texts": 8, "max_queue_texts": 8, "max_request_bytes": 1 << 20},
                               "hashing": self.spec}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(2 << 30))
        self.end_headers()
        chunk, sent = b"\xff" * (1 << 20), 0
        try:
            while sent < 256 << 20:
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        self.sent.append(sent)

    def log_message(self, *args):
        pass


def test_the_client_reads_no_more_of_an_answer_than_it_may():
    EndlessAnswers.sent.clear()  # the handler's class keeps what each answer got out
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EndlessAnswers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        # The memory of 2**20 bits is 131,072 bytes: the client stops reading there and says so.
        with pytest.raises(ScoringRequestError, match="/v1/model/memory answered more than 131072 bytes"):
            ScoringClient(url, retries=0).score(["a text"])
        with pytest.raises(ScoringRequestError, match="/v1/anything answered more than 1000 bytes"):
            ScoringClient(url, retries=0).request("GET", "/v1/anything", max_bytes=1000)
        deadline = time.monotonic() + 10
        while len(EndlessAnswers.sent) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        # What the server got out before the client hung up: its socket buffers, not the 256 MiB.
        assert len(EndlessAnswers.sent) == 2 and max(EndlessAnswers.sent) < 64 << 20
    finally:
        server.shutdown()
        server.server_close()


def score_config(**score):
    return build(PipelineConfig, {"score": score, "io": {"parquet_compression": "snappy"}})


def docs_frame(spark, texts, partitions=2):
    rows = [(f"doc-{i:04d}", f"https://example.org/{i}", t) for i, t in enumerate(texts)]
    return spark.createDataFrame(rows, "id string, url string, text string").repartition(partitions, "id")


def read_outcomes(spark, stage_dir):
    out = {}
    for folder in ("kept", "rejected", "errors"):
        path = os.path.join(stage_dir, folder)
        out[folder] = spark.read.parquet(path).toPandas() if os.path.exists(path) else None
    return out


def test_score_stage_scores_through_spark_and_thresholds_separately(spark, service, tmp_path):
    texts = corpus_texts(120)
    expected = ScoringClient(service).score(texts)
    cfg = score_config(service_url=service, batch_size=16)
    stage_dir = str(tmp_path / "score")
    stats = run_stage(ScoreStage(spark, cfg), docs_frame(spark, texts), stage_dir, "fp1", len(texts))
    assert stats["reconciled"] and stats["records_in"] == 120 and not stats["errors"]
    threshold = stats["threshold"]
    assert stats["model"]["name"] and sum(stats["score_histogram"].values()) == 120
    out = read_outcomes(spark, stage_dir)
    kept, rejected = out["kept"], out["rejected"]
    assert len(kept) + len(rejected) == 120 and len(kept) > 30 and len(rejected) > 30
    assert (kept.quality_score >= threshold).all() and (rejected.quality_score < threshold).all()
    assert set(rejected.reject_rule) == {"quality_score"}
    assert np.allclose(rejected.reject_value.astype(float), rejected.quality_score, atol=1e-6)
    both = kept._append(rejected).sort_values("id")
    assert np.abs(both.quality_score.to_numpy() - expected).max() < 1e-5
    assert {"id", "url", "text"} <= set(kept.columns)

    # A new threshold re-uses the stored scores: no service is started, the model is not needed.
    rethresholded = RecordingScoreStage(spark, score_config(threshold=0.9))
    scored = rethresholded.load(stage_dir)
    with ExitStack() as resources:
        transformed(rethresholded, scored, resources)
    assert rethresholded.started == []
    again = str(tmp_path / "rethreshold")
    stats2 = run_stage(rethresholded, scored, again, "fp2", 120)
    assert stats2["reconciled"] and stats2["kept"] == int((expected >= 0.9).sum())
    redone = read_outcomes(spark, again)
    both2 = redone["kept"]._append(redone["rejected"]).sort_values("id")
    assert np.array_equal(both2.quality_score.to_numpy(), both.quality_score.to_numpy())


class RecordingScoreStage(ScoreStage):
    """The real stage, noting the service it started (and, with ``fail_write``, failing its write)."""

    def __init__(self, spark, cfg, fail_write=False):
        super().__init__(spark, cfg)
        self.fail_write, self.started = fail_write, []

    def service_url(self, resources):
        urls = super().service_url(resources)
        self.started += urls
        assert all(get(url, "/readyz")[0] == 200 for url in urls)
        return urls

    def write(self, out, tmp_dir):
        if self.fail_write:
            raise RuntimeError("disk full")
        super().write(out, tmp_dir)


def test_without_a_service_url_the_stage_runs_its_own_and_stops_it(spark, tmp_path):
    texts = corpus_texts(20)
    stage = RecordingScoreStage(spark, score_config())
    stats = run_stage(stage, docs_frame(spark, texts), str(tmp_path / "score"), "fp", len(texts))
    assert stats["reconciled"] and stats["kept"] + sum(stats["rejected"].values()) == 20
    [url] = stage.started  # started on a free loopback port with the shipped model ...
    assert url.startswith("http://127.0.0.1:")
    with pytest.raises(OSError):  # ... and stopped when the stage finished writing
        get(url, "/healthz")


def test_a_failing_stage_still_stops_the_service_it_started(spark, tmp_path):
    stage = RecordingScoreStage(spark, score_config(), fail_write=True)
    with pytest.raises(RuntimeError, match="disk full"):
        run_stage(stage, docs_frame(spark, corpus_texts(4)), str(tmp_path / "score"), "fp", 4)
    [url] = stage.started
    with pytest.raises(OSError):
        get(url, "/healthz")
    assert not list(tmp_path.iterdir())  # no stage folder, no temporary folder left behind


def kill_after_first_texts(service: LocalService):
    """Kill the service (SIGKILL) as soon as it has scored something: a crash mid-stage."""
    def watch():
        while True:
            if metric_samples(service.url)[("scoring_texts_total", ())] > 0:
                service.process.kill()
                return
            time.sleep(0.02)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_service_killed_mid_stage_fails_clearly_and_a_rerun_resumes(spark, service, tmp_path):
    texts = corpus_texts(96)
    dying = LocalService(DEFAULT_MODEL_DIR)
    dying.start()
    cfg = score_config(service_url=dying.url, batch_size=4, retries=2, backoff_s=0.05, timeout_s=10)
    stage_dir = str(tmp_path / "score")
    watcher = kill_after_first_texts(dying)
    with pytest.raises(Exception) as failure:
        run_stage(ScoreStage(spark, cfg), docs_frame(spark, texts, partitions=24), stage_dir, "fp", len(texts))
    watcher.join(10)
    dying.stop()
    assert "ScoringUnavailable" in str(failure.value) and "after 3 attempts" in str(failure.value)
    assert not os.path.exists(stage_dir) and not [p for p in os.listdir(tmp_path) if p.startswith("score.tmp")]

    # Re-run once a service is back: the stage completes from scratch, every row scored.
    stats = run_stage(ScoreStage(spark, score_config(service_url=service, batch_size=16)),
                      docs_frame(spark, texts, partitions=24), stage_dir, "fp", len(texts))
    assert stats["reconciled"] and not stats["errors"]


def test_service_killed_mid_stage_under_null_policy_writes_nulls_then_rescoring_fills_them(spark, service, tmp_path):
    texts = corpus_texts(96)
    dying = LocalService(DEFAULT_MODEL_DIR)
    dying.start()
    cfg = score_config(service_url=dying.url, batch_size=4, retries=1, backoff_s=0.05, timeout_s=10,
                       on_failure="null")
    stage_dir = str(tmp_path / "score")
    watcher = kill_after_first_texts(dying)
    stats = run_stage(ScoreStage(spark, cfg), docs_frame(spark, texts, partitions=24), stage_dir, "fp", len(texts))
    watcher.join(10)
    dying.stop()
    nulls = stats["errors"].get("score_unavailable", 0)
    assert stats["reconciled"] and nulls > 0
    errors = read_outcomes(spark, stage_dir)["errors"]
    assert errors.quality_score.isna().all() and len(errors) == nulls

    # Running the stage again on its own output scores only the rows without a score.
    stage = ScoreStage(spark, score_config(service_url=service, batch_size=16))
    stats2 = run_stage(stage, stage.load(stage_dir), str(tmp_path / "rerun"), "fp2", len(texts))
    assert stats2["reconciled"] and not stats2["errors"]
    before = read_outcomes(spark, stage_dir)
    after = read_outcomes(spark, str(tmp_path / "rerun"))
    scored_before = before["kept"]._append(before["rejected"]).set_index("id").quality_score
    scored_after = after["kept"]._append(after["rejected"]).set_index("id").quality_score
    assert np.array_equal(scored_after[scored_before.index].to_numpy(), scored_before.to_numpy())


ARROW = "application/vnd.apache.arrow.stream"


def test_the_encoded_endpoint_gives_the_same_scores_as_the_text_endpoint(service):
    texts = corpus_texts(40) + ["", "   \n ", "我们今天去了公园。\n天气很好！", "x" * 50000]
    from_texts = ScoringClient(service, encode=False).score(texts)
    from_encoded = ScoringClient(service).score(texts)  # hashed here, sent to /v1/score/encoded
    assert np.array_equal(from_encoded, from_texts)
    status, data, response = post(service, "/v1/score/encoded", encoded_arrow(encoded_table(texts[:3])), ARROW)
    table = pa.ipc.open_stream(data).read_all()
    assert status == 200 and np.array_equal(table.column("score").to_numpy(), from_texts[:3])
    assert table.schema.metadata[b"model"].decode() == response.getheader("X-Model-Name")
    model = json.loads(get(service, "/v1/model")[1])
    assert model["hashing_digest"] == SPEC.digest and HashingSpec.from_dict(model["hashing"]) == SPEC


@pytest.mark.parametrize("body, content_type, status, message", [
    (encoded_arrow(spoiled(content=lambda rows: [rows[0] + [SPEC.buckets], rows[1]])), ARROW, 400,
     f"content: ids must lie in [0, {SPEC.buckets})"),
    (encoded_arrow(spoiled(lines=lambda rows: [[-1], rows[1]])), ARROW, 400, "lines: ids must lie in"),
    # A column the model's spec has no rows for (the default model has no memory).
    (encoded_arrow(spoiled(layout=lambda rows: [rows[0][:-1] + [SPEC.layout_vocab], rows[1]])), ARROW, 400,
     f"layout: ids must lie in [0, {SPEC.layout_vocab})"),
    (encoded_arrow(spoiled(content_classes=lambda rows: [rows[0][:-1] + [COUNT_BITS], rows[1]])), ARROW, 400,
     f"content_classes: ids must lie in [0, {COUNT_BITS})"),
    (encoded_arrow(spoiled(content_classes=lambda rows: [rows[0][:-1], rows[1] + [0]])), ARROW, 400,
     "one class per content id"),
    (encoded_arrow(spoiled(), kind=pa.int64()), ARROW, 400, "list<int32> columns"),
    (encoded_arrow({k: v for k, v in spoiled().items() if k != "layout"}), ARROW, 400, "list<int32> columns"),
    (encoded_arrow(spoiled(content=lambda rows: [None, rows[1]])), ARROW, 400, "null rows or ids"),
    (encoded_arrow(spoiled(lines=lambda rows: [[None], rows[1]])), ARROW, 400, "null rows or ids"),
    (encoded_arrow(spoiled(layout=lambda rows: [rows[0][:-1], rows[1]])), ARROW, 400, "ids; the model's hashing "
     f"gives exactly {LAYOUT_FEATURES}"),
    (encoded_arrow(spoiled(content=lambda rows: [[1] * (SPEC.max_content_ids + 1), rows[1]])), ARROW, 413,
     f"content[0] has {SPEC.max_content_ids + 1} ids"),
    (encoded_arrow(spoiled(), digest=None), ARROW, 400, "metadata 'hashing' missing"),
    (encoded_arrow(spoiled(), digest="0123456789abcdef"), ARROW, 409, "the model hashes with"),
    (encoded_arrow(encoded_table(["t"] * 65)), ARROW, 413, "exceed the limit of 64"),
    (encoded_arrow(spoiled(), compression="zstd"), ARROW, 415, "compressed Arrow"),
    (encoded_arrow(spoiled())[:-30], ARROW, 400, "malformed Arrow"),
    (json.dumps({"texts": ["a"]}), "application/json", 415, "takes application/vnd.apache.arrow.stream only"),
], ids=["id-past-table", "negative-id", "layout-id-past-table", "class-past-top", "classes-not-aligned", "int64",
        "no-layout", "null-row", "null-id", "layout-width", "long-row", "no-digest", "other-hashing", "rows", "zstd", "cut", "json"])
def test_malformed_encoded_requests_get_clear_4xx(service, body, content_type, status, message):
    got, data, _ = post(service, "/v1/score/encoded", body, content_type)
    assert got == status and message in json.loads(data)["error"], data
    assert post(service, "/v1/score/encoded", encoded_arrow(spoiled()), ARROW)[0] == 200


def test_a_list_of_urls_with_a_dead_replica_still_scores_everything(spark, service, tmp_path):
    texts = corpus_texts(48)
    expected = ScoringClient(service).score(texts)
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    client = ScoringClient([dead, service], backoff_s=0.01)
    assert np.array_equal(client.score(texts), expected) and client.url == service  # moved on, and stays
    # In Spark: tasks start on replica (partition id mod 2), so half of them start on the dead one.
    cfg = score_config(service_url=[dead, service], batch_size=8, backoff_s=0.01)
    stage_dir = str(tmp_path / "score")
    stats = run_stage(ScoreStage(spark, cfg), docs_frame(spark, texts, partitions=4), stage_dir, "fp", len(texts))
    assert stats["reconciled"] and not stats["errors"]
    out = read_outcomes(spark, stage_dir)
    scored = out["kept"]._append(out["rejected"]).sort_values("id").quality_score.to_numpy()
    assert np.abs(scored - expected).max() < 1e-5  # other batch compositions: float rounding only
    with pytest.raises(ScoringUnavailable, match=r"\(2 replicas\) unavailable after 2 attempts"):
        ScoringClient([dead, dead], retries=1, backoff_s=0.01).score(["x"])


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def replica_pids(pid):
    """The model processes a service spawned (not multiprocessing's resource tracker)."""
    children = open(f"/proc/{pid}/task/{pid}/children").read().split()
    return [int(c) for c in children if b"spawn_main" in open(f"/proc/{c}/cmdline", "rb").read()]


def test_two_workers_serve_behind_one_front_and_metrics_count_for_both():
    service = LocalService(DEFAULT_MODEL_DIR, extra_args=["--workers", "2", "--max-wait-ms", "1"])
    url = service.start()
    try:
        replicas = replica_pids(service.process.pid)
        model = json.loads(get(url, "/v1/model")[1])
        assert len(replicas) == 2 and model["workers"] == 2 and model["loaded_from"] == MINDIR
        texts = corpus_texts(160)
        alone = ScoringClient(url, batch_size=8).score(texts)
        with ThreadPoolExecutor(4) as pool:
            parts = list(pool.map(lambda i: ScoringClient(url, batch_size=8).score(texts[i::4]), range(4)))
        together = np.empty(len(texts), dtype=np.float32)
        for i, scores in enumerate(parts):
            together[i::4] = scores
        assert np.abs(together - alone).max() < 1e-5  # other batch compositions, same scores
        samples = metric_samples(url)  # one /metrics for the whole service
        assert samples[("scoring_texts_total", ())] == samples[("scoring_batch_size_sum", ())] == 2 * len(texts)
        passes = [samples[("scoring_replica_batches_total", (("replica", str(i)),))] for i in range(2)]
        assert min(passes) > 0 and sum(passes) == samples[("scoring_batch_size_count", ())]
    finally:
        service.stop()
    assert not [pid for pid in replicas if os.path.exists(f"/proc/{pid}")]  # stopped with the front


def test_local_mode_scores_in_the_python_workers_as_the_service_does(spark, service, tmp_path):
    texts = corpus_texts(60)
    expected = ScoringClient(service).score(texts)
    stage = RecordingScoreStage(spark, score_config(mode="local"))
    stage_dir = str(tmp_path / "score")
    stats = run_stage(stage, docs_frame(spark, texts), stage_dir, "fp", len(texts))
    assert stage.started == []  # no service: each Python worker loaded the model itself
    assert stats["reconciled"] and not stats["errors"]
    assert stats["threshold"] == read_info(DEFAULT_MODEL_DIR).threshold and stats["model"]["name"]
    out = read_outcomes(spark, stage_dir)
    local = out["kept"]._append(out["rejected"]).sort_values("id").quality_score.to_numpy()
    assert np.abs(local - expected).max() < 1e-5  # other batch compositions: float rounding only
