"""Boilerplate removal around resiliparse's main-content extraction, in three cheap passes.

1. **Elements** (in the walk over the page's DOM, udfs/extract/_page_walk.pyx): page furniture that the
   main-content rules leave in — author boxes, share bars, "related" lists, post meta, newsletter
   and cookie boxes, comment forms — is recognised by the words web developers name it with in
   ``class`` and ``id`` (``author-box``, ``entry-meta``, ``socialShare``, ``relatedPosts``), the
   vocabulary Readability and trafilatura also rely on. Layout wrappers carry the same words
   (``content-sidebar-wrap``, ``with-sidebar-right``), so an element is never dropped when its names
   also say content/article/main, or when it holds the page's ``<h1>``, a ``<main>``, an
   ``<article>``, an ``articleBody`` or a run of paragraphs (a third ``<p>`` among siblings; an
   ASP.NET page's one ``<form>`` around everything does); ``<html>``, ``<body>``, ``<main>`` and
   ``<article>`` never are. Forms are furniture by their tag.
2. **Blocks** (after extraction, ``BlockModel``): each paragraph, heading or line is kept or
   dropped by a small logistic model on its link density, length, punctuation, whether it is a
   heading and its place among the page's long paragraphs; a near-miss between two kept units is
   kept too.
3. **Lines** (after extraction): short lines that are stock phrases of page furniture in the
   languages of the crawl — "Related articles", "Share this", "Mehr zum Thema", "Lire aussi",
   bare datelines, "Foto: …" credits and captions ending in one, "© 2020 …"; and, up to a short
   paragraph long, calls to subscribe, author notes and teasers ending in "read more". A longer line
   is prose even when it mentions cookies.

The passes are tuned and checked on two development sets made differently — trafilatura's evaluation
pages and Mozilla Readability's test pages — each against the other (``bench/quality/extraction_quality.py``,
``tools/train_block_classifier.py``).
"""
from __future__ import annotations

import json
import math
import re
from functools import lru_cache

import numpy as np

try:
    from udfs.extract._blocks import (FEATURES, HAS_DIGIT, HAS_PHRASE, HAS_TWO_SEPARATORS, fill_unit_features,
                                      line_marks, unit_scores)
    from udfs.extract._page_walk import Unit
except ImportError as exc:  # a checkout that pip has not built, or a shipped udfs/ without the .so
    raise ImportError("corpusmill's compiled HTML passes (udfs/extract/_lexbor.pyx, _page_walk.pyx, _blocks.pyx) "
                      "are not built: install corpusmill with pip (`pip install -e .` in the "
                      "clone), which compiles them") from exc

# Words (a class token or id split at "-", "_", digits and camelCase humps) naming page furniture.
_FURNITURE_WORDS = frozenset("""
    nav navbar navigation navi menu menus submenu breadcrumb breadcrumbs pagination pager
    footer sidebar masthead toolbar
    share shares sharing sharebar sharethis shariff addthis social socials sociable
    related recommended recommendations popular trending
    comment comments kommentar kommentare respond replies disqus
    author authors authorbox byline bio
    postmeta postmetadata entrymeta dateline
    tags taglist tagcloud categories
    cookie cookies consent gdpr
    newsletter subscribe subscription signup
    advert advertisement ads sponsor sponsored promo outbrain taboola
    noprint popup modal overlay cta disclaimer disclosure
""".split())
# One-word compounds ("authorbox", "socialshare", "relatedposts", "commentlist") start with these.
_FURNITURE_PREFIXES = ("share", "social", "related", "comment", "author", "newsletter", "cookie",
                       "breadcrumb", "sidebar", "footer", "subscri", "kommentar")
_CONTENT_WORDS_WITH_FURNITURE_PREFIX = ("commentary", "authorit")
# "meta" and "print" alone are too common in names of content ("recipe-meta", "print-step"):
# only whole tokens that mean post metadata or not-for-print.
_FURNITURE_TOKEN = re.compile(
    r"^(?:(?:entry|post|article|story|blog|byline)[-_]?)?meta(?:[-_]?(?:data|info))?$|^(?:no|hidden)[-_]?print$")
