"""Pull-request intake pages: paste a PR URL, and the hosts' webhook endpoint."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from submissions.pages.forms import PullRequestForm
from submissions.pull_requests import PullRequestError
from submissions.services import accounts, pr_intake, submitting


@login_required
def submit_pull_request(request):
    contestant = accounts.contestant_for(request.user)
    form = PullRequestForm(request.POST or None, contestant=contestant)
    if request.method == "POST" and form.is_valid():
        try:
            created = pr_intake.submit_pull_request(contestant, form.cleaned_data["pr_url"],
                                                    issue=form.cleaned_data["issue"])
        except (PullRequestError, submitting.SubmissionRefused) as exc:
            form.add_error(None, str(exc))
        else:
            if not created:
                form.add_error(None, _("Nothing new to judge: this commit of the pull request was already submitted, or "
                                       "its folders hold exactly the files of your earlier submissions to their "
                                       "issues. Push a commit that changes them."))
            else:
                listed = ", ".join(f"#{s.pk} ({s.issue.code})" for s in created)
                # one submission: its page removes the message once it is judged (not so for several)
                messages.success(request, _("Submitted from the pull request: %(submissions)s; queued for judging.")
                                 % {"submissions": listed}, extra_tags="judging" if len(created) == 1 else "")
                return redirect("submission_detail", submission_id=created[0].pk)
    return render(request, "submissions/submit_pr.html", {"form": form})


@csrf_exempt
@require_POST
def webhook(request, host):
    try:
        queued, detail = pr_intake.handle_webhook(host, request.headers, request.body)
    except pr_intake.WebhookRefused as exc:
        return JsonResponse({"detail": str(exc)}, status=403)
    except (PullRequestError, submitting.SubmissionRefused) as exc:
        # The host shows this in its delivery log; the contestant sees it on the PR's next reply.
        return JsonResponse({"detail": str(exc)}, status=422)
    return JsonResponse({"detail": detail, "queued": queued}, status=202 if queued else 200)
