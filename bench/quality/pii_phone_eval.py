"""Phone recall where a number has no phone word before it, and false replacements on clean text.

    python -m bench.quality.pii_phone_eval [--seed 40] [--per-template 6] [--show-errors 0] [--no-clean]

Three measurements, each per type (``bench/quality/pii_eval.py`` scores the same way: a gold value counts
when findings of its type cover every letter and digit of it; a finding overlapping no gold value
of its type is a false positive):

* ``templated``: sentences written with the recognizer, in its languages, for the three kinds of
  phone it missed: inside postal-address blocks (after a postcode or a country, a label such as
  "-Office" or "Desk:" glued on), in requests whose only context is a verb of calling, answering
  or messaging or an account's number, and international numbers in unusual groupings ("+447911
  123 456", "+41 (0)44 …", "(+41) …", national digits in 2-3-3-4 groups); each kind with its
  look-alikes (postcodes beside phones, an order number after "registered", account and
  customer numbers, amounts after a country name, dates, versions).
* ``faker``: made apart from the recognizer and not tuned on: Faker's own address and phone
  formats of 14 locales laid out as letterheads, signatures and shop footers, with Faker's
  postcodes, building numbers, dates, prices and EANs as the numbers that must stay.
* ``sms``: real text, labelled by reading: the SMS Spam Collection's messages that hold a run of
  seven digits or more (UK premium, freephone and mobile numbers after "call", "txt", "ph:", or
  alone; short codes, references, dates and P.O. boxes). A run glued to letters or to a price
  ("TsCs087147403231Winawk", "08700621170150p") is left out of the scoring either way.
* ``clean``: phone findings in the shared corpora (news, speeches, books, Wikipedia, People's
  Daily, the UDHR in ~300 languages), which hold almost no phone numbers: every finding not in
  ``pii_eval.REAL_PII`` is a false replacement, counted per million characters and listed.
"""
from __future__ import annotations

import argparse
import random
import re
import zipfile
from collections import Counter
from typing import Callable, Iterable, List, Sequence, Tuple

import phonenumbers

from bench.quality.pii_eval import (CORPORA, REAL_PII, Example, corpus_texts, corpusmill_system, evaluate,
                                    print_table)

# ---------------------------------------------------------------- templated set

