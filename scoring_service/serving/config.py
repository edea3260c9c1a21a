"""The scoring server's settings: one frozen dataclass of where to listen, which model to run on which
devices and in how many replicas, and every limit the service enforces (batch size and wait, pending
texts and bytes, request and text sizes, open connections, timeouts). ``problems()`` names the
settings that cannot work together, so that ``serve`` refuses them before it loads a model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from scoring_service.model.scorer import CPU_THREADS

DEVICES = ("CPU", "GPU", "Ascend")


@dataclass(frozen=True)
class ServerConfig:
    model_dir: str
    host: str = "127.0.0.1"
    port: int = 8808  # 0 = any free port (reported on stdout when ready)
    backend: str = "mindspore"
    device: str = "CPU"  # CPU, GPU or Ascend
    # Model replicas, each in a process of its own behind this one HTTP front (1: the model runs in
    # the front's process). Replica i runs on device_ids[i % len(device_ids)].
    workers: int = 1
    device_ids: Tuple[int, ...] = (0,)
    cpu_threads: int = CPU_THREADS  # MindSpore's CPU kernel threads per replica (device CPU)
    max_batch: int = 512  # texts merged into one forward pass
    max_wait_ms: float = 5.0  # how long the first text of a batch waits for company
    max_queue_texts: int = 16384  # pending texts beyond which requests get 429
    max_queue_bytes: int = 256 << 20  # bytes of requests being handled beyond which requests get 429
    max_request_texts: int = 4096
    max_request_bytes: int = 64 << 20
    max_text_bytes: int = 1 << 20
    max_connections: int = 1024  # open connections; idle and slow ones are closed by request_timeout_s
    backlog: int = 2048  # connections the kernel queues before they are accepted
    request_timeout_s: float = 30.0  # a request's headers and body, from its connection's last answer
    answer_timeout_s: float = 120.0  # the model's answer to a queued request
    drain_timeout_s: float = 30.0
    token: Optional[str] = None

    def problems(self) -> List[str]:
        found = []
        if self.max_queue_bytes < self.max_request_bytes:
            found.append(f"max_queue_bytes ({self.max_queue_bytes}) must be at least max_request_bytes "
                         f"({self.max_request_bytes}): a request of the largest size would never fit")
        if self.max_queue_texts < 1 or self.max_request_texts < 1 or self.max_connections < 1:
            found.append("max_queue_texts, max_request_texts and max_connections must be positive")
        if min(self.request_timeout_s, self.answer_timeout_s, self.drain_timeout_s) <= 0:
            found.append("request_timeout_s, answer_timeout_s and drain_timeout_s must be positive")
        if self.workers < 1:
            found.append(f"workers must be at least 1, got {self.workers}")
        if self.cpu_threads < 1:
            found.append(f"cpu_threads must be at least 1, got {self.cpu_threads}")
        if self.device not in DEVICES:
            found.append(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if not self.device_ids or min(self.device_ids) < 0:
            found.append(f"device ids must be non-negative, got {list(self.device_ids)}")
        return found
