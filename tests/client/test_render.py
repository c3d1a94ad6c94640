"""What people read: the verdict table, each run's live state, lists and boards."""
import pytest

from gpucf import render
from tests.client.test_exit_codes import run, submission


def test_columns_line_up_with_chinese_text_taking_two_columns_a_character():
    text = render.table(["TITLE", "N"], [["对ReLU优化", 1], ["ReLU", 12]], right={"N"})
    lines = text.splitlines()
    assert lines == ["TITLE        N", "对ReLU优化   1", "ReLU        12"]
    assert len({render.display_width(line) for line in lines}) == 1


def test_a_long_title_is_clipped_to_its_columns():
    assert render.clip("对001-example数据集进行性能优化", 12) == "对001-examp…"
    assert render.display_width(render.clip("数据集进行性能优化", 7)) <= 7
    assert render.clip("short", 12) == "short"


@pytest.mark.parametrize("changes, text", [
    ({"status": "queued", "queue_position": 3, "elapsed_s": 75}, "queued (position 3) 1:15"),
    ({"status": "queued", "elapsed_s": 4}, "queued 0:04"),
    ({"status": "waiting", "runs_ahead": 2, "elapsed_s": 0}, "waiting (2 of your runs first) 0:00"),
    ({"status": "running", "stage": "checking", "elapsed_s": 3725}, "running: checking correctness 1:02:05"),
    ({"status": "running", "stage": None, "elapsed_s": 1}, "running: starting 0:01"),
    ({"status": "running", "stage": "timing", "elapsed_s": 9, "attempts": 2}, "running: timing, attempt 2 0:09"),
    # judged so far, of the site's limit for a judging
    ({"status": "running", "stage": "timing", "elapsed_s": 31, "time_limit_s": 6900},
     "running: timing 0:31 of 1:55:00"),
    ({"status": "queued", "elapsed_s": 4, "time_limit_s": 6900}, "queued 0:04"),
    ({"status": "done"}, "done"),
])
def test_a_runs_state_in_words(changes, text):
    assert render.run_state({**run(), **changes}) == text


def test_a_ticking_display_replaces_the_elapsed_time_it_was_given():
    assert render.run_state({**run(status="queued"), "elapsed_s": 5}, elapsed_s=8.7) == "queued 0:08"


def test_the_verdict_table_shows_each_current_run_its_reasons_and_the_gpu_types_that_do_not_judge_it():
    answer = submission({**run("passed"), "flags": ["timing_noisy"]},
                        {**run("wrong_answer", gpu="c500", run_id=2)},
                        {**run("compile_error", gpu="c500", run_id=3, current=False),
                         "result": {"reason": "an old rejudge"}})
    answer["ranked"] = {"cpu": {"speedup": 1.9, "run": 1, "runs_counted": 2}}
    answer["hardware"] = [{"gpu_type": "h100", "name": "H100", "judged": False, "why_not": "no agent can judge it",
                           "workers_online": 0}]
    text = render.submission(answer)
    header, table_head, cpu_row, c500_row = (text.splitlines()[i] for i in (0, 3, 4, 5))
    assert header == "Submission #7  issue ABCDEF (S1)  state Judging"
    # each run's id: what `gpucf cancel RUN` names
    assert table_head.split() == ["RUN", "GPU", "STATE", "VERDICT", "SPEEDUP", "RANKED", "REFERENCE", "CANDIDATE",
                                  "FLAGS"]
    assert cpu_row.split() == ["1", "cpu", "done", "passed", "2.00x", "1.90x", "1.0000", "ms", "0.5000", "ms",
                               "timing_noisy"]
    assert c500_row.split()[:6] == ["2", "c500", "done", "wrong_answer", "-", "-"]
    assert "c500: wrong_answer: trial 1: output 0: max abs error 0.5" in text
    assert "an old rejudge" not in text and "compile_error" not in text  # history is not the verdict
    assert "h100: not judged: no agent can judge it" in text


def test_the_watch_line_names_each_runs_state():
    answer = submission({**run(status="running"), "stage": "compiling", "elapsed_s": 10},
                        {**run("wrong_answer", gpu="c500", run_id=2)})
    assert render.progress_line(answer, {1: 12.5}) == "#7  cpu: running: compiling 0:12  |  c500: done wrong_answer"


def test_pages_say_which_rows_they_show():
    page = {"total": 120, "offset": 50, "rows": [{"id": n, "issue": "ABCDEF", "season": "S1", "created_at":
                                                  "2025-03-01T12:00:00+00:00", "state": "judging",
                                                  "runs": [{**run(status="queued")}]} for n in range(50)]}
    assert render.own_submissions(page).splitlines()[-1] == "submissions 51-100 of 120 (--page picks another page)"
    assert render.own_submissions({"total": 0, "offset": 0, "rows": []}) == "No submission of yours here."


def test_states_and_the_ranking_rule_are_printed_in_the_pages_words():
    """The API's values (`passed_awaiting_review`, `accepted_count`) are for programs (`--json` keeps them);
    a person reads the words the site's pages use. A value this client does not know is printed as sent."""
    answer = submission(run("passed"))
    answer["state"] = "passed_awaiting_review"
    assert render.submission(answer).splitlines()[0].endswith("state Passed — awaiting review")
    rows = [{"id": 1, "issue": "ABCDEF", "season": "S1", "created_at": "2025-03-01T12:00:00+00:00",
             "state": state, "runs": []} for state in ("awaiting_review", "some_new_state")]
    listed = render.own_submissions({"total": 2, "offset": 0, "rows": rows})
    assert "Did not pass — awaiting review" in listed and "some_new_state" in listed
    board = {"season": "S1", "ranking_rule": "accepted_count", "rows": [], "total": 0, "offset": 0}
    assert render.leaderboard(board).splitlines()[0] == \
        "Season S1 leaderboard (Accepted count, then base score, then bonus)"
