"""Messages, form errors and dates in the reader's language: Simplified Chinese when the request asks
for it (Accept-Language or the language cookie), English otherwise; machine-readable places stay ISO.
The catalog itself is checked too, so a string added without its translation fails here."""
import html
import re
import shutil
from datetime import datetime, timezone as dt_timezone
from pathlib import Path

import polib
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from submissions.bundles import build_bundle
from submissions.models import Issue, Submission
from submissions.services import submitting
from submissions.services.accounts import create_api_token
from tests.site.bundle_files import TORCHCODE, valid_files

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES"
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
EN = {"Accept-Language": "en-US,en;q=0.9"}
PLACEHOLDER = re.compile(r"%\(\w+\)[sdr]")


def bearer(token, language):
    return {"Authorization": f"Bearer {token}", **language}


def page_text(response):
    return html.unescape(response.content.decode())


# ---- the catalog --------------------------------------------------------------------------


def test_the_committed_catalog_has_no_untranslated_or_fuzzy_entry():
    catalog = polib.pofile(str(CATALOG / "django.po"))
    assert [e.msgid for e in catalog.untranslated_entries()] == []
    assert [e.msgid for e in catalog.fuzzy_entries()] == []
    assert catalog.percent_translated() == 100


def test_every_string_in_the_code_is_in_the_catalog_and_translated(tmp_path, monkeypatch, settings):
    """makemessages on a copy of the site's sources, merged into a copy of the catalog: a string
    that was wrapped but never translated shows up as untranslated here."""
    # .ci/run installs GNU gettext: without it this test could not see an untranslated string
    assert shutil.which("xgettext"), "install GNU gettext (apt-get install gettext) to run the catalog check"
    for folder in ("config", "leaderboard", "clarifications", "submissions", "templates"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    copied = tmp_path / "locale" / "zh_Hans" / "LC_MESSAGES"
    copied.mkdir(parents=True)
    shutil.copy(CATALOG / "django.po", copied / "django.po")
    settings.LOCALE_PATHS = [tmp_path / "locale"]
    monkeypatch.chdir(tmp_path)
    call_command("makemessages", locale=["zh_Hans"], verbosity=0)
    merged = polib.pofile(str(copied / "django.po"))
    missing = [e.msgid for e in merged if not e.obsolete and (not e.translated() or "fuzzy" in e.flags)]
    assert missing == [], "translate these in locale/zh_Hans (makemessages -l zh_Hans, then compilemessages)"


def test_translations_keep_every_placeholder_of_their_message():
    for entry in polib.pofile(str(CATALOG / "django.po")).translated_entries():
        wanted = sorted(PLACEHOLDER.findall(entry.msgid_plural or entry.msgid))
        translations = entry.msgstr_plural.values() if entry.msgid_plural else [entry.msgstr]
        for translation in translations:
            assert sorted(PLACEHOLDER.findall(translation)) == wanted, entry.msgid


# Tags of HTML (a placeholder like "<issue code>" in a Python message is text, escaped where shown).
MARKUP = re.compile(r"</?(a|b|br|code|em|i|kbd|li|ol|p|pre|small|span|strong|ul|var|wbr)\b[^<>]*>")


def _tags(text):
    return [m.group(0).split()[0].strip("<>/") + ("/" if m.group(0).startswith("</") else "") for m in MARKUP.finditer(text)]


def test_translations_keep_the_markup_of_their_message():
    for entry in polib.pofile(str(CATALOG / "django.po")).translated_entries():
        wanted = sorted(_tags(entry.msgid_plural or entry.msgid))
        translations = entry.msgstr_plural.values() if entry.msgid_plural else [entry.msgstr]
        for translation in translations:
            assert sorted(_tags(translation)) == wanted, entry.msgid


def test_messages_of_templates_hold_balanced_markup_only():
    """A template outputs its messages as markup: an angle bracket there must open or close a tag that
    the same message closes or opened ("S1/<code>/" turned the rest of a page monospace)."""
    for entry in polib.pofile(str(CATALOG / "django.po")).translated_entries():
        if not any(path.startswith("templates/") for path, _ in entry.occurrences):
            continue
        for text in [entry.msgid, entry.msgid_plural, entry.msgstr, *entry.msgstr_plural.values()]:
            if not text:
                continue
            assert "<" not in MARKUP.sub("", text) and ">" not in MARKUP.sub("", text), (entry.msgid, text)
            opened = []
            for tag in _tags(text):
                if tag.endswith("/"):
                    assert opened and opened.pop() == tag[:-1], (entry.msgid, text)
                elif tag not in ("br", "wbr"):
                    opened.append(tag)
            assert opened == [], (entry.msgid, text)


def test_the_compiled_catalog_matches_the_source():
    """compilemessages was run after the last edit of django.po."""
    def pairs(entries):
        return {(e.msgctxt, e.msgid, e.msgid_plural): (e.msgstr, tuple(sorted(e.msgstr_plural.items())))
                for e in entries if e.msgid}  # with the context: "Profile" is an account's and a mode's

    source = polib.pofile(str(CATALOG / "django.po"))
    compiled = polib.mofile(str(CATALOG / "django.mo"))
    assert pairs(compiled) == pairs(source.translated_entries())


# One Chinese word per term of the contest, everywhere a reader meets it (the pages and the Chinese
# guide): the term, its translation, and the other translations it once had.
GLOSSARY = {"candidate": ("优化实现", ("候选",))}


def test_each_term_of_the_contest_has_one_chinese_translation():
    """The walk: "candidate" read 优化实现 in the runs table and 候选 under the charts."""
    for term, (translation, others) in GLOSSARY.items():
        word = re.compile(rf"\b{term}s?\b", re.IGNORECASE)
        for entry in polib.pofile(str(CATALOG / "django.po")).translated_entries():
            english = PLACEHOLDER.sub("", " ".join(filter(None, [entry.msgid, entry.msgid_plural])))
            chinese = [entry.msgstr] if not entry.msgid_plural else list(entry.msgstr_plural.values())
            if word.search(english):
                assert all(translation in text for text in chinese), (term, entry.msgid, chinese)
            assert not any(other in text for text in chinese for other in others), (term, entry.msgid, chinese)
        for guide in (ROOT / "docs").glob("*.zh.md"):
            text = guide.read_text()
            assert not [other for other in others if other in text], (term, guide.name)


# ---- messages through the real views and the API ----------------------------------------------


def test_a_bad_upload_is_refused_in_the_language_the_browser_asks_for(client, season, alice):
    issue = submitting.open_issue(season, alice, title="ReLU")
    client.force_login(alice.user)

    def refused(headers):
        response = client.post("/submit/", {"issue": issue.pk, "files": [SimpleUploadedFile("torchcode.py", TORCHCODE)]},
                               headers=headers)
        assert response.status_code == 200
        return page_text(response)

    zh, en = refused(ZH), refused(EN)
    assert "样本缺少优化实现：请添加 cudacode.py（或 cudacode_opt.py、example_cudacode.py）" in zh
    assert "the bundle has no candidate: add cudacode.py" not in zh
    assert "the bundle has no candidate: add cudacode.py (or cudacode_opt.py, example_cudacode.py)" in en
    assert "样本缺少优化实现" not in en
    assert not Submission.objects.exists()


def test_form_errors_are_translated_too(client, season, alice):
    client.force_login(alice.user)
    files = [SimpleUploadedFile(n, d) for n, d in valid_files().items()]
    zh = page_text(client.post("/submit/", {"files": files}, headers=ZH))
    assert "请选择你的一个赛题，或为新赛题填写标题。" in zh and "新赛题标题" in zh
    en = page_text(client.post("/submit/", {"files": files}, headers=EN))
    assert "Pick one of your issues, or give the new issue a title." in en and "New issue title" in en


def test_the_api_answers_a_bad_bundle_in_the_requested_language(client, season, alice):
    issue = submitting.open_issue(season, alice, title="ReLU")
    _, token = create_api_token(alice)
    bad = {"issue": issue.code, "files": [SimpleUploadedFile("torchcode.py", TORCHCODE)]}
    zh = client.post("/api/v1/submissions", bad, headers=bearer(token, ZH))
    assert zh.status_code == 400
    assert zh.json()["detail"] == "样本被拒绝：样本缺少优化实现：请添加 cudacode.py（或 cudacode_opt.py、example_cudacode.py）"
    bad["files"] = [SimpleUploadedFile("torchcode.py", TORCHCODE)]
    en = client.post("/api/v1/submissions", bad, headers=bearer(token, EN))
    assert en.json()["detail"] == ("bundle refused: the bundle has no candidate: add cudacode.py "
                                   "(or cudacode_opt.py, example_cudacode.py)")


def test_the_language_cookie_picks_chinese_for_a_service_refusal(client, season, alice, bob):
    """Bob submits to Alice's issue: the service refuses; the cookie set by the language switch wins."""
    issue = submitting.open_issue(season, alice, title="ReLU")
    _, token = create_api_token(bob)
    client.cookies[django_settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    files = [SimpleUploadedFile(n, d) for n, d in valid_files().items()]
    response = client.post("/api/v1/submissions", {"issue": issue.code, "files": files},
                           headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 400
    assert response.json()["detail"] == f"赛题 {issue.code} 属于其他选手；请创建你自己的赛题"
    client.cookies[django_settings.LANGUAGE_COOKIE_NAME] = "en"
    files = [SimpleUploadedFile(n, d) for n, d in valid_files().items()]
    response = client.post("/api/v1/submissions", {"issue": issue.code, "files": files},
                           headers={"Authorization": f"Bearer {token}"})
    assert response.json()["detail"] == f"issue {issue.code} belongs to another contestant; open your own issue"


def test_a_closed_season_and_a_bad_token_are_refused_in_both_languages(client, season, alice):
    season.is_open = False
    season.save()
    _, token = create_api_token(alice)
    payload = {"season": "S1", "title": "Softmax"}
    zh = client.post("/api/v1/issues", payload, content_type="application/json", headers=bearer(token, ZH))
    en = client.post("/api/v1/issues", payload, content_type="application/json", headers=bearer(token, EN))
    assert (zh.status_code, zh.json()["detail"]) == (400, "赛季 S1 已关闭")
    assert (en.status_code, en.json()["detail"]) == (400, "season S1 is closed")
    anonymous = client.post("/api/v1/issues", payload, content_type="application/json", headers=ZH)
    assert (anonymous.status_code, anonymous.json()["detail"]) == (401, "缺少 Bearer 令牌或令牌无效")


def test_the_rate_limit_names_the_retry_time_in_the_readers_date_format(client, season, alice, settings):
    settings.SUBMISSIONS_PER_HOUR = 1
    issue = submitting.open_issue(season, alice, title="ReLU")
    submitting.create_submission(alice, issue, build_bundle(valid_files()))
    client.force_login(alice.user)

    def refused(headers):
        files = [SimpleUploadedFile(n, d) for n, d in valid_files().items()]
        return page_text(client.post("/submit/", {"issue": issue.pk, "files": files}, headers=headers))

    assert re.search(r"你在过去一小时内已在赛季 S1 提交 1 次，达到上限；请在 \d{4}年\d{1,2}月\d{1,2}日 \d{2}:\d{2} UTC 之后再试",
                     refused(ZH))
    # English: "Jan. 5, 2026, 1:05 p.m." (Django's DATETIME_FORMAT for en)
    assert re.search(r"you made 1 submission in season S1 in the last hour, the limit; try again after "
                     r"\w{3,5}\.? \d{1,2}, \d{4}, \d{1,2}(:\d{2})? [ap]\.m\. UTC", refused(EN))


def test_an_organizers_flash_message_is_translated(client, season, alice, organizer):
    issue = submitting.open_issue(season, alice, title="ReLU")
    client.force_login(organizer.user)
    client.post(f"/organizer/issues/{issue.code}/rejudge/", {"reason": ""}, headers=ZH)
    assert "重新评测需要填写原因（记入审计日志）" in page_text(client.get("/organizer/", headers=ZH))


# ---- dates and numbers -----------------------------------------------------------------------

WHEN = datetime(2026, 1, 5, 13, 7, tzinfo=dt_timezone.utc)


def test_dates_follow_the_language_and_keep_an_iso_timestamp(client, season, alice):
    issue = submitting.open_issue(season, alice, title="ReLU")
    submission = submitting.create_submission(alice, issue, build_bundle(valid_files()))
    Issue.objects.filter(pk=issue.pk).update(created_at=WHEN)
    Submission.objects.filter(pk=submission.pk).update(created_at=WHEN)

    zh = client.get(f"/issues/{issue.code}/", headers=ZH).content.decode()
    en = client.get(f"/issues/{issue.code}/", headers=EN).content.decode()
    iso = '<time datetime="2026-01-05T13:07:00+00:00">'
    # The issue's day (DATE_FORMAT) and its versions' times (SHORT_DATETIME_FORMAT).
    assert f"{iso}2026年1月5日</time>" in zh and f"{iso}2026年1月5日 13:07</time>" in zh
    assert f"{iso}Jan. 5, 2026</time>" in en and f"{iso}01/05/2026 1:07 p.m.</time>" in en
    assert "2026-01-05 13:07" not in zh + en  # the old fixed format is gone

    # Machine-readable twins stay ISO 8601 whatever the language.
    api = client.get(f"/api/v1/issues/{issue.code}", headers=ZH).json()
    assert api["created_at"] == api["submissions"][0]["created_at"] == "2026-01-05T13:07:00+00:00"


def test_the_leaderboards_first_submission_time_is_localized(client, season, alice):
    from submissions.models import Standing

    season.ranking_rule = "cumulative_score"
    season.save()
    Standing.objects.create(season=season, contestant=alice, total_score=1234.5, base_score=1234.5,
                            submission_count=3, first_submission_at=WHEN)
    zh = client.get("/seasons/S1/leaderboard/", headers=ZH).content.decode()
    en = client.get("/seasons/S1/leaderboard/", headers=EN).content.decode()
    assert "2026年1月5日 13:07" in zh and "01/05/2026 1:07 p.m." in en
    assert "1234.5" in zh and "1234.5" in en
