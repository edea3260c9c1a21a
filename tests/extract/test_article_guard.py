"""The guard against the wrong block (udfs/extract/html.py ``chosen_units``: the article run where the main
content kept is a doubtful block elsewhere, or near-empty) and the trailing blocks dropped after the
article (``without_trailing_blocks``), on small pages built from the causes found on real ones."""
from __future__ import annotations

import pytest

from udfs.extract.html import (FROM_ARTICLE_RUN, FROM_MAIN_CONTENT, extract_main_text, kept_units, parse_page,
                               prose_run, without_trailing_blocks)
from udfs.extract.boilerplate import Unit
from udfs.extract.text import normalize_text

SENTENCE = "The council approved the new budget for the harbour after a long debate on {} in the town hall."
TOPICS = ("fishing quotas", "ferry fares", "dredging", "moorings", "the lighthouse", "the slipway")
ARTICLE = "<h1>Harbour budget approved</h1>" + "".join(
    f"<p>{SENTENCE.format(topic)} {SENTENCE.format('the budget')}</p>" for topic in TOPICS)


def _items(pairs, link_then_text):
    return "".join(f'<div class="item"><a href="/s/{i}">{title}</a>{link_then_text.format(text)}</div>'
                   for i, (title, text) in enumerate(pairs))


SPONSORED = '<div class="widget"><h3>Sponsored links</h3><div class="items">' + _items([
    ("Cheap flights to Lisbon", "Compare fares from every airline and book today with no hidden fees at all."),
    ("Retire early with index funds", "Our free guide shows how ordinary savers grow their money over the years."),
    ("Doctors stunned by this trick", "One simple habit that people over fifty swear by, now revealed online."),
    ("New hearing aids for 2024", "Invisible, rechargeable and covered by most insurance plans in your state."),
], " {}") + "</div></div>"
NEWER_STORIES = '<div class="list"><h3>Newer stories</h3><div class="items">' + _items([
    ("Ferry timetable changes from Monday", "Two crossings a day are cut over the winter months, the operator says, "
                                            "because too few passengers travel."),
    ("Lifeboat crew called out twice", "Volunteers helped a stranded kayaker and a yacht with engine trouble off the "
                                       "point on Sunday."),
    ("School roof to be replaced", "Work on the primary school starts in the summer holidays and lasts six weeks."),
    ("Market square parking fees rise", "Drivers will pay an extra twenty pence an hour from the first of April."),
    ("Library opening hours extended", "The branch library will open on Saturday afternoons from next month on."),
], "<p>{}</p>") + "</div></div>"
CONTACT_FORM = ('<div class="widget"><h3>Contact the newsroom</h3><p>Seen something happen in town? Send us your news, '
                'photos and videos, and tell us what you think of our coverage: we read every message and reply to as '
                'many as we can, usually within two working days of receiving it.</p><form><input name="email">'
                '<textarea></textarea><button>Send</button></form></div>')

# Each page names its article so that the main-content rules leave it out and keep the furniture (the
# block pass keeps over 200 characters of it, so the near-empty fallback does not step in):
PAGES = {
    # a "share" token on the article's wrapper below the body's first levels (a theme's class list)
    "sponsored links beside the article": (
        '<html><body><div id="page"><div class="main"><div class="post-inner"><div class="entry share">'
        f'{ARTICLE}</div></div></div></div><div class="col"><div class="col-inner"><div class="box">{SPONSORED}'
        '</div></div></div></body></html>', ("Sponsored links", "Lisbon", "index funds")),
    # the page's one named main-content zone is the column of newer stories, the article is outside it
    "a long newer-stories list after the article": (
        f'<html><body><div class="story">{ARTICLE}</div><div class="row"><div class="col">'
        f'<div class="main-content">{NEWER_STORIES}</div></div></div></body></html>',
        ("Newer stories", "Ferry timetable", "branch library")),
    # the article's wrapper named like comments ("comments-open"), a contact form widget after it
    "a contact form widget after the article": (
        f'<html><body><div class="hentry comments-open">{ARTICLE}</div>{CONTACT_FORM}</body></html>',
        ("Contact the newsroom", "Seen something happen")),
}


