"""A bundle's readme.md and prompt.txt as sanitized HTML: markdown rendered, then cleaned by an allowlist.

No script, event handler, style or `javascript:` link survives; links get rel="noopener noreferrer nofollow".
"""
import markdown
import nh3

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "img", "li", "ol", "p", "pre", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "td": {"align"}, "th": {"align"},
                      "code": {"class"}}
MARKDOWN_FILES = ("readme.md", "prompt.txt")


def render_markdown(text: str) -> str:
    html = markdown.markdown(text, extensions=["fenced_code", "tables", "sane_lists"], output_format="html")
    return nh3.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes={"http", "https", "mailto"},
                     link_rel="noopener noreferrer nofollow")


def is_markdown_file(path: str) -> bool:
    return path.rsplit("/", 1)[-1].lower() in MARKDOWN_FILES
