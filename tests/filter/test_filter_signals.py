"""Quality signals, language ID and rule evaluation on small strings with hand-computed values."""
import dataclasses
import random

import pytest
import regex

from corpusmill.config import ConfigError, build
from jobs import config
from udfs.filter.langid import UNDETERMINED, LanguageIdentifier, default_model_path
from udfs.filter.quality import TERMINAL_PUNCTUATION, compute_signals, count_sentences
from udfs.filter.rules import DocumentFilter, FilterConfig, LanguageConfig


def test_words_sentences_and_ratios_of_a_simple_line():
    s = compute_signals("The cat sat. The dog ran!", frozenset({"the", "be"}))
    # tokens: The cat sat . The dog ran !  -> 6 words, 8 tokens; 25 characters
    assert (s["n_chars"], s["n_words"], s["n_lines"], s["n_sentences"]) == (25, 6, 1, 2)
    assert s["mean_word_length"] == 3.0
    assert s["mean_sentence_length"] == 3.0
    assert s["char_repetition_ratio"] == pytest.approx(1 - 15 / 25)  # 15 distinct characters
    assert s["stop_words"] == 1  # "the", matched case-insensitively, counted once
    assert s["alpha_word_frac"] == 1.0
    assert s["punct_line_frac"] == 1.0 and s["short_line_frac"] == 1.0
    assert s["newline_word_ratio"] == 0.0 and s["hash_word_ratio"] == 0.0
    assert s["special_symbol_frac"] == 0.0 and s["digit_frac"] == 0.0
    assert s["top_2gram_char_frac"] == 0.0  # no bigram occurs twice
    assert s["dup_5gram_char_frac"] == 0.0


def test_chinese_counts_characters_as_words():
    s = compute_signals("我爱北京。我爱上海。")
    assert (s["n_chars"], s["n_words"], s["n_sentences"]) == (10, 8, 2)
    assert s["mean_word_length"] is None  # a character is not a word: the length rule stays off
    assert s["mean_sentence_length"] == 4.0
    assert s["top_2gram_char_frac"] == pytest.approx(4 / 10)  # "我爱" twice, no spaces to count
    assert s["top_3gram_char_frac"] == 0.0
    assert s["alpha_word_frac"] == 1.0
    assert s["c4_sentences"] == 2
    assert s["stop_words"] is None  # no stop-word list given


def test_duplicate_lines_paragraphs_and_top_ngram():
    text = "one two\n\none two\n\nthree"  # 23 characters
    s = compute_signals(text)
    assert s["dup_line_frac"] == pytest.approx(1 / 3)
    assert s["dup_line_char_frac"] == pytest.approx(7 / 23)
    assert s["dup_para_frac"] == pytest.approx(1 / 3)
    assert s["dup_para_char_frac"] == pytest.approx(7 / 23)
    assert s["top_2gram_char_frac"] == pytest.approx(14 / 23)  # "one two" (7 chars) twice
    assert s["top_3gram_char_frac"] == 0.0


def test_duplicated_ngrams_follow_gophers_skipping_scan():
    s = compute_signals("a b c d e a b c d e a b c d e")  # 29 characters, 15 one-letter words
    # 5-grams: "abcde" repeats at positions 5 and 10 (5 chars each); 6-grams: one repeat, then the
    # scan jumps past it; 7..10-grams: one repeat each. Same figures as datatrove's find_all_duplicate.
    assert [round(s[f"dup_{n}gram_char_frac"] * 29) for n in range(5, 11)] == [10, 6, 7, 8, 9, 10]
    assert s["top_2gram_char_frac"] == pytest.approx(9 / 29)  # "a b" three times (ties: the earliest)


def test_gopher_line_and_symbol_signals():
    text = "# Title\n- item one\n- item two...\n• item three…"  # 46 characters, 13 tokens
    s = compute_signals(text)
    assert s["bullet_line_frac"] == 0.75
    assert s["ellipsis_line_frac"] == 0.5
    assert s["hash_word_ratio"] == pytest.approx(1 / 13)
    assert s["ellipsis_word_ratio"] == pytest.approx(2 / 13)
    assert s["alpha_word_frac"] == pytest.approx(7 / 11)  # "#", "-", "-", "•" have no letter
    assert s["special_symbol_frac"] == pytest.approx(2 / 46)  # "#" and "•"
    assert s["punct_line_frac"] == pytest.approx(1 / 4)  # only "…" ends a line in punctuation


def test_c4_markers_follow_its_line_filters():
    text = ("Please enable JavaScript to view this page.\nWe use cookies on this site.\n{\n"
            "Lorem ipsum dolor sit amet.\nA real sentence here. And another one.")
    s = compute_signals(text)
    assert s["javascript_line_frac"] == pytest.approx(1 / 5)
    assert s["policy_line_frac"] == pytest.approx(1 / 5)
    assert s["lorem_ipsum"] is True
    assert s["curly_bracket"] is False  # a lone "{" line has too few words for C4 to judge it
    assert s["c4_sentences"] == 3  # javascript and policy lines do not count
    assert compute_signals("the code is function f() { return 1; }")["curly_bracket"] is True


