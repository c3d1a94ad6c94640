from django.contrib.auth import views as auth_views
from django.urls import path

from submissions import account_views, organizer_views, pr_views, views

urlpatterns = [
    path("issues/", views.issue_list, name="issue_list"),
    path("issues/new/", views.open_issue, name="open_issue"),
    path("issues/<str:code>/", views.issue_detail, name="issue_detail"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission_detail"),
    path("submissions/<int:submission_id>/runs/", views.submission_runs_fragment, name="submission_runs"),
    path("submit/", views.submit, name="submit"),
    path("submit/pull-request/", pr_views.submit_pull_request, name="submit_pull_request"),
    path("webhooks/<str:host>/", pr_views.webhook, name="pr_webhook"),
    path("account/", account_views.account, name="account"),
    path("account/agreement/", account_views.agreement, name="agreement"),
    path("account/tokens/", account_views.create_token, name="create_token"),
    path("account/tokens/<int:token_id>/revoke/", account_views.revoke_token, name="revoke_token"),
    path("accounts/register/", account_views.register, name="register"),
    path("accounts/password_reset/", auth_views.PasswordResetView.as_view(), name="password_reset"),
    path("accounts/password_reset/done/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    # The organizer console.
    path("organizer/", organizer_views.review_queue, name="organizer_queue"),
    path("organizer/submissions/<int:submission_id>/", organizer_views.review_page, name="organizer_review"),
    path("organizer/submissions/<int:submission_id>/review/", organizer_views.review_submit, name="organizer_review_submit"),
    path("organizer/submissions/<int:submission_id>/rejudge/", organizer_views.rejudge_submission,
         name="organizer_rejudge_submission"),
    path("organizer/runs/<int:run_id>/clear-timing/", organizer_views.clear_run_timing,
         name="organizer_clear_timing"),
    path("organizer/runs/<int:run_id>/cancel/", organizer_views.cancel_run, name="organizer_cancel_run"),
    path("organizer/issues/<str:code>/rejudge/", organizer_views.rejudge_issue, name="organizer_rejudge_issue"),
    path("organizer/seasons/<str:code>/rejudge/", organizer_views.rejudge_season, name="organizer_rejudge_season"),
    path("organizer/rejudges/<int:rejudge_id>/", organizer_views.rejudge_progress, name="organizer_rejudge"),
    path("organizer/fleet/", organizer_views.fleet_page, name="organizer_fleet"),
    path("organizer/fleet.json", organizer_views.fleet_json, name="organizer_fleet_json"),
    path("organizer/fleet/workers/<int:worker_id>/drain/", organizer_views.drain_worker, name="organizer_drain_worker"),
    path("organizer/fleet/workers/<int:worker_id>/resume/", organizer_views.resume_worker,
         name="organizer_resume_worker"),
    path("organizer/export/<str:kind>.csv", organizer_views.export_csv, name="organizer_export"),
]
