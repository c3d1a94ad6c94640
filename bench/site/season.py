"""A whole season on the CPU path, live: what an organizer and 20 contestants do, end to end.

Starts the platform for real (bench/fleet/dispatch.py's Platform: gunicorn on a fresh database, RQ
queues of the run's own on Redis, CPU agents), then plays a season through the contestants' HTTP API
and the organizers' services:

  1. 20 contestants open an issue each and submit (every fifth kernel wrong: its output scaled by 1.5);
  2. the organizer accepts every passed submission and rejects the wrong ones;
  3. the scoreboard is frozen; 5 contestants submit a second kernel, which the organizer accepts:
     the public board must not move;
  4. contestants ask questions; the organizer answers one publicly, one privately, announces;
  5. the season ends (its settings, with a reason) and the board is thawed;
  6. the final system test judges every counted submission again, and the board is final;
  7. the dataset is exported and published; the public API serves the archive.

The record (bench/results/season/season.json): each step's seconds, runs judged, and the checks that
nothing was lost (every run done, one verdict each, the expected verdicts, the frozen board unmoved,
the final board's contestants those with an accepted kernel).

    python bench/site/season.py                         # ~6 min on 2 cores, 2 agents
    python bench/site/season.py --contestants 8 --agents 1 --database-url sqlite:////tmp/season.sqlite3
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.fleet.dispatch import BUNDLE, Platform  # noqa: E402
from live_platform import kernels, make_log  # noqa: E402

log = make_log("season", to_stderr=True)
WRONG_EVERY = 5  # every fifth contestant's kernel is wrong


def bundle(tag: str, wrong: bool) -> list[tuple[str, bytes]]:
    files = [(name, (BUNDLE / name).read_bytes()) for name in ("torchcode.py", "cudacode.py")]
    if wrong:
        files = [(name, data.replace(b"return x.clamp(min=0)", b"return x.clamp(min=0) * 1.5")) for name, data in files]
    return kernels.distinct(files, tag)


class Season:
    """The season's people: an organizer (Django user, API token) and contestants (rows, API tokens)."""

    def __init__(self, platform: Platform, contestants: int):
        from submissions.models import Season as SeasonRow
        from submissions.services import accounts

        self.platform = platform
        self.season = SeasonRow.objects.get(code="S1")
        self.organizer = accounts.register_contestant("organizer", "organizer-password-1", display_name="Organizer",
                                                      is_staff=True)
        self.organizer_token = accounts.create_api_token(self.organizer)[1]
        self.people = []
        for i in range(contestants):
            row = accounts.register_contestant(f"contestant{i:02d}", f"password-{i:02d}-x", display_name=f"Contestant {i}")
            self.people.append({"row": row, "token": accounts.create_api_token(row)[1]})

    def api(self, token, method, path, **kwargs):
        response = requests.request(method, f"{self.platform.site}/api/v1{path}", timeout=60,
                                    headers={"Authorization": f"Bearer {token}"}, **kwargs)
        return response

    def submit(self, person, issue_code, tag, wrong=False):
        files = [("files", pair) for pair in bundle(tag, wrong)]
        response = self.api(person["token"], "POST", "/submissions", data={"issue": issue_code}, files=files)
        if response.status_code != 201:
            raise RuntimeError(f"submitting failed: {response.status_code} {response.text[:300]}")
        return response.json()["id"]


def public_board(platform) -> list[tuple[str, int]]:
    """(display name, accepted count) of the public board's JSON, in its order."""
    board = requests.get(f"{platform.site}/api/v1/seasons/S1/leaderboard", timeout=30).json()
    return [(row["contestant"], row["accepted_count"], row["best_speedup"]) for row in board["rows"]]


