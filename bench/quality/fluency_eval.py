"""Does the score stage tell fluent text from machine-made text, per language? Clean documents from
held-out text against machine-made ones built from the same language.

    python -m bench.quality.fluency_eval [--model DIR] [--docs-per-language 6] [--json PATH]

Clean documents: the last articles (23..30, held out for every language by ``tools/fixtures/udhr.py``)
of each UDHR declaration (``../shared/data/corpora/multilingual/udhr-unicode/``), four of them to a
document, and runs of paragraphs of the English (Gutenberg novels, Wikipedia articles, State
of the Union addresses) and Chinese (People's Daily, e-commerce reviews) corpora, read from
``../shared/data`` and never copied. Each clean document gets three machine-made twins of about its
length, made here:

- ``shuffled``: each sentence's words in random order, its closing punctuation kept at the end;
- ``chain``: sentences walked from a word-bigram chain fitted on OTHER text of the language (the
  declarations' preamble and articles 1..22; the corpus's other documents), sentences that occur
  verbatim in that text left out;
- ``template``: a few sentence frames taken from that other text, each repeated with its slots (a
  third of its words, the longest) filled by random words of the language.

Scripts written without spaces (Chinese, Japanese, Thai …) take characters for words.

Per language: the ROC AUC of the model's score, clean against each kind (every document scored by
the model's own service, as the stage scores), and the share of each kind kept by ``corpusmill run
--stages filter,score`` with the default config (``--model DIR``: that model folder instead).
Summary: the share of languages that keep >= 90 % of clean documents while rejecting >= 90 % of
shuffled and >= 80 % of chain documents, for the UDHR languages the training may see (their held-out
articles), the held-out languages, and the corpora. The UDHR is counted by ISO 639-3 code
(declarations of one language in several scripts or orthographies together).
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from bench import ROOT, SHARED_DATA, WORK
from tools.fixtures.udhr import HELD_OUT_ARTICLES, declarations, is_held_out_language

KINDS = ("shuffled", "chain", "template")
TARGETS = {"clean": 0.9, "shuffled": 0.9, "chain": 0.8}  # kept share of clean, rejected shares of the rest
ARTICLES_PER_DOCUMENT = 4  # of the eight held out: about as many sentences as the filter asks of a document
MIN_DOCUMENT_CHARS = 200  # shorter runs of articles (a declaration in progress) are not documents
CORPUS_DOCUMENT_CHARS = (600, 1500)  # a corpus document: consecutive paragraphs up to this length
MAX_SENTENCE_TOKENS = 60
FRAMES = 3  # sentence frames per template document
SEED = 59

# Sentence ends: Latin, CJK, Devanagari, Arabic, Ethiopic, Armenian, Myanmar, Khmer, Tibetan marks.
CLOSING = ".!?。！？।॥؟።፧።։။។༎;；"
# A sentence runs to closing marks (and closing quotes) before a space or the end; CJK marks need no space.
SENTENCE = re.compile(rf".+?(?:[{re.escape(CLOSING)}]+[\"'”’»）)\]」』]*(?=\s|$)|[。！？；]+[”’」』）]*|$)",
                      re.S)
TRAILING = re.compile(rf"[{re.escape(CLOSING)}\"'”’»）)\]:,，、]+$")


# ---------------------------------------------------------------- text into sentences and words

def without_spaces(text: str) -> bool:
    """Written without spaces between words (Chinese, Japanese, Thai, Khmer …): fewer than one space
    per 12 letters."""
    letters = sum(ch.isalpha() for ch in text)
    return letters > 0 and text.count(" ") * 12 < letters


def sentences(paragraph: str) -> List[str]:
    return [m.group().strip() for m in SENTENCE.finditer(paragraph) if m.group().strip()]


def words(sentence: str, by_character: bool) -> List[str]:
    """Its words; without spaces, its characters with their combining marks (Thai vowels, tones)."""
    if not by_character:
        return sentence.split()
    clusters: List[str] = []
    for ch in sentence:
        if unicodedata.category(ch).startswith("M") and clusters:
            clusters[-1] += ch
        elif not ch.isspace():
            clusters.append(ch)
    return clusters


def joined(tokens: Sequence[str], by_character: bool) -> str:
    return ("" if by_character else " ").join(tokens)


def split_closing(sentence: str) -> Tuple[str, str]:
    """The sentence without its closing punctuation, and that punctuation."""
    match = TRAILING.search(sentence)
    return (sentence[:match.start()].rstrip(), match.group()) if match else (sentence, "")


# ---------------------------------------------------------------- the machine-made kinds

def shuffled(document: str, by_character: bool, rng: random.Random) -> str:
    """Each sentence's words in random order, its closing punctuation kept at the end; paragraphs kept."""
    out = []
    for paragraph in document.split("\n"):
        made = []
        for sentence in sentences(paragraph):
            body, closing = split_closing(sentence)
            tokens = words(body, by_character)
            rng.shuffle(tokens)
            made.append(joined(tokens, by_character) + closing)
        out.append(joined(made, by_character))
    return "\n".join(out)