# Names that say "this is the content" veto removal (a wrapper like "entry-content has-sidebar").
_CONTENT_WORDS = frozenset({"content", "article", "main", "body", "story"})
# Where a camelCase hump splits words ("socialShare"): an empty match, so that the split is a plain
# replacement, several times cheaper than a template with groups.
_CAMEL_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z])")
_NON_LETTERS = re.compile(r"[^a-z]+")
# Only plain names say what an element is; numbered ones ("comment-12345") are instances whose
# container carries the plain name as well.
_SELECTABLE = re.compile(r"^[A-Za-z][\w-]*$")
_NUMBERED = re.compile(r"\d{3}")


def _words(name: str) -> list:
    """A name's lower-case words: split at "-", "_", digits and camelCase humps."""
    # (a hump needs an upper-case letter: most names have none, and skip the search)
    return _NON_LETTERS.split((name if name.islower() else _CAMEL_HUMP.sub(" ", name)).lower())


def _names_furniture(name: str, words: list) -> bool:
    if _FURNITURE_TOKEN.match(name.lower()):
        return True
    for word in words:
        if word in _FURNITURE_WORDS:
            return True
        if word.startswith(_FURNITURE_PREFIXES) and not word.startswith(_CONTENT_WORDS_WITH_FURNITURE_PREFIX):
            return True
    return False


@lru_cache(maxsize=65536)
def is_furniture_name(name: str) -> bool:
    """Whether one class token or id names page furniture (``author-box`` yes, ``recipe-meta`` no)."""
    return _names_furniture(name, _words(name))


# Every name that can classify as furniture or content contains one of these words; testing for them
# first skips the bulk of a page's names (layout, grid and colour classes) at the cost of one search.
# (Searched in the lower-cased name: a case-insensitive pattern is several times slower; and as a
# trie, which the regex engine walks letter by letter instead of trying each word at each letter.)


def _trie_pattern(words) -> str:
    """A regex matching where any of ``words`` starts, with shared prefixes factored out."""
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        either = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{either})?" if "" in node else either

    return pattern(trie)


NAMING_WORDS = _FURNITURE_WORDS | set(_FURNITURE_PREFIXES) | _CONTENT_WORDS | {"meta", "print"}
MAYBE_NAMED = re.compile(_trie_pattern(NAMING_WORDS))


def name_kind(name: str) -> str:
    """``"furniture"``, ``"content"`` or ``""`` for one class token or id."""
    if not _SELECTABLE.match(name) or _NUMBERED.search(name):
        return ""
    # A BEM modifier ("block__element--modifier") says how a thing looks, not what it is.
    name = name.split("--")[0]
    words = _words(name)
    if not _CONTENT_WORDS.isdisjoint(words):
        return "content"
    return "furniture" if _names_furniture(name, words) else ""


