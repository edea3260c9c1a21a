"""Build the shipped URL word lists (udfs/common/blocklists/url_*.txt) from LDNOOBW's English list.

    python -m tools.build_url_words ../shared/data/blocklists/ldnoobw/en ../shared/data/corpora/en

An entry that clean English text uses (as the same words in a row) has innocent senses ("sex",
"nude", "escort", "dick") and becomes a soft word; every other entry is banned. A banned entry of
one word of six letters or more that is part of no clean word is also a subword, matched inside URL words
("freeblowjobvideos"). The clean text: every .txt file under the corpus folder and the text of every
zip and XML file there (Project Gutenberg books, Wikipedia articles, US speeches).
"""
from __future__ import annotations

import argparse
import re
import zipfile
from pathlib import Path
from typing import Iterator

from udfs.common.word_lists import WordSequenceMatcher, read_word_list, word_sequences
from udfs.extract.url_filter import SHIPPED_FILES

MIN_SUBWORD = 6
# Named in clean text (Wikipedia has articles on them) but in a URL almost only on adult sites.
ALWAYS_BANNED = ("porn", "porno", "xxx")
ALWAYS_SUBWORDS = ("porn",)  # youporn, pornhub; "xxx" is not one: xxxl is a clothing size
HEADER = "# Built by tools/build_url_words.py from LDNOOBW's English list (CC BY 4.0, see NOTICE).\n"


def clean_texts(folder: Path) -> Iterator[str]:
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".txt", ".xml"):
            yield path.read_text(encoding="utf-8", errors="replace")
        elif path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                for name in archive.namelist():
                    if not name.endswith("/"):
                        yield archive.read(name).decode("utf-8", errors="replace")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ldnoobw_en", type=Path)
    parser.add_argument("clean_corpus", type=Path)
    args = parser.parse_args(argv)
    entries = sorted(set(read_word_list(args.ldnoobw_en)))
    sequences = {e: s for e in entries for s in word_sequences([e])}
    matcher = WordSequenceMatcher(frozenset(sequences.values()))
    used, vocabulary = set(), set()
    for text in clean_texts(args.clean_corpus):
        tokens = re.findall(r"\w+", text.lower())
        vocabulary.update(tokens)
        used |= matcher.found(tokens)
    soft = [e for e, s in sequences.items() if s in used and e not in ALWAYS_BANNED]
    banned = [e for e, s in sequences.items() if s not in used or e in ALWAYS_BANNED]
    subwords = [e for e in banned if len(sequences[e]) == 1 and len(e) >= MIN_SUBWORD
                and not any(sequences[e][0] in word for word in vocabulary)] + list(ALWAYS_SUBWORDS)
    for kind, words in (("word_lists", banned), ("soft_word_lists", soft), ("subword_lists", subwords)):
        SHIPPED_FILES[kind].write_text(HEADER + "\n".join(words) + "\n", encoding="utf-8")
        print(f"{SHIPPED_FILES[kind].name}: {len(words)} entries")


if __name__ == "__main__":
    main()
