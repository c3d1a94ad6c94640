"""The site's HTTP API (/api/v1/): one NinjaAPI joining the domain routers and the public one."""
import json

from django.utils.translation import gettext as _
from ninja import NinjaAPI, Swagger
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from clarifications.api import clarifications_organizer_router, clarifications_router
from leaderboard.api import public_router
from submissions.api.agent import agent_router
from submissions.api.benchmarks import benchmark_router
from submissions.api.contestant import contestant_router
from submissions.api.datasets import organizer_router, published_router
from submissions.api.profiles import profile_router
from submissions.api.season_access import season_access_router

def _refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


class StrictJsonParser(Parser):
    """JSON as the standard has it: NaN and Infinity (which Python's json reads) are refused with 400,
    as PostgreSQL's JSON columns would refuse them with a server error."""

    def parse_body(self, request):
        return json.loads(request.body, parse_constant=_refuse_constant)


api = NinjaAPI(title="GPU CodeForces API", version="1", urls_namespace="api", parser=StrictJsonParser(),
               # No validator badge: the docs page asks nothing of any other host.
               docs=Swagger(settings={"validatorUrl": None}),
               description="Agents report runs; contestants submit bundles; everyone reads leaderboards. "
                           "Every error answer is JSON with a `detail` naming the problem.")


@api.exception_handler(AuthenticationError)
def on_auth_error(request, exc):
    return api.create_response(request, {"detail": _("missing or invalid bearer token")}, status=401)


@api.exception_handler(ValidationError)
def on_validation_error(request, exc):
    problems = []
    for error in exc.errors:
        where = ".".join(str(p) for p in error.get("loc", []) if p not in ("body", "payload"))
        problems.append(f"{where}: {error.get('msg')}" if where else str(error.get("msg")))
    return api.create_response(request, {"detail": _("invalid request: %(problems)s") % {"problems": "; ".join(problems)},
                                         "errors": exc.errors},
                               status=422)


@api.exception_handler(HttpError)
def on_http_error(request, exc):
    body = {"detail": str(exc)}
    if exc.status_code == 422:  # as documented for every 422 (ValidationErrorOut): the problems listed too
        body["errors"] = [{"msg": str(exc), "type": "value_error"}]
    return api.create_response(request, body, status=exc.status_code)


api.add_router("/agent", agent_router)
api.add_router("/", contestant_router)
api.add_router("/", profile_router)
# before the organizers' routes: /datasets/published is no export number
api.add_router("/", published_router)
api.add_router("/", organizer_router)
api.add_router("/", season_access_router)
api.add_router("/", benchmark_router)
api.add_router("/", clarifications_router)
api.add_router("/", clarifications_organizer_router)
api.add_router("/", public_router)
