"""The compiled walk over lexbor's DOM (udfs/extract/_page_walk.pyx): a page's units in its three views, the
main-content rules, the element pass's marks, the name prefilter, and hostile pages."""
from __future__ import annotations

import re
import resource
from collections import Counter

import pytest
from selectolax.lexbor import LexborHTMLParser

from conftest import shared
from tools.extraction_devsets import load_readability, load_trafilatura_eval
from udfs.extract import _page_walk, main_content
from udfs.extract.html import MAIN_CONTENT, MAIN_CONTENT_UNFILTERED, WHOLE_PAGE, parse_page

ALL = 0  # no mark masked: every visible text


def texts(html: str, view: int = ALL) -> list:
    return [unit.text for unit in parse_page(html).units(view)]


def test_units_keep_the_elements_kind_text_line_breaks_and_link_text():
    page = parse_page("<body><h2>Rivers</h2><p>Snow &amp; rain <a href='/x'>feed the  river</a>.<br>New line.</p>"
                      "<div>one line<br>another</div><pre>  code\n   indented</pre>"
                      "<table><tr><td>cell</td><td>next</td></tr></table><ul><li>item <b>bold</b></li></ul></body>")
    units = [(unit.kind, unit.text, unit.link_chars) for unit in page.units(ALL)]
    assert units == [("h2", "Rivers", 0), ("p", "Snow & rain feed the river.\nNew line.", 14),
                     ("text", "one line", 0), ("text", "another", 0), ("pre", "code\n   indented", 0),
                     ("text", "cell next", 0), ("text", "item bold", 0)]
    assert page.units(ALL)[1].words == 7  # spaces + 1, as before


@pytest.mark.parametrize("hidden", [
    "<script>var x = 'code';</script>", "<style>p { color: red }</style>", "<noscript>Enable JavaScript</noscript>",
    "<figure><img alt='x'><figcaption>Photo: Agency</figcaption></figure>", "<button>Click</button>",
    "<select><option>Option</option></select>", "<div hidden>Hidden</div>", "<div aria-hidden='true'>Hidden</div>",
    "<div style='color: red; DISPLAY : none'>Hidden</div>", "<span style='visibility:hidden'>Hidden</span>",
    "<div class='sr-only visually-hidden'>Hidden</div>", "<template><p>Template</p></template>",
])
def test_invisible_elements_give_no_text_in_any_view(hidden):
    assert texts(f"<body><p>Visible text.</p>{hidden}</body>") == ["Visible text."]


def test_navigation_asides_global_footers_and_ads_are_outside_the_main_content():
    html = ("<body><nav><a href=/>Home</a></nav><div class='main'><div class='x'><div class='y'><article>"
            "<p>The article's text.</p><footer>Posted by Ann</footer><div class='z'></div></article></div></div></div>"
            "<aside>Sidebar</aside><div class='google-ads'>Buy now</div><footer>Copyright 2024</footer></body>")
    assert texts(html, MAIN_CONTENT_UNFILTERED) == ["The article's text.", "Posted by Ann"]
    assert texts(html, ALL) == ["Home", "The article's text.", "Posted by Ann", "Sidebar", "Buy now", "Copyright 2024"]
    assert "Buy now" not in texts(html, WHOLE_PAGE)  # the element pass's "ads" holds there too


def test_one_named_main_content_zone_is_all_the_main_content_and_two_are_none():
    zone = "<div class='post-content'><p>The post.</p></div>"
    assert texts(f"<body><div>Teaser</div>{zone}</body>", MAIN_CONTENT_UNFILTERED) == ["The post."]
    assert texts(f"<body><div>Teaser</div>{zone}{zone}</body>", MAIN_CONTENT_UNFILTERED) == [
        "Teaser", "The post.", "The post."]


def test_a_deep_block_of_links_is_not_main_content_and_a_block_of_text_is():
    links = "".join(f"<a href='/{i}'>Another story number {i}</a> " for i in range(8))
    deep = "<div><div><div><div><div><div>{}</div></div></div></div></div></div>"
    html = "<body>" + deep.format(links) + deep.format("<p>" + "Plain prose without links. " * 8 + "</p>") + "</body>"
    assert texts(html, MAIN_CONTENT_UNFILTERED) == ["Plain prose without links. " * 7 + "Plain prose without links."]


def test_the_element_pass_marks_furniture_unless_it_holds_the_content_or_says_content():
    prose = "<p>A paragraph of the article.</p>"
    html = ("<body><div class='story'>" + prose + "<div class='author-box'>About Ann</div>"
            "<div class='share-tools'><h1>Title in a share wrapper</h1></div>"
            "<div class='author-bio'>" + prose * 3 + "</div>"
            "<div class='entry-content has-sidebar'>Vetoed by its content name</div>"
            "<form><label>Email</label>Subscribe to the newsletter</form></div></body>")
    kept = texts(html, MAIN_CONTENT)
    assert "About Ann" not in kept and "Subscribe to the newsletter" not in kept
    assert "Title in a share wrapper" in kept and kept.count("A paragraph of the article.") == 4
    assert "Vetoed by its content name" in kept
    assert "About Ann" in texts(html, MAIN_CONTENT_UNFILTERED)


