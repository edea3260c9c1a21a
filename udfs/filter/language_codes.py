"""Language tags: a model's label → ISO 639-3 with script (``xho_Latn``, as FineWeb-2 and GlotLID tag),
and that tag → the ``lang`` column (ISO 639-1 where the language has a code there, else ISO 639-3).

Every language-ID label goes through :func:`iso639_3` and :func:`two_letter`, so the mapping lives here
only. The code tables are SIL's ISO 639-3 code table (its ``Part1`` column, 184 codes).
"""
from __future__ import annotations

import unicodedata
from typing import Optional

import regex

from udfs.filter._script_counts import ScriptCounter

# ISO 639-1 → ISO 639-3 (SIL's iso-639-3.tab, every row with a Part1 code).
ISO639_1_TO_3 = {
    "aa": "aar", "ab": "abk", "af": "afr", "ak": "aka", "am": "amh", "ar": "ara", "an": "arg", "as": "asm",
    "av": "ava", "ae": "ave", "ay": "aym", "az": "aze", "ba": "bak", "bm": "bam", "be": "bel", "bn": "ben",
    "bi": "bis", "bo": "bod", "bs": "bos", "br": "bre", "bg": "bul", "ca": "cat", "cs": "ces", "ch": "cha",
    "ce": "che", "cu": "chu", "cv": "chv", "kw": "cor", "co": "cos", "cr": "cre", "cy": "cym", "da": "dan",
    "de": "deu", "dv": "div", "dz": "dzo", "el": "ell", "en": "eng", "eo": "epo", "et": "est", "eu": "eus",
    "ee": "ewe", "fo": "fao", "fa": "fas", "fj": "fij", "fi": "fin", "fr": "fra", "fy": "fry", "ff": "ful",
    "gd": "gla", "ga": "gle", "gl": "glg", "gv": "glv", "gn": "grn", "gu": "guj", "ht": "hat", "ha": "hau",
    "sh": "hbs", "he": "heb", "hz": "her", "hi": "hin", "ho": "hmo", "hr": "hrv", "hu": "hun", "hy": "hye",
    "ig": "ibo", "io": "ido", "ii": "iii", "iu": "iku", "ie": "ile", "ia": "ina", "id": "ind", "ik": "ipk",
    "is": "isl", "it": "ita", "jv": "jav", "ja": "jpn", "kl": "kal", "kn": "kan", "ks": "kas", "ka": "kat",
    "kr": "kau", "kk": "kaz", "km": "khm", "ki": "kik", "rw": "kin", "ky": "kir", "kv": "kom", "kg": "kon",
    "ko": "kor", "kj": "kua", "ku": "kur", "lo": "lao", "la": "lat", "lv": "lav", "li": "lim", "ln": "lin",
    "lt": "lit", "lb": "ltz", "lu": "lub", "lg": "lug", "mh": "mah", "ml": "mal", "mr": "mar", "mk": "mkd",
    "mg": "mlg", "mt": "mlt", "mn": "mon", "mi": "mri", "ms": "msa", "my": "mya", "na": "nau", "nv": "nav",
    "nr": "nbl", "nd": "nde", "ng": "ndo", "ne": "nep", "nl": "nld", "nn": "nno", "nb": "nob", "no": "nor",
    "ny": "nya", "oc": "oci", "oj": "oji", "or": "ori", "om": "orm", "os": "oss", "pa": "pan", "pi": "pli",
    "pl": "pol", "pt": "por", "ps": "pus", "qu": "que", "rm": "roh", "ro": "ron", "rn": "run", "ru": "rus",
    "sg": "sag", "sa": "san", "si": "sin", "sk": "slk", "sl": "slv", "se": "sme", "sm": "smo", "sn": "sna",
    "sd": "snd", "so": "som", "st": "sot", "es": "spa", "sq": "sqi", "sc": "srd", "sr": "srp", "ss": "ssw",
    "su": "sun", "sw": "swa", "sv": "swe", "ty": "tah", "ta": "tam", "tt": "tat", "te": "tel", "tg": "tgk",
    "tl": "tgl", "th": "tha", "ti": "tir", "to": "ton", "tn": "tsn", "ts": "tso", "tk": "tuk", "tr": "tur",
    "tw": "twi", "ug": "uig", "uk": "ukr", "ur": "urd", "uz": "uzb", "ve": "ven", "vi": "vie", "vo": "vol",
    "wa": "wln", "wo": "wol", "xh": "xho", "yi": "yid", "yo": "yor", "za": "zha", "zh": "zho", "zu": "zul",
}
ISO639_3_TO_1 = {three: two for two, three in ISO639_1_TO_3.items()}

# Labels that are not ISO 639 codes of today. lid.176 (Wikipedia's codes): "als" is Alemannic (ISO's als is
# Tosk Albanian), "bh" the retired 639-1 code of Bihari, "eml" the retired code of Emilian. CLD2: "iw"
# and "jw", retired 639-1 codes of Hebrew and Javanese.
NOT_ISO_LABELS = {"als": "gsw", "bh": "bih", "eml": "egl", "iw": "heb", "jw": "jav"}

# A macrolanguage label stands for the individual language its web text is written in, as GlotLID and
# FineWeb-2 tag it (Chinese → Mandarin, Malay → Standard Malay, not Indonesian). The ``lang`` column of
# these is the macrolanguage's two-letter code, as before. Norwegian stays ``nor``: its written standards
# have two-letter codes of their own (nb, nn), which would change ``lang`` from today's ``no``.
MACROLANGUAGE_WRITTEN_AS = {
    "ara": "arb", "aym": "ayr", "aze": "azj", "est": "ekk", "fas": "pes", "grn": "gug", "kom": "kpv",
    "kur": "kmr", "lav": "lvs", "mlg": "plt", "mon": "khk", "msa": "zsm", "nep": "npi",
    "ori": "ory", "orm": "gaz", "pus": "pbt", "sqi": "als", "swa": "swh", "uzb": "uzn", "yid": "ydd",
    "zho": "cmn",
}
_MACROLANGUAGE_OF_WRITTEN = {individual: macro for macro, individual in MACROLANGUAGE_WRITTEN_AS.items()}