@dataclass
class Language:
    """What the generators know of a language: sentences of its other text, as words."""

    by_character: bool
    sentences: List[List[str]]
    source_text: str  # the other text itself, to leave out sentences a chain copies whole
    chain: Dict[str, List[str]] = field(default_factory=dict)
    vocabulary: List[str] = field(default_factory=list)  # its distinct words, closing marks stripped

    @classmethod
    def fitted(cls, other_text: Sequence[str]) -> "Language":
        by_character = without_spaces(" ".join(other_text))
        tokenized = [words(s, by_character) for p in other_text for s in sentences(p)]
        tokenized = [t for t in tokenized if len(t) >= 3]
        language = cls(by_character, tokenized, "\n".join(joined(t, by_character) for t in tokenized))
        for tokens in tokenized:
            for a, b in zip(["<s>"] + tokens, tokens + ["</s>"]):
                language.chain.setdefault(a, []).append(b)  # repeats keep the bigram counts
        language.vocabulary = sorted({split_closing(w)[0] for s in tokenized for w in s} - {""})
        return language

    def usable(self) -> bool:
        return len(self.sentences) >= 5


def chain_sentence(language: Language, rng: random.Random) -> Optional[List[str]]:
    tokens, current = [], "<s>"
    while len(tokens) < MAX_SENTENCE_TOKENS:
        current = rng.choice(language.chain[current])
        if current == "</s>":
            break
        tokens.append(current)
    return tokens or None


def chain_text(language: Language, like: str, rng: random.Random) -> str:
    """Sentences from the word-bigram chain, none copied whole from the text it was fitted on,
    in paragraphs of about ``like``'s length and shape."""
    return _like(like, lambda: _fresh_chain_sentence(language, rng), language.by_character)


def _fresh_chain_sentence(language: Language, rng: random.Random) -> str:
    made = None
    for _ in range(50):
        tokens = chain_sentence(language, rng)
        if tokens:
            made = joined(tokens, language.by_character)
            if made not in language.source_text:
                return made
    return made or ""


