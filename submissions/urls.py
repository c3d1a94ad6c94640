from django.urls import path

from submissions import organizer_views, views

urlpatterns = [
    path("issues/<str:code>/", views.issue_detail, name="issue_detail"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission_detail"),
    path("submissions/<int:submission_id>/runs/", views.submission_runs_fragment, name="submission_runs"),
    path("submit/", views.submit, name="submit"),
    path("account/", views.account, name="account"),
    path("account/tokens/", views.create_token, name="create_token"),
    path("accounts/register/", views.register, name="register"),
    # The organizer console.
    path("organizer/", organizer_views.review_queue, name="organizer_queue"),
    path("organizer/submissions/<int:submission_id>/", organizer_views.review_page, name="organizer_review"),
    path("organizer/submissions/<int:submission_id>/review/", organizer_views.review_submit, name="organizer_review_submit"),
    path("organizer/submissions/<int:submission_id>/rejudge/", organizer_views.rejudge_submission,
         name="organizer_rejudge_submission"),
    path("organizer/issues/<str:code>/rejudge/", organizer_views.rejudge_issue, name="organizer_rejudge_issue"),
    path("organizer/seasons/<str:code>/rejudge/", organizer_views.rejudge_season, name="organizer_rejudge_season"),
    path("organizer/rejudges/<int:rejudge_id>/", organizer_views.rejudge_progress, name="organizer_rejudge"),
    path("organizer/export/<str:kind>.csv", organizer_views.export_csv, name="organizer_export"),
]
