"""The `gpucf` command line: its options, and the one-line error and exit code that end a failed command."""
import argparse
import os
import sys

from gpucf import __version__, commands, outcomes
from gpucf.api import Api
from gpucf.config import Config, resolve_site, resolve_token

EXIT_CODES = """exit codes:
  0    done; status, watch and submit --watch: every current run passed
  1    a current run did not pass (wrong_answer, compile_error, runtime_error, timeout, ...)
  2    usage error, or a request the site refused (bad bundle, unknown issue or submission, duplicate)
  3    not logged in, token refused (401/403), or an unreadable config file
  4    site unreachable, a server error, or not a GPU CodeForces site
  5    rate limited (429): the message says when to retry
  6    status, profile: a run is still being judged
  130  interrupted (Ctrl-C); a submission being watched goes on being judged

environment: GPUCF_SITE (the site, default http://127.0.0.1:8000), GPUCF_TOKEN (a token, in place of
the stored one), XDG_CONFIG_HOME (where gpucf/config.json is kept)"""


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not 1 or more")
    return value


def _common(suppress):
    """--site and --json, accepted before or after the command (the command's own never hide the others)."""
    parser = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--site", default=default, metavar="URL",
                        help="the site (default: GPUCF_SITE, else the one `login` stored, else http://127.0.0.1:8000)")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="print the API's JSON alone on stdout")
    return parser


MODES = ("ranked", "test", "benchmark", "profile")  # a submission's modes (the site's SubmissionMode)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="gpucf", parents=[_common(False)], formatter_class=argparse.RawDescriptionHelpFormatter,
        description="GPU CodeForces from the terminal: submit a bundle, follow its judging, read verdicts and "
                    "leaderboards.", epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"gpucf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = [_common(True)]

    def command(name, handler, help_text):
        made = sub.add_parser(name, parents=common, help=help_text, description=help_text, epilog=EXIT_CODES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
        made.set_defaults(handler=handler)
        return made

    login = command("login", commands.login, "check a personal API token with the site and keep it (0600)")
    login.add_argument("--token", help="the token (else asked for, or read from stdin); a command line is "
                                       "visible to the host's other users")
    command("logout", commands.logout, "forget the token kept for the site")
    command("seasons", commands.seasons, "the seasons: start, end, time left, whether open, GPU types")
    issues = command("issues", commands.issues, "your issues (the ones you submit to), or a season's with --all")
    issues.add_argument("--season", metavar="CODE", help="one season's only")
    issues.add_argument("--all", action="store_true", help="everyone's issues of --season")
    issues.add_argument("--page", type=positive_int, default=1, metavar="N")
    submit = command("submit", commands.submit, "submit a bundle (a folder, zipped here, or a .zip) to your issue or a published problem")
    submit.add_argument("path", metavar="PATH", help="the bundle's folder, or a .zip of it")
    submit.add_argument("--issue", required=True, metavar="CODE",
                        help="your issue's code (gpucf issues), or a published problem's (gpucf issues --all)")
    submit.add_argument("--note", default="", metavar="TEXT", help="a line about this version")
    submit.add_argument("--watch", action="store_true", help="follow its judging to the verdict (exit code by verdict)")
    submit.add_argument("--mode", choices=MODES, default="ranked",
                        help="ranked (default: judged, reviewed, ranked); test (correctness only, quick, never ranked); "
                             "benchmark (judged and timed in full, yours alone, never ranked); profile (correctness, "
                             "then each kernel under the GPU's profiler: gpucf profile RUN shows the report)")
    test = command("test", commands.submit, "submit a bundle as a test: correctness trials only, never timed or ranked "
                                          "(gpucf submit --mode test)")
    test.add_argument("path", metavar="PATH", help="the bundle's folder, or a .zip of it")
    test.add_argument("--issue", required=True, metavar="CODE",
                      help="your issue's code (gpucf issues), or a published problem's (gpucf issues --all)")
    test.add_argument("--note", default="", metavar="TEXT", help="a line about this version")
    test.add_argument("--watch", action="store_true", help="follow its judging to the verdict (exit code by verdict)")
    test.set_defaults(mode="test")
    status = command("status", commands.status, "a submission's runs: state, verdict, speedup, flags, reasons")
    status.add_argument("id", type=positive_int, metavar="ID")
    watch = command("watch", commands.watch, "follow a submission's judging to the verdict (Ctrl-C leaves it running)")
    watch.add_argument("id", type=positive_int, metavar="ID")
    cancel = command("cancel", commands.cancel, "cancel a run of yours that no agent has started (queued or waiting)")
    cancel.add_argument("id", type=positive_int, metavar="RUN", help="the run's id (gpucf status lists them)")
    cancel.add_argument("--reason", default="", metavar="TEXT", help="why, if you like (kept in the audit trail)")
    shown = command("profile", commands.profile, "a profile run's report (per kernel: time, launch, occupancy, "
                                                "throughputs, stalls, roofline position), or --request one of a "
                                                "passed run of yours")
    shown.add_argument("id", type=positive_int, metavar="RUN", help="the profile run (with --request: the passed run "
                                                                    "to profile; gpucf status lists runs)")
    shown.add_argument("--request", action="store_true", help="ask for a new profile of passed run RUN, on its GPU "
                                                             "type (never ranked; limited per season)")
    shown.add_argument("--watch", action="store_true", help="with --request: follow it to its report")
    listing = command("list", commands.own_submissions, "your submissions, newest first")
    listing.add_argument("--season", metavar="CODE", help="one season's only")
    listing.add_argument("--page", type=positive_int, default=1, metavar="N")
    board = command("leaderboard", commands.leaderboard, "a season's leaderboard, or its board on one GPU type")
    board.add_argument("season", metavar="SEASON")
    board.add_argument("--gpu", metavar="SLUG", help="a GPU type's board (gpucf seasons lists them)")
    board.add_argument("--page", type=positive_int, default=1, metavar="N")
    shown = command("clarifications", commands.clarifications,
                    "a season's announcements, its questions answered for everyone, and yours with their answers")
    shown.add_argument("season", metavar="SEASON")
    ask = command("ask", commands.ask, "ask a season's organizers a question (only you and they see it, unless they "
                                       "answer it for everyone, without your name)")
    ask.add_argument("season", metavar="SEASON")
    ask.add_argument("question", metavar="QUESTION", help="the question, in quotes; `-` reads it from stdin")
    ask.add_argument("--issue", metavar="CODE", help="the season's issue it is about (else: the rules)")
    return parser


def run(argv):
    args = build_parser().parse_args(argv)
    config = Config().load()
    site = resolve_site(args.site, config)
    context = commands.Context(site=site, config=config, api=Api(site, resolve_token(site, config)),
                               json_output=args.json)
    return args.handler(args, context)


def main(argv=None):
    # a title in Chinese must not end the command on a terminal whose encoding cannot show it
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        code = run(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
        return code
    except outcomes.CommandFailed as exc:
        print(f"gpucf: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gpucf: interrupted", file=sys.stderr)
        return outcomes.INTERRUPTED
    except BrokenPipeError:  # `gpucf list | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return outcomes.PASSED
    except (KeyError, TypeError, AttributeError) as exc:  # an answer of another shape than this gpucf knows
        print(f"gpucf: the site's answer is not what gpucf {__version__} expects ({type(exc).__name__}: {exc}); "
              f"is the site newer or older than this client?", file=sys.stderr)
        return outcomes.UNREACHABLE
