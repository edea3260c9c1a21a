"""Held-out PII evaluation: phones in many national formats, and numbers that only look like them.

    python -m bench.quality.pii_eval [--seed 41] [--per-locale 60] [--real 2000] [--show-errors 0]

Made apart from the tests and from bench/speed/pii_bench.py (other generator calls, seed, templates and
languages), so that it says how the recognizers do on text they were not written against:

* positives: sentences in the locale's own language around Faker values of 17 locales (phones as
  each locale's provider writes them: "+44(0)115 4960914", "08-170 669 07", "+33 (0)1 41 63 60 83",
  "0961073668", "(0406)-812415", "3533 7406" …), half of them with a phone word and half without;
  free-mail addresses, also obfuscated ("jane [at] mail [dot] com"); IBANs of six countries, also
  grouped and in lower case; card numbers, SSNs, IPv4/IPv6 addresses;
* synthetic hard negatives, one list per kind: dates, times, prices, versions, ISBNs, order and
  tracking numbers, coordinates, sports scores, page ranges, populations and measures;
* real hard negatives: sentences with long numbers from ../shared/data/corpora (ABC news, State of
  the Union speeches, Gutenberg books, Wikipedia articles in wikitext, People's Daily). These are
  labelled "no PII"; ``REAL_PII`` lists the few real phone numbers found in them by reading every
  finding of both systems, which count as gold phones.

A gold value counts as caught when findings of its type cover every letter and digit of it (so
the value no longer appears in the scrubbed text); a finding overlapping no gold value of
its type is a false positive. Systems: corpusmill's default config, and Presidio's predefined
recognizers with the no-op NLP engine (its pattern recognizers, no NER; threshold 0, Presidio's
default). Presidio names types differently; its types without a counterpart here (URL,
US_DRIVER_LICENSE, DATE_TIME …) are listed apart, not scored.
"""
from __future__ import annotations

import argparse
import logging
import random
import re
import zipfile
from collections import Counter, defaultdict
from typing import Callable, Dict, Iterable, List, Sequence, Tuple

from bench import SHARED_DATA
from udfs.pii.scrub import PiiConfig, PiiScrubber

CORPORA = SHARED_DATA / "corpora"

TYPES = ["PHONE", "EMAIL", "IBAN", "CREDIT_CARD", "US_SSN", "IP_ADDRESS"]
PRESIDIO_TYPES = {"PHONE_NUMBER": "PHONE", "EMAIL_ADDRESS": "EMAIL", "IBAN_CODE": "IBAN",
                  "CREDIT_CARD": "CREDIT_CARD", "US_SSN": "US_SSN", "IP_ADDRESS": "IP_ADDRESS"}
Span = Tuple[int, int, str]


class Example:
    def __init__(self, text: str, gold: List[Span], part: str):
        self.text, self.gold, self.part = text, gold, part


# ---------------------------------------------------------------- positives

