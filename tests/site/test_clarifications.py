"""Clarifications and announcements: contestants ask the organizers, who answer the asker alone or
everyone (without the asker's name) and post announcements on the season's pages; unread answers and
announcements are counted in the header until the season's clarifications page is opened. Real
database, Django's test client, the pages and the API."""
import html
import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from clarifications import services
from clarifications.models import QUESTION_MAX_CHARS, Announcement, Clarification
from submissions.models import AuditEntry, Season
from submissions.services import accounts, submitting

EN = {"Accept-Language": "en"}
BADGE = re.compile(r'id="clarifications-link">[^<]*(?:<span class="badge"[^>]*>(\d+)</span>)?')


def signed_in(user):
    client = Client(headers=EN)
    client.force_login(user)
    return client


def text(response):
    return html.unescape(response.content.decode())


def bearer(contestant):
    return {"Authorization": f"Bearer {accounts.create_api_token(contestant)[1]}", **EN}


def unread_in_header(client, path="/"):
    """The header's unread count (0 when it shows none), and where its link goes."""
    page = client.get(path).content.decode()
    match = BADGE.search(page)
    assert match, "the header has no clarifications link"
    link = re.search(r'<a href="([^"]+)" id="clarifications-link"', page).group(1)
    return int(match.group(1) or 0), link


def ask(client, question, issue="", season="S1"):
    return client.post(f"/seasons/{season}/clarifications/ask/", {"question": question, "issue": issue})


def answer(client, clarification, text_, visibility="private", reason="a rules question"):
    return client.post(f"/organizer/clarifications/{clarification.pk}/answer/",
                       {"answer": text_, "visibility": visibility, "reason": reason})


def announce(client, text_, season="S1", reason="a change for everyone"):
    return client.post("/organizer/announcements/", {"season": season, "text": text_, "reason": reason})


@pytest.fixture
def people(season, alice, bob, organizer):
    return {"alice": signed_in(alice.user), "bob": signed_in(bob.user), "organizer": signed_in(organizer.user),
            "anonymous": Client(headers=EN)}


def test_a_question_is_seen_by_its_asker_and_the_organizers_alone(people, season, alice):
    issue = submitting.open_issue(season, alice, title="Fused GELU")
    asked = ask(people["alice"], "May the kernel use tensor cores?", issue=issue.code.lower())
    assert asked.status_code == 302 and asked.url == "/seasons/S1/clarifications/#mine"
    question = Clarification.objects.get()
    assert (question.asker, question.issue, question.season, question.is_answered) == (alice.user, issue, season, False)

    mine = text(people["alice"].get("/seasons/S1/clarifications/"))
    assert "May the kernel use tensor cores?" in mine and "Waiting for an answer from the organizers." in mine
    for other in ("bob", "anonymous"):
        assert "tensor cores" not in text(people[other].get("/seasons/S1/clarifications/")), other
    waiting = text(people["organizer"].get("/organizer/clarifications/"))
    assert "tensor cores" in waiting and "Alice" in waiting and f'id="waiting-{question.pk}"' in waiting


def test_an_issues_page_links_to_asking_about_it(people, season, alice):
    issue = submitting.open_issue(season, alice, title="Fused GELU")
    page = people["bob"].get(f"/issues/{issue.code}/").content.decode()
    link = re.search(r'id="ask-about-issue"><a href="([^"]+)"', page).group(1)
    assert link == f"/seasons/S1/clarifications/?issue={issue.code}#ask"
    form = people["bob"].get(link).content.decode()
    assert re.search(rf'<input type="text" name="issue" value="{issue.code}"', form)


def test_a_private_answer_is_seen_by_the_asker_alone(people, season, alice, bob):
    services.ask(season, alice.user, "Is fp16 accumulation allowed?")
    question = Clarification.objects.get()
    assert answer(people["organizer"], question, "Only with **fp32** accumulation.").status_code == 302
    question.refresh_from_db()
    assert (question.public, question.answer) == (False, "Only with **fp32** accumulation.")

    page = people["alice"].get("/seasons/S1/clarifications/").content.decode()
    assert "Only with <strong>fp32</strong> accumulation." in page and "Answered to you alone" in page
    for other in ("bob", "anonymous"):
        shown = text(people[other].get("/seasons/S1/clarifications/"))
        assert "fp16" not in shown and "fp32" not in shown, other
    bobs = people["bob"].get("/api/v1/seasons/S1/clarifications", headers=bearer(bob)).json()
    assert bobs["clarifications"] == []
    alices = people["alice"].get("/api/v1/seasons/S1/clarifications", headers=bearer(alice)).json()
    (own,) = alices["clarifications"]
    assert (own["question"], own["answer"], own["public"], own["mine"]) == (
        "Is fp16 accumulation allowed?", "Only with **fp32** accumulation.", False, True)
    # the organizers' list has it answered, no longer waiting
    organizer_page = text(people["organizer"].get("/organizer/clarifications/"))
    assert f'id="answered-{question.pk}"' in organizer_page and f'id="waiting-{question.pk}"' not in organizer_page