# {P} a phone, {Q} a second phone, {C} a country, {Z} a postcode, {T} a town, {S} a street,
# {L} a label, {X} a number that is not a phone.
ADDRESS = {
    "en": (["{S}\n{T} {C} {Z} {P}-{L}", "{S}, {T} {Z}, {C} {P}", "Mobile: {P} Desk: {Q}", "{S}\n{T}\n{Z}\n{P} ({L})",
            "{S} · {Z} {T} · {C} · {P}"],
           ["Office", "Home", "Work", "Direct", "Main"]),
    "de": (["{S}\n{Z} {T} {C} {P}-{L}", "{S}, {Z} {T}, {P}", "Mobil: {P} Büro: {Q}", "{S} | {Z} {T} | {P} ({L})"],
           ["Büro", "Privat", "Zentrale", "Mobil"]),
    "fr": (["{S}\n{Z} {T} {C} {P}-{L}", "{S}, {Z} {T}, {P}", "Portable : {P} Bureau : {Q}"],
           ["Bureau", "Domicile", "Standard"]),
    "it": (["{S}\n{Z} {T} {C} {P}-{L}", "{S}, {Z} {T} - {P}", "Cellulare: {P} Ufficio: {Q}"], ["Ufficio", "Casa"]),
    "es": (["{S}\n{Z} {T} {C} {P}-{L}", "{S}, {Z} {T}. {P}", "Móvil: {P} Oficina: {Q}"], ["Oficina", "Casa"]),
    "nl": (["{S}\n{Z} {T} {C} {P}-{L}", "{S}, {Z} {T}, {P}"], ["Kantoor", "Thuis"]),
    "sv": (["{S}\n{Z} {T} {C} {P}-{L}", "{S}, {Z} {T}, {P}"], ["Kontor", "Hem", "Växel"]),
    "pl": (["{S}\n{Z} {T} {C} {P}-{L}", "{S}, {Z} {T}, {P}"], ["Biuro", "Dom"]),
    "pt": (["{S}\n{Z} {T} {C} {P}-{L}", "{S}, {Z} {T}, {P}"], ["Escritório", "Casa"]),
}
ADDRESS_PARTS = {
    "en": (["12 High Street", "4 Mill Lane", "221 Baker Road"], ["Leeds", "York", "Bath"],
           ["United Kingdom", "UK", "England"], ["LS1 4AB", "YO1 7HH", "BA2 3QT"]),
    "de": (["Hauptstr. 5", "Lindenweg 12"], ["Berlin", "Ulm", "Köln"], ["Deutschland", "Germany"],
           ["10115", "89073", "50667"]),
    "fr": (["5 rue de Lyon", "12 avenue Foch"], ["Paris", "Lyon", "Nantes"], ["France"], ["75008", "69002", "44000"]),
    "it": (["Via Roma 3", "Corso Italia 40"], ["Milano", "Torino"], ["Italia", "Italy"], ["20121", "10128"]),
    "es": (["Calle Mayor 7", "Av. de América 12"], ["Madrid", "Sevilla"], ["España", "Spain"], ["28013", "41001"]),
    "nl": (["Kerkstraat 8", "Dorpsweg 21"], ["Utrecht", "Delft"], ["Nederland"], ["3511 LX", "2611 HB"]),
    "sv": (["Storgatan 4", "Skolvägen 9"], ["Malmö", "Lund"], ["Sverige", "Sweden"], ["211 20", "222 21"]),
    "pl": (["ul. Długa 5", "ul. Polna 12"], ["Kraków", "Gdańsk"], ["Polska", "Poland"], ["31-042", "80-831"]),
    "pt": (["Rua Augusta 10", "Av. Paulista 900"], ["São Paulo", "Lisboa"], ["Brasil", "Portugal"],
           ["01310-100", "1100-053"]),
}
REACHING = {
    "en": ["Please call me back on {P} tomorrow.", "I keep getting calls from {P}, who is it?",
           "{P} keeps texting me at night, can you block it?", "Nobody answers at {P} after five.",
           "Can you message me on {P} instead of email?", "Why is {P} no longer linked to my account?",
           "The number on my account is still {P}, please update it.", "I tried ringing {P} twice today.",
           "I was called from {P} about a refund.", "Text 'STOP' to {P} to opt out."],
    "de": ["Bitte rufen Sie mich unter {P} zurück.", "Ich habe {P} zweimal angerufen.",
           "Warum geht unter {P} niemand ran?", "Schreiben Sie mir eine Nachricht an {P}."],
    "fr": ["Merci de me rappeler au {P}.", "J'ai essayé d'appeler le {P} sans réponse.",
           "Envoyez-moi un SMS au {P}.", "Personne ne répond au {P}."],
    "it": ["Mi può richiamare al {P}?", "Ho chiamato il {P} ma nessuno risponde.", "Scrivimi un messaggio al {P}."],
    "es": ["¿Me puede llamar al {P}?", "Nadie contesta en el {P}.", "Mándame un mensaje al {P}."],
    "nl": ["Kunt u mij terugbellen op {P}?", "Niemand neemt op bij {P}.", "Stuur een bericht naar {P}."],
    "sv": ["Kan du ringa mig på {P}?", "Ingen svarar på {P}.", "Skicka ett sms till {P}."],
    "pl": ["Proszę oddzwonić na {P}.", "Nikt nie odbiera pod {P}.", "Napisz SMS na {P}."],
    "pt": ["Pode me ligar no {P}?", "Ninguém atende no {P}.", "Mande uma mensagem para {P}."],
    "zh": ["麻烦回电 {P}，谢谢。", "我打了{P}没人接。", "请发短信到{P}。"],
    "ja": ["{P}に折り返しお願いします。", "{P}に連絡してください。"],
}
LOOKALIKES = [
    "I registered order {X} yesterday but nothing arrived.", "Your order {X} was registered on 12.03.2024.",
    "My account number is {X}, please refund it.", "Customer number {X} was charged twice.",
    "{S}, {T} {Z}, {C}. Registered number {X}.", "{C} had {N} inhabitants in 2020.",
    "{T} {Z} {C} — founded 1887, {N} visitors a year.", "Please call about invoice {X}.",
    "Call us between 9.00-17.30, closed on 24.12.2024.", "Version {V} was released last week.",
    "Bestellung {X} wurde registriert.", "Kundennummer {X}, Rechnung vom 03.04.2024.",
    "Numéro de commande {X}, livré le 12/03/2024.", "订单号 {X} 已登记。", "{Z} {T} {C}, {N} habitants.",
]
LOCAL_SHAPES = ["## ### ###", "## ######", "##-##-##-##", "### ####", "0###-#######", "##########",
                "0### ### ####", "0## #### ####", "0# ## ## ## ##", "0## ########", "0### ######"]


