"""The extract stage's charset check on pages whose charset is known: the Universal Declaration of
Human Rights (../shared/data/corpora/multilingual/udhr-unicode, 532 declarations) encoded in every
legacy charset that can hold it, declared correctly (the page must decode as before, unchanged) and
declared as every other of those charsets (the page must decode by its own charset, or be rejected
as charset_mismatch, never kept as mojibake).

    python -m bench.quality.charset_check
"""
from __future__ import annotations

import argparse
from collections import Counter

from tools.fixtures.udhr import declarations
from udfs.extract.html import CharsetMismatch, _codec, decode_html

# The legacy charsets of the web that pages still declare (WHATWG's labels).
CHARSETS = ("iso-8859-1", "windows-1252", "iso-8859-2", "windows-1250", "windows-1251", "koi8-r", "iso-8859-5", "windows-1253",
            "windows-1254", "windows-1255", "windows-1256", "windows-1257", "gbk", "big5", "shift_jis", "euc-jp",
            "euc-kr")
# A page's text: a long article's and a short paragraph's worth of the declaration.
PAGE_CHARS = (3000, 400)
# The pairs (encoded in, declared) of issue 61's pages.
ISSUE_PAIRS = (("windows-1251", "iso-8859-1"), ("gbk", "iso-8859-1"), ("koi8-r", "windows-1251"))
# Pages with fewer non-ASCII characters than this share are left out: a charset they are encoded in
# changes a few letters, and English-like text in Big5 or EUC-JP is no page that exists.
MIN_NON_ASCII = 0.05


def pages():
    """(language code, html) for every declaration, of each length in PAGE_CHARS."""
    for declaration in declarations():
        whole = " ".join(declaration.paragraphs(False) + declaration.paragraphs(True))
        for chars in PAGE_CHARS:
            text = whole[:chars]
            if text and sum(not c.isascii() for c in text) >= MIN_NON_ASCII * len(text):
                yield declaration.code, f"<html><head><title>UDHR</title></head><body><p>{text}</p></body></html>"


def outcome(payload: bytes, declared: str, html: str, codec: str) -> str:
    try:
        text, _ = decode_html(payload, declared)
    except CharsetMismatch:
        return "rejected"
    return "right" if text == html else "mojibake"


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    correct, wrong, mojibake_pairs = Counter(), Counter(), Counter()
    issue = {pair: Counter() for pair in ISSUE_PAIRS}
    for code, html in pages():
        for charset in CHARSETS:
            codec = _codec(charset)
            try:
                payload = html.encode(codec)
            except UnicodeEncodeError:
                continue
            if payload.isascii():
                continue
            correct[outcome(payload, charset, html, codec)] += 1
            for other in CHARSETS:
                try:
                    if other == charset or payload.decode(_codec(other)) == html:
                        continue
                except UnicodeDecodeError:
                    continue  # the declared charset fails and the page is decoded by detection as before
                result = outcome(payload, other, html, codec)
                if (charset, other) in ISSUE_PAIRS:
                    issue[(charset, other)][result] += 1
                wrong[result] += 1
                if result == "mojibake":
                    mojibake_pairs[f"{charset} declared {other}"] += 1
    print(f"declared right: {sum(correct.values())} pages: {dict(correct)}")
    print(f"declared wrong: {sum(wrong.values())} pages: {dict(wrong)}")
    print("mojibake kept, by pair:", ", ".join(f"{pair} {n}" for pair, n in mojibake_pairs.most_common(12)))
    for pair in ISSUE_PAIRS:
        print(f"{pair}: {dict(issue[pair])}")


if __name__ == "__main__":
    main()
