"""Every time the site writes is the short date and time ("11/28/2026 10:23 p.m."): the public board's
freeze notice, a contestant's page during a freeze and the account page's agreement line wrote the long
one ("Nov. 28, 2026, 10:23 p.m.")."""
import re

from django.core.management import call_command
from django.utils import timezone

from submissions.models import Contestant
from tests.judged_data import accepted_sample

EN = {"Accept-Language": "en"}
SHORT = re.compile(r'<time datetime="[^"]+">\d{2}/\d{2}/\d{4} \d{1,2}:\d{2} [ap]\.m\.</time>')
LONG = re.compile(r"<time[^>]*>\w{3,5}\.? \d{1,2}, \d{4}")


def test_the_freeze_notices_write_the_short_date_and_time(client, season, alice, organizer):
    accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)})
    call_command("freeze_scoreboard", "S1", "--reason", "last hour")
    for path in ("/seasons/S1/leaderboard/", f"/contestants/{alice.pk}/"):
        page = client.get(path, headers=EN).content.decode()
        notice = page.split("frozen since")[1].split("</p>")[0]
        assert SHORT.search(notice) and not LONG.search(notice), (path, notice[:200])


def test_the_account_pages_agreement_line_writes_the_short_date_and_time(client, alice):
    Contestant.objects.filter(pk=alice.pk).update(agreement_accepted_at=timezone.now())
    client.force_login(alice.user)
    page = client.get("/account/", headers=EN).content.decode()
    line = page.split('id="agreement-status"')[1].split("</p>")[0]
    assert SHORT.search(line) and not LONG.search(line), line[:300]