def _digits(shape: str, rng: random.Random) -> str:
    out = []
    for ch in shape:
        out.append(str(rng.randint(1 if not out else 0, 9)) if ch == "#" else ch)
    return "".join(out)


def local_number(rng: random.Random) -> str:
    return _digits(rng.choice(LOCAL_SHAPES), rng)


INTL_REGIONS = ["GB", "DE", "FR", "CH", "IT", "ES", "NL", "SE", "PL", "US", "IN", "AU", "BR", "IL", "JP", "CN"]


def international_number(rng: random.Random) -> str:
    """A possible number of a region, written with its country code in one of several groupings."""
    while True:
        region = rng.choice(INTL_REGIONS)
        kind = rng.choice([phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE])
        example = phonenumbers.example_number_for_type(region, kind)
        national = str(example.national_number)
        national = national[:3] + "".join(str(rng.randint(0, 9)) for _ in national[3:])
        cc = str(example.country_code)
        if not phonenumbers.is_possible_number(phonenumbers.parse("+" + cc + national)):
            continue
        style = rng.choice(["glued", "trunk", "trunk_space", "bracket_cc", "2334", "pairs", "dash"])
        if style == "glued":                      # +447911 123 456
            cut = rng.choice([3, 4])
            return f"+{cc}{national[:cut]} " + grouped(national[cut:], [3])
        if style in ("trunk", "trunk_space") and region not in ("US", "IN", "JP", "CN", "BR", "IL", "ES", "PL"):
            gap = " " if style == "trunk_space" else ""
            return f"+{cc} (0){gap}" + grouped(national, [2, 3])
        if style == "bracket_cc":                 # (+41) 44 632 18 07
            return f"(+{cc}) " + grouped(national, [2])
        if style == "2334":
            return f"+{cc} " + grouped(national, [2, 3, 3, 4])
        if style == "pairs":
            return f"+{cc} " + grouped(national, [2])
        if style == "dash":
            return f"+{cc}-" + grouped(national, [3], "-")


def grouped(digits: str, sizes: List[int], sep: str = " ") -> str:
    """Digits in groups of these sizes (the last size repeats); a one-digit tail joins the group before."""
    groups, i = [], 0
    while i < len(digits):
        size = sizes[min(len(groups), len(sizes) - 1)]
        groups.append(digits[i:i + size])
        i += size
    if len(groups) > 1 and len(groups[-1]) == 1:
        groups[-2:] = [groups[-2] + groups[-1]]
    return sep.join(groups)


def _fill(template: str, values: dict) -> Example:
    """Render a template; {P} and {Q} become gold phones."""
    text, gold, pos = "", [], 0
    for m in re.finditer(r"\{(\w)\}", template):
        text += template[pos:m.start()]
        value = values[m.group(1)]
        if m.group(1) in "PQ":
            gold.append((len(text), len(text) + len(value), "PHONE"))
        text += value
        pos = m.end()
    return text + template[pos:], gold


def templated_set(seed: int, per_template: int) -> List[Example]:
    rng = random.Random(seed)
    examples = []

    def values(lang: str) -> dict:
        streets, towns, countries, postcodes = ADDRESS_PARTS.get(lang, ADDRESS_PARTS["en"])
        number = rng.choice([local_number, international_number])
        return {"P": number(rng), "Q": number(rng), "S": rng.choice(streets), "T": rng.choice(towns),
                "C": rng.choice(countries), "Z": rng.choice(postcodes),
                "X": _digits(rng.choice(["##########", "########", "## ### ###", "###-#######", "####-######"]), rng),
                "N": _digits(rng.choice(["## ### ###", "# ### ###", "### ###"]), rng) ,
                "V": _digits("##.###.###", rng)}

    for lang, (templates, labels) in ADDRESS.items():
        for template in templates:
            for _ in range(per_template):
                v = values(lang)
                v["L"] = rng.choice(labels)
                text, gold = _fill(template, v)
                examples.append(Example(text, gold, "templated:address"))
    for lang, templates in REACHING.items():
        for template in templates:
            for _ in range(per_template):
                text, gold = _fill(template, values(lang))
                examples.append(Example(text, gold, "templated:reaching"))
    for _ in range(per_template * 10):
        text, gold = _fill(rng.choice(["{P}", "Kontakt {P}.", "Tél. {P}", "{T}: {P}", "Our Zurich desk {P}."]),
                           {"P": international_number(rng), "T": rng.choice(["Leeds", "Bern", "Lyon"])})
        examples.append(Example(text, gold, "templated:international"))
    for template in LOOKALIKES:
        for _ in range(per_template):
            text, gold = _fill(template, values(rng.choice(sorted(ADDRESS_PARTS))))
            examples.append(Example(text, gold, "templated:lookalike"))
    return examples


