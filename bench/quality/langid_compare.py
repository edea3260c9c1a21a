"""Language ID candidates side by side: document tag accuracy per language and CPU per document.

    python -m bench.quality.langid_compare [--candidates filter,lid176,heliport,lingua,cld2,cld3,py3langid]
                                           [--out per_language.tsv] [--held-out-only] [--short]

Documents: every UDHR declaration (``../shared/data/corpora/multilingual/udhr-unicode``, 532, read by
``tools/fixtures/udhr.py``) cut into documents of whole paragraphs, 50 to 300 words (a word: a
whitespace token, or four characters in scripts written without spaces), plus English (Wikipedia,
Gutenberg) and Chinese (People's Daily, reviews) documents of ``../shared/data/corpora`` cut the same
way (``--short``: documents of one paragraph, 5 to 40 words, as a sentence or a caption). The gold tag
is the declaration's ISO 639-3 code with the script most of its letters are in.

A prediction is right when its ISO 639-3 tag (``udfs/filter/language_codes.py``: ``zh`` → ``cmn``,
``ms`` → ``zsm``) is the gold language, or when the model names the gold language's macrolanguage
(lid.176's ``qu`` for Cusco Quechua, ``zh`` for Hakka). ``filter`` is the filter stage's identifier as
configured (conf/filter.yaml); the others are the bare models. Candidates other than
``filter`` and ``lid176`` are not project dependencies: install them in their own environment
(heliport is GPL-3.0 and needs Python ≥ 3.11; lingua and cld3-py need ≥ 3.10).

Prints, per candidate: languages whose documents are tagged right ≥ 97 % of the time (of all gold
languages, and of those the model has a label for), micro accuracy, CPU ms per document, and the
accuracy on the languages the issue names; ``--out`` writes the per-language table.
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict
from typing import Callable, Dict, List, Tuple

from tools.fixtures.udhr import declarations, is_held_out
from udfs.filter.language_codes import ISO639_1_TO_3, MACROLANGUAGE_WRITTEN_AS, iso639_3, script_of

_WRITTEN_FOR = {individual: macro for macro, individual in MACROLANGUAGE_WRITTEN_AS.items()}

# A document's words: at least MIN, at most MAX, cut once it reaches TARGET.
PAGE_LENGTHS = (50, 300, 120)
SHORT_LENGTHS = (5, 40, 5)
CORPUS_DOCS = 300  # English and Chinese documents each, spread over their corpora
NAMED = ["xho", "zul", "lug", "sna", "sot", "tsn", "tso", "yor", "som", "zsm", "mri", "kor", "tha"]
UNSEGMENTED = {"Hani", "Jpan", "Thai", "Laoo", "Khmr", "Mymr", "Tibt"}
# UDHR's Malay is "zlm" (Malay, the individual language); its text is Standard Malay, as tagged "zsm".
GOLD_ALIASES = {"zlm": "zsm"}
# Gold individual languages → their macrolanguage, for models that only know the macrolanguage.
MACROLANGUAGE_OF = {
    **{individual: macro for macro, individual in MACROLANGUAGE_WRITTEN_AS.items()},
    **{q: "que" for q in ("quy", "quz", "qub", "qvc", "qvh", "qvm", "qvn", "qwh", "qxn", "qxu", "qva", "qud",
                          "qug", "qvi", "quh", "qxa", "qxw", "qvw")},
    "prs": "fas", "azb": "aze", "aln": "sqi", "nno": "nor", "swc": "swa", "knc": "kau", "kng": "kon",
    "koi": "kom", "sdh": "kur", "ckb": "kur", "fuf": "ful", "fuv": "ful", "ffm": "ful", "fuc": "ful",
    "fuh": "ful", "twi": "aka", "fat": "aka", "gun": "grn", "hae": "orm", "pbu": "pus", "min": "msa",
    "yue": "zho", "hak": "zho", "nan": "zho", "gan": "zho", "hsn": "zho", "wuu": "zho", "ojb": "oji",
    "ike": "iku", "nob": "nor", "hrv": "hbs", "srp": "hbs", "bos": "hbs", "lvs": "lav", "ekk": "est",
}


def words(text: str, script: str) -> int:
    return max(len(text.split()), len(text) // 4) if script in UNSEGMENTED else len(text.split())


def cut(paragraphs: List[str], lengths: Tuple[int, int, int] = PAGE_LENGTHS) -> List[str]:
    """Consecutive paragraphs joined into documents of ``lengths`` (min, max, target) words."""
    min_words, max_words, target_words = lengths
    docs: List[str] = []
    current: List[str] = []
    count = 0
    for paragraph in paragraphs:
        n = words(paragraph, script_of(paragraph))
        if n > max_words:
            continue
        if count + n > max_words:
            if count >= min_words:
                docs.append("\n".join(current))
            current, count = [], 0
        current.append(paragraph)
        count += n
        if count >= target_words:
            docs.append("\n".join(current))
            current, count = [], 0
    if count >= min_words:
        docs.append("\n".join(current))
    return docs


def gold_documents(held_out_only: bool = False, tuning_only: bool = False,
                   lengths: Tuple[int, int, int] = PAGE_LENGTHS) -> List[Tuple[str, str]]:
    """(gold tag ``xho_Latn``, text) for UDHR and the English and Chinese corpora, documents of ``lengths``
    words: all of it, or only the text ``tools/fixtures/udhr.py`` holds out (and every other English and
    Chinese document), or only the rest."""
    from tools.fixtures.corpus_docs import book_parts, news_articles, web_pages, wiki_articles

    def wanted(held_out: bool) -> bool:
        return not (held_out_only or tuning_only) or held_out == held_out_only

    docs = []
    for declaration in declarations():
        if not declaration.iso6393 or declaration.iso6393 == "und":
            continue
        parts = [(None, declaration.preamble)] + sorted(declaration.articles.items())
        paragraphs = [p for number, ps in parts for p in ps if wanted(is_held_out(declaration.iso6393, number))]
        for text in cut(paragraphs, lengths):
            docs.append((f"{GOLD_ALIASES.get(declaration.iso6393, declaration.iso6393)}_{script_of(text)}", text))
    english = [d["text"] for d in wiki_articles() + book_parts()]
    chinese = [d["text"] for d in news_articles()] + [d["text"] for d in web_pages() if script_of(d["text"]) == "Hani"]
    for gold, texts in (("eng_Latn", english), ("cmn_Hani", chinese)):
        cut_docs = [doc for text in texts for doc in cut([p for p in text.split("\n") if p.strip()], lengths)]
        spread = cut_docs[::max(1, len(cut_docs) // CORPUS_DOCS)][:CORPUS_DOCS]
        docs.extend((gold, doc) for i, doc in enumerate(spread) if wanted(i % 2 == 1))
    return docs


class Candidate:
    """A model as ``predict(text) -> (label, score)``, the labels it can give, and how a label becomes an
    ISO 639-3 tag (``to_tag``; the filter's identifier gives tags already)."""

    def __init__(self, name: str, predict: Callable[[str], Tuple[str, float]], codes: set,
                 to_tag: Callable[[str], str] = iso639_3):
        self.name, self.predict, self.codes, self.to_tag = name, predict, codes, to_tag
        self.tags = {to_tag(code) for code in codes}

    def right(self, raw: str, gold_language: str) -> bool:
        tag = self.to_tag(raw)
        macro = MACROLANGUAGE_OF.get(gold_language)
        return tag == gold_language or (macro is not None
                                         and macro in (ISO639_1_TO_3.get(raw, raw), _WRITTEN_FOR.get(tag)))


# Labels some models give that are not ISO 639-1 or 639-3 (old ISO 639-1 codes, a Google code).
OLD_CODES = {"iw": "he", "jw": "jv", "in": "id", "fil": "tl", "mo": "ro"}


def _clean(code: str) -> str:
    code = code.lower().split("-")[0].split("_")[0]
    return OLD_CODES.get(code, code)


def make_candidate(name: str) -> Candidate:
    if name == "filter":
        import pycld2

        from udfs.filter.langid import LanguageIdentifier, load_classifier
        from udfs.filter.rules import LanguageConfig

        identifier = LanguageIdentifier.from_config(LanguageConfig())

        def predict(text):
            tags = identifier.identify([text])
            return tags.lang_script[0].split("_")[0], tags.lang_score[0]
        labels = ({label[len("__label__"):] for label in load_classifier().labels}
                  | {_clean(code) for _, code in pycld2.LANGUAGES})
        return Candidate(name, predict, {iso639_3(label) for label in labels}, to_tag=lambda tag: tag)
    if name == "lid176":
        from udfs.filter.langid import LanguageIdentifier, load_classifier

        classifier, line = load_classifier(), LanguageIdentifier(max_chars=5000).line
        codes = {label[len("__label__"):] for label in classifier.labels}

        def predict(text):
            label, score = classifier.predict(line(text))
            return label[len("__label__"):], float(score)
        return Candidate(name, predict, codes)
    if name == "heliport":
        import heliport

        identifier = heliport.Identifier()
        codes = set(_heliport_codes())
        return Candidate(name, lambda t: identifier.identify_with_score(t), codes)
    if name == "lingua":
        from lingua import Language, LanguageDetectorBuilder

        detector = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models().build()

        def predict(text):
            values = detector.compute_language_confidence_values(text)
            return (values[0].language.iso_code_639_3.name.lower(), values[0].value) if values else ("und", 0.0)
        return Candidate(name, predict, {l.iso_code_639_3.name.lower() for l in Language.all()})
    if name == "cld2":
        import pycld2

        def predict(text):
            try:
                reliable, _, details = pycld2.detect(text)
            except pycld2.error:
                return "und", 0.0
            return _clean(details[0][1]), details[0][2] / 100
        return Candidate(name, predict, {_clean(code) for _, code in pycld2.LANGUAGES})
    if name == "cld3":
        import gcld3

        detector = gcld3.NNetLanguageIdentifier(0, 5000)

        def predict(text):
            found = detector.FindLanguage(text)
            return _clean(found.language), found.probability
        return Candidate(name, predict, {_clean(c) for c in _CLD3_CODES})
    if name == "py3langid":
        from py3langid.langid import MODEL_FILE, LanguageIdentifier as PyLangid

        identifier = PyLangid.from_model_file(MODEL_FILE, norm_probs=True)
        return Candidate(name, lambda t: identifier.classify(t), set(identifier.nb_classes))
    raise SystemExit(f"unknown candidate {name}")


def _heliport_codes() -> List[str]:
    from importlib.resources import files

    thresholds = files("heliport").joinpath("confidenceThresholds").read_text()
    return [line.split("\t")[0] for line in thresholds.splitlines() if line.strip()]


# CLD3's 107 labels (its README).
_CLD3_CODES = (
    "af am ar bg bg-Latn bn bs ca ceb co cs cy da de el el-Latn en eo es et eu fa fi fil fr fy ga gd gl gu ha "
    "haw hi hi-Latn hmn hr ht hu hy id ig is it iw ja ja-Latn jv ka kk km kn ko ku ky la lb lo lt lv mg mi mk "
    "ml mn mr ms mt my ne nl no ny pa pl ps pt ro ru ru-Latn sd si sk sl sm sn so sq sr st su sv sw ta te tg th "
    "tr uk ur uz vi xh yi yo zh zh-Latn zu").split()


def evaluate(candidate: Candidate, docs: List[Tuple[str, str]]):
    right: Dict[str, int] = defaultdict(int)
    total: Dict[str, int] = defaultdict(int)
    confusions: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    started = time.process_time()
    predictions = [candidate.predict(text) for _, text in docs]
    cpu_ms = 1000 * (time.process_time() - started) / len(docs)
    for (gold, _), (raw, _) in zip(docs, predictions):
        language = gold.split("_")[0]
        total[gold] += 1
        if candidate.right(raw, language):
            right[gold] += 1
        else:
            confusions[gold][candidate.to_tag(raw)] += 1
    return right, total, confusions, cpu_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", default="filter,lid176,cld2")
    parser.add_argument("--out", help="write the per-language table (TSV) here")
    parser.add_argument("--held-out-only", action="store_true",
                        help="only the held-out text of tools/fixtures/udhr.py (what no cut-off was tuned on)")
    parser.add_argument("--short", action="store_true",
                        help="documents of one paragraph, 5 to 40 words (a sentence), instead of 50 to 300")
    args = parser.parse_args()

    docs = gold_documents(held_out_only=args.held_out_only, lengths=SHORT_LENGTHS if args.short else PAGE_LENGTHS)
    golds = sorted({gold for gold, _ in docs})
    print(f"{len(docs)} documents in {len(golds)} language/script tags")
    table = {}
    for name in args.candidates.split(","):
        candidate = make_candidate(name)
        right, total, confusions, cpu_ms = evaluate(candidate, docs)
        accuracy = {gold: right[gold] / total[gold] for gold in golds}
        supported = [g for g in golds if g.split("_")[0] in candidate.tags
                     or MACROLANGUAGE_OF.get(g.split("_")[0]) in candidate.codes]
        good = [g for g in golds if accuracy[g] >= 0.97]
        micro = sum(right.values()) / len(docs)
        print(f"\n{name}: {len(good)} tags ≥97 % ({len(set(good) & set(supported))} of {len(supported)} it "
              f"has a label for), micro accuracy {micro:.3f}, {cpu_ms:.3f} CPU ms/doc")
        named = []
        for language in NAMED:
            tags = [g for g in golds if g.startswith(language + "_")]
            n = sum(total[g] for g in tags)
            named.append(f"{language} {sum(right[g] for g in tags) / n:.2f}" if n else f"{language} -")
        print("  named: " + ", ".join(named))
        for gold in tags_of_interest(golds, NAMED):
            if accuracy[gold] < 0.97:
                top = sorted(confusions[gold].items(), key=lambda kv: -kv[1])[:3]
                print(f"    {gold}: {accuracy[gold]:.2f} of {total[gold]}, as {top}")
        table[name] = (accuracy, total, confusions)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            names = list(table)
            out.write("tag\tdocs\t" + "\t".join(names) + "\n")
            for gold in golds:
                first = table[names[0]][1]
                out.write(f"{gold}\t{first[gold]}\t" + "\t".join(f"{table[n][0][gold]:.3f}" for n in names) + "\n")


def tags_of_interest(golds: List[str], languages: List[str]) -> List[str]:
    return [g for g in golds if g.split("_")[0] in languages]


if __name__ == "__main__":
    main()
