"""The dataset's organizer page and API: only organizers export or change weights (others: a redirect to
sign in, 403, 401), bad input gets a clear error, and what they do is kept."""
import json

import pytest

from submissions.models import AuditEntry, DatasetExport
from submissions.services import accounts, datasets
from tests.judged_data import accepted_sample

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def export_dir(settings, tmp_path):
    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    return settings.DATASET_EXPORT_DIR


@pytest.fixture
def sample(season, alice, organizer):
    return accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)}, title="ReLU")


def bearer(contestant):
    _, raw = accounts.create_api_token(contestant)
    return {"Authorization": f"Bearer {raw}"}


# ---- pages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("method, path", [
    ("get", "/organizer/seasons/S1/dataset/"),
    ("post", "/organizer/seasons/S1/dataset/export/"),
    ("get", "/organizer/seasons/S1/dataset/v1.tar.gz"),
])
def test_the_dataset_pages_send_visitors_to_sign_in_and_refuse_contestants(client, season, alice, method, path):
    anonymous = getattr(client, method)(path)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    client.force_login(alice.user)
    assert getattr(client, method)(path).status_code == 403
    assert not DatasetExport.objects.exists()


def test_a_contestant_cannot_set_a_samples_weight(client, sample, alice):
    client.force_login(alice.user)
    assert client.post(f"/organizer/issues/{sample.issue.code}/weight/", {"weight": "9", "reason": "mine"}).status_code == 403
    assert not AuditEntry.objects.filter(action="sample.weight_changed").exists()


def test_an_organizer_exports_from_the_page_and_downloads_the_archive(client, sample, organizer):
    client.force_login(organizer.user)
    page = client.get("/organizer/seasons/S1/dataset/").content.decode()
    assert f'id="sample-{sample.issue.code}"' in page and "No export yet." in page
    response = client.post("/organizer/seasons/S1/dataset/export/", {"reason": "release"}, follow=True)
    assert "Dataset export 1 of S1: 1 samples." in response.content.decode()
    export = DatasetExport.objects.get()
    assert 'id="export-1"' in response.content.decode()
    download = client.get("/organizer/seasons/S1/dataset/v1.tar.gz")
    assert download.status_code == 200
    assert download["Content-Disposition"] == 'attachment; filename="gpucodeforces-S1-v1.tar.gz"'
    assert b"".join(download.streaming_content) == datasets.archive_path(export).read_bytes()
    client.post("/organizer/seasons/S1/dataset/export/", {"reason": "again"})
    assert "same bytes as v1" in client.get("/organizer/seasons/S1/dataset/").content.decode()


def test_the_dataset_page_shows_the_weight_rule_and_leads_to_its_form_on_the_settings_page(client, season,
                                                                                            organizer):
    client.force_login(organizer.user)
    page = client.get("/organizer/seasons/S1/dataset/").content.decode()
    rule = page.split('id="weight-rule"')[1].split("</p>")[0]
    assert "<code>uniform</code>" in rule and 'href="/organizer/seasons/S1/settings/#weights"' in rule
    assert "<textarea" not in page  # the rule's settings are a form of fields there, not JSON here


def test_a_weight_set_by_hand_on_the_page_shows_on_the_sample_row(client, sample, organizer):
    client.force_login(organizer.user)
    code = sample.issue.code
    bad = client.post(f"/organizer/issues/{code}/weight/", {"weight": "heavy", "reason": "x"}, follow=True)
    assert "heavy is not a number" in bad.content.decode()
    page = client.post(f"/organizer/issues/{code}/weight/", {"weight": "2.5", "reason": "rare"}, follow=True)
    row = page.content.decode().split(f'id="sample-{code}"')[1].split("</tr>")[0]
    assert "2.5" in row and "set by hand" in row


# ---- API -----------------------------------------------------------------------------------


def test_only_an_organizers_token_exports_through_the_api(client, sample, alice, organizer):
    assert client.post("/api/v1/seasons/S1/datasets", {}, content_type="application/json").status_code == 401
    refused = client.post("/api/v1/seasons/S1/datasets", {"reason": "mine"}, content_type="application/json",
                          headers=bearer(alice))
    assert (refused.status_code, refused.json()) == (403, {"detail": "organizers only"})
    assert client.get("/api/v1/seasons/S1/datasets", headers=bearer(alice)).status_code == 403
    assert not DatasetExport.objects.exists()
    headers = bearer(organizer)
    made = client.post("/api/v1/seasons/S1/datasets", data={"reason": "via API"}, content_type="application/json",
                       headers=headers)
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["number"], body["sample_count"], body["name"], body["same_content_as"]) == (1, 1, "gpucodeforces-S1-v1", None)
    assert AuditEntry.objects.get(action="dataset.exported").reason == "via API"
    again = client.post("/api/v1/seasons/S1/datasets", {"reason": "again"}, content_type="application/json",
                        headers=headers).json()
    assert (again["number"], again["same_content_as"], again["archive_sha256"]) == (2, 1, body["archive_sha256"])
    assert [e["number"] for e in client.get("/api/v1/seasons/S1/datasets", headers=headers).json()] == [2, 1]
    manifest = client.get("/api/v1/seasons/S1/datasets/1/manifest", headers=headers)
    assert manifest.status_code == 200 and json.loads(manifest.content.decode().splitlines()[0])["id"] == sample.issue.code
    archive = client.get("/api/v1/seasons/S1/datasets/2/archive", headers=headers)
    assert archive.status_code == 200 and b"".join(archive.streaming_content)[:2] == b"\x1f\x8b"
    assert client.get("/api/v1/seasons/S1/datasets/9", headers=headers).json() == {
        "detail": "season S1 has no dataset export 9"}
    assert client.get("/api/v1/seasons/S9/datasets", headers=headers).status_code == 404
    assert client.get("/api/v1/seasons/S1/datasets/1/archive", headers=bearer(alice)).status_code == 403


