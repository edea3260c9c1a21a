"""The scoring server's Prometheus metrics: requests by endpoint and code, errors, texts scored,
requests and connections refused for overload, request timeouts, pending texts and bytes, forward
passes by replica, batch sizes and latencies. ``GET /metrics`` renders them; the batcher, the byte
budget, the connection guard and the ASGI app each update their own.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class Metrics:
    """The server's Prometheus metrics, in a registry of its own: several servers (and batchers) may
    live in one process, as in tests, and the global default registry would refuse their twins."""

    LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
    BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)

    def __init__(self):
        self.registry = registry = CollectorRegistry()
        # Counters are named without "_total": prometheus_client appends it.
        self.requests = Counter("scoring_requests", "HTTP requests by endpoint and status code",
                                ["endpoint", "code"], registry=registry)
        self.errors = Counter("scoring_errors", "Failed requests by status code; failed forward passes as "
                              "kind=inference", ["kind"], registry=registry)
        self.texts = Counter("scoring_texts", "Texts scored", registry=registry)
        self.rejected_overload = Counter("scoring_rejected_overload", "Requests answered 429: the pending "
                                         "queue was full", registry=registry)
        self.rejected_connections = Counter("scoring_rejected_connections", "Connections answered 503: past "
                                            "the connection limit", registry=registry)
        self.request_timeouts = Counter("scoring_request_timeouts", "Connections closed because a request "
                                        "did not arrive whole within request_timeout_s", registry=registry)
        self.queue_texts = Gauge("scoring_queue_texts", "Texts submitted and not yet scored", registry=registry)
        self.queue_bytes = Gauge("scoring_queue_bytes", "Body bytes of the requests being read, decoded, "
                                 "queued or scored", registry=registry)
        self.replica_batches = Counter("scoring_replica_batches", "Forward passes by model replica (serve "
                                       "--workers)", ["replica"], registry=registry)
        self.batch_size = Histogram("scoring_batch_size", "Texts per forward pass", buckets=self.BATCH_BUCKETS,
                                    registry=registry)
        self.inference_seconds = Histogram("scoring_inference_seconds", "Seconds per forward pass",
                                           buckets=self.LATENCY_BUCKETS, registry=registry)
        self.request_seconds = Histogram("scoring_request_seconds", "Seconds per request, from its headers to "
                                         "the answer", buckets=self.LATENCY_BUCKETS, registry=registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)
