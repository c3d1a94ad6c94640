"""The text of the site's search boxes (season and GPU leaderboards, issues), bounded: the boxes take
SEARCH_MAX_CHARS characters (`maxlength`), and a longer `?q=` (a pasted address) is cut to them and
searched, with a notice, never refused."""
from django.contrib import messages
from django.utils.translation import gettext as _

SEARCH_MAX_CHARS = 100


def bounded_search(text):
    """(`text` stripped and cut to SEARCH_MAX_CHARS, whether it was cut)."""
    text = (text or "").strip()
    if len(text) <= SEARCH_MAX_CHARS:
        return text, False
    return text[:SEARCH_MAX_CHARS].rstrip(), True


def notify_cut(request):
    """Tells the reader, at the top of the page being rendered, that their search was cut."""
    messages.info(request, _("Searches are at most %(limit)s characters long: yours was cut to its first "
                             "%(limit)s.") % {"limit": SEARCH_MAX_CHARS}, extra_tags="search-cut")