# ---------------------------------------------------------------- Faker set (not tuned on)

FAKER_LOCALES = {"en_GB": "en", "en_US": "en", "en_AU": "en", "en_IN": "en", "de_DE": "de", "de_CH": "de",
                 "fr_FR": "fr", "it_IT": "it", "es_ES": "es", "nl_NL": "nl", "sv_SE": "sv", "pl_PL": "pl",
                 "pt_BR": "pt", "ja_JP": "ja"}
# Layouts of real letterheads, signatures and footers, in the locale's language; {A} the address.
FAKER_LAYOUTS = {
    "en": ["{O}\n{A}\n{C}\n{P}", "{O} | {A1} | {P}", "Best regards,\n{N}\n{A1}, {C}\n{P} (mobile)",
           "Visit us: {A1}. We are open till 6pm. {P}"],
    "de": ["{O}\n{A}\n{C}\n{P}", "{O} · {A1} · {P}", "Mit freundlichen Grüßen\n{N}\n{A1}\n{P}"],
    "fr": ["{O}\n{A}\n{C}\n{P}", "{O} - {A1} - {P}", "Cordialement,\n{N}\n{A1}\n{P}"],
    "it": ["{O}\n{A}\n{P}", "{O} – {A1} – {P}", "Cordiali saluti,\n{N}\n{A1}\n{P}"],
    "es": ["{O}\n{A}\n{P}", "{O} · {A1} · {P}", "Un saludo,\n{N}\n{A1}\n{P}"],
    "nl": ["{O}\n{A}\n{P}", "{O} | {A1} | {P}"], "sv": ["{O}\n{A}\n{P}", "{O} | {A1} | {P}"],
    "pl": ["{O}\n{A}\n{P}", "{O}, {A1}, {P}"], "pt": ["{O}\n{A}\n{P}", "{O} - {A1} - {P}"],
    "ja": ["{O}\n{A}\n{P}", "{O}（{A1}）{P}"],
}
FAKER_NEGATIVES = ["{O}\n{A}\n{C}", "{A1}, {C}. Founded {D}.", "{O}, {A1}. Price: {M}.", "EAN {E} · {A1}",
                   "{O}\n{A}\nOpen since {D}"]


def faker_set(seed: int, per_locale: int) -> List[Example]:
    from faker import Faker

    rng = random.Random(seed + 7)
    examples = []
    for i, (loc, lang) in enumerate(sorted(FAKER_LOCALES.items())):
        fake = Faker(loc)
        fake.seed_instance(seed * 100 + i)
        for j in range(per_locale):
            address = fake.address()
            v = {"O": fake.company(), "A": address, "A1": ", ".join(address.splitlines()), "C": fake.current_country(),
                 "N": fake.name(), "P": fake.phone_number(), "D": fake.date(), "M": fake.pricetag(),
                 "E": fake.ean13()}
            template = rng.choice(FAKER_LAYOUTS[lang]) if j % 3 else rng.choice(FAKER_NEGATIVES)
            text, gold = _fill(template.replace("{A1}", "{B}").replace("{O}", "{K}"),
                               {**v, "B": v["A1"], "K": v["O"]})
            examples.append(Example(text, gold, f"faker:{'phones' if gold else 'no phone'}"))
    return examples


# ---------------------------------------------------------------- SMS spam (real, labelled by reading)

LONG_RUN = re.compile(r"\+?\d(?:[\d .\-]{0,2}\d){6,}")
# A UK number as these messages write it: 0 and 9-10 more digits, or 44 / +44 and 10, grouped by
# spaces, dashes or dots ("0871750.77.11"); read one by one, every such run is a phone number.
UK_NUMBER = re.compile(r"(?<![\w.+£])(?:\+?44 ?|0)[1-9](?:[ .\-]?\d){8,9}(?![A-Za-z\d]|\.\d)")
# Phone numbers written otherwise (Singapore numbers in chat, UK numbers without their 0).
SMS_GOLD_EXTRA = ("67441233", "98321561", "9061100010", "8000930705")
# Runs that cannot be told apart from what is glued to them; neither a hit nor a false positive.
GLUED = re.compile(r"[A-Za-z:]\d{7,}|\d{12,}[\d.]*[a-z]*|\d{7,}[A-Za-z]|\d{11,}\.\d")


