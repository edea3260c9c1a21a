"""URL filtering in extract (url_domain, url_word) and C4's bad-words rule in filter, on real records.

The URL filter runs on WARC records written here and read by the real reader: a rejected page's
payload is never parsed. The bad-words rule runs through the filter's real DocumentFilter (fastText
LID included); the rule is off by default and judges English only when switched on. Its compiled
scan (udfs/filter/_badwords.pyx) is checked against the definition, WordSequenceMatcher on re's tokens.
"""
import dataclasses
import io
import random
import re
import sys

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from conftest import shared
from jobs import config, registry
from jobs.pipeline import run_pipeline, stage_fingerprint
from udfs.filter._badwords import TextMatcher, word_char
from udfs.common.word_lists import WordSequenceMatcher, read_word_list, word_sequences
from udfs.filter.badwords import UNSPACED_LANGUAGES, BadWords, shipped_lists
from udfs.common.config import ConfigError
from udfs.filter.rules import DocumentFilter
from udfs.extract.url_filter import UrlFilter, UrlFilterConfig
from udfs.extract.warc import WarcDocumentReader

PAGE = (b"<html><body><article><p>The committee met on Tuesday to discuss the new library budget, "
        b"which covers books, staff and the reading rooms for the coming year.</p></article></body></html>")


def warc_of(urls, path):
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url in urls:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(PAGE),
                                                          http_headers=http))
    return str(path)


@pytest.fixture
def domain_list(tmp_path):
    path = tmp_path / "domains"
    path.write_text("# company list\nblocked-casino.example\n*.ads.example.org\n")
    return str(path)


def test_block_listed_domain_and_url_words_are_rejected_with_their_reasons(tmp_path, domain_list):
    # The boilerplate classifier is not what is tested here: the kept pages only need their text.
    cfg = config.load(overrides={"extract": {"boilerplate_filter": False,
                                             "url_filter": {"domain_lists": [domain_list]}}}).extract
    urls = ["https://www.blocked-casino.example/poker",          # subdomain of a listed domain
            "https://tracker.ads.example.org/x",                 # listed with a wildcard
            "https://videos.example.com/free-porno-clips",        # banned word
            "https://example.net/hot-nude-sex-pics",              # two soft words
            "https://youporn.example.com/",                       # banned subword inside a word
            "https://example.com/sex-education-for-teachers",    # one soft word: kept
            "https://notblocked-casino.example/poker",            # a different domain ending alike: kept
            "https://www.ford.example/escort-parts"]              # one soft word: kept
    path = warc_of(urls, tmp_path / "a.warc.gz")
    rows = {r["url"]: r for r in WarcDocumentReader(cfg).read(path, lambda: open(path, "rb"))}
    verdicts = [(rows[u]["_outcome"], rows[u]["reject_rule"], rows[u]["reject_value"]) for u in urls]
    assert verdicts == [("rejected", "url_domain", "blocked-casino.example"),
                        ("rejected", "url_domain", "ads.example.org"),
                        ("rejected", "url_word", "porno"),
                        ("rejected", "url_word", "nude+sex"),
                        ("rejected", "url_word", "porn"),
                        ("kept", None, None), ("kept", None, None), ("kept", None, None)]
    assert all(rows[u]["text"] is None and rows[u]["content_length"] is None for u in urls[:5])  # never read


def test_the_extract_stage_counts_url_rejections_by_reason(spark, tmp_path, domain_list):
    cfg = config.load(overrides={"extract": {"boilerplate_filter": False, "url_filter": {"domain_lists": [domain_list]}}})
    urls = ["https://blocked-casino.example/a", "https://blocked-casino.example/b", "https://example.com/porno",
            "https://example.com/library-budget"]
    warc = warc_of(urls, tmp_path / "crawl.warc.gz")
    stats = run_pipeline(spark, cfg, [warc], ["extract"], str(tmp_path / "out"), "r", echo=lambda line: None)[0]
    assert stats["reconciled"] and stats["kept"] == 1
    assert stats["rejected"] == {"url_domain": 2, "url_word": 1}