@pytest.mark.parametrize("name", PAGES)
def test_the_article_replaces_a_doubtful_block_of_furniture(name):
    html, furniture = PAGES[name]
    plain = normalize_text(extract_main_text(html, boilerplate_filter=False))
    assert "slipway" not in plain and any(words in plain for words in furniture)  # the rules' wrong block
    units, source = kept_units(html)
    text = normalize_text(extract_main_text(html))
    assert source == FROM_ARTICLE_RUN
    assert all(SENTENCE.format(topic) in text for topic in TOPICS)
    assert not [words for words in furniture if words in text]


def test_the_comments_after_a_short_article_are_not_taken_for_it():
    """Prose after the first unit kept continues the page (comments, the next stories): the main content
    kept stands, however much of it there is."""
    comments = "".join(f"<div><p>{SENTENCE.format(topic)} I was there and I agree with every word of it.</p></div>"
                       for topic in TOPICS * 2)
    html = (f'<html><body><div class="post"><h1>Harbour budget approved</h1><p>{SENTENCE.format("the budget")} '
            f'{SENTENCE.format("the ferry")}</p></div><div class="responses">{comments}</div></body></html>')
    units, source = kept_units(html)
    assert source == FROM_MAIN_CONTENT


def test_a_page_that_is_all_links_and_short_lines_keeps_its_main_content():
    """No run of prose anywhere: nothing to take instead."""
    html = ('<html><body><div class="post"><p>Closed for the holidays until 5 January, see you in the new year.</p>'
            f'</div>{SPONSORED}</body></html>')
    assert kept_units(html)[1] == FROM_MAIN_CONTENT


def _unit(chars, link_chars=0, index=0):
    return Unit("p", "x" * chars, link_chars, index)


def test_prose_run_spans_short_units_between_paragraphs_and_stops_at_a_longer_gap():
    units = ([_unit(300), _unit(20), _unit(20), _unit(20), _unit(300)]  # 3 short units between: one run
             + [_unit(20)] * 4 + [_unit(150), _unit(150, 100)])        # 4 between: a new, smaller run
    assert prose_run(units) == (0, 4, 600)
    assert prose_run([_unit(20), _unit(300, 200)]) == (0, -1, 0)  # link text is not prose


def _trailing_page(between: str, after: str) -> str:
    return f'<html><body><div class="story">{ARTICLE}</div>{between}<div class="story-more">{after}</div></body></html>'


def test_a_teaser_list_apart_from_the_article_is_dropped_and_a_continuation_is_kept():
    ad = "<aside>" + " ".join(f"<p>Advertisement for the boat show number {i}, tickets on sale now.</p>"
                              for i in range(6)) + "</aside>"
    teasers = "<p>Ferry timetable changes from Monday: two crossings a day are cut over the winter months.</p>"
    continuation = "".join(f"<p>{SENTENCE.format(topic)} {SENTENCE.format('the vote')}</p>" for topic in TOPICS)
    text = normalize_text(extract_main_text(_trailing_page(ad, teasers)))
    assert "slipway" in text and "Ferry timetable" not in text
    text = normalize_text(extract_main_text(_trailing_page(ad, continuation)))
    assert "slipway" in text and SENTENCE.format("the vote") in text
    # next to the article, nothing between: the same teaser stays (the block pass judges it)
    page = parse_page(_trailing_page("", teasers))
    kept = page.units(1 | 2)
    assert without_trailing_blocks(kept, page) == kept


def test_text_ends_count_each_views_characters_unit_by_unit():
    page = parse_page("<body><p>ab c</p><nav><p>nav text</p></nav><p>déf</p></body>")
    assert page.text_ends(0) == [3, 10, 13]  # spaces left out, a character counted once
    assert page.text_ends(1) == [3, 3, 6]  # outside the main content: the nav
    assert [unit.index for unit in page.units(1)] == [0, 2]
