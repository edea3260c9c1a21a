"""The perplexity signal: Kneser-Ney estimation, ARPA files, the shipped en model and a zh model trained
here on real text, and the Spark columns (perplexity, ppl_bucket)."""
import dataclasses
import itertools
import json
import random
import re
import zipfile

import numpy as np
import pytest
from pyspark.sql import functions as F

from conftest import shared
from corpusmill.config import ConfigError, build
from jobs.stages.filter.perplexity import with_perplexity, with_ppl_bucket
from tools.ngram_lm_train import estimate, main, paragraphs_of_file
from udfs.filter.ngram_lm import (BOS, EOS, UNK, KenLMModel, NgramModel, document_sums_reference, load_model, read_arpa,
                                  tokenize, tokenize_all, tokenize_lines, tokenize_reference, write_arpa)
from udfs.filter.perplexity import MODELS_DIR, SHIPPED, PerplexityConfig, PerplexityScorer, scored_part
from udfs.filter.rules import DocumentFilter, FilterConfig

# ---------------------------------------------------------------- estimation and the ARPA format

WORDS = "a b c d e f g h".split()


def toy_sentences(seed=0, n=300):
    rng = random.Random(seed)
    return [[rng.choice(WORDS[:rng.randint(2, 8)]) for _ in range(rng.randint(1, 9))] for _ in range(n)]


def logprob(model, context, word):
    """log10 p(word | context) by the textbook backoff walk, one word at a time: the reference that
    ``NgramModel`` vectorises."""
    vocab = model.ngrams[0]
    context = [w if (w,) in vocab else UNK for w in context][-(model.order - 1):]
    word = word if (word,) in vocab else UNK
    backoff = 0.0
    for start in range(len(context) + 1):
        g = tuple(context[start:]) + (word,)
        if g in model.ngrams[len(g) - 1]:
            return backoff + model.ngrams[len(g) - 1][g][0]
        h = tuple(context[start:])
        backoff += model.ngrams[len(h) - 1][h][1] if h in model.ngrams[len(h) - 1] else 0.0
    raise AssertionError("every word has a unigram")


@pytest.mark.parametrize("prune", [[], [0, 1, 2]])
def test_every_conditional_distribution_sums_to_one(prune, tmp_path):
    write_arpa(estimate(toy_sentences(), order=3, min_count=2, prune=prune), str(tmp_path / "toy.arpa"))
    model = read_arpa(str(tmp_path / "toy.arpa"))
    vocab = [g[0] for g in model.ngrams[0] if g != (BOS,)]
    for k in range(3):
        for context in itertools.product([BOS] + WORDS, repeat=k):
            if BOS in context[1:]:
                continue
            total = sum(10 ** logprob(model, context, w) for w in vocab)
            assert total == pytest.approx(1.0, abs=1e-4), context


def test_pruning_keeps_prefixes_and_suffixes_and_shrinks_the_model():
    full = estimate(toy_sentences(), order=3, min_count=2)
    pruned = estimate(toy_sentences(), order=3, min_count=2, prune=[0, 1, 2])
    assert pruned.counts()[2] < full.counts()[2]
    for n in (2, 3):
        for g in pruned.ngrams[n - 1]:
            assert g[:-1] in pruned.ngrams[n - 2] and g[1:] in pruned.ngrams[n - 2]


def test_rare_words_become_unk_and_unseen_words_score_as_unk():
    model = estimate([["a", "b"]] * 5 + [["a", "rare"]], order=2, min_count=2)
    assert ("rare",) not in model.ngrams[0] and (UNK,) in model.ngrams[0]
    assert logprob(model, ["a"], "never-seen") == logprob(model, ["a"], UNK)


@pytest.mark.parametrize("name", ["toy.arpa", "toy.arpa.gz"])
def test_arpa_round_trip_and_vectorised_scoring_match_the_reference(name, tmp_path):
    model = estimate(toy_sentences(), order=3, min_count=2, prune=[0, 1])
    write_arpa(model, str(tmp_path / name))
    back = read_arpa(str(tmp_path / name))
    assert back.counts() == model.counts()
    for n in range(3):
        for g, (logp, bow) in model.ngrams[n].items():
            assert back.ngrams[n][g] == pytest.approx((logp, bow), rel=1e-5, abs=1e-6)
    test = toy_sentences(seed=1, n=50) + [["zz", "a"], []]
    reference = [logprob(back, [BOS] + s[:i], w) for s in test for i, w in enumerate(s + [EOS])]
    vectorised = NgramModel(back)
    assert vectorised.token_scores_reference(test) == pytest.approx(reference, abs=1e-9)
    assert vectorised.token_scores(test) == pytest.approx(reference, abs=1e-9)