SHORT_LINE_CHARS = 120
# Stock phrases of page furniture, each matched against a whole short line, in the languages most of
# the crawl is in. Grouped by what they are; none names a particular site. Every line pattern is
# written in lower case and matched against the case-folded line (``_case_folded``): several times
# cheaper for the regex engine than case-insensitive matching, with the same result.
_FURNITURE_LINES = [
    # legal
    r"(?:©|\(c\)|copyright\b).*",
    # navigation and site links
    r"skip\ to\ (?:main\ )?content|back\ to\ top|toggle\ navigation|main\ menu"
    r"|menu|menü|nach\ oben|zurück(?:\ zur\ übersicht)?",
    r"home|startseite|kontakt|contact(?:\ us)?|impressum|datenschutz|about(?:\ us)?|über\ uns|sitemap|agb|faq"
    r"|mentions\ légales|aviso\ legal|首页|联系我们|关于我们|返回顶部|返回首页|网站地图",
    # share, print, follow, comment calls
    r"(?:share|share\ this|tweet|print|e-?mail|subscribe|sign\ in|log\ ?in"
    r"|sign\ up|register)(?:\ (?:on|to|this|article|page|story|post).*)?",
    r"(?:teilen|drucken|partager|imprimer|compartir|imprimir|condividi|stampa|分享|打印)(?:\ .{0,40})?[:!]?",
    r"(?:den\ |diesen\ )?(?:artikel|beitrag|seite)\ (?:teilen|drucken|empfehlen|bewerten|merken|versenden).*",
    r"(?:möchten\ sie|willst\ du)\ (?:den|diesen)\ (?:artikel|beitrag)\ teilen.*",
    r"(?:follow|like)\ us\b.*|folge?n?\ (?:sie\ )?uns\b.*|suivez-nous.*|síguenos.*|nos\ siga.*|seguici.*",
    r"(?:\d+\ )?(?:comments?|kommentare?|commentaires?|comentarios?|réactions?|reactions?|replies)(?:\ \(\d+\))?:?",
    r"(?:leave|post|add|write)\ a\ (?:comment|reply).*|(?:kommentar|kommentare)\ (?:schreiben|verfassen|anzeigen).*",
    r"kommentieren|(?:hinterlasse|schreibe?)\ (?:einen\ kommentar|eine\ antwort).*"
    r"|vos\ réactions.*|deja\ (?:un|tu)\ comentario.*",
    r"发表评论|网友评论.*|我要评论|责任编辑[:：].*",
    # related-content headers and inline promos
    r"related(?:\ (?:articles?|posts?|stories|content|topics|news|reading|links|coverage|videos?))?(?:\s*[:—–|].*)?",
    r"see\ also|further\ reading|recommended(?:\ for\ you)?|trending(?:\ now)?"
    r"|top\ stories|(?:most\ )?(?:popular|read|viewed)"
    r"(?:\ (?:posts|articles|stories|now|news))?",
    r"more\ (?:from|on|about|in)\ .{1,60}|(?:you\ )?(?:may|might)\ also\ (?:like"
    r"|enjoy|be\ interested\ in).*|also\ read.*"
    r"|read\ (?:also|next|more|the\ latest).*|(?:previous|next)\ (?:post|article|story).*",
    r"(?:das|dies(?:e[rs]?)?)(?:\ \w+){0,2}\ könnten?\ (?:dich|sie|euch)\ (?:auch\ |ebenfalls\ )*interessieren.*",
    r"mehr\ (?:zum\ thema|zu\ diesem\ thema|aus\ de[rm]\ .{1,40}|artikel|beiträge|news).*",
    r"(?:weitere|ähnliche|verwandte|passende)\ (?:beiträge|artikel|themen"
    r"|themenbereiche|nachrichten|news|links?|informationen)(?:\ .{0,50})?",
    r"weiterführende[rn]?\ (?:links?|informationen|artikel).*|lesen\ sie\ (?:auch"
    r"|mehr|hier|weiter).*|auch\ (?:interessant|lesen).*",
    r"zum\ weiterlesen.*|(?:vorheriger|nächster)\ (?:artikel|beitrag).*|(?:meist"
    r"|viel|am\ meisten)\ gelesen.*|top[\ -]themen.*",
    r"(?:à\ )?lire\ aussi.*|sur\ le\ même\ sujet.*|à\ voir\ aussi.*|vous\ aimerez\ aussi.*|articles?\ similaires.*",
    r"(?:temas|artículos|noticias|notas)\ relacionad[oa]s.*|(?:te|le)\ puede\ interesar.*"
    r"|(?:vea|lee|lea|mira)\ también.*",
    r"leia\ também.*|(?:veja|saiba)\ mais.*|notícias\ relacionadas.*|leggi\ anche.*|articoli\ correlati.*",
    r"(?:czytaj|zobacz)\ (?:też|także|również).*|lees\ ook.*|gerelateerde\ (?:artikelen|berichten).*",
    r"(?:相关|相關)(?:阅读|閱讀|文章|新闻|新聞|推荐|推薦|链接|報導|报道)[:：]?.{0,40}|热门(?:推荐|文章|新闻|排行)?|(?:推荐|延伸)阅读.*|上一篇.*|下一篇.*",
    # subscription, login, paywall
    r"(?:jetzt\ )?(?:registrieren|anmelden|einloggen|abonnieren)",
    r"(?:stay\ up[-\ ]to[-\ ]date|get\ (?:regular\ |the\ latest\ )?updates"
    r"|sign\ up\ (?:here|now|today|for)).*",
    r"(?:sie\ müssen\ sich|bitte\ loggen\ sie\ sich|you\ must\ be\ logged\ in|log\ in\ to).*",
    r"(?:möchten\ sie|want\ to)\ (?:weiterlesen|keep\ reading|continue\ reading)\??"
    r"|(?:read\ more|continue\ reading|click\ here).*",
    # post meta: datelines, bylines, tags, reading time
    r"(?:posted|published|updated|filed|written)\ (?:on|in|by|under)\b.*|this\ entry\ was\ posted.*|filed\ under.*",
    r"(?:veröffentlicht|erstellt|aktualisiert)\ (?:am|in|unter|von)\b.*|publié\ le.*|publicado\ (?:el|en|por)\b.*",
    r"(?:last\ (?:modified|updated)|zuletzt\ (?:aktualisiert|geändert)|letzte\ (?:änderung"
    r"|aktualisierung)|stand)\b:?.{0,40}",
    r"(?:tags?|schlagw(?:ö|o)rter|schlagworte|themen|topics|categories|category"
    r"|kategorien?|catégories?|étiquettes|etiquetas)\s*:.*",
    r"(?:autor(?:in|en)?|author|authors|auteur|von|by)\s*:.{0,60}",
    r"(?:by\ )?\d+\s*(?:min(?:ute)?s?\.?\ read|minuten?\ lesezeit)|(?:lesezeit"
    r"|reading\ time|temps\ de\ lecture)\b.{0,30}",
    # image credits and ads
    r"\(?(?:fotos?|photos?|bild(?:er)?|images?|credits?|crédits?\ photos?"
    r"|beitragsbild|titelbild|quelle|fuente)\s*:.{0,80}",
    r"[-–\s]*(?:anzeige|werbung|advertisement|publicidad|publicité|pubblicità"
    r"|广告|sponsored(?:\ content)?|gesponsert)[-–:\s]*",
    # ratings
    r"\(?(?:noch\ )?keine\ bewertungen\)?|(?:war|ist)\ (?:der|dieser)\ (?:artikel|beitrag)\ (?:nützlich|hilfreich)\??",
    r"was\ this\ (?:article|page|post)\ (?:helpful|useful)\??|gefällt\ (?:ihnen"
    r"|dir)\ (?:dieser|der)\ (?:artikel|beitrag)\??",
]
_BOILERPLATE = re.compile(r"^(?:" + "|".join(f"(?:{p})" for p in _FURNITURE_LINES) + r")$", re.X)
# Phrases that make a short line furniture wherever they stand in it, and a cookie notice (the word
# and a word about using or accepting it). Searched for, not written as ".*phrase.*" in the pattern
# above: there each of them would cost every line a backtracking scan, more CPU than the rest together.
_PHRASES = ("privacy policy", "terms of use", "terms of service", "datenschutzerklärung", "nutzungsbedingungen",
            "all rights reserved", "alle rechte vorbehalten", "newsletter", "sign up here")
