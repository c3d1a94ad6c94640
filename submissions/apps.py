from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Contest"

    def ready(self):
        from submissions import checks  # noqa: F401  (registers the system checks)
