"""Password validation as the site configures it (settings.AUTH_PASSWORD_VALIDATORS)."""
from django.contrib.auth import password_validation
from django.utils.translation import ngettext


class MinimumLengthValidator(password_validation.MinimumLengthValidator):
    """Django's, with its refusal in this site's catalog: Django 5.2 says it with `%d` while its own
    Chinese catalog still holds the older `%(min_length)d` text, so Chinese readers were told in English."""

    def get_error_message(self):
        return ngettext("This password is too short. It must contain at least %(min_length)d character.",
                        "This password is too short. It must contain at least %(min_length)d characters.",
                        self.min_length) % {"min_length": self.min_length}
