"""`{% organizer_cancellation run as why %}`: the reason an organizer cancelled a run, for its contestant's
page (services/cancelling.organizer_reason); None otherwise. Asked only of cancelled runs."""
from django import template

from submissions.services import cancelling

register = template.Library()


@register.simple_tag
def organizer_cancellation(run):
    return cancelling.organizer_reason(run)
