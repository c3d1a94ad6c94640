"""Tables and lines for people, from the API's JSON (`--json` prints that JSON instead)."""
import unicodedata
from datetime import datetime

from gpucf.outcomes import current_runs

# The stages an agent reports while it judges (the site's RunStage).
STAGES = {"compiling": "compiling", "checking": "checking correctness", "timing": "timing",
          "profiling": "profiling", "self_test": "running the self-test"}
NONE = "-"
# A submission's state and a season's ranking rule in the words the site's pages use (the site's
# SubmissionState and RankingRule; tests/site/test_gpucf_words.py keeps them in step). A value this
# client does not know yet is printed as the API sends it.
STATES = {"judging": "Judging", "passed_awaiting_review": "Passed — awaiting review",
          "awaiting_review": "Did not pass — awaiting review", "accepted": "Accepted", "rejected": "Rejected",
          "passed": "Passed", "failed": "Did not pass", "cancelled": "Cancelled"}
RULES = {"accepted_count": "Accepted count, then base score, then bonus",
         "cumulative_score": "Score, then more submissions, then earlier"}


def state_words(state):
    return STATES.get(state, state)


def rule_words(rule):
    return RULES.get(rule, rule)


def display_width(text):
    """Columns the text takes in a terminal: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in text)


def clip(text, width):
    """The text cut to `width` columns, an ellipsis marking the cut."""
    if display_width(text) <= width:
        return text
    kept = ""
    for character in text:
        if display_width(kept + character) > width - 1:
            break
        kept += character
    return kept + "…"


def table(headers, rows, right=()):
    """Columns padded to their widest cell; the columns named in `right` (numbers) aligned right."""
    rows = [[NONE if cell in (None, "") else str(cell) for cell in row] for row in rows]
    widths = [max(display_width(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = []
    for row in [headers, *rows]:
        cells = []
        for header, cell, width in zip(headers, row, widths):
            gap = " " * (width - display_width(cell))
            cells.append(gap + cell if header in right else cell + gap)
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def duration(seconds):
    """0:07, 12:40, 1:02:03."""
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def local_time(iso):
    """An API timestamp in the reader's time zone, to the minute."""
    if not iso:
        return NONE
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


def speedup(value):
    return NONE if value is None else f"{value:.2f}x"


def milliseconds(value):
    return NONE if value is None else f"{value:.4f} ms"


def run_state(run, elapsed_s=None):
    """Where a run stands: `queued (position 2) 0:14`, `running: timing 0:31 of 1:55:00`, `done`. `elapsed_s`, when
    given, replaces the API's figure (a display that ticks between two reads)."""
    status = run["status"]
    elapsed_s = run.get("elapsed_s") if elapsed_s is None else elapsed_s
    if status == "done":
        return "done"
    if status == "running":
        text = f"running: {STAGES.get(run.get('stage') or '', run.get('stage') or 'starting')}"
    elif status == "queued":
        position = run.get("queue_position")
        text = f"queued (position {position})" if position else "queued"
    elif status == "waiting":
        ahead = run.get("runs_ahead")
        text = f"waiting ({ahead} of your runs first)" if ahead else "waiting"
    else:
        text = status
    if run.get("attempts", 1) > 1:
        text += f", attempt {run['attempts']}"
    if elapsed_s is None:
        return text
    if status == "running" and run.get("time_limit_s"):  # judged so far, of the site's limit
        return f"{text} {duration(elapsed_s)} of {duration(run['time_limit_s'])}"
    return f"{text} {duration(elapsed_s)}"