@pytest.mark.parametrize("line, code", [
    ("the wage, समान-वेतनमानं {पारिश्रमिकं} as agreed", False),  # a translator's gloss
    ("the word {two words} and {l’homme} here", False),
    ("{orga your life} is a title, {gloss}, and more", False),
    ("the search URL q={query} is code", True),                    # a template's slot
    ("the code is function f() { return 1; }", True),
    ("the fraction \\frac{a}{b} of it", True),                  # LaTeX
    ("the power x^{2} of it", True),
    ("the template says ${name} to all", True),
    ("the wiki has {{cite web}} in it", True),
    ('the data is {"a": 1} in it', True),
    ("the loose { brace } here", True),
    ("the word {gloss}s with a suffix", True),
])
def test_a_brace_is_code_unless_it_holds_a_gloss(line, code):
    assert compute_signals(line)["curly_bracket"] is code


def test_digit_symbol_and_character_repetition_signals():
    s = compute_signals("abc 123 $$$")
    assert s["digit_frac"] == pytest.approx(3 / 11)
    assert s["special_symbol_frac"] == pytest.approx(3 / 11)
    assert s["char_repetition_ratio"] == pytest.approx(1 - 8 / 11)


def test_sentence_counting():
    assert count_sentences("Hello there. How are you? Fine!") == 3
    assert count_sentences('He said "stop." Then he left') == 2
    assert count_sentences("我很好。你呢？好的") == 3
    assert count_sentences("３．５％的增长。") == 1  # a full-width decimal point ends nothing
    assert count_sentences("...") == 0


def test_every_scripts_sentence_terminal_ends_a_sentence_and_a_line():
    """Terminal punctuation is Unicode's Sentence_Terminal: the Khmer khan and bariyoosan, the Chakma
    danda, the Javanese pada lingsa end sentences and lines as the full stop does."""
    khmer = "សិទ្ធិមនុស្សគឺជាគ្រឹះនៃសេរីភាព។ យុត្ដិធម៌ និងសន្ដិភាពក្នុងពិភពលោក៕"
    assert count_sentences(khmer) == 2
    for line in (khmer, "𑄇𑄟𑄴 𑄉𑄧𑄢𑄨𑄝𑄢𑄴 𑄃𑄊𑄬𑅁", "ꦱꦧꦼꦤ꧀ꦲꦸꦮꦺꦴꦁ꧉", "All of it."):
        assert compute_signals(f"{line}\n{line} x")["punct_line_frac"] == 0.5, line
    every_terminal = regex.findall(r"\p{Sentence_Terminal}", "".join(map(chr, range(0x20000))))
    assert set(every_terminal) <= set(TERMINAL_PUNCTUATION) and len(every_terminal) > 150


def test_a_tibetan_shad_ends_a_sentence_and_a_line():
    """Tibetan and Dzongkha close a sentence with a shad (།), which Sentence_Terminal leaves out; the
    tsheg (་) between syllables ends none."""
    dzongkha = "མི་ག་ར་ཡང་ཆ་འཇོག་དང་ཐོབ་དབང་ལུ་ཆ་མཉམ་སྦེ་སྐྱེཝ་ཨིན། ཁོང་ལུ་ཤེས་རབ་ཡོདཔ་ཨིན།"
    assert count_sentences(dzongkha) == 2
    assert compute_signals(f"{dzongkha}\n{dzongkha[:-1]}")["punct_line_frac"] == 0.5
    assert count_sentences(dzongkha.replace("།", "")) == 1  # one unterminated sentence


def test_c4_counts_the_words_of_a_line_between_ethiopic_wordspaces():
    """Amharic written with the wordspace (፡) and no space: each line is a sentence of many words, as the
    same line with spaces is (C4 counts sentences on lines of three words or more)."""
    line = "እያንዳንዱ፡ሰው፡ያላንዳች፡ልዩነት፡ማድረግ፡ለአንድ፡ዓይነት፡ሥራ፡እኩል፡የሆነ፡ደመወዝ፡የማግኘት፡መብት፡አለው።"
    assert compute_signals("\n".join([line] * 5))["c4_sentences"] == 5
    assert compute_signals("\n".join([line.replace("፡", " ")] * 5))["c4_sentences"] == 5
    assert compute_signals("\n".join(["ሰው፡መብት።"] * 5))["c4_sentences"] == 0  # two words a line


