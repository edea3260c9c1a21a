"""Machine-made negatives (scoring_service/training/negatives.py), on plain strings."""
import random
from collections import Counter

import pytest

from scoring_service.model.features import SENTENCE_END_MARKS
from scoring_service.training import negatives
from scoring_service.training.negatives import LanguagePool, make, sentences_of

TEXT = ("The committee met on Tuesday to discuss the budget. Several members raised concerns about the cost!\n"
        "After a long debate, the proposal was approved by a narrow margin. The chair thanked everyone for coming.")
OTHER = ["A storm passed over the town during the night. The river rose and flooded the lower fields.",
         "The school opened a new library in the spring. Children read there after their lessons every day.",
         "The farmers sold their grain at the market. Prices were higher than the year before."]
CHINESE = "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。"


def words_per_sentence(text):
    return [Counter(s.rstrip(".!?").split()) for line in text.split("\n") for s in sentences_of(line)]


def test_shuffled_keeps_each_sentence_words_and_its_closing_mark_at_the_end():
    out = make("shuffled", TEXT, random.Random(1))
    assert out != TEXT
    assert words_per_sentence(out) == words_per_sentence(TEXT)
    assert [s[-1] for s in sentences_of(out.replace("\n", " "))] == [".", "!", ".", "."]
    assert out.count("\n") == TEXT.count("\n")
    assert make("shuffled", TEXT, random.Random(1)) == out  # deterministic with its seed
    assert make("shuffled", TEXT, random.Random(2)) != out


def test_a_text_without_spaces_is_shuffled_by_character_and_joined_without_spaces():
    out = make("shuffled", CHINESE, random.Random(3))
    assert out != CHINESE and " " not in out
    assert Counter(out) == Counter(CHINESE)
    assert out.endswith("。")


@pytest.mark.parametrize("text, separator", [
    ("እያንዳንዱ፡ሰው፡የመሥራት፡መብት፡አለው። ሁሉም፡ሰው፡እኩል፡ነው።\nበሥራ፡ላይ፡ያለ፡ሰው።", "\u1361"),  # Ethiopic wordspace
    ("སྐྱེ་བོ་རེ་རེར་ཤེས་ཡོན་ཡོད། ལྷག་པར་སྔོན་འགྲོའི་མི་འག།", "\u0f0b"),  # Tibetan tsheg
])
def test_words_between_a_script_s_own_separators_are_shuffled_and_joined_with_it(text, separator):
    assert negatives.joiner_of(text) == separator
    out = make("shuffled", text, random.Random(6))
    assert out != text and out.count("\n") == text.count("\n") and out.count(" ") == text.count(" ")

    def words(t):
        return [Counter(negatives.words_of(negatives._split_closing(s)[0], separator))
                for line in t.split("\n") for s in sentences_of(line)]
    assert words(out) == words(text)  # the same words in each sentence, its closing mark at its end
    assert [s[-1] for s in sentences_of(out.replace("\n", " "))] == [s[-1] for s in sentences_of(text.replace("\n", " "))]


@pytest.mark.parametrize("mark", list(SENTENCE_END_MARKS))
def test_every_mark_that_ends_a_sentence_for_the_features_ends_one_for_the_negatives(mark):
    assert sentences_of(f"one two{mark} three four{mark}") == [f"one two{mark}", f"three four{mark}"]


def test_local_shuffle_moves_words_only_within_their_window():
    out = make("local_shuffle", TEXT, random.Random(4))
    first_words, shuffled_words = sentences_of(TEXT)[0].rstrip(".").split(), sentences_of(out)[0].rstrip(".").split()
    assert out != TEXT
    for start in range(0, len(first_words), 4):
        assert Counter(shuffled_words[start:start + 4]) == Counter(first_words[start:start + 4])


@pytest.mark.parametrize("order", [1, 2, 3])
def test_chains_draw_only_on_the_pool_and_are_about_as_long_as_the_text(order):
    pool = LanguagePool(OTHER)
    out = make(f"chain{order}", TEXT, random.Random(order), pool)
    vocabulary = {w for t in OTHER for w in t.split()}
    assert set(out.split()) <= vocabulary
    assert len(out.split()) >= len(TEXT.split())


