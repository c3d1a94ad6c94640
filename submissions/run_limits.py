"""The time limits a run is judged under, as the submission page and the API show them to its
contestant: each judged process's compile and run limits (the agent is given them at each start; past
them the verdict is compile_error or timeout), and the site's deadline for a whole judging, from its
agent's start (RUN_DEADLINE_SECONDS: a judging still unfinished then is taken back by the sweeper and
judged again, services/recovery.py)."""
from django.conf import settings


def limits():
    return {"judging_s": settings.RUN_DEADLINE_SECONDS, "compile_s": settings.JUDGE_COMPILE_TIMEOUT_SECONDS,
            "run_s": settings.JUDGE_TIMEOUT_SECONDS}
