"""A contest to submit to, made in the database that DATABASE_URL names (after `manage.py migrate`):
season S1 judged on the CPU (no second judging), contestants alice and bob, each with a personal API
token and an issue, and a trusted agent (named AGENT) granted the CPU type. Prints what it made as JSON:

    python -m live_platform.seed_contest AGENT   # {"tokens": {...}, "issues": {...}, "agent_token", "queue"}
"""
import json
import os
import sys


def seed(agent_name):
    from submissions.models import Agent, GpuType, Season
    from submissions.services import accounts, submitting

    season = Season.objects.create(code="S1", name="Season one", second_judging="off")
    cpu = GpuType.objects.create(slug="cpu", name="CPU")
    season.gpu_types.add(cpu)
    made = {"tokens": {}, "issues": {}}
    for username, display_name in (("alice", "Alice"), ("bob", "Bob")):
        contestant = accounts.register_contestant(username, f"pw-{username}-123", display_name=display_name)
        made["tokens"][username] = accounts.create_api_token(contestant)[1]
        made["issues"][username] = submitting.open_issue(season, contestant, title=f"{display_name}'s ReLU",
                                                         operator="torch.relu").code
    agent, made["agent_token"] = accounts.create_agent(agent_name, [cpu])
    Agent.objects.filter(pk=agent.pk).update(trusted=True)
    made["queue"] = cpu.queue_name
    return made


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    print(json.dumps(seed(sys.argv[1])))
