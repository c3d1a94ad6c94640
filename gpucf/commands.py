"""What each command does: read or send through the API, then print for people or, with --json, the
API's JSON alone on stdout. Each returns its exit code (gpucf.outcomes)."""
import getpass
import json
import sys
from dataclasses import dataclass

from gpucf import bundles, profile_table, render, watching
from gpucf.api import Api
from gpucf.config import Config
from gpucf.outcomes import PASSED, RUN_FAILED, STILL_JUDGING, Interrupted, UsageError, for_verdicts

PER_PAGE = 50


@dataclass
class Context:
    site: str
    config: Config
    api: Api
    json_output: bool

    def show(self, answer, text):
        """--json: the API's answer and nothing else; else the text for people."""
        if self.json_output:
            # escaped where stdout cannot carry UTF-8: a script's JSON must never lose a character
            utf8 = (sys.stdout.encoding or "").lower().replace("-", "") == "utf8"
            print(json.dumps(answer, indent=2, ensure_ascii=not utf8))
        else:
            print(text() if callable(text) else text)


def _offset(page):
    return (page - 1) * PER_PAGE


def _read_token(site):
    """Asked on a terminal without echo; read as one line from a pipe (`gpucf login < token-file`)."""
    if sys.stdin is not None and sys.stdin.isatty():
        return getpass.getpass(f"Personal API token for {site} (Account page, Create a token): ")
    return (sys.stdin.readline() if sys.stdin is not None else "").strip()


def login(args, ctx):
    token = (args.token or _read_token(ctx.site)).strip()
    if not token:
        raise UsageError(f"no token given: make one on {ctx.site}/account/ and pass it with --token or on stdin")
    me = Api(ctx.site, token).me()  # the site says whose it is, or refuses it (401)
    ctx.config.site = ctx.site
    ctx.config.tokens[ctx.site] = token
    ctx.config.save()
    ctx.show(me, f"Logged in to {ctx.site} as {me['display_name']}; the token is kept in {ctx.config.path}")
    return PASSED


def logout(args, ctx):
    removed = ctx.config.tokens.pop(ctx.site, None) is not None
    if removed:
        ctx.config.save()
    ctx.show({"site": ctx.site, "token_removed": removed},
             f"Logged out of {ctx.site}; the token is still valid until you revoke it on {ctx.site}/account/"
             if removed else f"No token was kept for {ctx.site}")
    return PASSED


def seasons(args, ctx):
    answer = ctx.api.seasons()
    ctx.show(answer, lambda: render.seasons(answer) if answer else "No season yet.")
    return PASSED


def issues(args, ctx):
    if args.all:
        if not args.season:
            raise UsageError("--all lists a season's issues: name it with --season CODE")
        answer = ctx.api.season_issues(args.season, _offset(args.page), PER_PAGE)
        ctx.show(answer, lambda: render.season_issues(answer))
    else:
        answer = ctx.api.own_issues(args.season or "", _offset(args.page), PER_PAGE)
        ctx.show(answer, lambda: render.own_issues(answer))
    return PASSED


def submit(args, ctx):
    filename, data = bundles.upload_of(args.path)
    answer = ctx.api.submit(args.issue.strip().upper(), args.note, filename, data, mode=args.mode)
    if not args.watch:
        ctx.show(answer, lambda: render.submission(answer) + f"\nFollow it: gpucf watch {answer['id']}")
        return PASSED
    print(f"Submission #{answer['id']} to {answer['issue']} is in: {answer['url']}", file=sys.stderr, flush=True)
    return _watch(answer["id"], ctx, answer)


def status(args, ctx):
    answer = ctx.api.submission(args.id)
    ctx.show(answer, lambda: render.submission(answer))
    return for_verdicts(answer)


def watch(args, ctx):
    return _watch(args.id, ctx)


def _watch(submission_id, ctx, answer=None, show=True):
    display = watching.Display(sys.stderr, live=sys.stderr.isatty())
    try:
        answer = watching.follow(ctx.api, submission_id, display, answer=answer)
    except KeyboardInterrupt:
        display.clear()
        raise Interrupted(f"stopped watching; submission #{submission_id} is still judged on the site "
                          f"(nothing was cancelled): `gpucf watch {submission_id}` follows it again") from None
    if show:
        ctx.show(answer, lambda: render.submission(answer))
    return for_verdicts(answer)


def cancel(args, ctx):
    answer = ctx.api.cancel_run(args.id, args.reason)
    ctx.show(answer, f"Run #{answer['id']} ({answer['gpu_type']}) is cancelled: it will not be judged.")
    return PASSED


def profile(args, ctx):
    """A profile run's report; with --request, a new profile of a passed run of yours (--watch: followed to
    its report)."""
    if not args.request:
        answer = ctx.api.profile(args.id)
        ctx.show(answer, lambda: profile_table.profile(answer))
        return _profile_outcome(answer)
    submission = ctx.api.request_profile(args.id)
    run_id = submission["runs"][0]["id"]
    if not args.watch:
        ctx.show(submission, f"Profile #{submission['id']} of run #{args.id} is queued as run #{run_id}: "
                             f"`gpucf profile {run_id}` shows its report once it is judged ({submission['url']})")
        return PASSED
    print(f"Profile #{submission['id']} of run #{args.id} is queued as run #{run_id}", file=sys.stderr, flush=True)
    _watch(submission["id"], ctx, submission, show=False)
    answer = ctx.api.profile(run_id)
    ctx.show(answer, lambda: profile_table.profile(answer))
    return _profile_outcome(answer)


def _profile_outcome(answer):
    """As `status`: 0 once its trials passed, 1 when they did not, 6 while it is judged."""
    if answer["status"] != "done":
        return STILL_JUDGING
    return PASSED if answer["verdict"] == "passed" else RUN_FAILED


def own_submissions(args, ctx):
    answer = ctx.api.own_submissions(args.season or "", _offset(args.page), PER_PAGE)
    ctx.show(answer, lambda: render.own_submissions(answer))
    return PASSED


def leaderboard(args, ctx):
    if args.gpu:
        board = ctx.api.gpu_leaderboard(args.season, args.gpu, _offset(args.page), PER_PAGE)
        ctx.show(board, lambda: render.gpu_leaderboard(board))
    else:
        answer = ctx.api.leaderboard(args.season, _offset(args.page), PER_PAGE)
        ctx.show(answer, lambda: render.leaderboard(answer))
    return PASSED


def clarifications(args, ctx):
    answer = ctx.api.clarifications(args.season)
    ctx.show(answer, lambda: render.clarifications(answer))
    return PASSED


def ask(args, ctx):
    question = (sys.stdin.read() if args.question == "-" and sys.stdin is not None else args.question).strip()
    if not question:
        raise UsageError("the question is empty: write it as one argument in quotes, or `-` to read it from stdin")
    answer = ctx.api.ask(args.season, question, (args.issue or "").strip().upper())
    ctx.show(answer, lambda: f"Question #{answer['id']} is sent to the organizers of {answer['season']}: "
                             f"`gpucf clarifications {answer['season']}` shows their answer.")
    return PASSED
