"""How long an organizer's reason may be. Every organizer write keeps its reason in the audit trail and
shows it on pages (the access page's tables, the rejudge list, a review's runs); the API refuses a
longer one (422), and each service refuses it too, so a page, the API and a command take the same."""
from django.utils.translation import gettext as _

REASON_MAX_CHARS = 2000


def too_long(reason):
    """Why the reason is refused for its length ("" when it is not): its service raises it as its refusal."""
    length = len((reason or "").strip())
    if length <= REASON_MAX_CHARS:
        return ""
    return (_("a reason is at most %(most)s characters (this one has %(count)s): keep it short, the audit trail "
              "shows it on every page it concerns") % {"most": REASON_MAX_CHARS, "count": length})