# Sentences per language; {P} is the phone. "ctx": a phone word is there, "bare": none is.
PHONE_SENTENCES = {
    "en": {"ctx": ["If the parcel is late, give us a ring on {P} and we will sort it out.",
                   "Mobile: {P} (weekdays only)", "You can text me at {P} after six.",
                   "For bookings, phone {P} or drop by the front desk."],
           "bare": ["The Riverside office ({P}) opens at nine.", "Ask for Dr. Hale — {P}.",
                    "{N} can be reached on {P} during term.", "Questions? {P}, Monday to Friday."]},
    "de": {"ctx": ["Rufen Sie uns an unter {P}, wir helfen gern.", "Telefon: {P} · Fax auf Anfrage",
                   "Sie erreichen Frau {N} telefonisch unter {P}."],
           "bare": ["Praxis {N}, {P}, Sprechzeiten Mo–Fr.", "Termine nur nach Vereinbarung ({P})."]},
    "fr": {"ctx": ["Appelez-nous au {P} pour tout renseignement.", "Tél. : {P} — du lundi au vendredi.",
                   "Vous pouvez joindre {N} au {P}."],
           "bare": ["Cabinet de {N}, {P}, sur rendez-vous.", "Accueil ({P}) ouvert de 9 h à 17 h."]},
    "it": {"ctx": ["Per informazioni chiamare il numero {P}.", "Tel. {P} — chiuso la domenica.",
                   "Il cellulare di {N} è {P}."],
           "bare": ["Studio {N}, {P}, su appuntamento.", "Segreteria ({P}) aperta al mattino."]},
    "sv": {"ctx": ["Ring oss på {P} om du har frågor.", "Telefon: {P}, vardagar 8–17.",
                   "Du når {N} på mobil {P}."],
           "bare": ["Kontoret i Malmö ({P}) har öppet idag.", "Mottagningen, {P}, stänger kl. 16."]},
    "es": {"ctx": ["Llámenos al {P} para pedir cita.", "Teléfono: {P} (horario de oficina)."],
           "bare": ["Consulta de {N}, {P}, previa cita."]},
    "nl": {"ctx": ["Bel ons op {P} voor een afspraak.", "Telefoon: {P}, ook op zaterdag."],
           "bare": ["Praktijk {N}, {P}, alleen op afspraak."]},
    "pt": {"ctx": ["Ligue para {P} e fale com {N}.", "Telefone: {P} (horário comercial)."],
           "bare": ["Escritório de {N}, {P}, segunda a sexta."]},
    "pl": {"ctx": ["Proszę dzwonić pod numer telefonu {P}."], "bare": ["Biuro {N}, {P}, czynne od 8."]},
    "da": {"ctx": ["Ring til os på telefon {P}."], "bare": ["Klinikken, {P}, har lukket i dag."]},
    "ja": {"ctx": ["お問い合わせは電話{P}までお願いします。", "携帯：{P}"],
           "bare": ["{N}事務所（{P}）は土日休みです。"]},
    "zh": {"ctx": ["如有问题请拨打{P}咨询。", "联系人：{N}，手机：{P}", "请致电 {P} 预约。"],
           "bare": ["{N}（{P}）负责本次活动。", "报名请找{N} {P}。"]},
}
PHONE_LOCALES = {"en_US": "en", "en_GB": "en", "en_CA": "en", "en_AU": "en", "en_IN": "en", "de_DE": "de",
                 "de_CH": "de", "fr_FR": "fr", "it_IT": "it", "sv_SE": "sv", "es_ES": "es", "nl_NL": "nl",
                 "pt_BR": "pt", "pl_PL": "pl", "da_DK": "da", "ja_JP": "ja", "zh_CN": "zh"}
OTHER_SENTENCES = [
    ("EMAIL", "Send the signed form to {V} before the deadline."),
    ("EMAIL", "{N} <{V}> wrote on Tuesday:"),
    ("EMAIL", "请把简历发到{V}，我们会尽快回复。"),
    ("EMAIL_OBF", "Reach the maintainer at {V} (spam-protected)."),
    ("EMAIL_OBF", "Contact: {V}"),
    ("IBAN", "Bitte überweisen Sie den Betrag auf {V} bis Monatsende."),
    ("IBAN", "Le virement doit être fait sur le compte {V}."),
    ("IBAN_LOWER", "my iban is {V} if you want to pay me back"),
    ("CREDIT_CARD", "The booking was paid with {V} on 3 March."),
    ("US_SSN", "Applicant SSN {V} was verified by the clerk."),
    ("IP_ADDRESS", "Repeated failed logins came from {V} overnight."),
    ("IP_ADDRESS_V6", "The tunnel endpoint {V} stopped answering."),
]
IBAN_LOCALES = ["de_DE", "fr_FR", "it_IT", "nl_NL", "es_ES", "en_GB"]


def obfuscate(address: str, rng: random.Random) -> str:
    local, domain = address.split("@")
    at, dot = rng.choice([(" [at] ", " [dot] "), ("(at)", "."), (" at ", " dot "), (" (at) ", " (dot) "),
                          (" AT ", " DOT "), ("[at]", ".")])
    return local + at + domain.replace(".", dot)