def submission(answer):
    """The header, the current runs (the verdict table), the reasons of those that did not pass, and the
    GPU types that do not judge this bundle."""
    mode = answer.get("mode", "ranked")  # a site before modes sends none: every submission ranked
    lines = [f"Submission #{answer['id']}  issue {answer['issue']} ({answer['season']})"
             f"  state {state_words(answer['state'])}"
             + (f"  mode {mode}" if mode != "ranked" else ""),
             answer["url"], ""]
    runs = current_runs(answer)
    ranked = answer.get("ranked") or {}
    if runs:
        lines.append(table(
            ["RUN", "GPU", "STATE", "VERDICT", "SPEEDUP", "RANKED", "REFERENCE", "CANDIDATE", "FLAGS"],
            [[run["id"], run["gpu_type"], run_state(run), run["verdict"], speedup(run["speedup"]),
              speedup((ranked.get(run["gpu_type"]) or {}).get("speedup")), milliseconds(run["reference_median_ms"]),
              milliseconds(run["candidate_median_ms"]),
              ", ".join(run["flags"]) + (" (provisional)" if run.get("provisional") else "")] for run in runs],
            right={"RUN", "SPEEDUP", "RANKED", "REFERENCE", "CANDIDATE"}))
    else:
        lines.append("No run judges this bundle.")
    for run in runs:
        reason = (run.get("result") or {}).get("reason")
        if run.get("cancelled_by_organizers") is not None:  # a site before it sends none
            lines.append(f"{run['gpu_type']}: cancelled by the organizers: {run['cancelled_by_organizers'] or 'no reason given'}")
        elif run["status"] == "done" and run["verdict"] != "passed" and reason:
            lines.append(f"{run['gpu_type']}: {run['verdict']}: {reason}")
    for row in answer.get("hardware", []):
        if not row["judged"]:
            lines.append(f"{row['gpu_type']}: not judged: {row['why_not']}")
    return "\n".join(lines)


def progress_line(answer, elapsed):
    """One line for a watch: each current run's state; `elapsed` maps a run id to its ticking seconds."""
    runs = current_runs(answer)
    states = "  |  ".join(f"{run['gpu_type']}: {run_state(run, elapsed.get(run['id']))}"
                          + (f" {run['verdict']}" if run["status"] == "done" else "") for run in runs)
    return f"#{answer['id']}  {states or 'no run'}"


