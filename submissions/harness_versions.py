"""Harness versions as the agents report them ("1", "1.2", "1.2.3") and a season's minimum.

The site never imports the agent package: the format is the contract (profiler_agent.HARNESS_VERSION).
Versions compare numerically part by part, missing parts counting as 0 ("1.10" > "1.9", "1" == "1.0").
"""
import re

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

# ASCII digits alone: `\d` and int() also read fullwidth and other scripts' digits ("９.０" would be 9.0)
VERSION_PATTERN = re.compile(r"\d{1,6}(\.\d{1,6}){0,2}", re.ASCII)


def parse(text):
    """(major, minor, patch), or None when the text is not a harness version."""
    text = (text or "").strip()
    if not VERSION_PATTERN.fullmatch(text):
        return None
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def validate(text):
    """The field validator of Season.min_harness_version (blank is allowed by the field: any version)."""
    if text and parse(text) is None:
        raise ValidationError(_("%(value)s is not a harness version: use numbers and dots, e.g. 1.2 or 1.2.3"),
                              params={"value": text}, code="invalid")


def is_below(version, minimum):
    """Whether `version` fails `minimum`: a blank minimum admits anything, an unreadable or missing
    version fails any minimum (the site cannot tell which rules that agent measures with)."""
    wanted = parse(minimum)
    if wanted is None:
        return False
    found = parse(version)
    return found is None or found < wanted
