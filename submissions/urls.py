from django.urls import path

from submissions import views

urlpatterns = [
    path("issues/<str:code>/", views.issue_detail, name="issue_detail"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission_detail"),
    path("submissions/<int:submission_id>/runs/", views.submission_runs_fragment, name="submission_runs"),
    path("submit/", views.submit, name="submit"),
    path("account/", views.account, name="account"),
    path("account/tokens/", views.create_token, name="create_token"),
    path("accounts/register/", views.register, name="register"),
]