def review_all(season, submission_ids, reason):
    from submissions.models import Run, Submission, Verdict
    from submissions.services import reviewing

    accepted = rejected = 0
    for submission in Submission.objects.filter(pk__in=submission_ids).order_by("pk"):
        passed = all(run.verdict == Verdict.PASSED for run in Run.objects.filter(submission=submission))
        if passed:
            # every contestant sends the same fixture kernel: the near-copy and same-operator flags are expected
            reviewing.review_submission(submission, season.organizer.user, "accepted",
                                        rubric=reviewing.prefill(submission), reason=reason,
                                        acceptance_override="bench: every contestant submits the same fixture kernel")
            accepted += 1
        else:
            reviewing.review_submission(submission, season.organizer.user, "rejected", reason=f"{reason}: not passed")
            rejected += 1
    return accepted, rejected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contestants", type=int, default=20)
    parser.add_argument("--agents", type=int, default=2)
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file in the work folder")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/6")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "season" / "season.json"))
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="season-bench-"))
    platform = Platform(workdir, args.database_url or f"sqlite:///{workdir / 'season.sqlite3'}", args.redis_url)
    record = {"command": "python bench/site/season.py " + " ".join(sys.argv[1:]), "contestants": args.contestants,
              "agents": args.agents, "steps_s": {}, "checks": {}}
    clock = time.monotonic()

    def step(name):
        nonlocal clock
        now = time.monotonic()
        record["steps_s"][name] = round(now - clock, 1)
        log(f"{name}: {now - clock:.1f} s")
        clock = now

    try:
        platform.prepare(args.agents)
        season = Season(platform, args.contestants)
        platform.start_site()
        platform.start_agents(args.agents)
        step("platform started")
        from submissions.models import Issue, Run, RunStatus, Submission

        # 1. an issue and a kernel each
        first, wrong_ones = [], set()
        for i, person in enumerate(season.people):
            opened = season.api(person["token"], "POST", "/issues", json={"season": "S1", "title": f"ReLU {i}"})
            if opened.status_code != 201:
                raise RuntimeError(f"opening an issue failed: {opened.status_code} {opened.text[:300]}")
            person["issue"] = opened.json()["code"]
            wrong = i % WRONG_EVERY == WRONG_EVERY - 1
            first.append(season.submit(person, person["issue"], f"{i}-first", wrong=wrong))
            if wrong:
                wrong_ones.add(first[-1])
        platform.wait_done(first)
        step("first submissions judged")

        # 2. reviews
        accepted, rejected = review_all(season, first, "season bench review")
        record["checks"]["first_reviews"] = {"accepted": accepted, "rejected": rejected}
        step("first reviews")

        # 3. the freeze, and submissions under it
        from leaderboard import services as board_services

        board_services.freeze_scoreboard(season.season, season.organizer.user, reason="the last hour")
        frozen = public_board(platform)
        second = [season.submit(person, person["issue"], f"{i}-second") for i, person in enumerate(season.people[:5])]
        platform.wait_done(second)
        review_all(season, second, "season bench review under the freeze")
        record["checks"]["frozen_board_unmoved"] = public_board(platform) == frozen
        step("frozen: second submissions judged and reviewed")

        # 4. clarifications
        asked = [season.api(person["token"], "POST", "/seasons/S1/clarifications",
                            json={"question": f"Is fp16 allowed for issue {person['issue']}?", "issue": person["issue"]})
                 for person in season.people[:3]]
        ids = [response.json()["id"] for response in asked if response.status_code == 201]
        for n, clarification_id in enumerate(ids[:2]):
            season.api(season.organizer_token, "POST", f"/clarifications/{clarification_id}/answer",
                       json={"answer": "fp32 only", "public": n == 0, "reason": "rules"})
        season.api(season.organizer_token, "POST", "/seasons/S1/announcements",
                   json={"text": "One hour left: the board is frozen.", "reason": "the schedule"})
        seen_by_asker = season.api(season.people[1]["token"], "GET", "/seasons/S1/clarifications").json()
        seen_by_other = season.api(season.people[10 % len(season.people)]["token"], "GET", "/seasons/S1/clarifications").json()
        record["checks"]["clarifications"] = {
            "asked": len(ids), "seen_by_the_private_asker": len(seen_by_asker["clarifications"]),
            "seen_by_another": len(seen_by_other["clarifications"]), "announcements": len(seen_by_other["announcements"])}
        step("clarifications")

        # 5. the end
        from django.utils import timezone

        from submissions.services import season_settings

        season.season.refresh_from_db()
        season_settings.change_settings(season.season, {"ends_at": timezone.now() - timedelta(seconds=1), "is_open": False},
                                        actor=season.organizer.user, reason="the season is over")
        board_services.unfreeze_scoreboard(season.season, season.organizer.user, reason="the season is over")
        record["checks"]["board_after_the_end"] = requests.get(
            f"{platform.site}/api/v1/seasons/S1/leaderboard", timeout=30).json().get("standings_status")
        step("season ended, board thawed")

        # 6. the final system test
        final = final_system_test(platform, season)
        record["checks"]["final_system_test"] = final
        step("final system test")

        # 7. the dataset
        from submissions.services import datasets

        export = datasets.export_season(season.season, actor=season.organizer.user, reason="the season's dataset")
        datasets.publish(export, actor=season.organizer.user, reason="open dataset, as agreed")
        published = requests.get(f"{platform.site}/api/v1/seasons/S1/datasets/published", timeout=30).json()
        archive = requests.get(f"{platform.site}/api/v1/seasons/S1/datasets/published/{export.number}/archive", timeout=60)
        record["checks"]["dataset"] = {"published": len(published), "archive_bytes": len(archive.content),
                                       "archive_status": archive.status_code}
        step("dataset exported and published")

        runs = Run.objects.filter(submission__issue__season=season.season)
        ours = runs.filter(submission_id__in=[*first, *second])  # not the platform's own seeded issue
        wrong_verdicts = [(run.submission_id, run.verdict) for run in ours
                          if (run.verdict == "passed") == (run.submission_id in wrong_ones)]
        record["checks"].update({
            "submissions": Submission.objects.filter(issue__season=season.season).count(),
            "issues": Issue.objects.filter(season=season.season).count(),
            "runs": runs.count(), "runs_not_done": runs.exclude(status=RunStatus.DONE).count(),
            "unexpected_verdicts": wrong_verdicts[:10],
            "final_board": public_board(platform)[:5],
        })
    finally:
        platform.close()
    record["total_s"] = round(sum(record["steps_s"].values()), 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(json.dumps(record, indent=1, default=str))
    final = record["checks"].get("final_system_test") or {}
    problems = [name for name, ok in (("frozen board moved", record["checks"].get("frozen_board_unmoved")),
                                      ("board not provisional after the end", record["checks"].get("board_after_the_end") == "provisional"),
                                      ("board not final", final.get("board_standings_status") == "final"),
                                      ("runs not done", record["checks"].get("runs_not_done") == 0),
                                      ("unexpected verdicts", not record["checks"].get("unexpected_verdicts")))
                if not ok]
    if problems:
        sys.exit("season bench: " + ", ".join(problems))


def final_system_test(platform, season) -> dict:
    """Start the final system test (as an organizer, with a reason) and wait until it is finished (its
    runs done and the final standings computed); what it judged and how long it took."""
    from submissions.models import FinalSystemTest
    from submissions.services import final_system_tests

    started = time.monotonic()
    test = final_system_tests.start(season.season, "the season's final system test", actor=season.organizer.user)
    deadline = time.monotonic() + 900
    while True:
        test = FinalSystemTest.objects.get(pk=test.pk)
        if test.finished_at is not None:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("the final system test was not finished after 900 s")
        time.sleep(0.2)
    judged, total, failed = final_system_tests.progress(test)
    moved = [row for row in final_system_tests.comparison(test) if row.get("rank_before") != row.get("rank_after")]
    board = requests.get(f"{platform.site}/api/v1/seasons/S1/leaderboard", timeout=30).json()
    return {"runs": total, "judged": judged, "failed": failed, "seconds": round(time.monotonic() - started, 1),
            "ranks_moved": len(moved), "board_standings_status": board.get("standings_status")}


if __name__ == "__main__":
    main()