def test_a_public_answer_is_seen_by_everyone_without_the_askers_name(people, season, alice, bob):
    services.ask(season, alice.user, "Do warm-up runs count in the timing?")
    question = Clarification.objects.get()
    answer(people["organizer"], question, "No: they are discarded.", visibility="public")

    for reader in ("anonymous", "bob", "organizer"):
        shown = text(people[reader].get("/seasons/S1/clarifications/"))
        assert "Do warm-up runs count in the timing?" in shown and "No: they are discarded." in shown, reader
        assert "Alice" not in shown and "alice" not in shown, reader
    (public,) = people["bob"].get("/api/v1/seasons/S1/clarifications", headers=bearer(bob)).json()["clarifications"]
    assert (public["public"], public["mine"], public["answer"]) == (True, False, "No: they are discarded.")
    assert "asker" not in public and "alice" not in json.dumps(public).lower()
    # its asker sees it among their own too, answered for everyone
    alices = text(people["alice"].get("/seasons/S1/clarifications/"))
    assert f'id="mine-{question.pk}"' in alices and f'id="public-{question.pk}"' in alices


def test_announcements_show_on_the_season_and_leaderboard_pages_newest_first(people, season, organizer):
    visitor = people["anonymous"]
    assert "Announcements" not in text(visitor.get("/seasons/S1/leaderboard/"))  # kept for visitors now
    assert announce(people["organizer"], "The **deadline** moves to Friday.").status_code == 302
    assert announce(people["organizer"], "Judging on the C500 resumes.").status_code == 302
    first, second = Announcement.objects.order_by("pk")

    for path in ("/seasons/S1/", "/seasons/S1/leaderboard/", "/seasons/S1/clarifications/"):
        page = visitor.get(path).content.decode()
        assert "The <strong>deadline</strong> moves to Friday." in page, path
        assert page.index(f'id="announcement-{second.pk}"') < page.index(f'id="announcement-{first.pk}"'), path

    people["organizer"].post(f"/organizer/announcements/{first.pk}/withdraw/", {"reason": "posted by mistake"})
    first.refresh_from_db()
    assert first.withdrawn_at is not None
    for path in ("/seasons/S1/", "/seasons/S1/leaderboard/", "/seasons/S1/clarifications/"):
        page = visitor.get(path).content.decode()
        assert "deadline" not in page and f'id="announcement-{second.pk}"' in page, path
    other = Season.objects.create(code="S2", name="Season two", second_judging="off")
    assert "C500 resumes" not in text(visitor.get(f"/seasons/{other.code}/clarifications/"))


def test_the_header_counts_unread_answers_and_announcements_until_the_page_is_opened(people, season, alice, bob):
    alice_client, bob_client = people["alice"], people["bob"]
    assert unread_in_header(alice_client) == (0, "/seasons/S1/clarifications/")
    services.ask(season, alice.user, "Which GPUs judge S1?")
    question = Clarification.objects.get()
    announce(people["organizer"], "Submissions close at noon.")
    answer(people["organizer"], question, "The CPU and the C500.")
    assert unread_in_header(alice_client) == (2, "/seasons/S1/clarifications/")
    assert unread_in_header(bob_client) == (1, "/seasons/S1/clarifications/")  # not alice's private answer
    assert unread_in_header(people["organizer"])[0] == 0  # what one posted oneself is not news to one

    opened = alice_client.get("/seasons/S1/clarifications/").content.decode()
    assert opened.count('<span class="tag new">') == 2  # marked new on this visit...
    assert unread_in_header(alice_client)[0] == 0  # ...and read from now on
    assert '<span class="tag new">' not in alice_client.get("/seasons/S1/clarifications/").content.decode()
    assert unread_in_header(bob_client)[0] == 1  # bob has not opened it

    # a changed answer is published anew; the API reads and marks read as the page does
    answer(people["organizer"], question, "The CPU, the C500 and the H100.", visibility="public",
           reason="the H100 joined")
    assert unread_in_header(alice_client)[0] == 1 and unread_in_header(bob_client)[0] == 2
    listed = alice_client.get("/api/v1/seasons/S1/clarifications", headers=bearer(alice)).json()
    assert listed["unread"] == 1 and [c["unread"] for c in listed["clarifications"]] == [True]
    assert unread_in_header(alice_client)[0] == 0


