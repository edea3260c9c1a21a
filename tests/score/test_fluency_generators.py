"""The machine-made text of bench/quality/fluency_eval.py, on plain strings: what each kind keeps
of its source and what it changes."""
import random
from collections import Counter

from bench.quality.fluency_eval import Language, chain_text, sentences, separable, shuffled, template_text, words
from tools.fixtures.udhr import is_held_out, is_held_out_language

OTHER = ["All human beings are born free and equal in dignity and rights.",
         "They are endowed with reason and conscience and should act towards one another in a spirit of brotherhood.",
         "Everyone has the right to life, liberty and security of person.",
         "No one shall be held in slavery or servitude; slavery and the slave trade shall be prohibited.",
         "No one shall be subjected to torture or to cruel, inhuman or degrading treatment or punishment.",
         "Everyone has the right to recognition everywhere as a person before the law."]
CLEAN = ("Everyone has the right to work, to free choice of employment and to just conditions of work.\n"
         "Everyone, without any discrimination, has the right to equal pay for equal work!")


def test_shuffled_keeps_each_sentences_words_and_its_closing_mark():
    made = shuffled(CLEAN, False, random.Random(1))
    assert made != CLEAN and made.count("\n") == CLEAN.count("\n")
    for before, after in zip(sentences(CLEAN.replace("\n", " ")), sentences(made.replace("\n", " "))):
        assert after[-1] == before[-1]
        assert Counter(before[:-1].split()) == Counter(after[:-1].split())


def test_scripts_without_spaces_are_shuffled_by_character_with_their_marks():
    thai = ["สิ", "ท", "ธิ", "ม", "นุ", "ษ", "ย", "ช", "น"]  # vowel and tone marks stay on their letter
    assert words("สิทธิมนุษยชน", True) == thai
    made = shuffled("人人生而自由，在尊严和权利上一律平等。", True, random.Random(2))
    assert made.endswith("。") and sorted(made) == sorted("人人生而自由，在尊严和权利上一律平等。")


def test_chain_and_template_text_are_made_of_the_other_texts_words_not_its_sentences():
    language = Language.fitted(OTHER)
    known = {w for s in OTHER for w in s.split()}
    rng = random.Random(3)
    chain = chain_text(language, CLEAN, rng)
    assert chain.count("\n") == 1 and len(chain) >= len(CLEAN) * 0.9
    assert set(chain.split()) <= known
    template = template_text(language, CLEAN, rng)
    assert template.count("\n") == 1 and template not in " ".join(OTHER)


def test_the_held_out_rule():
    assert is_held_out_language("eng") and not is_held_out_language("deu")
    assert is_held_out("deu", 23) and is_held_out("deu", 30) and not is_held_out("deu", 22)
    assert not is_held_out("deu", None) and is_held_out("eng", None)


def test_a_score_is_separable_when_one_threshold_meets_every_target():
    import numpy as np

    clean, shuffled_scores = np.array([0.9, 0.8, 0.95]), np.array([0.1, 0.2, 0.3])
    assert separable(clean, shuffled_scores, np.array([0.5, 0.6, 0.7]))
    # a chain above the cleanest document: no threshold rejects 80 % of chains and keeps 90 % of clean
    assert not separable(clean, shuffled_scores, np.array([0.5, 0.97, 0.99]))