def template_text(language: Language, like: str, rng: random.Random) -> str:
    """A few sentence frames of the language's other text, repeated with their slots (a third of the
    words, the longest) filled by random words of the language."""
    candidates = [s for s in language.sentences if 5 <= len(s) <= 30] or language.sentences
    frames = []
    for tokens in rng.sample(candidates, min(FRAMES, len(candidates))):
        slots = max(1, len(tokens) // 3)
        if language.by_character:  # characters are all one long: the slots fall anywhere
            frames.append((tokens, set(rng.sample(range(len(tokens)), slots))))
        else:
            by_length = sorted(range(len(tokens)), key=lambda i: (-len(split_closing(tokens[i])[0]), i))
            frames.append((tokens, set(by_length[:slots])))

    def sentence() -> str:
        tokens, slots = rng.choice(frames)
        filled = [rng.choice(language.vocabulary) + split_closing(t)[1] if i in slots else t
                  for i, t in enumerate(tokens)]
        return joined(filled, language.by_character)
    return _like(like, sentence, language.by_character)


def _like(like: str, sentence, by_character: bool) -> str:
    """Generated sentences in as many paragraphs as ``like``, each about as long as its counterpart."""
    paragraphs = []
    for model in like.split("\n"):
        made: List[str] = []
        while sum(len(s) for s in made) < len(model):
            made.append(sentence())
        paragraphs.append(joined(made, by_character))
    return "\n".join(paragraphs)


# ---------------------------------------------------------------- the sources

@dataclass
class Sample:
    """One language (or corpus): its clean documents, and the other text the generators fit on."""

    name: str
    group: str  # udhr | udhr-held-out | corpus
    clean: List[str]
    other_text: List[str]


def udhr_samples(per_language: int, rng: random.Random) -> List[Sample]:
    """Per language: ``per_language`` clean documents, each ``ARTICLES_PER_DOCUMENT`` of a
    declaration's held-out articles (a different choice each, in their order)."""
    by_language: Dict[str, Sample] = {}
    for declaration in declarations():
        code = declaration.iso6393
        group = "udhr-held-out" if is_held_out_language(code) else "udhr"
        sample = by_language.setdefault(code, Sample(f"udhr:{code}", group, [], []))
        numbers = [n for n in HELD_OUT_ARTICLES if declaration.articles.get(n)]
        choices = list(itertools.combinations(numbers, min(ARTICLES_PER_DOCUMENT, len(numbers))))
        for chosen in rng.sample(choices, min(per_language, len(choices))):
            document = "\n".join(p for n in chosen for p in declaration.articles[n])
            if len(document) >= MIN_DOCUMENT_CHARS:
                sample.clean.append(document)
        sample.other_text += declaration.preamble + [p for n, paragraphs in sorted(declaration.articles.items())
                                                     if n not in HELD_OUT_ARTICLES for p in paragraphs]
    for sample in by_language.values():  # a language with several declarations
        if len(sample.clean) > per_language:
            sample.clean = rng.sample(sample.clean, per_language)
    return list(by_language.values())


def _wrapped_paragraphs(text: str) -> List[str]:
    """Paragraphs of hard-wrapped text (blank lines between them)."""
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def _runs(paragraphs: Sequence[str]) -> Iterator[str]:
    """Consecutive paragraphs joined up to the document length (``CORPUS_DOCUMENT_CHARS``)."""
    low, high = CORPUS_DOCUMENT_CHARS
    run: List[str] = []
    for paragraph in paragraphs:
        if len(paragraph) > high:
            continue
        if run and sum(map(len, run)) + len(paragraph) > high:
            if sum(map(len, run)) >= low:
                yield "\n".join(run)
            run = []
        run.append(paragraph)
    if sum(map(len, run)) >= low:
        yield "\n".join(run)


def corpus_documents() -> Dict[str, List[str]]:
    corpora = SHARED_DATA / "corpora"
    novels = ["austen-emma.txt", "austen-persuasion.txt", "chesterton-brown.txt", "melville-moby_dick.txt"]
    gutenberg = [d for name in novels
                 for d in _runs([p for p in _wrapped_paragraphs((corpora / "en/gutenberg" / name).read_text(
                     encoding="utf-8", errors="replace")) if p[-1:] in ".!?\"'”’"])]
    with zipfile.ZipFile(corpora / "en/state_union.zip") as archive:
        addresses = [archive.read(n).decode("utf-8", "replace") for n in sorted(archive.namelist())
                     if n.endswith(".txt")]
    state_union = [d for text in addresses for d in _runs(_wrapped_paragraphs(text)[1:])]
    from tools.quality_corpus import wiki_articles  # MediaWiki markup to prose paragraphs
    enwiki = [d for _, paragraphs in wiki_articles(str(corpora / "en/enwiki-head-articles.xml"))
              for d in _runs(paragraphs)]
    lines = (corpora / "zh/peoples-daily-1998-01.txt").read_text(encoding="utf-8").splitlines()
    peoples_daily = list(_runs([line.strip() for line in lines if len(line.strip()) >= 40]))
    reviews = [line.strip() for name in ("reviews-pos.txt", "reviews-neg.txt")
               for line in (corpora / "zh" / name).read_text(encoding="utf-8").splitlines() if len(line.strip()) >= 60]
    return {"en:gutenberg": gutenberg, "en:enwiki": enwiki, "en:state_union": state_union,
            "zh:peoples-daily": peoples_daily, "zh:reviews": list(_runs(reviews))}


def corpus_samples(per_corpus: int, rng: random.Random) -> List[Sample]:
    """Per corpus: ``per_corpus`` clean documents; the generators fit on the other documents."""
    samples = []
    for name, documents in corpus_documents().items():
        order = list(range(len(documents)))
        rng.shuffle(order)
        clean = [documents[i] for i in order[:per_corpus]]
        other = [p for i in order[per_corpus:per_corpus * 5] for p in documents[i].split("\n")]
        samples.append(Sample(name, "corpus", clean, other))
    return samples


# ---------------------------------------------------------------- the documents, scored and filtered

def build_documents(samples: Sequence[Sample], rng: random.Random) -> List[dict]:
    rows = []
    for sample in samples:
        language = Language.fitted(sample.other_text)
        if not sample.clean or not language.usable():
            continue
        for i, document in enumerate(sample.clean):
            made = {"clean": document, "shuffled": shuffled(document, language.by_character, rng),
                    "chain": chain_text(language, document, rng), "template": template_text(language, document, rng)}
            for kind, text in made.items():
                rows.append({"id": f"{sample.name}/{i}/{kind}",
                             "url": f"https://fluency.invalid/{sample.name}/{i}/{kind}",
                             "text": unicodedata.normalize("NFC", text), "sample": sample.name, "group": sample.group,
                             "kind": kind})
    return rows


def scores_from_service(model_dir: str, texts: List[str]) -> np.ndarray:
    """Every document's score from the model's own service, as the stage gets them."""
    from scoring_service.client import LocalService, ScoringClient

    service = LocalService(model_dir)
    try:
        return ScoringClient([service.start()], batch_size=256).score(texts)
    finally:
        service.stop()


def outcomes_through_the_cli(rows: List[dict], model: Optional[str], work: Path) -> Dict[str, str]:
    """id -> outcome of ``corpusmill run --stages filter,score`` (kept, or the rejecting stage)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = work / "documents"
    docs.mkdir(parents=True)
    pq.write_table(pa.table({k: [r[k] for r in rows] for k in ("id", "url", "text")}), docs / "part-0.parquet")
    command = [sys.executable, "-m", "jobs.cli", "run", "--input", str(docs), "--output", str(work / "out"),
               "--run", "fluency", "--stages", "filter,score"]
    if model:
        config = work / "model.yaml"
        config.write_text(json.dumps({"include": str(ROOT / "conf" / "local.yaml"), "score": {"model": model}}))
        command[4:4] = ["--config", str(config)]
    subprocess.run(command, cwd=ROOT, check=True)
    outcome = {}
    for stage in ("filter", "score"):
        for folder in ("kept", "rejected", "errors"):
            path = work / "out" / "fluency" / stage / folder
            if path.exists():
                for row in pq.read_table(path, columns=["id"]).to_pylist():
                    verdict = "kept" if folder == "kept" else f"{stage}:{folder}"
                    if stage == "score" or verdict != "kept":
                        outcome[row["id"]] = verdict
    return outcome


def auc(clean: np.ndarray, made: np.ndarray) -> float:
    """P(a clean document scores above a machine-made one), ties half."""
    if not len(clean) or not len(made):
        return float("nan")
    c, m = clean[:, None], made[None, :]
    return float(((c > m).sum() + 0.5 * (c == m).sum()) / (c.size * m.size))


def separable(clean: np.ndarray, shuffled: np.ndarray, chain: np.ndarray) -> bool:
    """Whether some threshold of the score alone meets the targets on these documents: an upper bound
    on a threshold of the language's own (it is chosen on the documents it is judged on)."""
    for threshold in np.unique(np.concatenate([clean, shuffled, chain])):
        if ((clean >= threshold).mean() >= TARGETS["clean"] and (shuffled < threshold).mean() >= TARGETS["shuffled"]
                and (chain < threshold).mean() >= TARGETS["chain"]):
            return True
    return False


def per_language(rows: List[dict], scores: np.ndarray, outcome: Dict[str, str]) -> List[dict]:
    by_sample: Dict[str, List[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_sample[row["sample"]].append(i)
    results = []
    for name, indices in sorted(by_sample.items()):
        of_kind = {kind: [i for i in indices if rows[i]["kind"] == kind] for kind in ("clean",) + KINDS}
        clean_scores = scores[of_kind["clean"]]
        result = {"sample": name, "group": rows[indices[0]]["group"], "documents": len(of_kind["clean"])}
        for kind in KINDS:
            result[f"auc_{kind}"] = auc(clean_scores, scores[of_kind[kind]])
        for kind, ids in of_kind.items():
            verdicts = [outcome.get(rows[i]["id"], "missing") for i in ids]
            result[f"kept_{kind}"] = sum(v == "kept" for v in verdicts) / len(verdicts)
            result[f"filter_rejected_{kind}"] = sum(v.startswith("filter:") for v in verdicts) / len(verdicts)
        result["separable"] = separable(clean_scores, scores[of_kind["shuffled"]], scores[of_kind["chain"]])
        result["passes"] = (result["kept_clean"] >= TARGETS["clean"]
                            and 1 - result["kept_shuffled"] >= TARGETS["shuffled"]
                            and 1 - result["kept_chain"] >= TARGETS["chain"])
        results.append(result)
    return results


def summary(results: List[dict], group: str) -> str:
    chosen = [r for r in results if r["group"] == group]
    if not chosen:
        return f"{group}: no languages"
    median = {k: float(np.nanmedian([r[k] for r in chosen])) for k in chosen[0] if k.startswith(("auc_", "kept_"))}
    # Where the filter's rules reject clean text (too few sentences, no spaces between words), the
    # score cannot pass the target; these are the languages the score alone decides.
    judged = [r for r in chosen if r["filter_rejected_clean"] <= 1 - TARGETS["clean"]]
    return (f"{group}: {sum(r['passes'] for r in chosen)} of {len(chosen)} "
            f"({sum(r['passes'] for r in chosen) / len(chosen):.0%}) keep >= 90% clean, reject >= 90% shuffled "
            f"and >= 80% chain; of the {len(judged)} whose clean text the filter passes: "
            f"{sum(r['passes'] for r in judged)} ({sum(r['passes'] for r in judged) / max(len(judged), 1):.0%})"
            f" | score separable by a threshold of the language's own (a bound): {sum(r['separable'] for r in chosen)}"
            f" | median AUC shuffled {median['auc_shuffled']:.2f}, chain {median['auc_chain']:.2f}, "
            f"template {median['auc_template']:.2f} | median kept: clean {median['kept_clean']:.0%}, shuffled "
            f"{median['kept_shuffled']:.0%}, chain {median['kept_chain']:.0%}, template {median['kept_template']:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model folder (default: the shipped model, the default config)")
    parser.add_argument("--docs-per-language", type=int, default=6,
                        help="clean documents per UDHR language; each corpus gives ten times as many")
    parser.add_argument("--json", help="write every language's figures here")
    parser.add_argument("--keep-work", action="store_true", help="keep the run folder under bench/work/")
    args = parser.parse_args()

    from scoring_service.model.artifacts import DEFAULT_MODEL_DIR

    started = time.time()
    rng = random.Random(SEED)
    samples = udhr_samples(args.docs_per_language, rng) + corpus_samples(args.docs_per_language * 10, rng)
    held_out = sorted(s.name.split(":", 1)[1] for s in samples if s.group == "udhr-held-out")
    print(f"held-out UDHR languages ({len(held_out)}, sha1(iso6393)[:8] % 10 == 0): {' '.join(held_out)}")
    rows = build_documents(samples, rng)
    print(f"{len(rows)} documents ({len(rows) // 4} clean) in {len({r['sample'] for r in rows})} languages/corpora, "
          f"built in {time.time() - started:.0f} s")
    model_dir = args.model or DEFAULT_MODEL_DIR
    scores = scores_from_service(model_dir, [r["text"] for r in rows])
    WORK.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fluency-", dir=WORK))
    try:
        outcome = outcomes_through_the_cli(rows, args.model, work)
    finally:
        if not args.keep_work:
            shutil.rmtree(work, ignore_errors=True)
    results = per_language(rows, scores, outcome)

    print(f"\n{'language':<22} {'docs':>4} {'AUC shuf':>8} {'chain':>6} {'templ':>6} | kept: {'clean':>6} {'shuf':>6} "
          f"{'chain':>6} {'templ':>6} | filter rejected clean")
    for r in results:
        print(f"{r['sample']:<22} {r['documents']:>4} {r['auc_shuffled']:>8.2f} {r['auc_chain']:>6.2f} "
              f"{r['auc_template']:>6.2f} | {'':>5} {r['kept_clean']:>6.0%} {r['kept_shuffled']:>6.0%} "
              f"{r['kept_chain']:>6.0%} {r['kept_template']:>6.0%} | {r['filter_rejected_clean']:.0%}"
              f"{'  PASS' if r['passes'] else ''}")
    print(f"\nmodel: {model_dir}")
    for group in ("udhr", "udhr-held-out", "corpus"):
        print(summary(results, group))
    print(f"{time.time() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