def sms_set() -> Tuple[List[Example], dict]:
    import csv

    examples, ignored = [], {}
    with open(CORPORA / "low" / "sms-spam-collection.tsv", encoding="latin-1") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            text = row["SMS"]
            if not LONG_RUN.search(text):
                continue
            gold = [(m.start(), m.end(), "PHONE") for m in UK_NUMBER.finditer(text)]
            gold += [(m.start(), m.end(), "PHONE") for value in SMS_GOLD_EXTRA for m in re.finditer(value, text)]
            skip = [m.span() for m in GLUED.finditer(text)]
            gold = [g for g in gold if not any(s < g[1] and g[0] < e for s, e in skip)]
            examples.append(Example(text, gold, f"sms:{row['Label']}"))
            ignored[text] = skip
    return examples, ignored


def without_ignored(find: Callable[[str], list], ignored: dict) -> Callable[[str], list]:
    def found(text: str) -> list:
        skip = ignored.get(text, [])
        return [f for f in find(text) if not any(s < f[1] and f[0] < e for s, e in skip)]
    return found


# ---------------------------------------------------------------- clean text

def clean_texts() -> Iterable[Tuple[str, str]]:
    yield from corpus_texts()
    with zipfile.ZipFile(CORPORA / "en" / "inaugural.zip") as z:
        yield "inaugural", "\n\n".join(z.read(m).decode("latin-1") for m in z.namelist() if m.endswith(".txt"))
    for path in sorted((CORPORA / "multilingual" / "udhr").iterdir()):
        yield "udhr", path.read_bytes().decode("utf-8" if "UTF8" in path.name else "latin-1", "replace")


def chunks(text: str, size: int = 20000) -> Iterable[str]:
    """Paragraph-aligned pieces, so that a number keeps the words before it."""
    start = 0
    while start < len(text):
        end = next((e for e in (text.find("\n\n", start + size, start + 2 * size),
                                text.find("\n", start + size, start + 2 * size)) if e >= 0), start + size)
        yield text[start:end]
        start = end


def clean_text_replacements(find: Callable[[str], list], show: int) -> None:
    chars, false, listed = Counter(), Counter(), []
    for corpus, text in clean_texts():
        chars[corpus] += len(text)
        for piece in chunks(text):
            for s, e, t in find(piece):
                if t == "PHONE" and piece[s:e] not in REAL_PII:
                    false[corpus] += 1
                    listed.append((corpus, piece[s:e], piece[max(0, s - 60):e + 30].replace("\n", " ")))
    print("\nclean text: phone replacements that are not phone numbers")
    print(f"  {'corpus':<16}{'chars':>12}{'false':>8}{'per M chars':>13}")
    for corpus in chars:
        print(f"  {corpus:<16}{chars[corpus]:>12,}{false[corpus]:>8}{false[corpus] * 1e6 / chars[corpus]:>13.2f}")
    total = sum(chars.values())
    print(f"  {'all':<16}{total:>12,}{sum(false.values()):>8}{sum(false.values()) * 1e6 / total:>13.2f}")
    for corpus, value, context in listed[:show]:
        print(f"  FP {corpus:<14} {value!r:<24} in {context!r}")


def report(find, examples: Sequence[Example], title: str, show: int) -> None:
    counts, errors, _ = evaluate(find, examples)
    parts = sorted({e.part for e in examples})
    print_table({"corpusmill": (counts, errors, None)}, parts, title)
    for part in parts:
        c = sum((Counter(v) for v in counts.get(part, {}).values()), Counter())
        print(f"    {part:<26} tp {c['tp']:>4}  fn {c['fn']:>4}  fp {c['fp']:>4}")
    for kind, part, entity, value, text in errors[:show]:
        at = text.find(value)
        print(f"  {kind} {part:<24} {entity:<8} {value!r:<28} in {text[max(0, at - 70):at + len(value) + 40]!r}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=40)
    ap.add_argument("--per-template", type=int, default=6)
    ap.add_argument("--per-locale", type=int, default=45, help="Faker examples per locale")
    ap.add_argument("--show-errors", type=int, default=0)
    ap.add_argument("--no-clean", action="store_true", help="skip the clean-text run (the slow part)")
    args = ap.parse_args(argv)
    find = corpusmill_system()
    report(find, templated_set(args.seed, args.per_template), "templated set (written with the recognizer)",
           args.show_errors)
    report(find, faker_set(args.seed, args.per_locale), "Faker set (not tuned on)", args.show_errors)
    sms, ignored = sms_set()
    report(without_ignored(find, ignored), sms, "SMS Spam Collection (real, labelled by reading)", args.show_errors)
    if not args.no_clean:
        clean_text_replacements(find, args.show_errors)


if __name__ == "__main__":
    main()
