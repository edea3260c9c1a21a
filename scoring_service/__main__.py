"""``python -m scoring_service {serve,train,evaluate}``; the shipped model's training data is built by
``python -m tools.quality_corpus``."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Optional

from scoring_service.model.artifacts import DEFAULT_MODEL_DIR, NetShape, model_dir_of
from scoring_service.model.scorer import CPU_THREADS


def _serve(args) -> int:
    from scoring_service.serving import ServerConfig, resolve_token, serve

    config = ServerConfig(model_dir=args.model, host=args.host, port=args.port, backend=args.backend,
                          device=args.device, workers=args.workers, cpu_threads=args.cpu_threads,
                          device_ids=tuple(args.device_id), max_batch=args.max_batch, max_wait_ms=args.max_wait_ms,
                          max_queue_texts=args.max_queue_texts, max_queue_bytes=args.max_queue_bytes,
                          max_request_texts=args.max_request_texts, max_request_bytes=args.max_request_bytes,
                          max_text_bytes=args.max_text_bytes, max_connections=args.max_connections,
                          backlog=args.backlog, request_timeout_s=args.request_timeout_s,
                          answer_timeout_s=args.answer_timeout_s, token=resolve_token(args.token_file))
    return serve(config, exit_with_parent=args.exit_with_parent)


def _train(args) -> int:
    from scoring_service.model.features import HashingSpec
    from scoring_service.training.train import DataSettings, TrainSettings, train

    notes = None
    if args.notes:
        with open(args.notes, encoding="utf-8") as fh:
            notes = fh.read()
    train(args.positive, args.negative, args.out, args.name, args.version,
          hashing=HashingSpec(buckets=args.buckets, max_chars=args.max_chars, memory_log2_bits=args.memory_bits),
          shape=NetShape(dim=args.dim, hidden=args.hidden, members=args.members),
          settings=TrainSettings(epochs=args.epochs, patience=args.patience, batch_size=args.batch_size,
                                 learning_rate=args.learning_rate, seed=args.seed),
          eval_dir=args.eval_dir, notes=notes, device=args.device,
          data_settings=DataSettings(max_docs_per_language=args.max_docs_per_language,
                                     **({"negatives_per_positive": args.negatives_per_positive}
                                        if args.negatives_per_positive is not None else {})))
    return 0


def _evaluate(args) -> int:
    import numpy as np

    from scoring_service.model.scorer import TextScorer
    from scoring_service.training import evaluation
    from scoring_service.training.corpus import read_examples

    scorer = TextScorer.load(args.model, device=args.device)
    pos = [e.text for e in read_examples(args.positive)]
    neg = [e.text for e in read_examples(args.negative)]
    scores = scorer.score(pos + neg)
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    threshold = scorer.info.threshold if args.threshold is None else args.threshold
    print(json.dumps(evaluation.summary(labels, scores, threshold), indent=2))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scoring_service",
                                     description="MindSpore text-quality model: train, evaluate, serve.")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the HTTP batch scoring service")
    serve.add_argument("--model", default=DEFAULT_MODEL_DIR, type=model_dir_of,
                       help="model directory, or a shipped model's name: default, fluency (default: default)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind; non-loopback requires a token")
    serve.add_argument("--port", type=int, default=8808, help="port; 0 picks a free one (printed when ready)")
    serve.add_argument("--backend", default="mindspore")
    serve.add_argument("--device", default="CPU", choices=("CPU", "GPU", "Ascend"))
    serve.add_argument("--device-id", default=[0], type=lambda v: [int(i) for i in v.split(",")],
                       help="device id, or a comma-separated list: replica i runs on the (i mod n)-th (default 0)")
    serve.add_argument("--workers", type=int, default=1,
                       help="model replicas, each in a process of its own behind one HTTP front (default 1: "
                            "the model runs in the front's process)")
    serve.add_argument("--cpu-threads", type=int, default=CPU_THREADS,
                       help="MindSpore CPU kernel threads per replica (device CPU; default %(default)s: its idle "
                            "threads spin, so add replicas with --workers rather than threads)")
    serve.add_argument("--max-batch", type=int, default=512, help="texts merged into one forward pass")
    serve.add_argument("--max-wait-ms", type=float, default=5.0,
                       help="wait for more texts to fill a batch (not once its content ids fill a forward pass)")
    serve.add_argument("--max-queue-texts", type=int, default=16384, help="queued texts before 429")
    serve.add_argument("--max-queue-bytes", type=int, default=256 << 20,
                       help="body bytes of the requests in hand before 429 (at least --max-request-bytes)")
    serve.add_argument("--max-request-texts", type=int, default=4096)
    serve.add_argument("--max-request-bytes", type=int, default=64 << 20)
    serve.add_argument("--max-text-bytes", type=int, default=1 << 20)
    serve.add_argument("--max-connections", type=int, default=1024, help="open connections before 503")
    serve.add_argument("--backlog", type=int, default=2048, help="listen backlog")
    serve.add_argument("--request-timeout-s", type=float, default=30.0,
                       help="a request (headers and body) must arrive within this of its connection's last answer")
    serve.add_argument("--answer-timeout-s", type=float, default=120.0,
                       help="wait this long for the model's scores, then answer 503")
    serve.add_argument("--token-file", help="file holding the bearer token (else $CORPUSMILL_SCORE_TOKEN)")
    serve.add_argument("--exit-with-parent", action="store_true", help="stop when the parent process exits")
    serve.set_defaults(run=_serve)

    train = commands.add_parser("train", help="train a model; writes checkpoint, MindIR and model card")
    train.add_argument("--positive", nargs="+", required=True,
                       help="files/globs of good text (.txt/.jsonl/.parquet, e.g. a run's filter/kept/; a lang "
                            "column gives per-language figures and thresholds)")
    train.add_argument("--negative", nargs="*", default=[],
                       help="files/globs of low-quality text (e.g. page furniture); machine-made negatives are "
                            "made from the positives either way")
    train.add_argument("--max-docs-per-language", type=int, default=5000,
                       help="positives read per language, the rest skipped (default %(default)s)")
    train.add_argument("--negatives-per-positive", type=int,
                       help="machine-made negatives made of each positive, each of another kind (default 3)")
    train.add_argument("--device", default="CPU", choices=("CPU", "GPU", "Ascend"), help="where to train")
    train.add_argument("--out", required=True, help="model directory to write")
    train.add_argument("--name", default="corpusmill-quality")
    train.add_argument("--version", default="1")
    train.add_argument("--eval-dir", help="held-out sets for the card: <dir>/<name>/{positive,negative}.jsonl, or "
                                          "<dir>/<name>/clean.jsonl (and pool.jsonl) for machine-made negatives "
                                          "of every kind per language")
    train.add_argument("--notes", help="markdown appended to the model card (licences, limitations)")
    train.add_argument("--buckets", type=int, default=1 << 15)
    train.add_argument("--max-chars", type=int, default=2000)
    train.add_argument("--memory-bits", type=int, default=25,
                       help="log2 of the n-gram memory's bits (features.NgramMemory; 25: 4 MiB); 0: no memory")
    train.add_argument("--dim", type=int, default=16)
    train.add_argument("--hidden", type=int, default=32)
    train.add_argument("--members", type=int, default=NetShape.members,
                       help="networks trained, each validated on another tenth of the groups; the score is their "
                            "mean (1: one network, a third of the training time)")
    train.add_argument("--epochs", type=int, default=30)
    train.add_argument("--patience", type=int, default=3)
    train.add_argument("--batch-size", type=int, default=64)
    train.add_argument("--learning-rate", type=float, default=3e-4)
    train.add_argument("--seed", type=int, default=13)
    train.set_defaults(run=_train)

    evaluate = commands.add_parser("evaluate", help="AUC, precision and recall of a model on labelled texts")
    evaluate.add_argument("--model", default=DEFAULT_MODEL_DIR, type=model_dir_of)
    evaluate.add_argument("--positive", nargs="+", required=True)
    evaluate.add_argument("--negative", nargs="+", required=True)
    evaluate.add_argument("--threshold", type=float, help="default: the model's own threshold")
    evaluate.add_argument("--device", default="CPU")
    evaluate.set_defaults(run=_evaluate)

    args = parser.parse_args(argv)
    code = args.run(args)
    if args.command == "serve":
        # Everything is answered and closed; skip MindSpore's interpreter teardown (seconds), so
        # that a graceful stop is quick.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