_FURNITURE_PHRASES = re.compile(r"\b(?:" + "|".join(map(re.escape, _PHRASES)) + r")\b")
_COOKIE = re.compile(r"\bcookies?\b")
_COOKIE_USE = re.compile(r"\b(?:use|uses|using|policy|settings|consent|accept|agree|browser|website|verwende[nt]?"
                         r"|nutz(?:t|en)|einstellungen|richtlinie|akzeptieren|zustimmen|utilise|utilisons|acepta[rs]?"
                         r"|utiliza(?:mos)?|usamos|utilizziamo|gebruik(?:t|en)?|korzysta\w*)\b")
# A dateline: a line that is only a date, with at most a weekday, a time and a "posted on"-like word.
_MONTH = (r"(?:jan(?:uary|uar|vier|uario)?|feb(?:ruary|ruar)?|févr(?:ier)?|febrero|mar(?:ch|s|zo)?|märz|apr(?:il)?|avr(?:il)?"
          r"|abr(?:il)?|ma[iy]|mayo|juin|jun(?:e|i|io)?|jul(?:y|i|io)?|juil(?:let)?|aug(?:ust)?|août|ago(?:sto)?"
          r"|sep(?:t(?:ember|embre)?)?|septiembre|o[ck]t(?:ober|obre|ubre)?"
          r"|nov(?:ember|embre|iembre)?|d[eé]c(?:ember|embre)?"
          r"|dez(?:ember)?|dic(?:iembre)?)\.?")