def test_weights_through_the_api_are_validated_and_audited(client, sample, alice, organizer):
    headers = bearer(organizer)
    body = {"rule": "framework", "settings": {"weights": {"cuda": 2}}, "reason": "x"}
    assert client.put("/api/v1/seasons/S1/weights", body, content_type="application/json",
                      headers=bearer(alice)).status_code == 403
    refused = client.put("/api/v1/seasons/S1/weights", body, content_type="application/json", headers=headers)
    assert refused.status_code == 400 and "'weights' has framework \"cuda\"" in refused.json()["detail"]
    body["settings"] = {"weights": {"pytorch": 2}}
    done = client.put("/api/v1/seasons/S1/weights", body, content_type="application/json", headers=headers)
    assert done.status_code == 200 and done.json()["settings"] == {"default": 1.0, "weights": {"pytorch": 2.0},
                                                                   "samples": {}}
    assert {r["name"] for r in done.json()["rules"]} == {"uniform", "operator", "level", "framework"}
    code = sample.issue.code
    no_reason = client.put(f"/api/v1/issues/{code}/weight", {"weight": 3}, content_type="application/json", headers=headers)
    assert no_reason.status_code == 422
    set_by_hand = client.put(f"/api/v1/issues/{code}/weight", {"weight": 3, "reason": "rare"},
                             content_type="application/json", headers=headers)
    assert set_by_hand.json() == {"issue": code, "weight": 3.0, "source": "sample"}
    back = client.put(f"/api/v1/issues/{code}/weight", {"weight": None, "reason": "back"},
                      content_type="application/json", headers=headers)
    assert back.json() == {"issue": code, "weight": 2.0, "source": "rule"}
    assert [e.action for e in AuditEntry.objects.filter(action__contains="weight").order_by("pk")] == [
        "season.weights_changed", "sample.weight_changed", "sample.weight_changed"]


def test_the_page_and_the_api_say_which_samples_are_left_out_and_include_them_by_code(
        client, season, sample, bob, organizer):
    from tests.site.test_dataset_export import wrong_but_accepted

    wrong = wrong_but_accepted(season, bob, organizer).issue.code
    client.force_login(organizer.user)
    page = client.get("/organizer/seasons/S1/dataset/").content.decode()
    row = page.split(f'id="sample-{wrong}"')[1].split("</tr>")[0]
    assert "cpu wrong_answer" in row and "left out of exports unless included: cpu: wrong_answer" in row
    assert "accepted by override: the idea is right; the scale is a typo" in row
    done = client.post("/organizer/seasons/S1/dataset/export/", {"reason": "release"}, follow=True).content.decode()
    assert "Dataset export 1 of S1: 1 samples." in done
    assert f"Left out, their runs did not pass: {wrong} (cpu: wrong_answer)." in done
    assert "(1 left out)" in done
    refused = client.post("/organizer/seasons/S1/dataset/export/", {"include": wrong}, follow=True).content.decode()
    assert "needs a reason" in refused and DatasetExport.objects.count() == 1

    headers = bearer(organizer)
    made = client.post("/api/v1/seasons/S1/datasets", data={"reason": "the scaling study", "include": [wrong]},
                       content_type="application/json", headers=headers)
    assert made.status_code == 201, made.content
    assert (made.json()["sample_count"], made.json()["included"], made.json()["left_out"]) == (2, [wrong], [])
    first = client.get("/api/v1/seasons/S1/datasets/1", headers=headers).json()
    assert first["left_out"] == [{"sample": wrong, "why": "cpu: wrong_answer"}] and first["included"] == []
    unknown = client.post("/api/v1/seasons/S1/datasets", data={"reason": "x", "include": ["NOSUCH"]},
                          content_type="application/json", headers=headers)
    assert unknown.status_code == 400 and "NOSUCH: not an accepted sample" in unknown.json()["detail"]


