"""Low-risk names, places and organisations, from a spaCy pipeline the config names."""
from __future__ import annotations

from typing import List

from presidio_analyzer import LocalRecognizer, RecognizerResult

from udfs.pii.recognizers.rules import LANGUAGE, recognizer_result


class SpacyNerRecognizer(LocalRecognizer):
    """PERSON / LOCATION / ORGANIZATION from a spaCy pipeline loaded by package name or path.

    ``spacy.load`` never downloads: a model that is not installed is a configuration error. spaCy's
    NER gives no per-entity confidence, so entities get ``score``; a single character (a common
    word as often as a name, 小明 vs 明) gets half of it.
    """

    LABELS = {"PERSON": "PERSON", "PER": "PERSON", "GPE": "LOCATION", "LOC": "LOCATION",
              "FAC": "LOCATION", "ORG": "ORGANIZATION"}

    def __init__(self, model: str, score: float = 0.85, max_length: int = 2_000_000):
        import spacy

        self.nlp = spacy.load(model)
        keep = {"tok2vec", "transformer", "ner", "entity_ruler", "span_ruler"}
        self.nlp.select_pipes(enable=[p for p in self.nlp.pipe_names if p in keep])
        self.nlp.max_length = max_length + 1
        self.score = score
        super().__init__(supported_entities=sorted(set(self.LABELS.values())), supported_language=LANGUAGE,
                         name=f"SpacyNerRecognizer[{model}]")

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: List[str], nlp_artifacts=None) -> List[RecognizerResult]:
        results = []
        for ent in self.nlp(text).ents:
            entity = self.LABELS.get(ent.label_)
            if entity is None or not ent.text.strip():
                continue
            score = self.score if len(ent.text.strip()) > 1 else self.score / 2
            results.append(recognizer_result(self, entity, ent.start_char, ent.end_char, score,
                                             f"spaCy {ent.label_}"))
        return results