def positives(seed: int, per_locale: int) -> List[Example]:
    from faker import Faker

    rng = random.Random(seed)
    fakers = {loc: Faker(loc) for loc in set(PHONE_LOCALES) | set(IBAN_LOCALES)}
    for i, loc in enumerate(sorted(fakers)):
        fakers[loc].seed_instance(seed * 1000 + i)
    examples = []

    def render(template: str, value: str, kind: str, name: str) -> Example:
        before, after = template.split("{V}" if "{V}" in template else "{P}")
        before, after = before.replace("{N}", name), after.replace("{N}", name)
        return Example(before + value + after, [(len(before), len(before) + len(value), kind)], "positives")

    for loc, lang in sorted(PHONE_LOCALES.items()):
        fake = fakers[loc]
        for i in range(per_locale):
            kind = "ctx" if i % 2 == 0 else "bare"
            template = rng.choice(PHONE_SENTENCES[lang][kind])
            examples.append(render(template, fake.phone_number(), "PHONE", fake.last_name()))
    en = fakers["en_US"]
    for kind, template in OTHER_SENTENCES:
        for _ in range(per_locale):
            name = en.name()
            if kind == "EMAIL":
                value = fakers[rng.choice(sorted(fakers))].free_email()
            elif kind == "EMAIL_OBF":
                value = obfuscate(en.free_email(), rng)
            elif kind.startswith("IBAN"):
                value = fakers[rng.choice(IBAN_LOCALES)].iban()
                if rng.random() < 0.5:
                    value = " ".join(value[i:i + 4] for i in range(0, len(value), 4))
                value = value.lower() if kind == "IBAN_LOWER" else value
            elif kind == "CREDIT_CARD":
                value = en.credit_card_number()
            elif kind == "US_SSN":
                value = en.ssn()
            elif kind == "IP_ADDRESS":
                value = en.ipv4_public()
            else:
                value = en.ipv6()
            examples.append(render(template, value, kind.split("_OBF")[0].replace("_LOWER", "").replace("_V6", ""),
                                   name))
    return examples


# ---------------------------------------------------------------- synthetic hard negatives

