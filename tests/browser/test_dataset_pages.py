"""The dataset in Chromium, in both languages: the organizer sees which accepted sample is left out of
exports and why, exports, and publishes after the season's end; a visitor then finds the dataset from
the season's page and downloads it."""
from datetime import timedelta

import pytest
from django.utils import timezone

from submissions.models import DatasetExport, Run, RunStatus, Verdict
from submissions.services import accounts, datasets, reviewing, submitting
from tests.browser.test_public_pages import shoot
from tests.browser.test_review_console import log_in
from tests.judged_data import accepted_sample
from tests.site.bundle_files import valid_files

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = {
    "en-US": {"left_out": "left out of exports unless included: cpu: wrong_answer", "export": "Export the dataset of S1",
              "publish": "Publish for everyone", "published": "is published", "dataset": "Dataset"},
    "zh-CN": {"left_out": "除非指定包含，否则不导出：cpu: wrong_answer", "export": "S1",
              "publish": "向所有人公开", "published": "已公开", "dataset": "数据集"},
}


@pytest.fixture
def ended_season(queue_prefix, settings, tmp_path):
    from submissions.bundles import build_bundle
    from submissions.models import GpuType, Season

    settings.DATASET_EXPORT_DIR = tmp_path / "datasets"
    season = Season.objects.create(second_judging="off", code="S1", name="Season one",
                                   ends_at=timezone.now() - timedelta(hours=1))
    season.gpu_types.add(GpuType.objects.create(slug="cpu", name="CPU"))
    accounts.register_contestant("organizer", "pw-organizer-1", is_staff=True)
    organizer = accounts.register_contestant("helper", "pw-helper-12345", is_staff=True)
    alice = accounts.register_contestant("alice", "pw-alice-12345", display_name="Alice")
    passed = accepted_sample(season, alice, organizer, {"cpu": (2.0, 1.0)}, title="ReLU")
    issue = submitting.open_issue(season, alice, title="Scaled ReLU")
    wrong = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    Run.objects.filter(submission=wrong).update(status=RunStatus.DONE, verdict=Verdict.WRONG_ANSWER)
    reviewing.review_submission(wrong, organizer.user, "accepted", rubric={"execution_time": 5},
                                override_reason="test data: fixed points", acceptance_override="a typo in the scale")
    return passed.issue.code, wrong.issue.code


@pytest.mark.parametrize("language", ["en-US", "zh-CN"])
def test_an_organizer_exports_and_publishes_and_a_visitor_downloads(live_server, page, ended_season, language):
    text = TEXT[language]
    passed, wrong = ended_season
    site = live_server.url
    log_in(page, site, "organizer", "pw-organizer-1")
    page.goto(f"{site}/organizer/seasons/S1/dataset/")
    assert text["left_out"] in page.locator(f"#sample-{wrong}").inner_text()
    assert "left-out" not in page.locator(f"#sample-{passed}").inner_html()
    page.fill("#export-form input[name=reason]", "first release")
    with page.expect_navigation():
        page.locator("#export-form button", has_text=text["export"]).click()
    assert wrong in page.locator(".message.warning").inner_text()  # the left-out notice names it
    row = page.locator("#export-1")
    row.locator("input[name=reason]").fill("open data, as agreed")
    with page.expect_navigation():
        row.locator("button", has_text=text["publish"]).click()
    assert text["published"] in page.content()
    shoot(page, f"dataset-organizer-{language[:2]}")
    assert DatasetExport.objects.get(number=1).published_at is not None

    page.context.clear_cookies()  # a visitor
    page.goto(f"{site}/seasons/S1/")
    with page.expect_navigation():
        page.locator("#season-dataset-link", has_text=text["dataset"]).click()
    assert page.locator("#published-1").count() == 1
    shoot(page, f"dataset-public-{language[:2]}")
    with page.expect_download() as download:
        page.locator("#published-1 a").click()
    saved = download.value.path()
    assert open(saved, "rb").read() == datasets.archive_path(DatasetExport.objects.get(number=1)).read_bytes()
    assert page.console_errors == []
