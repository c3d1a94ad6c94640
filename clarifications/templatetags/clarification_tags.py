"""`{% season_announcements season %}`: the season's latest announcements, for the season's public pages;
`{{ text|organizer_markdown }}`: an organizer's answer or announcement as sanitized markdown."""
from django import template
from django.utils.safestring import mark_safe

from clarifications import selectors
from submissions.markdown_render import render_markdown

register = template.Library()


@register.filter
def organizer_markdown(text):
    return mark_safe(f'<div class="markdown">{render_markdown(text)}</div>')


@register.inclusion_tag("clarifications/_announcements.html")
def season_announcements(season, count=selectors.LEADERBOARD_ANNOUNCEMENTS):
    """The newest `count` announcements in force, with a link to them all and the clarifications."""
    shown = list(selectors.announcements(season)[:count + 1])
    return {"season": season, "announcements": shown[:count], "more": len(shown) > count}