def test_a_model_missing_an_n_grams_suffix_is_searched_at_every_order():
    """The compiled scorer stops at the first order it misses only in a suffix-closed model (estimated
    models are). An ARPA file may lack a suffix, here the bigram (b c) of the trigram (a b c): that model
    is searched at every order and still scores as the textbook walk, and (a b c) is found."""
    model = estimate(toy_sentences(), order=3, min_count=2)
    assert NgramModel(model).suffix_closed
    assert ("a", "b", "c") in model.ngrams[2] and ("b", "c") in model.ngrams[1]
    del model.ngrams[1][("b", "c")]
    tables = NgramModel(model)
    assert not tables.suffix_closed
    test = toy_sentences(seed=2, n=50) + [["a", "b", "c"], ["x", "a", "b", "c", "a"]]
    reference = [logprob(model, [BOS] + s[:i], w) for s in test for i, w in enumerate(s + [EOS])]
    assert tables.token_scores(test) == pytest.approx(reference, abs=1e-9)
    assert np.array_equal(tables.token_scores(test), tables.token_scores_reference(test))
    assert tables.token_scores([["a", "b", "c"]])[2] == pytest.approx(model.ngrams[2][("a", "b", "c")][0])


def assert_same_tables(loaded, reference):
    assert list(loaded.vocab.items()) == list(reference.vocab.items())
    assert (loaded.order, loaded.unk, loaded.bos, loaded.eos) == (reference.order, reference.unk, reference.bos, reference.eos)
    for n in range(reference.order):
        for mine, theirs in ((loaded.keys, reference.keys), (loaded.logp, reference.logp), (loaded.bow, reference.bow)):
            assert mine[n].dtype == theirs[n].dtype and np.array_equal(mine[n], theirs[n]), n


@pytest.mark.parametrize("name", ["toy.arpa", "toy.arpa.gz"])
def test_read_gives_the_tables_read_arpa_gives(name, tmp_path):
    write_arpa(estimate(toy_sentences(), order=3, min_count=2, prune=[0, 1]), str(tmp_path / name))
    assert_same_tables(NgramModel.read(str(tmp_path / name)), NgramModel(read_arpa(str(tmp_path / name))))
    shipped = str(MODELS_DIR / "en.arpa.gz")
    assert_same_tables(NgramModel.read(shipped), NgramModel(read_arpa(shipped)))


def test_read_hands_other_forms_to_read_arpa(tmp_path):
    """Space-separated fields and stray spaces (which read_arpa strips) give the same model, a
    repeated n-gram read_arpa's (the last line wins), a count that differs from the header its error."""
    plain = tmp_path / "toy.arpa"
    write_arpa(estimate(toy_sentences(), order=3, min_count=2), str(plain))
    reference = NgramModel(read_arpa(str(plain)))
    lines = plain.read_text(encoding="utf-8").split("\n")
    is_entry = [bool(re.match(r"^-?[\d.e-]+\t", line)) for line in lines]
    variants = {
        "spaces.arpa": [line.replace("\t", " ") if entry else line for line, entry in zip(lines, is_entry)],
        "trailing.arpa": [line + "  " if entry else line for line, entry in zip(lines, is_entry)],
        # (on n-grams without a backoff, the one field a number does not guard)
        "no-break.arpa": [line + "\u00a0" if entry and line.count("\t") == 1 else line
                          for line, entry in zip(lines, is_entry)],
    }
    for name, variant in variants.items():
        (tmp_path / name).write_text("\n".join(variant), encoding="utf-8")
        assert_same_tables(NgramModel.read(str(tmp_path / name)), reference)
    first = is_entry.index(True)
    repeated = lines[:first + 1] + ["-0.5\t" + lines[first].split("\t")[1]] + lines[first + 1:]
    (tmp_path / "repeated.arpa").write_text("\n".join(repeated), encoding="utf-8")
    assert_same_tables(NgramModel.read(str(tmp_path / "repeated.arpa")),
                       NgramModel(read_arpa(str(tmp_path / "repeated.arpa"))))
    (tmp_path / "short.arpa").write_text("\n".join(lines[:first] + lines[first + 1:]), encoding="utf-8")
    with pytest.raises(ValueError, match="ARPA header declares"):
        NgramModel.read(str(tmp_path / "short.arpa"))


