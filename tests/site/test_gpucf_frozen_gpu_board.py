"""`gpucf leaderboard SEASON --gpu SLUG` against the real site during a freeze: the GPU board's answer is a
list, and the X-Scoreboard-Frozen-At header says since when it is frozen; the client says so ("frozen
at ...", as for the season's board) and its --json carries it (`frozen_at`, null once thawed)."""
import json
from datetime import datetime

import pytest

from gpucf.cli import main
from leaderboard.models import ScoreboardFreeze
from leaderboard.services import freeze_scoreboard, unfreeze_scoreboard
from submissions.models import GpuType, Season
from submissions.services import accounts
from tests.judged_data import accepted_sample

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def frozen(queue_prefix):
    season = Season.objects.create(second_judging="off", code="S1", name="Season one")
    season.gpu_types.add(GpuType.objects.create(slug="h100", name="NVIDIA H100"))
    organizer = accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    accepted_sample(season, alice, organizer, {"h100": (3.1, 0.021)}, title="GELU")
    freeze_scoreboard(season, organizer.user, reason="the last hour")
    return season, organizer


def gpucf(capsys, *args):
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_the_gpu_board_says_since_when_it_is_frozen_in_text_and_json(live_server, frozen, capsys, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    season, organizer = frozen
    frozen_at = ScoreboardFreeze.objects.get(season=season).frozen_at
    site = ("--site", live_server.url)
    text = gpucf(capsys, "leaderboard", "S1", "--gpu", "h100", *site)
    heading = text.splitlines()[0]
    assert heading == f"Season S1 leaderboard on h100, frozen at {frozen_at.astimezone():%Y-%m-%d %H:%M}"
    assert "Alice" in text
    board = json.loads(gpucf(capsys, "leaderboard", "S1", "--gpu", "h100", "--json", *site))
    assert datetime.fromisoformat(board["frozen_at"]) == frozen_at
    assert (board["season"], board["gpu_type"]) == ("S1", "h100")
    assert [row["contestant"] for row in board["rows"]] == ["Alice"]

    unfreeze_scoreboard(season, organizer.user, reason="results day")
    assert gpucf(capsys, "leaderboard", "S1", "--gpu", "h100", *site).splitlines()[0] == "Season S1 leaderboard on h100"
    assert json.loads(gpucf(capsys, "leaderboard", "S1", "--gpu", "h100", "--json", *site))["frozen_at"] is None
