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
from urllib.parse import urlsplit

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from conftest import shared
from corpusmill.config import ConfigError
from jobs import config, registry
from jobs.pipeline import run_pipeline, stage_fingerprint
from udfs.common.word_lists import WordSequenceMatcher, read_word_list, word_sequences
from udfs.extract.url_filter import UrlFilter, UrlFilterConfig
from udfs.extract.warc import WarcDocumentReader
from udfs.filter._badwords import TextMatcher, word_char
from udfs.filter.badwords import UNSPACED_LANGUAGES, BadWords, shipped_lists
from udfs.filter.rules import DocumentFilter

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


@pytest.mark.parametrize("url, expected", [
    ("https://%62adsite.com/", ("url_domain", "badsite.com")),            # a percent-escaped letter
    ("https://%2562adsite.com/", ("url_domain", "badsite.com")),          # escaped twice
    ("https://www.badsite\u3002com/", ("url_domain", "badsite.com")),     # the ideographic full stop
    ("https://\uff42\uff41\uff44\uff53\uff49\uff54\uff45.com/", ("url_domain", "badsite.com")),  # full-width
    ("https://BADSITE.com.:8443/", ("url_domain", "badsite.com")),       # case, trailing dot, port
    ("https://badsite.com%40example.org/", ("url_domain", "badsite.com")),  # an escaped "@" names two hosts
    ("https://xn--bcher-kva.example/", ("url_domain", "b\u00fccher.example")),  # IDN listed in Unicode
    ("https://shop.xn--caf-dma.example/", ("url_domain", "caf\u00e9.example")),  # listed as punycode
    ("https://example.com/p\u043erno-clips", ("url_word", "porno")),     # a Cyrillic o in a listed word
    ("https://example.com/\u0440\u043erno-clips", ("url_word", "porno")),  # Cyrillic p and o
    ("https://example.com/\uff50\uff4f\uff52\uff4e\uff4f", ("url_word", "porno")),  # full-width word
    ("https://example.com/%2570orno", ("url_word", "porno")),            # an escaped escape in a word
    ("https://xn--prno-55d.example/", ("url_word", "porno")),             # a homoglyph inside an IDN host
    # Ordinary spellings stay as they were.
    ("https://notbadsite.com/", None),
    ("https://example.com/caf%C3%A9-menu", None),
    ("https://ru.example/%D0%BF%D0%BE%D1%87%D1%82%D0%B0", None),          # a Russian word (почта)
    ("https://example.com/%E2%82%AC100-deals?q=a%2Bb", None),
])
def test_a_listed_host_or_word_is_found_however_it_is_spelled(tmp_path, url, expected):
    listed = tmp_path / "domains"
    listed.write_text("badsite.com\nb\u00fccher.example\nxn--caf-dma.example\n")
    assert UrlFilter(UrlFilterConfig(domain_lists=[str(listed)])).verdict(url) == expected


def test_a_word_list_in_cyrillic_still_matches_its_own_words(tmp_path):
    """Words and list entries are compared by the same Latin skeleton: a Russian entry whose letters
    look Latin matches that Russian word, spelled as it is or escaped."""
    words = tmp_path / "ru"
    words.write_text("\u0441\u0435\u043a\u0441\n")  # секс
    url_filter = UrlFilter(UrlFilterConfig(word_lists=[str(words)]))
    assert url_filter.verdict("https://ru.example/\u0441\u0435\u043a\u0441-shop")[0] == "url_word"
    assert url_filter.verdict("https://ru.example/%D1%81%D0%B5%D0%BA%D1%81-shop")[0] == "url_word"
    assert url_filter.verdict("https://ru.example/%D0%BF%D0%BE%D1%87%D1%82%D0%B0") is None


def test_normalising_urls_changes_no_verdict_on_the_urls_of_real_crawls(shared_urls, tmp_path):
    """With every third real host on a domain list, each real URL is rejected exactly when its host as
    urlsplit reads it, or a parent of it, is listed: the readings of hostile spellings add nothing
    to ordinary URLs."""
    hosts = sorted({urlsplit(u).hostname for u in shared_urls} - {None})
    listed = set(hosts[::3])
    (tmp_path / "domains").write_text("\n".join(listed) + "\n")
    url_filter = UrlFilter(UrlFilterConfig(domain_lists=[str(tmp_path / "domains")]))

    def listed_parent(url):
        labels = (urlsplit(url).hostname or "").split(".")
        return any(".".join(labels[i:]) in listed for i in range(len(labels)))

    verdicts = [url_filter.verdict(u) for u in shared_urls]
    assert [v is not None and v[0] == "url_domain" for v in verdicts] == [listed_parent(u) for u in shared_urls]
    assert [v for v in verdicts if v is not None and v[0] != "url_domain"] == []
    assert 0 < sum(v is not None for v in verdicts) < len(shared_urls)


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
