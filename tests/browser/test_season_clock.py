"""In Chromium: a season's countdown ticks on the page without reloading it, and moves on when it reaches
zero (starts in → ends in → ended), from the seconds the server counted; each time shows the reader's
own local time as its tooltip."""
from datetime import timedelta

import pytest
from django.utils import timezone

from submissions.models import Season

pytestmark = pytest.mark.django_db(transaction=True)


def shown(page):
    return page.locator("#season-clock-S1 .clock-phase:visible").inner_text()


def test_the_countdown_ticks_and_moves_from_start_to_end_to_ended(live_server, page):
    now = timezone.now()
    Season.objects.create(code="S1", name="Season one", starts_at=now + timedelta(seconds=8),
                          ends_at=now + timedelta(seconds=12))
    page.goto(f"{live_server.url}/seasons/S1/")
    assert shown(page).startswith("Starts in 00:00:0")
    clock = page.locator("#season-clock-S1")
    page.wait_for_function("document.querySelector('#season-clock-S1').dataset.phase === 'running'", timeout=20_000)
    assert shown(page).startswith("Ends in 00:00:0")
    page.wait_for_function("document.querySelector('#season-clock-S1').dataset.phase === 'ended'", timeout=20_000)
    assert shown(page) == "Ended" and clock.locator(".clock-phase:visible").count() == 1
    assert clock.locator("time").first.get_attribute("title")  # the reader's local time
    assert page.console_errors == []
