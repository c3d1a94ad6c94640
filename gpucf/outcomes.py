"""Exit codes, and the errors that end a command with one of them (docs/contestants.md lists them).

A verdict command (`status`, `watch`, `submit --watch`) exits by the current run of each GPU type:
0 when every one passed, 1 when one ended otherwise, and `status` 6 while one is still unfinished.
"""
PASSED = 0
RUN_FAILED = 1  # a current run ended wrong_answer, compile_error, runtime_error, timeout, ... (not passed)
USAGE = 2  # a bad argument, or a request the site refused as wrong (400, 404, 409, 413, 422)
AUTH = 3  # not logged in, a token the site refused (401, 403), an unreadable config file
UNREACHABLE = 4  # the site did not answer, answered a server error (5xx), or is not a GPU CodeForces site
RATE_LIMITED = 5  # 429: too many submissions or issues for now; the message says when to retry
STILL_JUDGING = 6  # `status` only: a current run is not done yet
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)


class CommandFailed(Exception):
    """Ends the command: `message` goes to stderr on one line, and the process exits with `exit_code`."""

    exit_code = USAGE

    def __init__(self, message, exit_code=None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(CommandFailed):
    exit_code = USAGE


class AuthError(CommandFailed):
    exit_code = AUTH


class Unreachable(CommandFailed):
    exit_code = UNREACHABLE


class RateLimited(CommandFailed):
    exit_code = RATE_LIMITED

    def __init__(self, message, retry_after_s=None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Interrupted(CommandFailed):
    exit_code = INTERRUPTED


def current_runs(submission):
    """The run whose verdict the submission shows on each GPU type (the API's `current`)."""
    return [run for run in submission.get("runs", []) if run.get("current", True)]


def is_finished(submission):
    return all(run["status"] == "done" for run in current_runs(submission))


def for_verdicts(submission):
    """0 when every current run passed, 1 when one ended otherwise (or none judges it), 6 while one is
    unfinished."""
    runs = current_runs(submission)
    if not runs:
        return RUN_FAILED
    if not is_finished(submission):
        return STILL_JUDGING
    return PASSED if all(run["verdict"] == "passed" for run in runs) else RUN_FAILED