def test_url_filter_can_be_switched_off_and_checks_its_settings(tmp_path):
    assert UrlFilter(UrlFilterConfig(enabled=False)).verdict("https://example.com/porno") is None
    assert UrlFilter(UrlFilterConfig(soft_threshold=1)).verdict("https://example.com/sex-ed") == ("url_word", "sex")
    with pytest.raises(ConfigError, match=r"extract.url_filter.domain_lists\[0\]: file not found"):
        config.load(overrides={"extract": {"url_filter": {"domain_lists": [str(tmp_path / "none")]}}})
    with pytest.raises(ConfigError, match="no domain list ships"):
        config.load(overrides={"extract": {"url_filter": {"domain_lists": ["shipped"]}}})


def test_a_changed_list_or_setting_changes_the_extract_fingerprint(tmp_path, domain_list):
    cfg = config.load(overrides={"extract": {"url_filter": {"domain_lists": [domain_list]}}})
    extract = registry.stage_class("extract")
    before = stage_fingerprint(extract(None, cfg), "upstream")
    (tmp_path / "domains").write_text("another.example\n")
    changed_list = stage_fingerprint(extract(None, cfg), "upstream")
    more_soft = config.load(overrides={"extract": {"url_filter": {"domain_lists": [domain_list], "soft_threshold": 3}}})
    assert len({before, changed_list, stage_fingerprint(extract(None, more_soft), "upstream")}) == 3


def test_shipped_url_lists_keep_the_urls_of_real_crawls(shared_urls):
    """Precision on URLs nobody tuned on: every target URI of the shared WARCs (archive.org, gov.uk,
    Common Crawl, ClueWeb) is kept."""
    url_filter = UrlFilter(UrlFilterConfig())
    assert [u for u in shared_urls if url_filter.verdict(u)] == []


