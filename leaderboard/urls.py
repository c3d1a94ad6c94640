"""The public pages: home, seasons, leaderboards, hardware comparison, contestants."""
from django.urls import path

from leaderboard import freeze_controls, version_pages, views as public

urlpatterns = [
    path("", public.home, name="home"),
    path("seasons/<str:code>/", public.season_detail, name="season_detail"),
    path("seasons/<str:code>/leaderboard/", public.season_leaderboard, name="season_leaderboard"),
    path("seasons/<str:code>/hardware/", public.hardware_comparison, name="hardware_comparison"),
    path("seasons/<str:code>/gpus/<slug:slug>/", public.gpu_leaderboard, name="gpu_leaderboard"),
    path("contestants/<int:contestant_id>/", public.contestant_detail, name="contestant_detail"),
    path("submissions/<int:submission_id>/charts/", public.submission_charts, name="submission_charts"),
    # one's own versions of an issue, with their chart (the charts live here, not in the domain)
    path("issues/<str:code>/versions/", version_pages.own_versions, name="issue_versions"),
    # the freeze control of the organizers' season settings page (submissions/pages/season_settings.py)
    path("organizer/seasons/<str:code>/settings/freeze/", freeze_controls.change_freeze, name="organizer_season_freeze"),
]