def countdown(seconds):
    """2d 03:04:05, 03:04:05: as the site's pages count down to a season's start or end."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}d {clock}" if days else clock


def season_time_left(season):
    """`starts in 2d 03:04:05`, `03:04:05 left`, `no end date`, `ended`: from the site's count at its
    answer (its clock, not this computer's); `-` from a site too old to count."""
    if "phase" not in season:
        return NONE
    if season["phase"] == "upcoming":
        return f"starts in {countdown(season['seconds_to_start'])}"
    if season["phase"] == "ended":
        return "ended"
    left = season["seconds_left"]
    return "no end date" if left is None else f"{countdown(left)} left"


def seasons(answer):
    return table(["CODE", "NAME", "STARTS", "ENDS", "TIME LEFT", "OPEN", "GPU TYPES"],
                 [[s["code"], s["name"], local_time(s["starts_at"]), local_time(s["ends_at"]), season_time_left(s),
                   "yes" if s["open"] else "no", ", ".join(g["slug"] for g in s["gpu_types"])] for s in answer])


def own_issues(answer):
    if not answer["rows"]:
        return "No issue of yours here: open one on the site (Issues, Open an issue)."
    return table(["CODE", "SEASON", "TITLE", "OPERATOR", "SUBMISSIONS", "OPEN"],
                 [[i["code"], i["season"], clip(i["title"], 50), i["operator"], i["submission_count"],
                   "yes" if i["season_open"] else "no"] for i in answer["rows"]],
                 right={"SUBMISSIONS"}) + _page_footer(answer, "issues")


def season_issues(answer):
    return table(["CODE", "TITLE", "OPERATOR", "AUTHOR", "SUBMISSIONS"],
                 [[i["code"], clip(i["title"], 50), i["operator"], i["author"], i["submission_count"]]
                  for i in answer["rows"]], right={"SUBMISSIONS"}) + _page_footer(answer, "issues")


def _runs_in_brief(runs):
    return ", ".join(f"{r['gpu_type']} " + (f"{r['verdict']}" + (f" {speedup(r['speedup'])}" if r["speedup"] else "")
                                            if r["status"] == "done" else r["status"]) for r in runs)


def own_submissions(answer):
    if not answer["rows"]:
        return "No submission of yours here."
    return table(["ID", "ISSUE", "SEASON", "CREATED", "MODE", "STATE", "RUNS"],
                 [[s["id"], s["issue"], s["season"], local_time(s["created_at"]), s.get("mode", "ranked"),
                   state_words(s["state"]),
                   _runs_in_brief(s["runs"])]
                  for s in answer["rows"]], right={"ID"}) + _page_footer(answer, "submissions")


def _page_footer(answer, what):
    shown = len(answer["rows"])
    if not shown or answer["total"] <= shown:
        return ""
    first = answer["offset"] + 1
    return f"\n{what} {first}-{first + shown - 1} of {answer['total']} (--page picks another page)"


def leaderboard(answer):
    rows = [[r["rank"], r["contestant"], r["affiliation"], r["accepted_count"], f"{r['total_score']:g}",
             speedup(r["best_speedup"])] for r in answer["rows"]]
    text = table(["RANK", "CONTESTANT", "AFFILIATION", "ACCEPTED", "SCORE", "BEST"], rows,
                 right={"RANK", "ACCEPTED", "SCORE", "BEST"}) if rows else "No contestant on this page."
    heading = f"Season {answer['season']} leaderboard ({rule_words(answer['ranking_rule'])})"
    if answer.get("frozen_at"):
        heading += f", frozen at {local_time(answer['frozen_at'])}"
    return f"{heading}\n{text}{_page_footer(answer, 'contestants')}"


def gpu_leaderboard(board):
    """`board`: Api.gpu_leaderboard's {"season", "gpu_type", "frozen_at", "rows"}."""
    rows = board["rows"]
    heading = f"Season {board['season']} leaderboard on {board['gpu_type']}"
    if board.get("frozen_at"):
        heading += f", frozen at {local_time(board['frozen_at'])}"
    if not rows:
        return f"{heading}\nNo contestant on this page."
    return heading + "\n" + table(
        ["RANK", "CONTESTANT", "PASSED", "GEOMEAN", "BEST"],
        [[r["rank"], r["contestant"], r["passed_count"], speedup(r["geomean_speedup"]), speedup(r["best_speedup"])]
         for r in rows], right={"RANK", "PASSED", "GEOMEAN", "BEST"})


def _indented(text, first="    ", rest="    "):
    lines = str(text).splitlines() or [""]
    return "\n".join([first + lines[0], *(rest + line for line in lines[1:])])


def clarifications(answer):
    """A season's announcements, then its questions (answered for everyone, and one's own), the latest first."""
    lines = [f"Season {answer['season']}: announcements and clarifications"
             + (f" ({answer['unread']} unread)" if answer["unread"] else "")]
    lines.append("\nAnnouncements" if answer["announcements"] else "\nNo announcement.")
    for item in answer["announcements"]:
        lines.append(f"  {'[new] ' if item['unread'] else ''}{local_time(item['posted_at'])}")
        lines.append(_indented(item["text"]))
    lines.append("\nQuestions" if answer["clarifications"] else "\nNo question answered for everyone, none of yours.")
    for item in answer["clarifications"]:
        about = item["issue"] or "the rules"
        if item["answered_at"] is None:
            state = "waiting for an answer"
        else:
            state = f"answered {'for everyone' if item['public'] else 'to you alone'} {local_time(item['answered_at'])}"
        lines.append(f"  #{item['id']} {'[new] ' if item['unread'] else ''}{about}, asked {local_time(item['asked_at'])}, "
                     f"{state}{' (yours)' if item['mine'] else ''}")
        lines.append(_indented(item["question"], "    Q: ", "       "))
        if item["answer"] is not None:
            lines.append(_indented(item["answer"], "    A: ", "       "))
    return "\n".join(lines)
