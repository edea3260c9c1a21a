"""Per-language thresholds: which thresholds judge a document (its tag must be confident), and the
arithmetic of `corpusmill derive-thresholds` (udfs/filter/thresholds.py), on plain values."""
import dataclasses

import pytest

from conftest import shared
from corpusmill.config import ConfigError
from udfs.filter.rules import DocumentFilter, FilterConfig, RuleConfig, Thresholds
from udfs.filter.thresholds import document_words, following, loosened, scaled, stop_words

LENGTH_RULE = RuleConfig(ruleset="gopher_quality", signal="mean_word_length", min=3, max=10, derive="scale",
                         by_language={"ko": Thresholds(2, 7)})


def test_a_language_s_thresholds_judge_only_a_confident_tag():
    assert LENGTH_RULE.thresholds_for("ko", confident=True) == Thresholds(2, 7)
    assert LENGTH_RULE.thresholds_for("ko", confident=False) == Thresholds(3, 10)
    assert LENGTH_RULE.thresholds_for("fi", confident=True) == Thresholds(3, 10)


def test_confidence_is_the_tag_s_score_against_its_language_s_minimum():
    language = dataclasses.replace(FilterConfig().language, confident_min_score=0.8,
                                   confident_min_score_by_language={"xh": 0.5})
    assert language.is_confident("en", 0.85) and not language.is_confident("en", 0.79)
    assert language.is_confident("xh", 0.6)
    assert not language.is_confident("und", 1.0) and not language.is_confident(None, None)


def test_an_unconfident_tag_gets_no_stop_words_and_the_agnostic_thresholds():
    base = FilterConfig()
    rule = dataclasses.replace(LENGTH_RULE, by_language={"en": Thresholds(20, 30)})
    cfg = dataclasses.replace(base, rulesets=["gopher_quality"], rules={"gopher_mean_word_length": rule},
                              language=dataclasses.replace(base.language, confident_min_score=0.0))
    prose = "The committee met on Tuesday and agreed to publish the report in the spring of next year. " * 5
    confident = DocumentFilter(cfg).apply([prose])
    assert confident["lang_confident"] == [True] and confident["stop_words"][0] > 0
    assert confident["reject_rule"] == ["gopher_mean_word_length"]  # English's (absurd) 20..30
    unsure = DocumentFilter(dataclasses.replace(cfg, language=dataclasses.replace(
        base.language, confident_min_score=1.0))).apply([prose])
    assert unsure["lang_confident"] == [False] and unsure["stop_words"] == [None]
    assert unsure["reject_rule"] == [None]  # the rule's own 3..10


def test_scaled_thresholds_follow_the_language_s_median_word_length():
    loosest, by_language = scaled(dataclasses.replace(LENGTH_RULE, by_language={}), {"en": 5.0, "ko": 3.5, "fi": 8.0}, "en")
    assert by_language["en"] == Thresholds(3, 10)
    assert by_language["ko"] == Thresholds(2.1, 7.0)
    assert loosest == Thresholds(2.1, 16.0)
    with pytest.raises(ValueError, match="anchor"):
        scaled(LENGTH_RULE, {"ko": 3.5}, "en")


def test_a_quantile_rule_is_loosened_only_where_clean_text_needs_it():
    cfg = FilterConfig().derivation
    punct = RuleConfig(ruleset="fineweb", signal="punct_line_frac", min=0.12, derive="quantile")
    assert loosened(punct, {"th": 0.0, "de": 0.9, "sw": 0.1}, {}, cfg) == {
        "th": Thresholds(0.0, None), "sw": Thresholds(round(0.1 * (1 - cfg.margin), 4), None)}
    dup = RuleConfig(ruleset="gopher_repetition", signal="dup_5gram_char_frac", max=0.15, derive="quantile")
    assert loosened(dup, {}, {"bo": 0.4, "de": 0.05}, cfg) == {"bo": Thresholds(None, round(0.4 * (1 + cfg.margin), 4))}


