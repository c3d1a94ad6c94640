"""Characters refused in what others read as a name or a title: control characters and the invisible
ones that reorder or hide text (U+202E turns "Carol evil" into "Carol live" on the leaderboard; U+200B
makes a second "Alice"). Shared by the forms and the services, so every path refuses the same."""
import unicodedata

from django.utils.translation import gettext as _

HIDDEN_CATEGORIES = {"Cc", "Cf", "Co", "Cs"}


def first_hidden_character(value):
    """The first control, format, private-use or surrogate character of `value`, or None."""
    return next((c for c in value if unicodedata.category(c) in HIDDEN_CATEGORIES), None)


def code_point(character):
    return f"U+{ord(character):04X}"


def refusal(value, what):
    """Why `value` is refused ("`what` must not contain ... (found U+202E)"), or "" when it is fine;
    `what` names the field for the reader, e.g. "an issue's title"."""
    hidden = first_hidden_character(value)
    if hidden is None:
        return ""
    return _("%(what)s must not contain invisible or text-direction characters (found %(code_point)s)") % {
        "what": what, "code_point": code_point(hidden)}
