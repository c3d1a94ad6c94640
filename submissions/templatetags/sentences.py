"""A service's refusal shown on a page as a sentence. The services word their refusals as clauses (the
API's `detail` and the commands print them so); a page that shows one next to its form starts it with
a capital and ends it with a full stop, as the pages' own messages are written."""
from django import template
from django.utils.text import capfirst
from django.utils.translation import get_language

register = template.Library()

ENDINGS = (".", "!", "?", "。", "！", "？", "…")


@register.filter
def sentence(text):
    text = str(text or "").strip()
    if not text:
        return ""
    stop = "。" if (get_language() or "").startswith("zh") else "."
    return capfirst(text) if text.endswith(ENDINGS) else f"{capfirst(text)}{stop}"
