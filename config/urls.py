from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.i18n import set_language

from config.api import api
from submissions.pages.forms import ThrottledAuthenticationForm

urlpatterns = [
    # The language is a display preference: another site that switches it changes nothing the visitor
    # owns, and without a token in the header the public pages set no CSRF cookie and draw no secret.
    path("i18n/setlang/", csrf_exempt(set_language), name="set_language"),
    path("accounts/login/", auth_views.LoginView.as_view(authentication_form=ThrottledAuthenticationForm), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("", include("leaderboard.urls")),
    path("", include("submissions.urls")),
    path("", include("clarifications.urls")),
]

handler500 = "leaderboard.views.server_error"