@pytest.fixture(scope="module")
def shared_urls():
    from warcio.archiveiterator import ArchiveIterator

    urls = set()
    for path in sorted(shared("warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            urls.update(r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(stream)
                        if r.rec_headers.get_header("WARC-Target-URI"))
    assert len(urls) > 500
    return sorted(urls)


# ---------------------------------------------------------------- C4's bad-words rule in filter

ENGLISH = ("The museum opened a new wing this spring. Visitors can see paintings from the last two "
           "centuries, and the guides explain how each one was restored. {extra} The cafe on the "
           "ground floor serves lunch until three. Tickets are cheaper for students and families.")


def verdict(filter_cfg, text):
    out = DocumentFilter(filter_cfg).apply([text])
    return out["lang"][0], out["bad_words"][0], out["failed_rules"][0]


def with_bad_words_rule(filter_cfg, **changes):
    rules = dict(filter_cfg.rules)
    rules["c4_bad_words"] = dataclasses.replace(rules["c4_bad_words"], **changes)
    return dataclasses.replace(filter_cfg, rules=rules)


def test_a_page_with_a_listed_word_is_rejected_by_the_c4_rule_only_when_it_is_on():
    off = config.PipelineConfig().filter  # off by default: the lists reject clean text too
    on = with_bad_words_rule(off, enabled=True)
    dirty = ENGLISH.format(extra="One room shows erotic drawings and a dildo.")
    clean = ENGLISH.format(extra="One room shows maps of the old harbour.")
    assert verdict(on, dirty)[:2] == ("en", 2) and "c4_bad_words" in verdict(on, dirty)[2]
    assert verdict(off, dirty)[:2] == ("en", 2) and "c4_bad_words" not in verdict(off, dirty)[2]
    assert verdict(on, clean)[1] == 0 and "c4_bad_words" not in verdict(on, clean)[2]


def test_the_c4_rule_judges_only_its_languages_but_the_signal_is_stored_for_every_list():
    on = with_bad_words_rule(config.PipelineConfig().filter, enabled=True)  # as C4: English only
    chinese = "这家公司生产的奶粉质量很好，适合成人和儿童饮用。我们每天都喝，味道也不错，价格合理，推荐大家购买。"
    lang, count, failed = verdict(on, chinese)
    assert (lang, count) == ("zh", 2) and "c4_bad_words" not in failed  # 奶, 成人
    assert "c4_bad_words" in verdict(with_bad_words_rule(on, languages=["en", "zh"]), chinese)[2]


def test_bad_words_match_whole_words_in_spaced_languages_and_anywhere_in_unspaced_ones(tmp_path):
    words = BadWords({})
    assert words.count("a g-spot and a g spot", "en") == 1   # one entry, spelled two ways
    assert words.count("Scunthorpe's classic assessment", "en") == 0  # no word inside a word
    assert words.count("可能性很大", "zh") == 0               # 性 is on datatrove's allow-list
    assert words.count("text", "xx") is None                  # no list: no signal
    own = tmp_path / "en.txt"
    own.write_text("# ours\nharbour\n")
    assert BadWords({"en": str(own)}).count("the old harbour", "en") == 1


def both_scans(entries):
    """The entries' compiled scan, asserting on every text that it finds what the definition does."""
    sequences = word_sequences(entries)
    compiled, reference = TextMatcher(sequences), WordSequenceMatcher(sequences)

    def found(text):
        hits = compiled.found(text)
        assert hits == reference.found(re.findall(r"\w+", text)), text
        return hits
    return found


def test_the_compiled_scan_takes_re_word_characters_on_every_code_point():
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert [c for c in range(sys.maxunicode + 1) if word_char(every[c])] == \
        [m.start() for m in re.finditer(r"\w", every)]


def test_the_compiled_scan_matches_whole_words_and_phrases_of_consecutive_words():
    found = both_scans(["g-spot", "two girls one cup", "scheiße", "big", "big tits", "x_y", "3some"])
    assert found("a g-spot, a g spot") == {("g", "spot")}
    assert found("g-spotted, g-spots, eg-spot, g--") == set()             # no word inside a word
    assert found("two girls, one... cup!") == {("two", "girls", "one", "cup")}  # split by punctuation
    assert found("two two girls one cup") == {("two", "girls", "one", "cup")}
    assert found("two girls one cupcake; two girls one") == set()        # the last word goes on / ends
    assert found("scheiße, scheißegal, bscheiße") == {("scheiße",)}       # non-ASCII letters
    assert found("big tits") == {("big",), ("big", "tits")}               # a word and a phrase it starts
    assert found("x_y x-y x_yz") == {("x_y",)}                            # underscore is a word character
    assert found("3some 23some 3somes ٣big ²big") == {("3some",)}        # so are digits, of any script
    assert found("") == set()


def test_bad_words_are_counted_in_the_lower_cased_text_where_lowering_changes_it(tmp_path):
    own = tmp_path / "en.txt"
    own.write_text("kelvin\nstanbul\nσοφος\n")
    words = BadWords({"en": str(own)})
    assert words.count("\u212aELVIN", "en") == 1  # KELVIN SIGN lowers to an ASCII k
    assert words.count("İSTANBUL", "en") == 1     # İ lowers to i and a combining dot, not a word character
    assert words.count("ΣΟΦΟΣ", "en") == 1        # a final capital sigma lowers to ς


def test_the_compiled_scan_agrees_with_the_definition_on_random_text_in_every_listed_language():
    rng = random.Random(15)
    odd = [" ", "-", "_", ".", "\n", "'", "ß", "ς", "\u0301", "\u200d", "٣", "²", "½", "\ud800"]
    for lang, path in shipped_lists().items():
        if lang in UNSPACED_LANGUAGES:
            continue
        entries = read_word_list(path)
        found = both_scans(entries)
        for _ in range(300):
            pieces = [rng.choice(entries) if rng.random() < 0.5 else rng.choice(odd) if rng.random() < 0.6
                      else "".join(chr(rng.randrange(sys.maxunicode + 1)) for _ in range(rng.randint(1, 3)))
                      for _ in range(rng.randint(1, 12))]
            found("".join(pieces))


@pytest.mark.slow
def test_the_compiled_scan_agrees_with_the_definition_on_the_udhr_in_every_language():
    texts = [path.read_text(encoding="utf-8", errors="replace").lower()
             for path in sorted(shared("corpora/multilingual/udhr").iterdir())]
    for lang, path in shipped_lists().items():
        if lang not in UNSPACED_LANGUAGES:
            found = both_scans(read_word_list(path))
            for text in texts:
                found(text)
