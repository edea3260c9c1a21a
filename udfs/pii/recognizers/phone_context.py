"""What the text around a number says about it being a phone number: ``PhoneContext`` reads the
words before it (a phone word, a verb of reaching someone, or a negative word such as "order"),
a label beside it ("Desk:", "-Office", "(Home)"), the end of a postal address right before it
(a postcode, a town with its postcode, a country), and a verb of reaching someone right after it
("… keeps calling me", "…に折り返し"). In the languages the recognizer knows.
"""
from __future__ import annotations

import regex

from udfs.pii.recognizers.rules import ContextScorer

# Words before a number that make it a phone number: phone nouns, verbs of calling, answering,
# texting and messaging, and the nouns of a number someone is reached on. Not "answer": "the
# answer is 1 234 567".
PHONE_WORDS = (
    # en
    "phone", "phones", "telephone", "tel", "mobile", "cell", "cellphone", "call", "calls", "fax", "contact",
    "reach", "dial", "ring", "text", "sms", "whatsapp", "number", "ph", "mob", "hotline", "helpline",
    "landline", "switchboard", "reached", "calling", "called", "phoned", "texting", "ringing", "contacted",
    "texted", "texts", "rang", "rings", "dialled", "dialed", "dialing", "callback", "answers",
    "answered", "answering", "message", "messaged", "messaging", "msg", "reachable", "contactable",
    # de
    "telefon", "telefonisch", "telefonnummer", "rufnummer", "handy", "mobil", "mobilnummer", "anrufen",
    "rufen", "anruf", "durchwahl", "angerufen", "rufe", "ruft", "zurückrufen", "rückruf", "erreichbar",
    "erreichen", "nachricht", "simsen",
    # fr
    "téléphone", "tél", "portable", "appelez", "appeler", "appelle", "joindre", "numéro", "appelé", "rappeler",
    "rappelez", "rappelle", "répondre", "répond", "joignable", "composez", "texto",
    # it
    "telefono", "cellulare", "chiamare", "chiamaci", "chiamate", "numero", "chiama", "chiamato", "chiamata",
    "richiamare", "richiamami", "rispondere", "risponde", "messaggio", "raggiungibile", "contattare",
    # es, pt
    "teléfono", "móvil", "llame", "llámenos", "llamar", "llama", "llamé", "llamada", "contestar", "contesta",
    "contestan", "mensaje", "marque", "contactar", "telefone", "celular", "ligue", "ligar", "liga", "ligou",
    "atende", "atender", "mensagem", "contato", "contacto",
    # nl, sv, da, no
    "telefoon", "bel", "bellen", "belt", "gebeld", "terugbellen", "opnemen", "bericht", "bereikbaar", "mobiel",
    "neemt op", "tfn", "ringa", "ringer", "ringde", "svara", "svarar", "meddelande", "tlf",
    # pl
    "telefonu", "numer", "dzwonić", "zadzwoń", "zadzwonić", "oddzwonić", "oddzwoń", "dzwoni", "odbiera",
    "odebrać", "komórka", "wiadomość",
    # zh, ja
    "电话", "電話", "手机", "手機", "联系", "聯繫", "致电", "热线", "座机", "传真", "微信", "拨打", "携帯",
    "回电", "来电", "短信", "联络", "接听", "呼叫", "連絡", "折り返し")
# Words before a number that make it something else; the nearest word wins.
NOT_PHONE_WORDS = (
    "order", "invoice", "tracking", "ref", "reference", "isbn", "issn", "sku", "serial", "patent", "doi",
    "pmid", "imei", "qq", "icp", "article", "art", "item", "model", "batch", "receipt", "transaction",
    "confirmation", "registration", "reg", "vat", "tax", "company number", "company no", "parcel", "shipment",
    "barcode", "ean", "upc", "page", "pages", "pp", "pg", "vol", "volume", "version", "ver", "build", "release",
    "coordinates", "coords", "lat", "latitude", "lon", "lng", "longitude", "gps", "score", "scores", "scored",
    "price", "prices", "population", "zip", "postcode", "pmc", "identification",
    # the numbers of accounts, customers, contracts and cases: identifiers, not phones (as phrases:
    # "Client services: 0800 …" is a phone)
    "account number", "account no", "acct", "customer number", "customer no", "customer id", "client number",
    "client no", "member number", "membership number", "policy number", "contract number", "case number",
    "ticket number", "registered number", "registered no",
    "bestellnummer", "bestellung", "auftragsnummer", "kundennummer", "kunden-nr", "vertragsnummer",
    "aktenzeichen", "rechnung", "seite", "seiten", "plz", "postleitzahl", "commande", "facture",
    "numéro client", "numéro de client", "numéro de contrat", "numéro de dossier", "numero cliente",
    "número de cliente", "ordine", "pedido", "bestelling", "klantnummer", "ordernummer", "kundnummer",
    "beställning", "zamówienie", "zamówienia", "cep", "code postal", "código postal", "postnummer",
    "订单", "单号", "编号", "账号", "帐号", "流水", "快递", "运单", "工号", "学号", "序列", "型号", "货号", "批号",
    "专利", "卡号", "页", "价格", "坐标", "比分", "版本", "邮编", "会员号", "客户号", "注册号")
