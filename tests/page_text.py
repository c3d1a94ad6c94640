"""Looking for a name in a page. A bare substring test also finds it inside the page's random text: a
CSRF token holding "...CocqBobyCY..." once failed `"Bob" not in page`."""
import re


def shows(page: str, word: str) -> bool:
    """Whether `word` is in `page` on its own, not inside a longer run of ASCII letters and digits (a
    token, an id); next to Chinese text or markup it still counts."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", page) is not None