def test_load_takes_the_tables_from_the_cache_after_the_first_read(tmp_path, monkeypatch):
    """The first load on a machine reads the ARPA file and stores its arrays; later ones (other
    workers, other runs) take them from the table cache; a damaged entry is read again, and a cache
    that cannot be written leaves each load to read the file."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    shipped = str(MODELS_DIR / "en.arpa.gz")
    reads = []
    read = NgramModel.read.__func__
    monkeypatch.setattr(NgramModel, "read", classmethod(lambda cls, path: reads.append(path) or read(cls, path)))
    reference = NgramModel(read_arpa(shipped))
    paragraphs = tokenize_all(["The committee met on Tuesday to discuss the budget.", "zxq qqq 42 !!"])

    assert_same_tables(NgramModel.load(shipped), reference)
    (entry,) = (tmp_path / "cache" / "corpusmill" / "tables").glob("*.npz")
    cached = NgramModel.load(shipped)
    assert len(reads) == 1
    assert_same_tables(cached, reference)
    assert np.array_equal(cached.token_scores(paragraphs), reference.token_scores(paragraphs))

    damaged = bytearray(entry.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    entry.write_bytes(bytes(damaged))
    assert_same_tables(NgramModel.load(shipped), reference)
    assert len(reads) == 2 and entry.read_bytes() != bytes(damaged)

    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    assert_same_tables(NgramModel.load(shipped), reference)
    assert len(reads) == 3


def test_tokenizer_normalises_width_case_digits_and_splits_cjk_characters():
    tokens = tokenize("Ｈｅｌｌｏ，世界 in 2024—Done!")
    assert tokens == ["hello", ",", "世", "界", "in", "0", "—", "done", "!"]


# ---------------------------------------------------------------- the models: shipped en, zh trained here

def card(path):
    return json.loads(path.with_name(path.name.replace(".arpa.gz", ".card.json")).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def scorer():
    return PerplexityScorer(PerplexityConfig())


def wiki_held_out(limit: int):
    """Wikipedia paragraphs the shipped English model never saw: its card holds out every 20th
    paragraph of the training inputs in order, and the Wikipedia dump was the first input."""
    corpus = shared("corpora/en/enwiki-head-articles.xml")
    c = card(MODELS_DIR / "en.arpa.gz")
    assert c["held_out"] == "every 20th paragraph" and c["sources"][0]["path"] == corpus.name
    paragraphs = [p for i, p in enumerate(paragraphs_of_file(str(corpus))) if (i + 1) % 20 == 0]
    return [p for p in paragraphs if len(p) >= 80][:limit]


def peoples_daily():
    """People's Daily, January 1998, one paragraph a line: research use only, so read here, never shipped."""
    return shared("corpora/zh/peoples-daily-1998-01.txt").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def zh_model(tmp_path_factory):
    """A Chinese model trained by the documented command on every 20th line of People's Daily
    (89 k tokens, trained in seconds); no Chinese model ships (udfs/filter/lm_models/README.md)."""
    folder = tmp_path_factory.mktemp("zh_model")
    (folder / "train.txt").write_text("\n".join(peoples_daily()[::20]), encoding="utf-8")
    main(["train", "--lang", "zh", "--input", str(folder / "train.txt"), "--out", str(folder / "zh.arpa.gz"),
          "--licence", "research use only (People's Daily 1998-01)"])
    return folder / "zh.arpa.gz"


@pytest.fixture(scope="module")
def zh_config(zh_model):
    return PerplexityConfig(models={"en": SHIPPED, "zh": str(zh_model)})