def test_a_bigram_chain_only_joins_words_that_follow_each_other_in_the_pool():
    pool = LanguagePool(OTHER)
    seen = {pair for t in OTHER for s in sentences_of(t) for pair in zip(s.split(), s.split()[1:])}
    sentence = pool.chain_sentence(2, random.Random(5))
    assert set(zip(sentence, sentence[1:])) <= seen


def test_a_chain_walks_new_sentences_not_the_pool_s_own():
    pool = LanguagePool(OTHER)
    written = {tuple(s.split()) for t in OTHER for s in sentences_of(t)}
    rng = random.Random(7)
    for order in (2, 3):
        walks = [tuple(pool.chain_sentence(order, rng)) for _ in range(50)]
        assert not set(walks) & written


def test_a_pool_whose_chain_can_only_repeat_it_walks_the_order_below():
    pool = LanguagePool(["The river rose and flooded the lower fields."])  # every word follows one other
    sentence = pool.chain_sentence(2, random.Random(8))
    assert sentence and sentence != "The river rose and flooded the lower fields.".split()
    assert set(sentence) <= set("The river rose and flooded the lower fields.".split())


def test_template_repeats_one_sentence_with_slots_filled_from_the_vocabulary():
    pool = LanguagePool(OTHER)
    out = make("template", TEXT, random.Random(6), pool)
    filled = sentences_of(out)
    assert len(filled) >= 3
    lengths = {len(s.split()) for s in filled}
    assert len(lengths) == 1  # one skeleton
    common = set.intersection(*(set(enumerate(s.split())) for s in filled))
    assert 0 < len(common) < len(filled[0].split())  # fixed words and filled slots


def test_spun_text_swaps_words_for_words_of_the_same_shape_from_the_language():
    pool = LanguagePool(OTHER)
    out = make("spun", TEXT, random.Random(7), pool)
    before, after = TEXT.replace("\n", " ").split(), out.replace("\n", " ").split()
    assert len(before) == len(after) and before != after
    vocabulary = set(pool.vocabulary)
    for old, new in zip(before, after):
        assert new == old or (new in vocabulary and negatives._shape(new) == negatives._shape(old))


def test_filler_repeats_a_phrase_of_the_text():
    out = make("filler", TEXT, random.Random(8))
    assert out.startswith(TEXT.split()[0])
    counts = Counter(zip(out.split(), out.split()[1:]))
    assert max(counts.values()) >= 5


def test_partial_leaves_some_sentences_as_written():
    pool = LanguagePool(OTHER)
    out = make("partial", TEXT, random.Random(9), pool)
    original = set(sentences_of(TEXT.replace("\n", " ")))
    kept = [s for s in sentences_of(out) if s in original]
    assert out != TEXT.replace("\n", " ") and 1 <= len(kept) < len(original)


def test_every_kind_is_made_and_kinds_that_need_other_text_say_so():
    pool = LanguagePool(OTHER)
    for kind in negatives.KINDS:
        assert make(kind, TEXT, random.Random(10), pool).strip()
    assert negatives.kinds_for(LanguagePool([])) == ("shuffled", "local_shuffle", "filler")
    with pytest.raises(ValueError, match="needs other text"):
        make("chain2", TEXT, random.Random(0))
    with pytest.raises(ValueError, match="unknown negative kind"):
        make("chain7", TEXT, random.Random(0), pool)


@pytest.mark.parametrize("kind", ["chain1", "chain2", "chain3", "template", "filler", "shuffled", "local_shuffle",
                                  "spun"])
def test_a_negative_keeps_its_positive_s_lines(kind):
    """A model learns a shape more easily than words: negatives made as one long line taught it that
    one long line is machine-made, and a chain in the lines of an article passed."""
    text = "Article 23\n\n" + TEXT + "\nThe chair thanked everyone for coming."
    out = make(kind, text, random.Random(10), LanguagePool(OTHER))
    assert len(out.split("\n")) == len(text.split("\n")) and out.split("\n")[1] == ""
    assert len(make(kind, TEXT, random.Random(11), LanguagePool(OTHER)).split("\n")) == 2