_DATE = (rf"(?:\d{{1,2}}\.?\s*(?:de\s+)?{_MONTH}\s*(?:de\s+)?\d{{2,4}}|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s*\d{{2,4}}"
         r"|\d{1,4}[./-]\d{1,2}[./-]\d{1,4}|\d{4}年\d{1,2}月\d{1,2}日)")
# Whole words only, and possessive repeats: a line of words with no date fails in linear time.
_DATE_WORDS = (r"(?:(?:posted|published|updated|created|veröffentlicht|aktualisiert|erstellt|stand|publié|publicado|am|um|on"
               r"|at|le|el|de|den|the|uhr|h|pm|monday|tuesday|wednesday|thursday|friday|saturday|sunday|montag|dienstag"
               r"|mittwoch|donnerstag|freitag|samstag|sonntag|lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|lunes"
               r"|martes|miércoles|jueves|viernes|sábado|domingo)\b|\d{1,2}:\d{2}\b|[,|:–-])")
_DATELINE = re.compile(rf"^(?:{_DATE_WORDS}\s*)*+{_DATE}(?:\s*(?:{_DATE_WORDS}|\d{{1,2}}[.h]\d{{2}}\b))*+$")
# Breadcrumbs and link bars: short items joined by separators ("Home | News | Sport", "Home > Blog").
# "/" and ">" only count with spaces around them, so paths and code stay.
_LINK_BAR = re.compile(r"^(?>[^|»>›•·/]{1,30}(?:\s*[|»›•·]\s*|\s[>/]\s)){2,}+[^|»>›•·/]{0,30}$")


# The regex engine's case-insensitive matching folds a letter by its simple lower case, and "ı" and
# "ſ" as "i" and "s"; str.lower() agrees for every other character (tests/extract/test_boilerplate.py checks
# all of Unicode against the patterns' letters), and these three keep lines their length.
_REGEX_CASE_FOLD = str.maketrans({"İ": "i", "ı": "i", "ſ": "s"})


def _case_folded(line: str) -> str:
    # (three searches for those letters are several times cheaper than a translation that finds none)
    return (line.translate(_REGEX_CASE_FOLD) if "ı" in line or "İ" in line or "ſ" in line else line).lower()


