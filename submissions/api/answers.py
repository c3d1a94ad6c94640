"""The HTTP API's shared parts: the error answers every operation documents. The operations are in
agent.py (agents: heartbeats, runs), contestant.py (issues, submissions, pull requests),
benchmarks.py and datasets.py beside it; config/api.py mounts them under /api/v1/."""
from typing import List

from ninja import Schema


class ErrorOut(Schema):
    detail: str


class ValidationErrorOut(ErrorOut):
    """422: `detail` names each field and its problem; `errors` has pydantic's list of them."""
    errors: List[dict]


class OkOut(Schema):
    ok: bool
    detail: str = ""


def answers(ok, *errors):
    """An operation's documented responses: `ok` ({status: schema}) and the error statuses it may give,
    each with a `detail`. 400 is on every one: the address had a NUL (config.middleware)."""
    documented = dict(ok)
    for status in sorted({400, *errors}):
        documented.setdefault(status, ValidationErrorOut if status == 422 else ErrorOut)
    return documented