def test_two_ethiopic_wordspaces_are_a_full_stop():
    """Tigrinya typed with `፡፡` for the full stop `።`: its sentences and lines end as with `።`, while a
    lone wordspace separates words and ends nothing."""
    line = "ኩሎም ሰባት ማዕሪን እዮም፡፡ ምስትውዓልን ሕልናን ኦለዎም፡፡"
    assert count_sentences(line) == count_sentences(line.replace("፡፡", "።")) == 2
    assert count_sentences("ሕድሕድ ሰብ፡ መሰል ኦለዎ፡ ኩሎም") == 1
    assert compute_signals("ሕድሕድ ሰብ መሰል ኦለዎ፡፡\nሕድሕድ ሰብ መሰል ኦለዎ፡")["punct_line_frac"] == 0.5
    assert compute_signals("\n".join([line] * 3))["c4_sentences"] == 6


def test_a_short_line_is_measured_in_display_columns():
    """FineWeb's 30-character short line, with a wide character (Han, kana, Hangul) taking two columns: a
    17-character Chinese sentence is a full line, a 9-character one is short, Latin text is as before."""
    lines = ["人人在各国境内有权自由迁徙和居住。", "人人有权享有国籍。", "Everyone has the right to a nationality.",
             "Short line."]
    assert compute_signals("\n".join(lines))["short_line_frac"] == 0.5
    assert compute_signals("ｶﾀｶﾅ" * 7)["short_line_frac"] == 1.0  # halfwidth katakana: one column each


def test_empty_text_has_no_ratios():
    s = compute_signals("")
    assert s["n_words"] == 0 and s["n_chars"] == 0
    assert s["dup_line_frac"] is None and s["mean_word_length"] is None and s["digit_frac"] is None


def test_language_identifier_on_short_text():
    assert default_model_path().name == "lid.176.ftz"
    langs, scores = LanguageIdentifier().predict([
        "The committee will publish its report next week.",
        "委员会将于下周发布报告。",
        "Le comité publiera son rapport la semaine prochaine.",
        "Der Ausschuss veröffentlicht seinen Bericht\nnächste Woche.",
        "12 345 -- 67",
    ])
    assert langs == ["en", "zh", "fr", "de", UNDETERMINED]
    assert all(0.5 < s <= 1.0 for s in scores[:4]) and scores[4] == 0.0


def test_language_identifier_reads_only_the_first_max_chars():
    french = "Le comité publiera son rapport la semaine prochaine."
    text = french + " The committee will publish its report next week, after the hearings end." * 5
    assert LanguageIdentifier(max_chars=len(french)).predict([text])[0] == ["fr"]
    assert LanguageIdentifier(max_chars=0).predict([text])[0] == ["en"]


NOT_LANGUAGE = regex.compile(r"[\p{P}\p{S}\p{N}]+")


def reference_line(text, max_chars):
    """The line fastText reads, by the definition LanguageIdentifier.line computes in one pass."""
    return " ".join(NOT_LANGUAGE.sub(" ", text[:max_chars or None]).lower().split()) + "\n"


def test_the_line_fasttext_reads():
    identifier = LanguageIdentifier()
    # final sigma by its neighbours (a letter before, none after; a combining accent between is
    # ignored), "İ" lowered to two code points, every kind of str.split() space, digits and symbols
    assert identifier.line(" ΟΔΟΣ\u0301,ΣΑ\x1cİstanbul\x85ǅ 42%ß\u3000\u200b\n") == "οδος́ σα i̇stanbul ǆ ß \u200b\n"
    assert identifier.line("12 -- 34") == "\n"
    assert LanguageIdentifier(max_chars=4).line("Abc, Def") == "abc\n"


@pytest.mark.slow
def test_the_line_fasttext_reads_on_every_code_point():
    # Each code point between two letters: whether it separates words (P, S, N by the regex module's
    # Unicode tables, or a str.split() space) and how it lowers, against the definition.
    line = LanguageIdentifier().line
    different = [hex(code) for code in range(0x110000)
                 if line(f"a{chr(code)}b") != reference_line(f"a{chr(code)}b", 0)]
    assert different == []


def random_unicode(rng, length):
    tricky = ["Σ", "ΑΣ", "ΑΣ ", "Σ\u0301", "ʰΣ", "Σ\u00ad", "İ", "ß", "ǅ", "ﬃ", "\u0130\u0307", "\t", "\n\r",
              "\x0b\x0c", "\x1c\x1d\x1e\x1f", "\x85", "\xa0", "\u1680", "\u2000\u200a", "\u2028\u2029",
              "\u202f\u205f\u3000", "\u200b", "\ufeff", "\ud800", "\udfff", "'", "·", "٣", "½", "€", "😀", "  "]
    pieces = []
    for _ in range(length):
        kind = rng.random()
        if kind < 0.4:
            pieces.append(rng.choice(tricky))
        elif kind < 0.6:
            pieces.append(chr(rng.randrange(0x110000)))  # any category, unassigned and surrogates too
        elif kind < 0.8:
            pieces.append(chr(rng.randrange(0x3000)))  # the scripts with case
        else:
            pieces.append(rng.choice(["Word", "WORD", "word", " ", "ΛΌΓΟΣ", "Straße", "ĲSSEL"]))
    return "".join(pieces)


