"""The clarifications pages: a season's, and the organizers'."""
from django.urls import path

from clarifications import pages

urlpatterns = [
    path("seasons/<str:code>/clarifications/", pages.season_clarifications, name="season_clarifications"),
    path("seasons/<str:code>/clarifications/ask/", pages.ask, name="season_ask"),
    path("organizer/clarifications/", pages.organizer_page, name="organizer_clarifications"),
    path("organizer/clarifications/<int:clarification_id>/answer/", pages.answer, name="organizer_answer_clarification"),
    path("organizer/announcements/", pages.announce, name="organizer_announce"),
    path("organizer/announcements/<int:announcement_id>/withdraw/", pages.withdraw,
         name="organizer_withdraw_announcement"),
]