def test_a_following_rule_is_loosened_with_the_rule_it_follows():
    seven = RuleConfig(ruleset="gopher_repetition", signal="dup_7gram_char_frac", max=0.13, derive="quantile")
    eight = RuleConfig(ruleset="gopher_repetition", signal="dup_8gram_char_frac", max=0.12, derive="quantile",
                       follows="gopher_dup_7gram")
    leader = {"my": Thresholds(None, 0.2449), "lo": Thresholds(None, 0.1923)}
    own = {"lo": Thresholds(None, 0.25), "bo": Thresholds(None, 0.3)}
    assert following(eight, own, seven, leader) == {
        "bo": Thresholds(None, 0.3),       # the leader keeps its own threshold there
        "lo": Thresholds(None, 0.25),      # already looser than 0.1923 - 0.01
        "my": Thresholds(None, 0.2349)}    # loosened with the leader


@pytest.mark.parametrize("follows", ["gopher_dup_9gram", "gopher_alpha_words", "no_such_rule"])  # after; no max
def test_a_rule_follows_only_a_rule_with_a_max_listed_before_it(follows):
    base = FilterConfig()
    eight = dataclasses.replace(base.rules["gopher_dup_8gram"], follows=follows)
    rules = {name: (eight if name == "gopher_dup_8gram" else rule) for name, rule in base.rules.items()}
    with pytest.raises(ConfigError, match="gopher_dup_8gram.follows"):
        dataclasses.replace(base, rules=rules).validate("filter")
    with pytest.raises(ConfigError, match="follows"):
        dataclasses.replace(eight, derive=None).validate("filter.rules.gopher_dup_8gram")


def test_stop_words_are_the_short_words_found_in_most_documents():
    cfg = dataclasses.replace(FilterConfig().derivation, stop_words=3, stop_word_candidates=5)
    counts = [("everyone", 50), ("the", 49), ("of", 48), ("rights", 47), ("and", 46), ("a", 10)]
    assert stop_words(counts, cfg) == ["and", "of", "the"]  # "a" is short but not frequent enough


def test_stop_words_give_every_variety_of_a_language_its_words():
    cfg = dataclasses.replace(FilterConfig().derivation, stop_words=4, stop_word_candidates=7)
    # Five documents spelt one way, three another (one tag for both, as lid.176's qu for every Quechua).
    counts = [("i", 5), ("o", 5), ("y", 5), ("kay", 5), ("pi", 3), ("chay", 3), ("mana", 3)]
    documents = [(frozenset({"i", "o", "y", "kay"}), 5), (frozenset({"pi", "chay", "mana"}), 3)]
    assert stop_words(counts, cfg) == ["i", "o", "pi", "y"]  # the second spelling's documents hold one
    # y goes (the first spelling keeps two), chay comes (the second gets two); pi stays, which they need.
    assert stop_words(counts, cfg, documents, per_document=2) == ["chay", "i", "o", "pi"]
    covered = [(frozenset({"i", "o", "y", "pi"}), 8)]  # a list every document passes stays as it is
    assert stop_words(counts, cfg, covered, per_document=2) == stop_words(counts, cfg)


def test_document_words_are_distinct_lowercased_and_none_for_unsegmented_scripts():
    assert document_words("Umntu wonke, UMNTU.") == ["umntu", "wonke"]
    assert document_words("ทุกคนมีสิทธิ") == [] and document_words(None) == []


@pytest.mark.slow
def test_the_default_config_keeps_held_out_udhr_text_in_xhosa_zulu_korean_and_thai():
    from tools.fixtures.udhr import declarations, is_held_out

    shared("corpora/multilingual/udhr-unicode/declaration")
    texts = {}
    for declaration in declarations():
        if declaration.iso6393 in ("xho", "zul", "kor", "tha"):
            parts = [(n, declaration.articles[n]) for n in sorted(declaration.articles)
                     if is_held_out(declaration.iso6393, n)]
            texts[declaration.iso6393] = ["\n\n".join("\n".join(p) for _, p in parts[i:i + 4]) for i in (0, 4)]
    columns = DocumentFilter(FilterConfig()).apply([t for docs in texts.values() for t in docs])
    assert columns["_outcome"] == ["kept"] * 8, list(zip(columns["lang"], columns["reject_rule"]))