def synthetic_negatives(seed: int, per_kind: int) -> List[Example]:
    from faker import Faker

    rng = random.Random(seed + 1)
    fake = Faker("en_US")
    fake.seed_instance(seed + 1)
    r = rng.randint

    def date():
        d = fake.date_between("-30y", "+2y")
        return d.strftime(rng.choice(["%d.%m.%Y", "%Y-%m-%d", "%m/%d/%Y", "%d/%m/%Y", "%d-%m-%Y", "%Y/%m/%d",
                                      "%d.%m.%y", "%Y.%m.%d"]))

    kinds: Dict[str, Callable[[], str]] = {
        "date": lambda: rng.choice(["The hearing moved to {}.", "Stand: {}", "Published {} by the ministry.",
                                    "Valid from {} until further notice."]).format(date()),
        "datetime": lambda: f"Last login {fake.date_time_this_decade().strftime(rng.choice(['%Y-%m-%d %H:%M:%S', '%d.%m.%Y %H:%M', '%m/%d/%Y %I:%M %p']))}",
        "time": lambda: rng.choice([f"Open {r(6, 10)}.{r(0, 5)}0–{r(16, 21)}.{r(0, 5)}0 daily.",
                                    f"Kick-off at {r(12, 20)}:{r(0, 5)}0, doors {r(10, 11)}:{r(0, 5)}0.",
                                    f"Laufzeit {r(1, 3)}:{r(10, 59)}:{r(10, 59)} h"]),
        "price": lambda: rng.choice([f"Now only ${r(1, 99)},{r(100, 999)}.{r(10, 99)}!",
                                     f"Preis: {r(1, 9)}.{r(100, 999)}.{r(100, 999)},00 €",
                                     f"Kaufpreis {r(100, 999)} {r(100, 999)} kr", f"售价 {r(1000, 99999)}.00 元",
                                     f"The budget rose to £{r(1, 900)} {r(100, 999)} {r(100, 999)}."]),
        "version": lambda: rng.choice([f"Requires version {r(1, 20)}.{r(0, 30)}.{r(0, 300)}.{r(1000, 99999)}",
                                       f"Windows 10 build {r(10000, 22999)}.{r(1000, 3999)}",
                                       f"Tested with v{r(1, 9)}.{r(10, 99)}.{r(100, 999)}-{r(1000, 9999)}"]),
        "isbn": lambda: rng.choice([f"ISBN {fake.isbn13()}", f"ISBN-10 {fake.isbn10()}",
                                    f"({fake.isbn13().replace('-', '')}, paperback)",
                                    f"Hardcover, {fake.isbn10()}, 412 pp."]),
        "order": lambda: rng.choice([f"Order #{r(10 ** 9, 10 ** 10 - 1)} has shipped.",
                                     f"Ihre Bestellnummer lautet {r(100, 999)}-{r(1000000, 9999999)}-{r(1000000, 9999999)}.",
                                     f"Invoice no. {r(2015, 2026)}-{r(100000, 999999)}",
                                     f"订单号 {r(10 ** 15, 10 ** 16 - 1)} 已发货"]),
        "tracking": lambda: rng.choice([f"Tracking: 1Z{fake.bothify('???#####', letters='ABCDEFGHJKLMNPRSTUVWXYZ')}{r(10 ** 9, 10 ** 10 - 1)}",
                                        f"USPS tracking {' '.join(str(r(1000, 9999)) for _ in range(5))} {r(10, 99)}",
                                        f"Sendungsnummer {r(10 ** 11, 10 ** 12 - 1)}"]),
        "coordinates": lambda: rng.choice([f"located at {fake.latitude()}, {fake.longitude()}",
                                           f"GPS {fake.latitude()} {fake.longitude()}",
                                           f"{r(0, 89)}°{r(0, 59)}′{r(0, 59)}″N {r(0, 179)}°{r(0, 59)}′{r(0, 59)}″E",
                                           f"({float(fake.latitude()):.6f}, {float(fake.longitude()):.6f})"]),
        "score": lambda: rng.choice([f"They won {r(80, 130)}-{r(80, 130)} after overtime.",
                                     f"Final: {r(6, 7)}-{r(0, 4)}, {r(0, 4)}-{r(6, 7)}, {r(6, 7)}-{r(5, 6)} ({r(7, 9)}-{r(2, 6)})",
                                     f"Halbzeit {r(0, 3)}:{r(0, 3)}, Endstand {r(0, 5)}:{r(0, 5)}",
                                     f"Series tied {r(1, 3)}-{r(1, 3)}; aggregate {r(100, 300)}-{r(100, 300)} runs"]),
        "pages": lambda: rng.choice([f"J. Appl. Phys. {r(10, 130)}, pp. {(p := r(1000, 8000))}–{p + r(5, 40)} ({r(1990, 2024)}).",
                                     f"see pages {(p := r(100, 900))}-{p + r(3, 60)}",
                                     f"Vol. {r(1, 60)}, No. {r(1, 12)}, {r(1990, 2024)}, {(p := r(1000, 9000))}-{p + r(5, 40)}"]),
        "quantity": lambda: rng.choice([f"Population {r(1, 9)} {r(100, 999)} {r(100, 999)} (census {r(2000, 2023)})",
                                        f"an area of {r(100, 999)} {r(100, 999)} km²",
                                        f"{r(10, 99)} {r(100, 999)} {r(100, 999)} inhabitants",
                                        f"Auflage {r(1, 9)}.{r(100, 999)}.{r(100, 999)} Exemplare",
                                        f"Between {r(1900, 1960)} and {r(1961, 2020)}, {r(1000, 9999)} people emigrated."]),
        "ranges": lambda: rng.choice([f"the years {(y := r(1900, 2015))}–{y + r(1, 9)}", f"in {r(1700, 1899)}-{r(1900, 2024)}",
                                      f"{r(1000, 4999)}-{r(5000, 9999)} m above sea level"]),
    }
    return [Example(make(), [], f"synthetic:{kind}") for kind, make in kinds.items() for _ in range(per_kind)]


