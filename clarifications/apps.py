from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ClarificationsConfig(AppConfig):
    name = "clarifications"
    verbose_name = _("Clarifications")