def test_a_dataset_is_published_for_everyone_after_the_season_ends_with_a_reason(client, season, sample, organizer):
    from datetime import timedelta

    from django.utils import timezone

    client.force_login(organizer.user)
    client.post("/organizer/seasons/S1/dataset/export/", {"reason": "release"})
    client.post("/organizer/seasons/S1/dataset/export/", {"reason": "another"})
    early = client.post("/organizer/seasons/S1/dataset/v1/publish/", {"reason": "open data"}, follow=True)
    assert "season S1 has not ended: its dataset is published after its end" in early.content.decode()
    assert "after the season&#x27;s end" in early.content.decode() or "after the season's end" in early.content.decode()
    season.ends_at = timezone.now() - timedelta(minutes=1)
    season.save()
    assert "publishing a dataset needs a reason" in client.post(
        "/organizer/seasons/S1/dataset/v1/publish/", {"reason": " "}, follow=True).content.decode()
    done = client.post("/organizer/seasons/S1/dataset/v1/publish/", {"reason": "open data, as agreed"}, follow=True)
    assert "gpucodeforces-S1-v1 is published" in done.content.decode()
    entry = AuditEntry.objects.get(action="dataset.published")
    assert entry.reason == "open data, as agreed" and entry.after["number"] == 1

    client.logout()  # everyone: the season's page links the dataset page, which lists v1 alone
    assert 'id="season-dataset-link"' in client.get("/seasons/S1/").content.decode()
    page = client.get("/seasons/S1/dataset/").content.decode()
    assert 'id="published-1"' in page and 'id="published-2"' not in page
    download = client.get("/seasons/S1/dataset/v1.tar.gz")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == datasets.archive_path(DatasetExport.objects.get(number=1)).read_bytes()
    assert client.get("/seasons/S1/dataset/v2.tar.gz").status_code == 404  # not published
    listed = client.get("/api/v1/seasons/S1/datasets/published").json()
    assert [(e["number"], e["sample_count"]) for e in listed] == [(1, 1)]
    assert client.get("/api/v1/seasons/S1/datasets/published/1/archive").status_code == 200
    assert client.get("/api/v1/seasons/S1/datasets/published/2/archive").json() == {
        "detail": "season S1 has no published dataset 2"}

    headers = bearer(organizer)
    missing = client.post("/api/v1/seasons/S1/datasets/2/publish", {}, content_type="application/json", headers=headers)
    assert missing.status_code == 422
    published = client.post("/api/v1/seasons/S1/datasets/2/publish", {"reason": "second release"},
                            content_type="application/json", headers=headers)
    assert published.status_code == 200 and published.json()["published_at"]
    assert [e["number"] for e in client.get("/api/v1/seasons/S1/datasets/published").json()] == [2, 1]


def test_no_published_dataset_says_when_there_will_be_one(client, season):
    page = client.get("/seasons/S1/dataset/").content.decode()
    assert "No dataset of this season is published yet" in page
    assert 'id="season-dataset-link"' not in client.get("/seasons/S1/").content.decode()


def test_an_export_holding_results_from_after_the_freeze_is_published_only_after_the_thaw(
        client, season, sample, bob, organizer):
    """The season ended with its scoreboard frozen (the final hour, the final system test): the public
    board still shows the snapshot. A dataset published then would show everyone the acceptances, authors
    and speedups since the freeze that the board hides; an export made before the freeze shows none."""
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.services import freeze_scoreboard, unfreeze_scoreboard

    client.force_login(organizer.user)
    client.post("/organizer/seasons/S1/dataset/export/", {"reason": "before the freeze"})
    freeze_scoreboard(season, organizer.user, reason="the last hour")
    accepted_sample(season, bob, organizer, {"cpu": (3.0, 0.5)}, title="GELU")
    client.post("/organizer/seasons/S1/dataset/export/", {"reason": "after the final test"})
    season.ends_at = timezone.now() - timedelta(minutes=1)
    season.save()

    page = client.get("/organizer/seasons/S1/dataset/").content.decode()
    row = page.split('id="export-2"')[1].split("</tr>")[0]
    assert "after the thaw" in row and "publish-form" not in row
    refused = client.post("/organizer/seasons/S1/dataset/v2/publish/", {"reason": "open data"}, follow=True)
    assert ("gpucodeforces-S1-v2 holds results from after the scoreboard of S1 froze: publish it once the "
            "scoreboard thaws") in refused.content.decode()
    api = client.post("/api/v1/seasons/S1/datasets/2/publish", {"reason": "open data"},
                      content_type="application/json", headers=bearer(organizer))
    assert api.status_code == 400 and "holds results from after the scoreboard of S1 froze" in api.json()["detail"]
    assert not AuditEntry.objects.filter(action="dataset.published").exists()
    assert client.get("/seasons/S1/dataset/v2.tar.gz").status_code == 404

    # what the public saw at the freeze may be published meanwhile
    done = client.post("/organizer/seasons/S1/dataset/v1/publish/", {"reason": "open data"}, follow=True)
    assert "gpucodeforces-S1-v1 is published" in done.content.decode()
    unfreeze_scoreboard(season, organizer.user, reason="results day")
    thawed = client.post("/organizer/seasons/S1/dataset/v2/publish/", {"reason": "open data"}, follow=True)
    assert "gpucodeforces-S1-v2 is published" in thawed.content.decode()
