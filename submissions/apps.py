from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Contest"

    def ready(self):
        from submissions import board_versions, checks  # noqa: F401  (checks: registers the system checks)

        board_versions.connect()
        from submissions.services import agent_redis

        agent_redis.connect()