def test_the_name_prefilter_passes_every_name_a_rule_can_classify_on_both_development_sets():
    """``NameTable`` hands Python only the names holding one of ``NAME_KEYWORDS``: no name it keeps
    back may mean anything to ``name_bits`` (checked on every class token and id of the pages)."""
    pages = (shared("html/trafilatura-eval") and load_trafilatura_eval()) + (
        shared("html/readability-tests") and load_readability())
    table = _page_walk.NameTable(main_content.name_bits, main_content.NAME_KEYWORDS)
    names = {False: set(), True: set()}
    for page in pages:
        for attribute, is_id in (("class", False), ("id", True)):
            for value in re.findall(attribute + r"""\s*=\s*["']([^"']*)""", page["html"]):
                names[is_id].update(value.split() if not is_id else [value])
    held_back = [(name, is_id) for is_id in names for name in names[is_id] if not table.holds_keyword(name)]
    assert len(held_back) > 10000, len(held_back)
    assert [(name, is_id) for name, is_id in held_back if main_content._token_bits(name.strip(), is_id)] == []


def test_keywords_match_in_any_case_and_short_ones_only_where_a_word_starts():
    table = _page_walk.NameTable(main_content.name_bits, ["ad", "footer"])
    assert table.holds_keyword("SiteFOOTER") and table.holds_keyword("ad-slot") and table.holds_keyword("top_ad")
    assert not table.holds_keyword("header") and not table.holds_keyword("shadow")
    with pytest.raises(ValueError):
        _page_walk.NameTable(main_content.name_bits, ["x"])


@pytest.mark.slow
def test_the_walk_reads_lexbors_text_as_selectolax_does_on_both_development_sets():
    """Every character of every view comes from the page's text as selectolax's own API reads it (a
    wrong struct layout would read other memory); spaces aside, which the walk collapses and adds."""
    pages = (shared("html/trafilatura-eval") and load_trafilatura_eval()) + (
        shared("html/readability-tests") and load_readability())
    with_text = 0
    for page in pages:
        tree = LexborHTMLParser(page["html"])
        characters = Counter("".join((tree.body.text(separator="") if tree.body else "").split()))
        walked = Counter("".join(" ".join(texts(page["html"])).split()))
        assert not walked - characters, (page["name"], list((walked - characters).items())[:5])
        with_text += sum(walked.values()) > 0
    assert with_text > 0.98 * len(pages) > 1000  # (a few pages are all script: their text comes from JavaScript)


def test_hostile_pages_cost_bounded_memory_and_give_clear_results():
    depth = _page_walk.MAX_NESTING_DEPTH  # the deepest allowed: the walk has no recursion
    nested = "<div>" * depth + "deep text" + "</div>" * depth
    assert texts(nested) == ["deep text"]
    assert texts("") == [] and texts("<") == ["<"] and texts("\udc80 lone surrogate") == ["? lone surrogate"]
    long_line = "word " * 10_000_000  # a 50 MB text node
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert parse_page(f"<p>{long_line}</p>").units(ALL)[0].chars == len(long_line) - 1
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 600, grown_mb  # the page, its UTF-8 copy, lexbor's tree, the text buffer, the unit


@pytest.mark.parametrize("html, depth", [
    ("<div><div></div></div>", 2), ("<div><p>a<p>b<li>c</div>", 1),  # p and li are closed by their siblings
    ("<div></span></span><div>", 2), ("</div><div>", 1),  # a stray end tag closes nothing
    ("<DIV><Div></dIV><div>", 2), ("<div><!-- <div><div> --></div>", 1),
    ("<script>if (a<b) '<div><div>'</SCRIPT><div>", 1), ("<br><img><hr><input>", 0), ("<div", 1), ("< div>", 0),
    ("<a href='x'><b><i>x</i></b></a>", 3), ("", 0),
])
def test_nesting_depth_counts_the_elements_a_parser_keeps_open(html, depth):
    assert _page_walk.nesting_depth(html) == depth


def test_real_pages_nest_far_below_the_limit_and_a_deep_page_is_turned_down_unparsed():
    pages = (shared("html/trafilatura-eval") and load_trafilatura_eval()) + (
        shared("html/readability-tests") and load_readability())
    assert max(_page_walk.nesting_depth(page["html"]) for page in pages) < _page_walk.MAX_NESTING_DEPTH // 10
    with pytest.raises(_page_walk.TooDeep) as raised:
        parse_page("<div>" * 1_000_000)
    assert raised.value.depth == _page_walk.MAX_NESTING_DEPTH + 1