# ---------------------------------------------------------------- real hard negatives

LONG_NUMBER = re.compile(r"\d(?:[\d ,.\-–/:()]{0,3}\d){5,}")
# Real phone numbers in the corpora (found by reading every finding of both systems): gold phones.
# An ABC news hotline; People's Daily's reader lines (电话, 传真, 电传, 热线, 监督电话, 拨打 …).
REAL_PII: Dict[str, str] = {v: "PHONE" for v in [
    "1300 224 636", "（０７１７）５４０１２２０", "５４０１２１０", "６５０９１０４０", "６５０９２１４０", "６５０９２７４０",
    "０１０—６５０９２８２４", "０１０—６４３６５５６６", "５２８８２２８８", "２６６５４３２０", "（０２７）—２８５６７７２",
    "２７６６３５３", "９８１６８４３８８７", "９８１６８４３８８８", "１６０１３１５"]}


def corpus_texts() -> Iterable[Tuple[str, str]]:
    for name in ("abc.zip", "state_union.zip"):
        with zipfile.ZipFile(CORPORA / "en" / name) as z:
            for member in z.namelist():
                if member.endswith(".txt"):
                    yield name.split(".")[0], z.read(member).decode("latin-1")
    for path in sorted((CORPORA / "en" / "gutenberg").glob("*.txt")):
        yield "gutenberg", path.read_text(encoding="latin-1")
    wiki = (CORPORA / "en" / "enwiki-head-articles.xml").read_text(encoding="utf-8")
    yield "wikipedia", "\n".join(re.findall(r"<text[^>]*>(.*?)</text>", wiki, re.S))
    yield "peoples_daily", (CORPORA / "zh" / "peoples-daily-1998-01.txt").read_text(encoding="utf-8")


def real_negatives(seed: int, per_corpus: int) -> List[Example]:
    rng = random.Random(seed + 2)
    examples = []
    for corpus, text in corpus_texts():
        lines = [line.strip() for line in text.splitlines() if LONG_NUMBER.search(line)]
        # Long lines (tables, paragraphs) cut to the sentence around the number.
        snippets = []
        for line in lines:
            for m in LONG_NUMBER.finditer(line):
                snippets.append(line[max(0, m.start() - 150):m.end() + 150])
        snippets = sorted(set(snippets))
        rng.shuffle(snippets)
        for snippet in snippets[:per_corpus]:
            gold = [(m.start(), m.end(), kind) for value, kind in REAL_PII.items()
                    for m in re.finditer(re.escape(value), snippet)]
            examples.append(Example(snippet, gold, f"real:{corpus}"))
    return examples


# ---------------------------------------------------------------- systems and scoring

def corpusmill_system() -> Callable[[str], List[Span]]:
    scrubber = PiiScrubber(PiiConfig())
    return lambda text: [(f.start, f.end, f.entity) for f in scrubber.findings(text)]


def presidio_system() -> Callable[[str], List[Span]]:
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NoOpNlpEngine

    logging.getLogger("tldextract").setLevel(logging.CRITICAL)  # it tries the network, then its snapshot
    nlp = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    nlp.load()
    engine = AnalyzerEngine(nlp_engine=nlp, supported_languages=["en"])
    return lambda text: [(r.start, r.end, PRESIDIO_TYPES.get(r.entity_type, "other:" + r.entity_type))
                         for r in engine.analyze(text=text, language="en")]


def covered(gold: Span, found: Sequence[Span], text: str) -> bool:
    """Every letter and digit of the gold value lies inside a finding of its type."""
    spans = [(s, e) for s, e, t in found if t == gold[2]]
    return all(any(s <= i < e for s, e in spans) for i in range(gold[0], gold[1]) if text[i].isalnum())