def test_the_line_fasttext_reads_on_random_unicode():
    rng = random.Random(15)
    texts = [random_unicode(rng, rng.randrange(1, 60)) for _ in range(3000)]
    for max_chars in (0, 5000, 7, 1):
        identifier = LanguageIdentifier(max_chars=max_chars)
        different = [text for text in texts if identifier.line(text) != reference_line(text, max_chars)]
        assert different == []


def test_default_filter_keeps_prose_and_tags_every_row():
    prose = ("The river rises in the hills to the north of the town and flows south through farmland. "
             "For most of its length it is slow and wide, and it was used to carry grain to the coast. "
             "In the nineteenth century a canal was cut beside it, and the towpath is now a public "
             "footpath that walkers can follow from the source to the sea. Several mills survive along "
             "the banks, and one of them has been restored as a museum. It opens on summer weekends.")
    columns = DocumentFilter(FilterConfig()).apply([prose, "Too short.", None])
    assert columns["_outcome"] == ["kept", "rejected", "error"]
    assert columns["lang"][:2] == ["en", "en"]
    assert columns["reject_rule"] == [None, "gopher_short_doc", None]
    assert columns["reject_value"][1] == 2.0
    assert "c4_few_sentences" in columns["failed_rules"][1]
    assert columns["error"][2] == "text is null"


def test_target_languages_and_minimum_scores():
    cfg = dataclasses.replace(FilterConfig(), rulesets=[],
                              language=LanguageConfig(targets=["en", "zh"], min_score=0.5,
                                                      min_score_by_language={"zh": 0.9999999}))
    columns = DocumentFilter(cfg).apply(["Le comité publiera son rapport.", "The committee will report.",
                                         "委员会将于下周发布报告。"])
    assert columns["reject_rule"] == ["language", None, "language_score"]
    assert columns["reject_value"][0] == columns["lang_score"][0]  # the language rules report lang_score
    assert cfg.rule_names() == ["language", "language_score"]


def test_rules_switch_off_singly_and_by_ruleset():
    base = FilterConfig()
    rules = {**base.rules, "gopher_short_doc": dataclasses.replace(base.rules["gopher_short_doc"], enabled=False)}
    # Confidently English (the stop-word rule judges only a confident tag), with one stop word.
    columns = DocumentFilter(dataclasses.replace(base, rules=rules)).apply(["Too short to keep."])
    assert "gopher_short_doc" not in columns["failed_rules"][0]
    assert columns["reject_rule"] == ["gopher_stop_words"]
    only_simple = DocumentFilter(dataclasses.replace(base, rulesets=["simple"])).apply(["Too short."])
    assert only_simple["failed_rules"] == [["simple_chars", "simple_sentence_length"]]  # 10 chars, 2 words


def test_simple_thresholds_preset_selects_its_table():
    cfg = config.load(config.CONF_DIR / "presets" / "simple_thresholds.yaml")
    active = cfg.filter.active_rules()
    assert {"simple_chars", "simple_special_symbols", "simple_sentence_length", "simple_digits"} <= set(active)
    assert "gopher_short_doc" not in active and "simple_char_repetition" not in active


@pytest.mark.parametrize("rules, message", [
    ({"x": {"ruleset": "gopher_quality", "signal": "nope", "min": 1}}, "filter.rules.x.signal: unknown signal"),
    ({"x": {"ruleset": "mine", "signal": "n_words", "min": 1}}, "filter.rules.x.ruleset: must be one of"),
    ({"x": {"ruleset": "c4", "signal": "n_words"}}, "filter.rules.x: a rule needs min, max or both"),
    ({"language": {"ruleset": "c4", "signal": "n_words", "min": 1}}, "reserved"),
])
def test_bad_rules_are_one_line_config_errors(rules, message):
    with pytest.raises(ConfigError, match=message):
        build(FilterConfig, {"rules": rules}, "filter")


def test_bad_language_settings_are_config_errors():
    with pytest.raises(ConfigError, match="filter.language.min_score"):
        build(FilterConfig, {"language": {"min_score": 1.5}}, "filter")
    with pytest.raises(ConfigError, match="filter.language.model: file not found"):
        build(FilterConfig, {"language": {"model": "/nonexistent/lid.176.bin"}}, "filter")
    with pytest.raises(ConfigError, match="filter.rulesets: unknown ruleset"):
        build(FilterConfig, {"rulesets": ["gopher"]}, "filter")
