from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from leaderboard import views as public
from leaderboard.api import api
from submissions import views as contest

urlpatterns = [
    path("", public.home, name="home"),
    path("seasons/<str:code>/", public.season_detail, name="season_detail"),
    path("seasons/<str:code>/leaderboard/", public.season_leaderboard, name="season_leaderboard"),
    path("issues/<str:code>/", contest.issue_detail, name="issue_detail"),
    path("submissions/<int:submission_id>/", contest.submission_detail, name="submission_detail"),
    path("submissions/<int:submission_id>/runs/", contest.submission_runs_fragment, name="submission_runs"),
    path("submit/", contest.submit, name="submit"),
    path("account/", contest.account, name="account"),
    path("account/tokens/", contest.create_token, name="create_token"),
    path("accounts/register/", contest.register, name="register"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