# Prompts and notes about the author, up to a short paragraph long, wherever they stand: a call to
# subscribe (newsletter, e-mail, inbox), an author's note (a name, then "is a … reporter" and a way
# to follow or reach them, or "writes about"), a teaser that ends in "read more". Matched in the
# case-folded line, as the patterns above.
PROMPT_LINE_CHARS = 400
_PROMPT = re.compile(r"""
    \b(?:sign\ up|subscribe|register)\b.{0,60}\b(?:newsletter|updates|inbox|e-?mail)\b
  | \benter\ your\ e-?mail\b | \b(?:delivered|straight|direct(?:ly)?)\ (?:to|in(?:to)?)\ your\ inbox\b
  | \bnewsletter\b.{0,40}\b(?:abonnieren|bestellen|anmelden|sign\ up|subscribe)\b
  | \b(?:abonnieren|bestellen)\ sie\b.{0,40}\bnewsletter\b | \bgratis\ per\ newsletter\b
  | ^(?:\w+\ ){1,3}(?:is|was)\ an?\ (?:\w+\ ){0,3}(?:writer|reporter|journalist|editor|correspondent|columnist
        |contributor)\b.*(?:\bfollow|\btwitter|\be-?mail|@)
  | ^(?:\w+\ ){1,3}writes\ about\b | ^schreibt\ seit\ \d{4}\b
  | (?:read\ more|continue\ reading|weiterlesen|lire\ la\ suite|leer\ más|leia\ mais)\s*[.…»›>]*$
""", re.X | re.S)
# Every line ``_PROMPT`` matches holds one of these: looking for them first spares most lines the pattern.
_PROMPT_WORDS = ("newsletter", "inbox", "mail", "sign up", "subscribe", "register", "writer", "reporter", "journalist",
                 "editor", "correspondent", "columnist", "contributor", "writes about", "schreibt seit", "read more",
                 "continue reading", "weiterlesen", "lire la suite", "leer más", "leia mais")


def _is_prompt(folded: str) -> bool:
    return bool(line_marks(folded, _PROMPT_WORDS) & HAS_PHRASE) and bool(_PROMPT.search(folded))


# A caption's credit at the end of a short line: "… | Foto: Reuters", "Jane Doe/AFP via Getty Images"
# (a bare credit line is one of ``_FURNITURE_LINES``). Searched only in the lines that hold a word of it.
_CREDIT = re.compile(r"""
    (?:\||\s[–-]|/)\s*(?:fotos?|photos?|bild(?:er)?|credits?|quelle|images?)\s*:.{0,60}$
  | (?:\bvia\ |/|\|\ ?)(?:getty\ images|reuters|afp|ap\ photo|dpa|epa|shutterstock|istock(?:photo)?|imago
                      |picture\ alliance)(?:\ \w+){0,3}$
""", re.X)
_CREDIT_WORDS = ("foto", "photo", "bild", "credit", "quelle", "image", "reuters", "afp", "dpa", "epa", "shutterstock",
                 "istock", "imago", "picture alliance")


def _is_credit(folded: str) -> bool:
    return bool(line_marks(folded, _CREDIT_WORDS) & HAS_PHRASE) and bool(_CREDIT.search(folded))


def is_boilerplate_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped or len(stripped) > PROMPT_LINE_CHARS:
        return False
    if len(stripped) > SHORT_LINE_CHARS:
        return _is_prompt(_case_folded(stripped))
    return _is_furniture_line(stripped)


# Cached: a site repeats its furniture lines on every page. (The line pass reuses the block pass's
# verdict on a unit's text, ``Unit.furniture``, and asks here only about the lines of a unit of several.)
@lru_cache(maxsize=4096)
def _is_furniture_line(line: str) -> bool:
    folded = _case_folded(line)
    # Each pattern after the first only where the line has what it needs (a digit, two separators, a
    # phrase), found in one compiled scan several times cheaper than the patterns. (The separators are
    # counted in the folded line: folding leaves them as they are, tests/extract/test_boilerplate.py.)
    marks = line_marks(folded, _PHRASES)
    if (_BOILERPLATE.match(folded) or (marks & HAS_DIGIT and _DATELINE.match(folded))
            or (marks & HAS_TWO_SEPARATORS and _LINK_BAR.match(line))):
        return True
    # (as whole-line patterns with ".*", the phrases did not match across a line break)
    return ("\n" not in line and bool((marks & HAS_PHRASE and _FURNITURE_PHRASES.search(folded)) or (
        "cookie" in folded and _COOKIE.search(folded) and _COOKIE_USE.search(folded)))) or _is_prompt(folded) or _is_credit(folded)


def drop_boilerplate_lines(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not is_boilerplate_line(line))


