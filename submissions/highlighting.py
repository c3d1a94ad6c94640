"""Server-side syntax highlighting of bundle files (Pygments; nothing from a CDN)."""
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

_FORMATTER = HtmlFormatter(cssclass="hl", linenos="table")


def highlighted(path, text):
    """Safe HTML of the file (Pygments escapes the text)."""
    try:
        lexer = get_lexer_for_filename(path, stripnl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False)
    return highlight(text, lexer, _FORMATTER)


def stylesheet():
    return _FORMATTER.get_style_defs(".hl")