UNDETERMINED = "und"


def iso639_3(label: str) -> str:
    """A model's language label (ISO 639-1, ISO 639-3 or a lid.176 Wikipedia code) as the individual
    ISO 639-3 language it tags: ``xh`` → ``xho``, ``zh`` → ``cmn``, ``ms`` → ``zsm``, ``als`` → ``gsw``."""
    label = label.lower()
    code = NOT_ISO_LABELS.get(label) or ISO639_1_TO_3.get(label, label)
    return MACROLANGUAGE_WRITTEN_AS.get(code, code)


def macrolanguage(code: str) -> Optional[str]:
    """The ISO 639-3 macrolanguage an individual language belongs to (``quy`` → ``que``, ``gnw`` →
    ``grn``), from SIL's table as the ``iso639-lang`` package ships it; None for a language in none."""
    from iso639 import Lang  # its tables take ~0.1 s to load, and only reference labelling asks
    from iso639.exceptions import InvalidLanguageValue

    try:
        found = Lang(code).macro()
    except InvalidLanguageValue:
        return None
    return found.pt3 if found is not None else None


def two_letter(code: str) -> str:
    """The ``lang`` column of an ISO 639-3 tag: its ISO 639-1 code where it has one (through its
    macrolanguage for ``cmn``, ``arb``, ``zsm`` …), else the ISO 639-3 code itself."""
    return ISO639_3_TO_1.get(code) or ISO639_3_TO_1.get(_MACROLANGUAGE_OF_WRITTEN.get(code, ""), code)


# ISO 15924 codes of the scripts by the first word of their letters' Unicode names.
_SCRIPT_BY_NAME = {
    "LATIN": "Latn", "CYRILLIC": "Cyrl", "GREEK": "Grek", "ARMENIAN": "Armn", "HEBREW": "Hebr",
    "ARABIC": "Arab", "SYRIAC": "Syrc", "THAANA": "Thaa", "NKO": "Nkoo", "DEVANAGARI": "Deva",
    "BENGALI": "Beng", "GURMUKHI": "Guru", "GUJARATI": "Gujr", "ORIYA": "Orya", "TAMIL": "Taml",
    "TELUGU": "Telu", "KANNADA": "Knda", "MALAYALAM": "Mlym", "SINHALA": "Sinh", "THAI": "Thai",
    "LAO": "Laoo", "TIBETAN": "Tibt", "MYANMAR": "Mymr", "GEORGIAN": "Geor", "HANGUL": "Hang",
    "ETHIOPIC": "Ethi", "CHEROKEE": "Cher", "CANADIAN": "Cans", "OGHAM": "Ogam", "RUNIC": "Runr",
    "KHMER": "Khmr", "MONGOLIAN": "Mong", "YI": "Yiii", "TIFINAGH": "Tfng", "VAI": "Vaii", "JAVANESE": "Java",
    "BALINESE": "Bali", "SUNDANESE": "Sund", "BUGINESE": "Bugi", "TAI": "Tale", "OL": "Olck", "LIMBU": "Limb",
    "MEETEI": "Mtei", "BAMUM": "Bamu", "ADLAM": "Adlm", "CJK": "Hani", "KANGXI": "Hani", "BOPOMOFO": "Bopo",
    "HIRAGANA": "Kana", "KATAKANA": "Kana",
}
# Characters read to find a text's script: enough for a clear majority, at a bounded cost.
_SCRIPT_SAMPLE_CHARS = 300
_NON_LATIN_LETTER = regex.compile(r"[^\P{L}\p{Latin}]")
_LATIN_LETTER = regex.compile(r"\p{Latin}")
_ASCII_LETTER = regex.compile(r"[A-Za-z]")


class _ScriptOfLetter(dict):
    """Letter → ISO 15924 code, filled as letters are first seen (a dict lookup after that)."""

    def __missing__(self, char: str) -> str:
        words = unicodedata.name(char, "").split()
        if words[:1] == ["HALFWIDTH"]:  # halfwidth katakana and hangul: the script is the next word
            words = words[1:]
        script = _SCRIPT_BY_NAME.get(words[0] if words else "", "Zyyy")
        self[char] = script
        return script


_SCRIPT_OF_LETTER = _ScriptOfLetter()
_SCRIPT_COUNTER = ScriptCounter(_SCRIPT_OF_LETTER.__getitem__)


def script_of(text: str) -> str:
    """The ISO 15924 code of the script most letters of the text's first 300 characters are written in
    (``Zyyy`` when it has none): Chinese characters are ``Hani``, and with any kana among them ``Jpan``;
    Hangul is ``Hang``."""
    sample = text[:_SCRIPT_SAMPLE_CHARS]
    if sample.isascii():  # most of the web: a flag of the string, no scan
        return "Latn" if _ASCII_LETTER.search(sample) else "Zyyy"
    if not _NON_LATIN_LETTER.search(sample):  # answered without a count
        return "Latn" if _LATIN_LETTER.search(sample) else "Zyyy"
    return _SCRIPT_COUNTER.most_common(sample)  # counted in compiled code (udfs/filter/_script_counts.pyx)


def language_script_tag(code: str, script: str) -> str:
    """``xho`` and ``Latn`` → ``xho_Latn``; the undetermined language is ``und`` alone."""
    return code if code == UNDETERMINED else f"{code}_{script}"