# Words that name which of someone's numbers it is, as a label before ("Desk:") or after it
# ("-Office", "(Home)"); phone words serve as labels too ("(mobile)", "/Fax").
LABELS = (
    "office", "home", "work", "desk", "direct", "main", "private", "reception", "business", "personal",
    "büro", "privat", "geschäftlich", "zentrale", "bureau", "domicile", "standard", "accueil", "fixe",
    "ufficio", "casa", "sede", "centralino", "oficina", "fijo", "centralita", "escritório", "residencial",
    "comercial", "kantoor", "thuis", "werk", "privé", "kontor", "hem", "arbete", "växel", "biuro", "dom",
    "praca", "stacjonarny", "办公", "办公室", "住宅", "公司", "自宅", "会社", "事務所")
# Verbs after a number that make it one someone is reached on ("… keeps calling me").
REACHED_AFTER = (
    "calling", "called", "rang", "ringing", "rings", "texting", "texted", "messaging", "messaged", "answering",
    "answers", "answered", "picks up", "pick up", "linked to", "on my account", "on the account",
    "registered to my", "angerufen", "anrufen", "erreichbar", "niemand ran", "keiner ran", "rappeler", "répond",
    "risponde", "chiamato", "contesta", "llamado", "gebeld", "neemt op", "svarar", "ringde", "odbiera",
    "dzwoni", "atende", "ligou",
    "回电", "来电", "打电话", "没人接", "打不通", "接听", "联系", "联络", "短信",
    "に電話", "に連絡", "に折り返し", "へ連絡", "までお電話", "までご連絡")
COUNTRIES = (
    "United Kingdom", "UK", "U.K.", "Great Britain", "England", "Scotland", "Wales", "Northern Ireland",
    "Ireland", "Éire", "United States", "USA", "U.S.A.", "Canada", "Australia", "New Zealand", "India", "China",
    "Japan", "Germany", "Deutschland", "Austria", "Österreich", "Switzerland", "Schweiz", "Suisse", "Svizzera",
    "France", "Belgium", "Belgique", "België", "Luxembourg", "Netherlands", "The Netherlands", "Nederland",
    "Holland", "Italy", "Italia", "Spain", "España", "Portugal", "Sweden", "Sverige", "Norway", "Norge",
    "Denmark", "Danmark", "Finland", "Suomi", "Poland", "Polska", "Czech Republic", "Česko", "Israel",
    "Brazil", "Brasil", "Mexico", "México", "Singapore", "Hong Kong", "South Africa",
    "中国", "中華人民共和国", "日本", "香港", "台湾")


def _alternation(words) -> str:
    return "|".join(regex.escape(w) for w in sorted(words, key=len, reverse=True))


_LABEL = rf"(?:{_alternation(LABELS + PHONE_WORDS)})"
# "Desk: …", "Büro: …", "T: …": a label right before the number.
_LABEL_BEFORE = regex.compile(rf"(?i)(?:(?<![\p{{L}}\d]){_LABEL}|(?<![\p{{L}}\d.])(?-i:[TMF]))[ \xa0]?[:：][ \xa0]*$")
# "-Office", "/Fax", " (Home)", " Desk:" or a label closing the line: a label right after the number.
_LABEL_AFTER = regex.compile(rf"(?i)(?:[ \xa0]?[-–/][ \xa0]?{_LABEL}(?![\p{{L}}\d])|[ \xa0]?[(（]{_LABEL}[)）]"
                             rf"|[ \xa0,]+{_LABEL}[ \xa0]?(?:[:：]|[ \xa0]*(?:\n|$)))")
