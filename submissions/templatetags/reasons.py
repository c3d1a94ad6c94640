"""`{{ run.result.reason|reason }}`: an agent's or the site's reason in the reader's language
(submissions.agent_reasons); `{{ flag|flag_label }}`, `{{ flag|flag_explanation }}` and
`{{ run.flags|flag_notes }}`: a run's flags in words (submissions.flag_words). Plain text out: the
page escapes it (reasons carry exception messages of submission code)."""
from django import template

from submissions import agent_reasons, flag_words

register = template.Library()


@register.filter
def reason(text):
    return agent_reasons.translate(text)


@register.filter
def flag_label(flag):
    return flag_words.label(flag)


@register.filter
def flag_explanation(flag):
    return flag_words.explanation(flag)


@register.filter
def flag_notes(flags):
    return flag_words.notes(flags)