def test_the_header_link_goes_to_the_season_with_something_unread(people, season, alice):
    newer = Season.objects.create(code="S2", name="Season two", second_judging="off",
                                  starts_at=season.starts_at + timedelta(days=1))
    assert unread_in_header(people["alice"]) == (0, f"/seasons/{newer.code}/clarifications/")
    announce(people["organizer"], "A note for S1.", season="S1")
    assert unread_in_header(people["alice"]) == (1, "/seasons/S1/clarifications/")
    assert 'id="clarifications-link"' not in people["anonymous"].get("/").content.decode()


def test_only_organizers_answer_and_announce(people, season, alice, bob, organizer):
    services.ask(season, alice.user, "Can I use CUTLASS?")
    question = Clarification.objects.get()
    announcement = services.post_announcement(season, organizer.user, "Kept.", reason="test")
    before = AuditEntry.objects.count()
    for reader, refused in (("bob", 403), ("alice", 403), ("anonymous", 302)):
        client = people[reader]
        assert answer(client, question, "Yes.").status_code == refused, reader
        assert announce(client, "Forged.").status_code == refused, reader
        assert client.post(f"/organizer/announcements/{announcement.pk}/withdraw/",
                           {"reason": "forged"}).status_code == refused, reader
        assert client.get("/organizer/clarifications/").status_code == refused, reader
    api = people["bob"]
    token = bearer(bob)
    assert api.post(f"/api/v1/clarifications/{question.pk}/answer", {"answer": "Yes.", "reason": "x"},
                    content_type="application/json", headers=token).status_code == 403
    assert api.post("/api/v1/seasons/S1/announcements", {"text": "Forged.", "reason": "x"},
                    content_type="application/json", headers=token).status_code == 403
    assert api.get("/api/v1/clarifications/waiting", headers=token).status_code == 403
    with pytest.raises(services.OrganizersOnly):
        services.answer(question, bob.user, "Yes.", public=True, reason="x")
    question.refresh_from_db()
    announcement.refresh_from_db()
    assert (question.is_answered, announcement.withdrawn_at, Announcement.objects.count()) == (False, None, 1)
    assert AuditEntry.objects.count() == before


def test_organizers_answer_and_announce_through_the_api_too(client, season, alice, organizer):
    token = bearer(organizer)
    services.ask(season, alice.user, "Is Triton allowed?")
    question = Clarification.objects.get()
    (waiting,) = client.get("/api/v1/clarifications/waiting", {"season": "S1"}, headers=token).json()
    assert (waiting["id"], waiting["asker"], waiting["answer"]) == (question.pk, "Alice", None)
    answered = client.post(f"/api/v1/clarifications/{question.pk}/answer",
                           {"answer": "Yes.", "public": True, "reason": "asked often"},
                           content_type="application/json", headers=token)
    assert answered.status_code == 200 and (answered.json()["public"], answered.json()["answer"]) == (True, "Yes.")
    assert client.get("/api/v1/clarifications/waiting", headers=token).json() == []
    posted = client.post("/api/v1/seasons/S1/announcements", {"text": "Triton is allowed.", "reason": "rules"},
                         content_type="application/json", headers=token)
    assert posted.status_code == 201 and Announcement.objects.get().text == "Triton is allowed."
    no_reason = client.post("/api/v1/seasons/S1/announcements", {"text": "No reason."},
                            content_type="application/json", headers=token)
    assert no_reason.status_code == 422 and "reason" in no_reason.json()["detail"]
    assert client.post("/api/v1/clarifications/999999/answer", {"answer": "Yes.", "reason": "x"},
                       content_type="application/json", headers=token).status_code == 404


def test_questions_have_a_length_limit_and_need_text(people, season, alice):
    too_long = "x" * (QUESTION_MAX_CHARS + 1)
    page = ask(people["alice"], too_long)
    assert page.status_code == 400 and f"at most {QUESTION_MAX_CHARS} characters" in text(page)
    assert too_long in text(page)  # what was typed is kept in the form
    blank = ask(people["alice"], "   ")
    assert blank.status_code == 400 and "This field is required." in text(blank)
    api = people["alice"].post("/api/v1/seasons/S1/clarifications", {"question": too_long},
                               content_type="application/json", headers=bearer(alice))
    assert api.status_code == 422 and "question" in api.json()["detail"]
    with pytest.raises(services.ClarificationRefused,
                       match=f"a question has at most {QUESTION_MAX_CHARS} characters; this one has {QUESTION_MAX_CHARS + 1}"):
        services.ask(season, alice.user, too_long)
    with pytest.raises(services.ClarificationRefused, match="a question needs some text"):
        services.ask(season, alice.user, "\n ")
    assert not Clarification.objects.exists()