def unit_lines(unit: Unit) -> list:
    """The lines of a unit's text that the line pass keeps: those of ``drop_boilerplate_lines(unit.text)``,
    with the block pass's verdict on a one-line text (``unit.furniture``) taken as it stands."""
    text = unit.text
    if "\n" in text:
        return [line for line in text.split("\n") if not is_boilerplate_line(line)]
    furniture = is_boilerplate_line(text) if unit.furniture is None else unit.furniture
    return [] if furniture else [text]


# ---------------------------------------------------------------------------------------------
# Blocks (after extraction): each paragraph, heading or line of resiliparse's main-content
# extract is scored by a small logistic model on cheap features of the block and its
# neighbours — its length, how much of it is link text (resiliparse's ``minimal_html`` output
# keeps the links), punctuation, and where it sits relative to the page's long paragraphs —
# the features boilerpipe and jusText decide on. Trained by ``tools/train_block_classifier.py``.

# One unit (``Unit``) per <p>/<hN>/<pre> element of resiliparse's minimal_html, or per line of text
# outside them: ``units_of`` (udfs/_minimal_html.pyx, one compiled pass; its docstring gives the
# regular expressions it is equal to, which tests/extract/test_boilerplate.py compares it with).

# A long paragraph with few links anchors the main content; distances are counted from these.
ANCHOR_CHARS = 200


def unit_features(units: list) -> np.ndarray:
    """One feature vector (a row, ordered as ``FEATURES``) per unit.

    Whether a unit is a heading is a feature, and the only trace of its element: the model learns
    what a heading needs around it, which a fixed rule ("keep headings before kept text") got wrong
    for the headings of related-article lists. The other elements (paragraph, list line) are left
    out, as is the unit's position on the page (it would penalise the second half of long documents).
    Computed in one compiled loop (udfs/extract/_blocks.pyx, whose docstring says how); each unit's
    ``furniture`` is set on the way (``is_boilerplate_line`` of its text).
    """
    rows = np.empty((len(units), len(FEATURES)))
    fill_unit_features(units, is_boilerplate_line, ANCHOR_CHARS, rows)
    return rows


class BlockModel:
    """Logistic weights over ``FEATURES`` (standardisation folded in), the keep threshold, and the
    margin below it within which a unit between two kept ones is kept too."""

    def __init__(self, weights: list, threshold: float, context_margin: float = 0.0):
        if len(weights) != len(FEATURES):
            raise ValueError(f"block model has {len(weights)} weights, expected {len(FEATURES)}")
        self.weights, self.threshold, self.context_margin = weights, threshold, context_margin
        self._weights = np.array(weights, dtype=float)
        # Compare scores, not probabilities: the threshold's logit once instead of a sigmoid per unit.
        self.threshold_logit = math.log(threshold / (1 - threshold))

    @classmethod
    def load(cls, path) -> "BlockModel":
        with open(path, encoding="utf-8") as f:
            model = json.load(f)
        if model.get("features") != list(FEATURES):
            raise ValueError(f"{path}: block model features differ from udfs.extract.boilerplate.FEATURES; retrain it")
        return cls(model["weights"], model["threshold"], model["context_margin"])

    def scores(self, units: list) -> list:
        """Each unit's features dotted with the weights, in the same compiled loop (no feature matrix)."""
        return unit_scores(units, is_boilerplate_line, ANCHOR_CHARS, self._weights)

    def keeps(self, units: list) -> list:
        return self.decide(units, self.scores(units))

    def decide(self, units: list, scores: list) -> list:
        """Keep units scoring over the threshold, and near-misses between two kept units (list items,
        captions and subheadings inside the article, which the model judges alone badly)."""
        cut = self.threshold_logit
        keep = [score >= cut for score in scores]
        near = cut - self.context_margin
        for i in range(1, len(units) - 1):
            if not keep[i] and keep[i - 1] and keep[i + 1] and scores[i] >= near:
                keep[i] = True
        return keep
