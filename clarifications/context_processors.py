"""The header's clarifications link for signed-in readers, read only when a page draws the header."""
from django.utils.functional import SimpleLazyObject

from clarifications import selectors


def notices(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"clarification_notices": SimpleLazyObject(lambda: selectors.notices(user))}