def test_a_question_names_an_issue_of_its_season_and_an_ended_season_takes_none(people, season, alice):
    other = Season.objects.create(code="S2", name="Season two", second_judging="off")
    elsewhere = submitting.open_issue(other, alice, title="Softmax")
    refused = ask(people["alice"], "About this one?", issue=elsewhere.code)
    assert refused.status_code == 400 and f"season S1 has no issue {elsewhere.code}" in text(refused)
    season.ends_at = timezone.now() - timedelta(minutes=1)
    season.save()
    ended = ask(people["alice"], "Too late?")
    assert ended.status_code == 400 and "season S1 has ended: it takes no more questions" in text(ended)
    api = people["alice"].post("/api/v1/seasons/S1/clarifications", {"question": "Too late?"},
                               content_type="application/json", headers=bearer(alice))
    assert api.status_code == 400 and api.json()["detail"] == "season S1 has ended: it takes no more questions"
    assert not Clarification.objects.exists()


def test_a_contestant_asks_a_limited_number_of_questions(people, season, alice, bob, settings):
    settings.QUESTIONS_PER_HOUR, settings.QUESTIONS_PER_DAY = 2, 3
    for n in range(2):
        assert ask(people["alice"], f"Question {n}?").status_code == 302
    refused = ask(people["alice"], "A third one?")
    assert refused.status_code == 429
    assert "you may ask 2 questions an hour; ask again after" in text(refused) and "A third one?" in text(refused)
    api = people["alice"].post("/api/v1/seasons/S1/clarifications", {"question": "A third one?"},
                               content_type="application/json", headers=bearer(alice))
    assert api.status_code == 429 and 3590 <= int(api["Retry-After"]) <= 3601
    assert api.json()["detail"].startswith("you may ask 2 questions an hour")
    assert ask(people["bob"], "Bob's own?").status_code == 302  # per contestant
    # the day's limit: two asked two hours ago, one now
    Clarification.objects.filter(asker=alice.user).update(asked_at=timezone.now() - timedelta(hours=2))
    assert ask(people["alice"], "A third one?").status_code == 302
    day = ask(people["alice"], "A fourth?")
    assert day.status_code == 429 and "you may ask 3 questions a day" in text(day)
    assert Clarification.objects.filter(asker=alice.user).count() == 3


def test_answering_and_announcing_need_a_reason_and_are_audited(people, season, alice, organizer):
    services.ask(season, alice.user, "Is the rubric final?")
    question = Clarification.objects.get()
    audited = AuditEntry.objects.filter(object_type__in=["clarification", "announcement"])
    no_reason = answer(people["organizer"], question, "Yes.", reason="")
    assert no_reason.status_code == 400 and "Say why: the reason is kept in the audit trail." in text(no_reason)
    assert "Yes." in text(no_reason)  # the typed answer is kept
    question.refresh_from_db()
    assert not question.is_answered and not audited.exists()

    answer(people["organizer"], question, "Yes.", reason="asked by a contestant")
    answer(people["organizer"], question, "Yes, final.", visibility="public", reason="everyone asks")
    announce(people["organizer"], "The rubric is final.", reason="rubric settled")
    posted = Announcement.objects.get()
    people["organizer"].post(f"/organizer/announcements/{posted.pk}/withdraw/", {"reason": "said twice"})
    no_reason_withdraw = people["organizer"].post(f"/organizer/announcements/{posted.pk}/withdraw/", {"reason": ""})
    assert no_reason_withdraw.status_code == 302

    entries = list(audited.order_by("pk").values_list("action", "object_id", "actor", "reason", "before",
                                                                 "after"))
    assert entries == [
        ("clarification.answered", str(question.pk), organizer.user.pk, "asked by a contestant", None,
         {"season": "S1", "issue": None, "answer": "Yes.", "public": False}),
        ("clarification.answer_changed", str(question.pk), organizer.user.pk, "everyone asks",
         {"answer": "Yes.", "public": False}, {"season": "S1", "issue": None, "answer": "Yes, final.", "public": True}),
        ("announcement.posted", str(posted.pk), organizer.user.pk, "rubric settled", None,
         {"season": "S1", "text": "The rubric is final."}),
        ("announcement.withdrawn", str(posted.pk), organizer.user.pk, "said twice",
         {"season": "S1", "text": "The rubric is final."}, None),
    ]
    with pytest.raises(services.ClarificationRefused, match="needs a reason"):
        services.post_announcement(season, organizer.user, "Again.", reason=" ")
    assert Announcement.objects.count() == 1
