"""The server-rendered pages show what the database holds, and the demo command fills it."""
from django.core.management import call_command

from submissions.models import Review, Season, Standing, Submission


def test_demo_data_fills_the_leaderboard_and_every_page_renders(client, transactional_db, settings):
    call_command("seed_demo", "--gpu-type", "h100:NVIDIA H100")
    call_command("seed_demo")  # idempotent
    season = Season.objects.get(code="S1")
    assert sorted(season.gpu_types.values_list("slug", flat=True)) == ["cpu", "h100"]
    assert Submission.objects.count() == 2 and Review.objects.filter(decision="accepted").count() == 1
    ranked = [(s.contestant.display_name, s.rank) for s in Standing.objects.filter(season=season).order_by("board_key")]
    assert ranked == [("Alice", 1), ("Bob", 2)]

    home = client.get("/").content.decode()
    home = home[home.index("<main"):]  # not the header: a random CSRF token could spell "Bob" there
    assert home.index("Alice") < home.index("Bob")
    board = client.get("/seasons/S1/leaderboard/").content.decode()
    assert "Accepted count, then base score, then bonus" in board and "Alice" in board
    issue = season.issues.first()
    assert issue.code in client.get("/seasons/S1/").content.decode()
    assert client.get(f"/issues/{issue.code}/").status_code == 200
    submission = Submission.objects.filter(contestant__user__username="alice").get()
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert 'data-live="true"' in page and "Queued" in page
    assert "get_init_inputs" in page  # alice's submission is accepted: its code is public
    unreviewed = Submission.objects.filter(contestant__user__username="bob").get()
    assert "The code stays private" in client.get(f"/submissions/{unreviewed.pk}/").content.decode()
    client.login(username="bob", password="demo-password")
    own = client.get(f"/submissions/{unreviewed.pk}/").content.decode()
    assert "torchcode.py" in own and "get_init_inputs" in own
    assert client.get(f"/submissions/{submission.pk}/runs/").status_code == 200


def test_register_login_and_create_a_token(client, db):
    response = client.post("/accounts/register/", {"username": "carol", "password1": "A-long-pass-42",
                                                    "password2": "A-long-pass-42", "display_name": "Carol",
                                                    "accept_agreement": "on"})
    assert response.status_code == 302
    page = client.post("/account/tokens/", {"name": "cli"}, follow=True).content.decode()
    assert "shown only once" in page
    client.post("/accounts/logout/")
    assert client.login(username="carol", password="A-long-pass-42")


def test_missing_pages_are_404(client, db):
    assert client.get("/submissions/424242/").status_code == 404
    assert client.get("/issues/NOPEXX/").status_code == 404
    assert client.get("/seasons/S9/leaderboard/").status_code == 404
