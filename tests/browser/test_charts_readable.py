"""Charts a reader can read, in Chromium: a time axis with one point ticks in hours or days, never in
fractions of a millisecond; count axes tick in whole numbers; an issue title or GPU name is shown as
written in labels and hover text, never drawn as HTML."""
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from submissions.models import GpuType, Review, Season
from submissions.services import accounts
from tests.browser.test_public_pages import assert_charts_drawn, shoot
from tests.judged_data import accepted_sample

pytestmark = pytest.mark.django_db(transaction=True)

TITLE = "<b>Bold</b> & <i>x</i>"
GPU_NAME = "H100 <sup>SXM</sup>"
FRACTION_OF_A_SECOND = re.compile(r":\d\d\.\d")


@pytest.fixture
def one_accepted_sample(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="GPUCodeForces S1")
    h100 = GpuType.objects.create(slug="h100", name=GPU_NAME)
    c500 = GpuType.objects.create(slug="c500", name="MetaX C500")
    season.gpu_types.add(h100, c500)
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    return accepted_sample(season, alice, organizer, {"h100": (3.1, 0.021), "c500": (2.4, 0.034)}, title=TITLE)


def tick_labels(page, figure, axis):
    return page.locator(f"[data-figure='{figure}'] .{axis}tick text").all_text_contents()


def markup_drawn(page, figure):
    """Elements plotly makes from markup in a text: bold, italic, superscript, links."""
    styled = r"/font-weight:\s*bold|font-style:\s*italic|baseline-shift/"
    return page.evaluate(
        f"""[...document.querySelectorAll("[data-figure='{figure}'] text tspan, [data-figure='{figure}'] text a")]
            .filter(e => e.tagName === 'a' || {styled}.test(e.getAttribute('style') || '')).length""")


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_a_time_axis_with_one_point_ticks_in_hours_not_fractions_of_a_second(
        live_server, page, one_accepted_sample, language):
    page.goto(f"{live_server.url}/seasons/S1/")
    assert_charts_drawn(page, 2)
    times = tick_labels(page, "figure-season-accepted", "x")
    assert times and not [t for t in times if FRACTION_OF_A_SECOND.search(t)], times
    shoot(page, f"season-one-sample-{language[:2]}")


