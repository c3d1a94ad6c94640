"""The site's URLs plus one view that fails, for the tests of the 500 page and the API's 500 answer (ROOT_URLCONF in that test only)."""
from django.urls import path

from config.urls import handler500, urlpatterns as site_urlpatterns  # noqa: F401  (Django reads handler500 here)


def fail(request):
    raise RuntimeError("a failure the 500 page's test provokes")


urlpatterns = [path("test-only/server-error/", fail), path("api/v1/test-only/server-error/", fail), *site_urlpatterns]
