"""A bundle's readme.md and prompt.txt as sanitized HTML: markdown rendered, then cleaned by an allowlist.

No script, event handler, style or `javascript:` link survives; links get rel="noopener noreferrer nofollow".

An image is shown only from the site's own static files. Any other source would be fetched by every
visitor's browser from wherever its author chose (a remote one: a tracker; a relative one: a 404 on each
page that shows it), so a remote image becomes a link to it, named by its alt text, and a relative one
its alt text alone.
"""
import re
from html import unescape
from urllib.parse import urlsplit

import markdown
import nh3
from django.conf import settings
from django.utils.html import format_html

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "img", "li", "ol", "p", "pre", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "td": {"align"}, "th": {"align"},
                      "code": {"class"}}
MARKDOWN_FILES = ("readme.md", "prompt.txt")


LINK_REL = "noopener noreferrer nofollow"
IMG = re.compile(r"<img\b[^>]*>")
ATTRIBUTE = re.compile(r'([a-z]+)="([^"]*)"')
ANCHOR_OPEN, ANCHOR_CLOSE = re.compile(r"<a\b"), re.compile(r"</a>")


def render_markdown(text: str) -> str:
    html = markdown.markdown(text, extensions=["fenced_code", "tables", "sane_lists"], output_format="html")
    clean = nh3.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes={"http", "https", "mailto"},
                      link_rel=LINK_REL)
    return IMG.sub(lambda found: _image(found, clean), clean)


def _own_static(src):
    parts = urlsplit(src)
    return not parts.scheme and not parts.netloc and parts.path.startswith(settings.STATIC_URL) and ".." not in src


def _image(found, html):
    """An image of the site's static files as it is; another a link to it (its alt text alone inside a
    link already, or for a relative source, which would only 404)."""
    attributes = {name: unescape(value) for name, value in ATTRIBUTE.findall(found.group(0))}
    src, alt = attributes.get("src", ""), attributes.get("alt", "").strip()
    if _own_static(src):
        return found.group(0)
    before = html[:found.start()]
    in_link = len(ANCHOR_OPEN.findall(before)) > len(ANCHOR_CLOSE.findall(before))
    if in_link or urlsplit(src).scheme not in ("http", "https"):
        return format_html("{}", alt)
    return format_html('<a href="{}" rel="{}">{}</a>', src, LINK_REL, alt or src)


def is_markdown_file(path: str) -> bool:
    return path.rsplit("/", 1)[-1].lower() in MARKDOWN_FILES