def zh_news(limit: int):
    """People's Daily paragraphs the zh test model never saw (it trains on every 20th line), spread
    over the month."""
    unseen = [line for line in peoples_daily()[10::20] if len(line) >= 80]
    return unseen[::len(unseen) // limit][:limit]


def shuffled(paragraphs, unit):
    rng = random.Random(7)
    out = []
    for p in paragraphs:
        parts = p.split() if unit == "word" else list(p)
        rng.shuffle(parts)
        out.append((" " if unit == "word" else "").join(parts))
    return out


def keyword_list(paragraph, separator):
    """The paragraph as a keyword list (meta keywords, tag cloud, link bar): its distinct longer words."""
    return separator.join(dict.fromkeys(w for w in re.findall(r"[a-z]+", paragraph.lower()) if len(w) > 3))


def above(worse, better):
    """The fraction of (worse, better) pairs where ``worse`` has the higher perplexity."""
    return float(np.mean(np.array(worse)[:, None] > np.array(better)[None, :]))


def test_cards_describe_the_models_and_no_shipped_model_is_research_only(zh_model):
    for lang, path in (("en", MODELS_DIR / "en.arpa.gz"), ("zh", zh_model)):
        c = card(path)
        assert c["language"] == lang and c["order"] == 4 and c["held_out_perplexity"] > 1
        assert all(s["licence"] for s in c["sources"])
        assert path.with_name(c["file"]).stat().st_size == c["file_bytes"] < 6_000_000
    shipped = sorted(MODELS_DIR.glob("*.arpa.gz"))
    assert [p.name for p in shipped] == ["en.arpa.gz"]
    for path in shipped:
        assert not any("research" in s["licence"].lower() for s in card(path)["sources"])


def test_english_reference_text_scores_below_spam_chat_keyword_lists_and_shuffled_words(scorer):
    wiki = wiki_held_out(40)
    with zipfile.ZipFile(shared("corpora/en/abc.zip")) as zf:  # news the model never saw
        news = [p for name in sorted(zf.namelist()) if name.endswith(".txt")
                for p in zf.read(name).decode("utf-8", "replace").split("\n\n") if len(p) > 200][:40]
    sms = [line.split("\t", 1)[1] for line in
           shared("corpora/low/sms-spam-collection.tsv").read_text(encoding="utf-8").splitlines()
           if line.startswith("spam\t")][:200]
    with zipfile.ZipFile(shared("corpora/low/nps_chat.zip")) as zf:
        xml = zf.read("nps_chat/10-19-20s_706posts.xml").decode("utf-8")
    posts = re.findall(r"<Post [^>]*>([^<]*)<terminals>", xml)
    chat = ["\n".join(posts[i:i + 10]) for i in range(0, 400, 10)]
    for good in (wiki, news):
        ppl = scorer.score(good, ["en"] * len(good))
        keywords = [[keyword_list(p, separator) for p in good] for separator in (" ", " | ")]
        for bad in [shuffled(good, "word")] + keywords:
            worse = scorer.score(bad, ["en"] * len(bad))
            assert np.mean(np.array(worse) > np.array(ppl)) >= 0.95
        # How often a junk document scores above a reference one (ROC AUC); measured: spam 0.93-0.95,
        # chat 0.89-0.91 (short chat lines in plain words are fairly fluent English).
        assert above(scorer.score(sms, ["en"] * len(sms)), ppl) >= 0.85
        assert above(scorer.score(chat, ["en"] * len(chat)), ppl) >= 0.75
        commas = [keyword_list(p, ", ") for p in good]  # commas are context, not predictions
        assert above(scorer.score(commas, ["en"] * len(commas)), ppl) >= 0.95


def test_word_order_gain_tells_shuffled_words_from_prose_where_perplexity_overlaps(scorer):
    """The same words in another order: perplexity ranks most shuffles above the prose, but the ranges
    overlap (a hard subject's prose above an easy one's shuffle); the gain of the n-gram context over
    the words' frequencies separates every pair (measured: prose 0.12 and up, shuffles 0.01 and down)."""
    with zipfile.ZipFile(shared("corpora/en/abc.zip")) as zf:  # news the model never saw
        news = [p for name in sorted(zf.namelist()) if name.endswith(".txt")
                for p in zf.read(name).decode("utf-8", "replace").split("\n\n") if len(p) > 200][:40]
    for good in (wiki_held_out(40), news):
        ppl, gain = scorer.score_with_word_order(good, ["en"] * len(good))
        worse_ppl, worse_gain = scorer.score_with_word_order(shuffled(good, "word"), ["en"] * len(good))
        assert max(ppl) > min(worse_ppl)
        assert min(gain) > FilterConfig().rules["perplexity_word_order"].min > max(worse_gain)
    # Unknown words are left out (their probability is <unk>'s with or without context): a line of them
    # gains only what its end does; a language without a model has no gain
    unknown = scorer.score_with_word_order(["zyxq wvut srqp onml", "Some text."], ["en", "fr"])
    assert unknown[1][0] == pytest.approx(0.0, abs=0.05) and unknown[1][1] is None


ZH_SPAM = [
    "【中国移动】尊敬的客户，您的积分即将清零，请点击 http://x.cn 兑换现金红包，回复TD退订",
    "恭喜您获得本公司周年庆二等奖，奖金58000元及笔记本电脑一台，详情请致电客服领取",
    "您好，本公司有正规增值税发票代开，点数优惠，量大从优，联系电话13800138000 王经理",
    "特价机票 低价酒店 免费注册 赚钱 兼职 日结 刷单 网赚 彩票 代理 加盟 招商",
    "北京租房 北京二手房 北京房产网 北京搬家公司 北京装修公司 北京保洁 北京家政",
    "亲，包邮哦！！！好评返现5元，加微信领优惠券，手慢无～～～",
]


def test_chinese_reference_text_scores_below_spam_reviews_keyword_lists_and_shuffled_characters(zh_config):
    scorer = PerplexityScorer(zh_config)
    news = zh_news(40)
    reviews = [line.strip() for line in
               shared("corpora/zh/reviews-neg.txt").read_text(encoding="utf-8").splitlines()
               if len(line.strip()) > 20][:200]
    ppl = scorer.score(news, ["zh"] * len(news))
    worse = scorer.score(shuffled(news, "char"), ["zh"] * len(news))
    assert np.mean(np.array(worse) > np.array(ppl)) >= 0.95
    # ROC AUC as for English; measured with this small model (89 k tokens): spam
    # 0.975, reviews 0.88, keyword lists 0.95 (with 1.7 M characters each list scored above all news).
    assert above(scorer.score(ZH_SPAM, ["zh"] * len(ZH_SPAM)), ppl) >= 0.9
    assert above(scorer.score(reviews, ["zh"] * len(reviews)), ppl) >= 0.65
    assert above(scorer.score(ZH_SPAM[3:5], ["zh"] * 2), ppl) >= 0.8  # keyword lists


def test_one_bad_paragraph_raises_a_document_in_proportion_to_its_length(scorer):
    good = wiki_held_out(3)
    bad = "win cash now txt WIN to 80086 claim ur prize"
    alone, with_bad, with_more_bad = scorer.score(
        ["\n".join(good), "\n".join(good + [bad]), "\n".join(good + [bad] * 3)], ["en"] * 3)
    assert alone < with_bad < with_more_bad < scorer.score([bad], ["en"])[0]


def test_only_the_paragraphs_within_max_chars_are_scored(scorer):
    good = "\n".join(wiki_held_out(3))
    bad = "win cash now txt WIN to 80086 claim ur prize"
    bounded = PerplexityScorer(dataclasses.replace(scorer.cfg, max_chars=len(good) + 1))
    assert bounded.score([good + "\n" + bad * 50], ["en"]) == scorer.score([good], ["en"])
    assert scored_part("x" * 50, 10) == "x" * 10 and scored_part("ab\ncd", 4) == "ab"


def test_languages_without_a_model_and_empty_texts_get_null(scorer):
    # No Chinese model ships, so by default Chinese is one of the languages without a model.
    texts = ["La Déclaration universelle des droits de l'homme a été adoptée à Paris.", ZH_SPAM[3],
             "Some text.", "Some text.", "", " \n \t\n", None]
    assert scorer.score(texts, ["fr", "zh", None, "und", "en", "en", "en"]) == [None] * 7


def test_auto_is_the_built_in_reader_whether_or_not_kenlm_is_installed(zh_model):
    """The compiled tables score several times KenLM's tokens per second; KenLM only when asked."""
    assert type(load_model(str(zh_model), "auto")) is NgramModel


def test_kenlm_reads_the_models_as_the_numpy_reader_does(zh_model):
    pytest.importorskip("kenlm")
    paragraphs = [tokenize(p) for p in wiki_held_out(20)]
    paragraphs += [tokenize(p) for p in ZH_SPAM]
    for path in (str(MODELS_DIR / "en.arpa.gz"), str(zh_model)):
        assert KenLMModel(path).token_scores(paragraphs) == pytest.approx(
            NgramModel.load(path).token_scores(paragraphs), abs=2e-3)


# ---------------------------------------------------------------- the compiled path against the reference

def every_code_point():
    """Each code point (surrogates aside) doubled, then between a letter, a digit and a mark: every
    character class and run boundary the tokenizer's scan decides, in strings of 4,096 code points."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    return ["".join(f"{c}{c}a{c}1{c}. " for c in chars[i:i + 4096]) for i in range(0, len(chars), 4096)]


def unicode_lines(seed, n):
    """Random multi-line strings of the characters where normalising or lowercasing a whole text could
    differ from doing it line by line: combining marks and Hangul jamo after a line feed, final sigma,
    dotted I, ligatures, other line breaks, digits of other scripts, underscores, CJK."""
    alphabet = list("aΣσΑ İﬁ_\n\n\r\u2028\u0301\u0308각가٣፩²①世。・-, .Å\u212b") + ["\n\u0301", "Σ\n", "ς"]
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def texts_of_the_corpora():
    """Real text in many scripts: the Universal Declaration of Human Rights in every language the
    shared copy has in UTF-8 (93), Wikipedia, People's Daily, SMS spam and two real web pages' HTML."""
    udhr = sorted(shared("corpora/multilingual/udhr").glob("*-UTF8"))
    pages = sorted(shared("html/trafilatura-eval").glob("*.html"))[:2]
    return ([p.read_text(encoding="utf-8", errors="replace") for p in udhr + pages] + wiki_held_out(100)
            + peoples_daily()[:500] + shared("corpora/low/sms-spam-collection.tsv").read_text(encoding="utf-8").splitlines())


def test_compiled_tokenizer_gives_the_reference_tokens_on_every_code_point_and_the_corpora():
    texts = every_code_point() + unicode_lines(seed=3, n=3000) + texts_of_the_corpora()
    for text in texts:
        assert tokenize(text) == tokenize_reference(text)
        assert tokenize_lines(text) == [t for t in map(tokenize_reference, text.split("\n")) if t]
    assert tokenize_all(["a b", "", "-"]) == [["a", "b"], ["-"]]


def reference_perplexity(model, text, count_punctuation, max_chars):
    """A document's perplexity the plain way, the reference the compiled path must match: regex
    tokens per line, numpy scores, punctuation marks left out unless counted."""
    lists = [t for t in map(tokenize_reference, scored_part(text, max_chars).split("\n")) if t]
    scores = model.token_scores_reference(lists)
    counted = np.array([count_punctuation or t == EOS or t[0].isalnum() for p in lists for t in (*p, EOS)], dtype=bool)
    return float(10 ** -(scores[counted].sum() / counted.sum())) if counted.any() else None


def test_compiled_scores_and_perplexities_equal_the_numpy_reference(zh_model):
    """Token scores equal to the bit (the same additions in the same order); document perplexities to
    1e-9 relative (the reference sums a document's scores in another order)."""
    texts = texts_of_the_corpora() + unicode_lines(seed=4, n=200) + ["", "\n\n", "x" * 30_000]
    cfg = PerplexityConfig(models={"en": SHIPPED, "zh": str(zh_model)}, backend="numpy", max_chars=5_000)
    scorer = PerplexityScorer(cfg)
    for lang in ("en", "zh"):
        model = scorer.model(lang)
        lists = [t for text in texts for t in tokenize_all(text.split("\n"))]
        lists += [["never-seen", "words", "0"], []]
        assert np.array_equal(model.token_scores(lists), model.token_scores_reference(lists))
        # The documents' sums read straight from the text (word-order gains included): those of the
        # token lists, to the bit
        parts = [scored_part(t, cfg.max_chars) for t in texts + every_code_point()]
        for counted in (False, True):
            sums, reference_sums = model.document_sums(parts, counted), document_sums_reference(model, parts, counted)
            assert all(np.array_equal(a, b) for a, b in zip(sums, reference_sums))
            assert (sums.known > 0).sum() > len(texts) // 2 and (sums.known < sums.counts).any()
        reference = [reference_perplexity(model, t, lang in cfg.count_punctuation, cfg.max_chars) for t in texts]
        assert sum(r is None for r in reference) >= 3  # empty texts
        compiled = scorer.score(texts, [lang] * len(texts))
        assert [c is None for c in compiled] == [r is None for r in reference]
        assert [c for c in compiled if c is not None] == pytest.approx([r for r in reference if r is not None], rel=1e-9)


@pytest.mark.parametrize("section, message", [
    ({"models": {"zh": "shipped"}}, "models.zh: no shipped model"),
    ({"models": {"en": "/nonexistent.arpa"}}, "models.en: file not found"),
    ({"max_perplexity": {"en": 1}}, "max_perplexity.en: must be > 1"),
    ({"bucket_quantiles": [0.6, 0.3]}, "bucket_quantiles"),
    ({"backend": "srilm"}, "backend"),
    ({"max_chars": 0}, "max_chars: must be a positive number"),
])
def test_config_errors_name_the_key(section, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        build(PerplexityConfig, section, "perplexity")


# ---------------------------------------------------------------- Spark

def test_spark_perplexity_and_per_language_buckets(spark, zh_config):
    en = wiki_held_out(30)
    zh = zh_news(30)
    junk = shuffled(en[:10], "word") + shuffled(zh[:10], "char")
    rows = ([(f"en{i}", t, "en") for i, t in enumerate(en)] + [(f"zh{i}", t, "zh") for i, t in enumerate(zh)]
            + [(f"junk{i}", t, "zh" if i >= 10 else "en") for i, t in enumerate(junk)]
            + [("fr", "Tous les êtres humains naissent libres et égaux en dignité et en droits.", "fr"),
               ("none", "No language.", None)])
    docs = spark.createDataFrame(rows, "id string, text string, lang string").repartition(3)
    cfg = zh_config
    # Cut-offs from the clean documents only, as the filter stage takes them from the kept ones.
    out, cutoffs = with_ppl_bucket(with_perplexity(docs, cfg), cfg, reference=~F.col("id").startswith("junk"))
    result = {r["id"]: r for r in out.collect()}
    assert set(result) == {r[0] for r in rows} and all(result[i]["text"] == t for i, t, _ in rows)
    assert result["fr"]["perplexity"] is None and result["fr"]["ppl_bucket"] is None
    assert result["none"]["perplexity"] is None and result["none"]["ppl_bucket"] is None
    assert sorted(cutoffs) == ["en", "zh"]
    for lang in ("en", "zh"):
        low, high = cutoffs[lang]
        scored = [r for r in result.values() if r["lang"] == lang]
        assert {r["ppl_bucket"] for r in scored} == {"head", "middle", "tail"}
        for r in scored:
            expected = "head" if r["perplexity"] < low else "middle" if r["perplexity"] < high else "tail"
            assert r["ppl_bucket"] == expected
    junk_buckets = [result[f"junk{i}"]["ppl_bucket"] for i in range(20)]
    assert junk_buckets.count("tail") >= 18 and "head" not in junk_buckets


# ---------------------------------------------------------------- the filter stage's rule

def test_filter_rule_rejects_keyword_lists_and_skips_languages_without_a_model():
    paragraphs = wiki_held_out(6)
    keywords = "\n".join(keyword_list(p, " ") for p in paragraphs)
    french = "Tous les êtres humains naissent libres et égaux en dignité et en droits. " * 3
    chinese = "\n".join(ZH_SPAM[3:5] * 3)  # keyword lists, but no zh model by default
    cfg = FilterConfig()
    columns = DocumentFilter(cfg).apply(["\n".join(paragraphs), keywords, french, chinese])
    assert cfg.rule_names()[-1] == "perplexity"
    assert "perplexity" not in columns["failed_rules"][0]
    assert "perplexity" in columns["failed_rules"][1]
    assert columns["perplexity"][1] > cfg.perplexity.max_perplexity["en"]
    # A maximum without a model (the default's zh) judges nothing: the perplexity is null.
    assert "zh" in cfg.perplexity.max_perplexity and "zh" not in cfg.perplexity.models
    for i, lang in ((2, "fr"), (3, "zh")):
        assert columns["lang"][i] == lang and columns["perplexity"][i] is None
        assert "perplexity" not in columns["failed_rules"][i]


def test_word_order_rule_rejects_shuffled_english_and_judges_no_language_without_a_model():
    paragraphs = wiki_held_out(8)
    french = "Tous les êtres humains naissent libres et égaux en dignité et en droits. " * 9
    columns = DocumentFilter(FilterConfig()).apply(["\n".join(paragraphs), "\n".join(shuffled(paragraphs, "word")),
                                                    french])
    assert columns["lang"] == ["en", "en", "fr"]
    assert "perplexity_word_order" not in columns["failed_rules"][0]
    assert "perplexity_word_order" in columns["failed_rules"][1]
    minimum = FilterConfig().rules["perplexity_word_order"].min
    assert columns["word_order_gain"][1] < minimum < columns["word_order_gain"][0]
    assert columns["word_order_gain"][2] is None and "perplexity_word_order" not in columns["failed_rules"][2]
