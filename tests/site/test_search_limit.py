"""The site's search boxes take 100 characters, and a longer `?q=` (the walk pasted 5,000) is cut to
them and searched, with a notice in the reader's language, never an error. Each page is checked to
search the cut text: the first 100 characters match a long affiliation or title, the rest nothing."""
import html
import re
from urllib.parse import parse_qs

import pytest

from tests.judged_data import accepted_sample
from tests.page_text import shows

LONG_AFFILIATION = ("Zhejiang University, College of Computer Science and Technology, "
                    "Laboratory of High Performance Computing and Its Applications")
LONG_TITLE = "Fused GELU with bias and dropout on bf16 activations of every transformer block, tiled for shared memory"
JUNK = "no contestant, affiliation or title holds this " * 100  # ~4,800 characters
NOTICE = {"en": "Searches are at most 100 characters long: yours was cut to its first 100.",
          "zh-hans": "搜索内容最多 100 个字符：你的搜索已截取为前 100 个字符。"}


def search_box(page):
    return re.search(r'<input type="search" name="q"[^>]*>', page).group(0)


def box_value(box):
    return html.unescape(re.search(r'value="([^"]*)"', box).group(1))


@pytest.fixture
def board(season, alice, bob, organizer):
    bob.affiliation = LONG_AFFILIATION + " (the long one)"
    bob.save()
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)}, title="ReLU of Alice")
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 1.0)}, title=LONG_TITLE)
    return season


@pytest.mark.parametrize("path", ["/seasons/S1/leaderboard/", "/seasons/S1/gpus/cpu/", "/issues/"])
def test_every_search_box_takes_at_most_100_characters(client, board, path):
    assert 'maxlength="100"' in search_box(client.get(path).content.decode())


@pytest.mark.parametrize("path, query, found, not_found", [
    ("/seasons/S1/leaderboard/", LONG_AFFILIATION[:100], "Bob", "Alice"),
    ("/seasons/S1/gpus/cpu/", LONG_AFFILIATION[:100], "Bob", "Alice"),
    ("/issues/", LONG_TITLE[:100], "Fused GELU", "ReLU of Alice"),
])
@pytest.mark.parametrize("language, accept", [("en", "en"), ("zh-hans", "zh-CN,zh;q=0.9")])
def test_a_longer_search_is_cut_searched_and_the_page_says_so(client, board, path, query, found, not_found,
                                                              language, accept):
    assert len(query) == 100 and query == query.strip()
    response = client.get(path, {"q": query + JUNK}, headers={"Accept-Language": accept})
    assert response.status_code == 200
    page = response.content.decode()
    assert NOTICE[language] in html.unescape(page)
    assert box_value(search_box(page)) == query  # what was searched, shown in the box
    assert found in page and not shows(page, not_found)
    within = client.get(path, {"q": query}, headers={"Accept-Language": accept}).content.decode()
    assert found in within and NOTICE[language] not in html.unescape(within)  # the same search, uncut


def test_the_polled_table_cuts_too_and_leaves_no_notice_for_the_next_page(client, board):
    table = client.get("/seasons/S1/leaderboard/", {"q": LONG_AFFILIATION[:100] + JUNK, "fragment": "1"})
    assert table.status_code == 200 and "Bob" in table.content.decode()
    polled = html.unescape(re.search(r'data-src="\?([^"]*)"', table.content.decode()).group(1))
    assert parse_qs(polled)["q"] == [LONG_AFFILIATION[:100]]  # the address it polls next, cut
    next_page = client.get("/seasons/S1/leaderboard/").content.decode()
    assert NOTICE["en"] not in html.unescape(next_page)