@pytest.mark.slow
def test_c4_s_five_sentences_are_loosened_where_a_language_marks_fewer():
    from tools.fixtures.udhr import declarations

    shared("corpora/multilingual/udhr-unicode/declaration")
    # Articles 4..7: one sentence each in Lao, which runs article 7's two English sentences together
    lao = next(d for d in declarations() if d.code == "lao")
    text = "\n\n".join("\n".join(lao.articles[n]) for n in (4, 5, 6, 7))
    english = " ".join(["The river rises in the hills to the north of the town and flows south."] * 4)
    columns = DocumentFilter(FilterConfig()).apply([text, english])
    assert columns["lang"] == ["lo", "en"] and columns["lang_confident"] == [True, True]
    assert columns["c4_sentences"] == [4, 4]
    assert "c4_few_sentences" not in columns["failed_rules"][0], columns["failed_rules"][0]
    assert "c4_few_sentences" in columns["failed_rules"][1]


def test_derive_thresholds_writes_a_preset_the_filter_loads(spark, tmp_path):
    import json

    import yaml

    from jobs.config import load
    from jobs.thresholds_command import derive, write_preset

    # Two languages: English prose, and a made-up one with long words and lines that never end in punctuation.
    prose = "The committee met on Tuesday and agreed to publish the report of the year in the spring.\n"
    long_words = "Ngokwesiqhelo abantwana bayakuthanda ukudlala ngaphandle kwendlu yabo yonke imihla\n"
    rows = [{"text": prose * (3 + i % 4), "lang": "en"} for i in range(8)]
    # Three documents of xx spelt another way: only "ukudlala" among the list's shortest words.
    variety = "Ngokwesikhathisonke izinganezethuzonke ziyathandisisakakhulu ukudlala phandlekakhulukakhulu\n"
    rows += [{"text": long_words * (3 + i % 4), "lang": "xx"} for i in range(8)] + [{"text": "Too few.", "lang": "yy"}]
    rows += [{"text": variety * (3 + i % 3), "lang": "xx"} for i in range(3)]
    reference = tmp_path / "reference.jsonl"
    reference.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = load().filter
    # A rule that follows gopher_dup_5gram on a signal these texts never raise (no "#"): loosened only by following.
    follower = RuleConfig(ruleset="gopher_quality", signal="hash_word_ratio", max=0.01, derive="quantile",
                          follows="gopher_dup_5gram")
    cfg = dataclasses.replace(cfg, rules={**cfg.rules, "hash_follower": follower},
                              derivation=dataclasses.replace(cfg.derivation, stop_words=8, stop_word_candidates=24))
    output = tmp_path / "preset.yaml"
    section = derive(spark, str(reference), cfg)
    five = section["rules"]["gopher_dup_5gram"]["by_language"]  # each line repeated: loosened for both
    assert set(five) == {"en", "xx"}
    assert section["rules"].pop("hash_follower")["by_language"] == {
        lang: {"max": round(t["max"] - (0.15 - 0.01), 4)} for lang, t in five.items()}
    write_preset(section, output, str(reference))

    preset = yaml.safe_load(output.read_text(encoding="utf-8"))["filter"]
    assert set(preset["stop_words"]) == {"en", "xx"}  # yy has fewer than min_documents documents
    assert preset["stop_words"]["en"] == sorted(["and", "in", "met", "of", "on", "the", "to", "year"])
    # xx's list gives the other spelling's documents three words (the rule asks two): two of theirs.
    assert set(preset["stop_words"]["xx"]) & set(variety.lower().split()) == {
        "ukudlala", "izinganezethuzonke", "ngokwesikhathisonke"}
    word_length = preset["rules"]["gopher_mean_word_length"]
    assert word_length["by_language"]["en"] == {"min": 3.0, "max": 10.0}
    assert word_length["by_language"]["xx"]["min"] > 3.0 * 1.5  # its words are twice English's
    assert preset["rules"]["fineweb_punct_lines"]["by_language"] == {"xx": {"min": 0.0}}
    assert list(preset["rules"])[:2] == ["gopher_short_doc", "gopher_long_doc"]  # conf/filter.yaml's order
    loaded = load(output).filter  # as `corpusmill run --config preset.yaml` reads it
    assert loaded.rules["fineweb_punct_lines"].thresholds_for("xx", True).min == 0.0