def test_count_axes_tick_in_whole_numbers(live_server, page, one_accepted_sample):
    page.goto(f"{live_server.url}/seasons/S1/")
    assert_charts_drawn(page, 2)
    for figure in ("figure-season-accepted", "figure-season-speedups"):
        counts = tick_labels(page, figure, "y")
        assert counts and all(re.fullmatch(r"\d+", c) for c in counts), (figure, counts)


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_an_issue_title_and_a_gpu_name_stay_text_in_labels_and_hover(live_server, page, one_accepted_sample, language):
    page.goto(f"{live_server.url}/seasons/S1/hardware/")
    assert_charts_drawn(page, 1)
    figure = "figure-hardware-matrix"
    assert tick_labels(page, figure, "y") == [f"{TITLE} #{one_accepted_sample.pk}"]  # as written, not bold
    assert GPU_NAME in tick_labels(page, figure, "x")
    assert markup_drawn(page, figure) == 0
    box = page.locator(f"[data-figure='{figure}'] .nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.75, box["y"] + box["height"] / 2)  # the H100 cell
    hover = page.locator(f"[data-figure='{figure}'] .hoverlayer")
    hover.locator("text").first.wait_for()
    assert TITLE in hover.text_content() and GPU_NAME in hover.text_content()
    drawn = f"[data-figure='{figure}'] .hoverlayer tspan[style*='bold'], [data-figure='{figure}'] .hoverlayer a"
    assert page.locator(drawn).count() == 0
    shoot(page, f"hardware-markup-{language[:2]}")
    assert page.console_errors == []


def test_a_long_title_is_shortened_on_the_heatmaps_axis_and_whole_in_its_hover(live_server, page,
                                                                                one_accepted_sample):
    long_title = "<i>Tiled</i> softmax over the last axis, fused with the scale & mask, for every head of a block"
    sample = accepted_sample(one_accepted_sample.issue.season, one_accepted_sample.contestant,
                             one_accepted_sample.reviews.get().reviewer.contestant, {"h100": (2.0, 0.05)},
                             title=long_title)
    page.goto(f"{live_server.url}/seasons/S1/hardware/")
    assert_charts_drawn(page, 1)
    figure = "figure-hardware-matrix"
    assert f"{long_title[:39]}… #{sample.pk}" in tick_labels(page, figure, "y")
    assert markup_drawn(page, figure) == 0
    box = page.locator(f"[data-figure='{figure}'] .nsewdrag").first.bounding_box()
    rows = len(tick_labels(page, figure, "y"))
    row = tick_labels(page, figure, "y").index(f"{long_title[:39]}… #{sample.pk}")
    # plotly draws the first row at the bottom; the H100 column is the right one of two
    page.mouse.move(box["x"] + box["width"] * 0.75, box["y"] + box["height"] * (1 - (row + 0.5) / rows))
    hover = page.locator(f"[data-figure='{figure}'] .hoverlayer")
    hover.locator("text").first.wait_for()
    lines = hover.locator("tspan.line").all_text_contents()
    assert " ".join(lines).startswith(f"{long_title} #{sample.pk}"), lines  # the whole title, as written
    assert page.locator(f"[data-figure='{figure}'] .hoverlayer tspan[style*='italic']").count() == 0
    shoot(page, "hardware-long-title")
    assert page.console_errors == []


def test_submission_charts_show_gpu_names_as_written(live_server, page, one_accepted_sample):
    page.goto(f"{live_server.url}/submissions/{one_accepted_sample.pk}/")
    assert_charts_drawn(page, 3)
    for name in ("latency", "roofline", "telemetry"):
        figure = f"figure-submission-{one_accepted_sample.pk}-{name}"
        assert markup_drawn(page, figure) == 0, name
    legend = page.locator(f"[data-figure='figure-submission-{one_accepted_sample.pk}-roofline'] .legendtext")
    assert GPU_NAME in legend.all_text_contents()


MARKER_X = """figure => [...document.querySelectorAll(`[data-figure='${figure}'] .scatterlayer path.point`)]
  .map(p => Number(/translate\\(([\\d.]+),/.exec(p.getAttribute('transform'))[1]))"""


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_acceptances_minutes_apart_stand_apart_on_the_time_axis(live_server, page, one_accepted_sample, language):
    """The walk: three acceptances 16 minutes apart drew one vertical line, on an axis a day wide."""
    first = one_accepted_sample
    organizer, alice = first.reviews.get().reviewer.contestant, first.contestant
    samples = [first] + [accepted_sample(first.issue.season, alice, organizer, {"h100": (2.0 + i, 0.05)},
                                         title=f"Op {i}") for i in (1, 2)]
    start = timezone.now() - timedelta(hours=2)
    for minutes, sample in zip((0, 16, 32), samples):
        Review.objects.filter(submission=sample).update(created_at=start + timedelta(minutes=minutes))
    page.goto(f"{live_server.url}/seasons/S1/")
    assert_charts_drawn(page, 2)
    figure = "figure-season-accepted"
    xs = sorted(page.evaluate(MARKER_X, figure))
    width = page.locator(f"[data-figure='{figure}'] .nsewdrag").first.bounding_box()["width"]
    assert len(xs) == 3
    gaps = [(b - a) / width for a, b in zip(xs, xs[1:])]
    assert min(gaps) > 0.25, (xs, width)  # each 16 minutes a quarter of the plot at least
    assert not [t for t in tick_labels(page, figure, "x") if FRACTION_OF_A_SECOND.search(t)]
    shoot(page, f"season-three-acceptances-{language[:2]}")
    assert page.console_errors == []
