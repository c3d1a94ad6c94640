"""`{{ file|render_bundle_file }}`: a bundle file as safe HTML — sanitized markdown for readme.md and
prompt.txt, highlighted code for the rest."""
from django import template
from django.utils.safestring import mark_safe

from submissions.highlighting import highlighted
from submissions.markdown_render import is_markdown_file, render_markdown

register = template.Library()


@register.filter
def render_bundle_file(bundle_file):
    if is_markdown_file(bundle_file.path):
        return mark_safe(f'<div class="markdown">{render_markdown(bundle_file.content)}</div>')
    return mark_safe(highlighted(bundle_file.path, bundle_file.content))
