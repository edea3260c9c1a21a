"""Language-ID accuracy of the filter stage's identifier on the Universal Declaration of Human Rights.

    python -m bench.quality.langid_udhr [--split test|dev|all] [--min-chars 20]

Reads ``../shared/data/corpora/multilingual/udhr2.zip`` (UDHR in ~370 language varieties, file names
are ISO 639-3 codes). Each non-heading line (a preamble clause or an article, typically one or two
sentences) is one sample; even lines form the dev split, odd lines the test split. Only varieties
whose language lid.176 knows are scored; codes are mapped to lid.176's labels (ISO 639-1 where one
exists) with CLDR's alias table from babel. Prints per-language accuracy and the macro/micro mean.
"""
from __future__ import annotations

import argparse
import time
import zipfile
from collections import defaultdict
from pathlib import Path

from bench import SHARED_DATA
from udfs.filter.langid import LanguageIdentifier, load_classifier

UDHR = SHARED_DATA / "corpora" / "multilingual" / "udhr2.zip"
# ISO 639-3 codes whose lid.176 label is not what CLDR's alias table gives: lid.176 uses Wikipedia
# codes, where "als" is Alemannic, not Tosk Albanian, and macrolanguage members map to the macro code.
OVERRIDES = {"als": "sq", "arb": "ar", "cmn": "zh", "pes": "fa", "swh": "sw", "khk": "mn", "uzn": "uz",
             "azj": "az", "ydd": "yi", "plt": "mg", "nob": "no", "nno": "nn", "mly": "ms", "pbu": "ps",
             "quz": "qu", "quy": "qu", "gug": "gn", "ckb": "ckb", "pnb": "pnb", "fri": "fy", "ike": None}


def lid_label(code: str, labels: set):
    from babel.core import get_global

    base = code.split("_")[0]
    label = OVERRIDES.get(base, get_global("language_aliases").get(base, base))
    return label if label in labels else None


def samples(split: str, min_chars: int, labels: set):
    """{lid label: [line, ...]} for the chosen split."""
    by_lang = defaultdict(list)
    with zipfile.ZipFile(UDHR) as archive:
        for name in sorted(archive.namelist()):
            if not name.endswith(".txt"):
                continue
            label = lid_label(Path(name).stem, labels)
            if label is None:
                continue
            lines = [l.strip() for l in archive.read(name).decode("utf-8", "replace").splitlines()[1:]]
            lines = [l for l in lines if len(l) >= min_chars]
            by_lang[label].extend({"dev": lines[0::2], "test": lines[1::2], "all": lines}[split])
    return {label: lines for label, lines in by_lang.items() if lines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=["dev", "test", "all"])
    parser.add_argument("--min-chars", type=int, default=20)
    args = parser.parse_args()

    labels = {label[len("__label__"):] for label in load_classifier().labels}
    by_lang = samples(args.split, args.min_chars, labels)
    identifier = LanguageIdentifier()
    rows, total, correct, started = [], 0, 0, time.time()
    for lang, lines in sorted(by_lang.items()):
        predicted, _ = identifier.predict(lines)
        hits = sum(p == lang for p in predicted)
        confusions = defaultdict(int)
        for p in predicted:
            if p != lang:
                confusions[p] += 1
        top = ", ".join(f"{k} {v}" for k, v in sorted(confusions.items(), key=lambda kv: -kv[1])[:3])
        rows.append((lang, len(lines), hits / len(lines), top))
        total += len(lines)
        correct += hits
    elapsed = time.time() - started
    for lang, n, accuracy, top in sorted(rows, key=lambda r: -r[2]):
        print(f"{lang:>5} {n:5d} {accuracy:7.1%}  {('confused with: ' + top) if top else ''}")
    macro = sum(r[2] for r in rows) / len(rows)
    print(f"\n{len(rows)} languages, {total} lines ({args.split} split, >= {args.min_chars} chars): "
          f"micro accuracy {correct / total:.1%}, macro {macro:.1%}, "
          f">=90%: {sum(r[2] >= 0.9 for r in rows)} languages; {total / elapsed:.0f} lines/s")


if __name__ == "__main__":
    main()