# Latin-script verbs need word boundaries, Chinese and Japanese ones are matched as they stand.
_LATIN = regex.compile(r"\p{Latin}")
_REACHED_AFTER = regex.compile(
    rf"(?i)(?<!\p{{L}})(?:{_alternation(w for w in REACHED_AFTER if _LATIN.match(w))})(?!\p{{L}})"
    rf"|{_alternation(w for w in REACHED_AFTER if not _LATIN.match(w))}")

# A verb after the number counts within its sentence ("<Forwarded from 21870000>Hi … Messaging").
_SENTENCE_END = regex.compile(r"[\n.!?;<>。！？；]")

# The end of a postal address: a postcode with letters (UK, Canada, the Netherlands), a numeric
# postcode beside a town ("10115 Berlin", "Lund 211 20", "CA 94105"), then maybe a country; or a
# country alone. Four digits that could be a year are no postcode: "London 1851 2 362 236" is a
# table row.
_TOWN = r"\p{Lu}[\p{L}'’.]*(?:[ \xa0-](?:\p{Lu}[\p{L}'’.]*|de|da|do|di|la|le|am|an|der|sur|del|upon)){0,3}"
_NUMERIC_POSTCODE = (r"(?<![\d.,:/-])(?:\d{5}(?:-\d{3,4})?|\d{6}|(?!(?:1[5-9]|20)\d\d(?!\d))\d{4}|\d{2}-\d{3}"
                     r"|\d{3}[ \xa0]\d{2}|\d{4}-\d{3}|\d{3}-\d{4})(?![\d])")
_LETTER_POSTCODE = (r"(?<![\p{L}\d])(?:[A-Z]{1,2}\d[A-Z\d]?[ \xa0]?\d[A-Z]{2}|[A-Z]\d[A-Z][ \xa0]?\d[A-Z]\d"
                    r"|\d{4}[ \xa0]?[A-Z]{2})")
_COUNTRY = rf"(?<![\p{{L}}])(?:{_alternation(COUNTRIES)})"
_ADDRESS_END = regex.compile(
    rf"(?:(?:{_LETTER_POSTCODE}|{_NUMERIC_POSTCODE}[ \xa0]+{_TOWN}|{_TOWN},?[ \xa0]+{_NUMERIC_POSTCODE}"
    rf"|(?<![\p{{L}}])[A-Z]{{2}}[ \xa0]\d{{5}}(?:-\d{{4}})?)(?:,?[ \xa0]+{_COUNTRY})?|{_COUNTRY})"
    rf"[ \xa0]*[,;·|–—-]?[ \xa0]*(?:\n[ \xa0]*)?$")


class PhoneContext:
    """Scores a phone-shaped number by its context: a negative word before it vetoes it; a phone
    word or a verb of reaching before it, a label beside it, the end of an address right before
    it or a verb of reaching right after it (before any negative word) adds ``boost``."""

    ADDRESS_REACH = 120   # characters before a number searched for the end of an address
    AFTER_REACH = 40      # characters after a number searched for a verb of reaching

    def __init__(self, window: int, boost: float = 0.35):
        self.words = ContextScorer(PHONE_WORDS, NOT_PHONE_WORDS, window, boost)

    @staticmethod
    def labelled_after(text: str, end: int) -> bool:
        return _LABEL_AFTER.match(text, end) is not None

    def reached_after(self, text: str, end: int) -> bool:
        after = _SENTENCE_END.split(text[end:end + self.AFTER_REACH], 1)[0]
        found = _REACHED_AFTER.search(after)
        return found is not None and not self.words.has_negative(after[:found.start()])

    def signals(self, text: str, start: int, end: int) -> bool:
        """Anything besides a phone word before the number that says it is one."""
        return (_LABEL_BEFORE.search(text, max(0, start - 24), start) is not None or self.labelled_after(text, end)
                or _ADDRESS_END.search(text, max(0, start - self.ADDRESS_REACH), start) is not None
                or self.reached_after(text, end))

    def adjust(self, text: str, start: int, end: int, score: float) -> float:
        verdict = self.words.verdict(text, start)
        if verdict < 0:
            return 0.0
        if verdict > 0 or self.signals(text, start, end):
            return self.words.boosted(score)
        return score