def evaluate(find: Callable[[str], List[Span]], examples: Sequence[Example]):
    counts: Dict[str, Dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))  # part → type → tp/fn/fp
    errors, other = [], Counter()
    for ex in examples:
        found = find(ex.text)
        other.update(t for _, _, t in found if t not in TYPES)
        found = [f for f in found if f[2] in TYPES]
        for g in ex.gold:
            hit = covered(g, found, ex.text)
            counts[ex.part][g[2]]["tp" if hit else "fn"] += 1
            if not hit:
                errors.append(("FN", ex.part, g[2], ex.text[g[0]:g[1]], ex.text))
        for s, e, t in found:
            if not any(t == gt and s < ge and gs < e for gs, ge, gt in ex.gold):
                counts[ex.part][t]["fp"] += 1
                errors.append(("FP", ex.part, t, ex.text[s:e], ex.text))
    return counts, errors, other


def merged(counts, parts: Iterable[str]) -> Dict[str, Counter]:
    out: Dict[str, Counter] = defaultdict(Counter)
    for part in parts:
        for entity, c in counts.get(part, {}).items():
            out[entity].update(c)
    return out


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "  -  "


def print_table(results: Dict[str, tuple], parts: Sequence[str], title: str) -> None:
    names = list(results)
    print(f"\n{title}")
    print(f"  {'type':<12}{'gold':>6}" + "".join(f"{n:>34}" for n in names))
    print(f"  {'':<12}{'':>6}" + "".join(f"{'tp   fn   fp   precision recall':>34}" for _ in names))
    for entity in TYPES:
        cells, gold = [], 0
        for name in names:
            c = merged(results[name][0], parts)[entity]
            gold = c["tp"] + c["fn"]
            cells.append(f"{c['tp']:>9}{c['fn']:>5}{c['fp']:>5}{ratio(c['tp'], c['tp'] + c['fp']):>10}"
                         f"{ratio(c['tp'], c['tp'] + c['fn']):>7}")
        if gold or any(merged(results[n][0], parts)[entity]["fp"] for n in names):
            print(f"  {entity:<12}{gold:>6}" + "".join(f"{cell:>34}" for cell in cells))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--per-locale", type=int, default=60, help="phone sentences per Faker locale, and per other template")
    ap.add_argument("--per-kind", type=int, default=40, help="synthetic hard negatives per kind")
    ap.add_argument("--real", type=int, default=400, help="real-text snippets with long numbers per corpus")
    ap.add_argument("--show-errors", type=int, default=0, help="print this many misses and false positives per system")
    ap.add_argument("--no-presidio", action="store_true")
    args = ap.parse_args(argv)

    pos = positives(args.seed, args.per_locale)
    syn = synthetic_negatives(args.seed, args.per_kind)
    real = real_negatives(args.seed, args.real)
    examples = pos + syn + real
    parts = sorted({e.part for e in examples})
    gold = Counter(g[2] for e in examples for g in e.gold)
    print(f"held-out set (seed {args.seed}): {len(pos)} positive sentences {dict(gold)}; "
          f"{len(syn)} synthetic and {len(real)} real hard negatives "
          f"({dict(Counter(e.part for e in syn + real))})")

    systems = {"corpusmill (default config)": corpusmill_system()}
    if not args.no_presidio:
        systems["Presidio patterns (no NER)"] = presidio_system()
    results = {name: evaluate(find, examples) for name, find in systems.items()}

    print_table(results, ["positives"], "positives only (recall; fp = findings beside the planted value)")
    print_table(results, parts, "everything: positives + synthetic + real hard negatives")
    print("\nfalse positives per hard-negative kind (all types)")
    print(f"  {'kind':<22}{'texts':>6}" + "".join(f"{n:>30}" for n in systems))
    for part in parts:
        if part == "positives":
            continue
        n = sum(e.part == part for e in examples)
        print(f"  {part:<22}{n:>6}" + "".join(
            f"{sum(c['fp'] for c in results[name][0].get(part, {}).values()):>30}" for name in systems))
    for name, (_, errors, other) in results.items():
        if other:
            print(f"\n{name}: other types reported, not scored: {dict(other.most_common(8))}")
        for kind, part, entity, value, text in errors[:args.show_errors]:
            print(f"  {name[:10]} {kind} {part:<20} {entity:<11} {value!r:<34} in {text[:140]!r}")


if __name__ == "__main__":
    main()
