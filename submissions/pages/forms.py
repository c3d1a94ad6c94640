"""Forms of the contestant pages."""
from django import forms
from django.contrib.auth import get_user_model
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm, SetPasswordForm, UserCreationForm
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables

from submissions.hidden_characters import first_hidden_character
from submissions.models import (ISSUE_DESCRIPTION_MAX_CHARS, SUBMISSION_NOTE_MAX_CHARS, Contestant, Framework, Issue, Season,
                                SubmissionMode)
from submissions.search import SEARCH_MAX_CHARS, bounded_search
from submissions.services import accounts, submitting


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        # Empty files reach the bundle validator, whose message names the file.
        kwargs.setdefault("allow_empty_file", True)
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data]
        return [single(data, initial)] if data else []


def _issue_label(issue):
    label = f"{issue.season.code}/{issue.code} — {issue.title}"
    return f"{label} ({_('published problem')})" if issue.fixed_reference else label


class SubmitForm(forms.Form):
    issue = forms.ModelChoiceField(queryset=Issue.objects.none(), required=False, label=_("Issue"),
                                   empty_label=_("— open a new issue —"),
                                   help_text=_("One of your issues or a published problem, or leave empty to open a "
                                               "new issue below."))
    season = forms.ModelChoiceField(queryset=Season.objects.filter(is_open=True), required=False, label=_("Season"),
                                    help_text=_("Season of the new issue"))
    new_issue_title = forms.CharField(max_length=200, required=False, label=_("New issue title"))
    new_issue_operator = forms.CharField(max_length=200, required=False, label=_("Operator"))
    new_issue_framework = forms.ChoiceField(choices=Framework.choices, initial=Framework.PYTORCH, required=False,
                                            label=_("Framework"))
    files = MultipleFileField(label=_("Files"),
                              help_text=_("torchcode.py, cudacode.py and the rest, or one .zip of the folder"))
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False, label=_("Note"),
                           max_length=SUBMISSION_NOTE_MAX_CHARS)
    mode = forms.ChoiceField(choices=SubmissionMode.choices, initial=SubmissionMode.RANKED, required=False, label=_("Mode"),
                             help_text=_("Ranked: judged in full, reviewed and ranked. Test: correctness trials only, "
                                         "quick, never ranked. Benchmark: judged and timed in full, shown to you and "
                                         "the organizers only, never ranked. Profile: correctness trials, then a "
                                         "report of each kernel under the GPU's profiler, yours alone, never ranked."))

    def __init__(self, *args, contestant=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["issue"].queryset = submitting.issues_open_to(contestant)
        self.fields["issue"].label_from_instance = _issue_label
        open_seasons = self.fields["season"].queryset
        if open_seasons.count() == 1:
            self.fields["season"].initial = open_seasons.first()

    def clean_mode(self):
        return self.cleaned_data.get("mode") or SubmissionMode.RANKED  # a form without the field submits ranked

    def clean(self):
        data = super().clean()
        if not data.get("issue"):
            if not (data.get("new_issue_title") or "").strip():
                self.add_error("new_issue_title", _("Pick one of your issues, or give the new issue a title."))
            if not data.get("season"):
                self.add_error("season", _("Pick the season of the new issue."))
            # the service refuses them too; here the message stands next to the field
            for field, refusal in (("new_issue_title", submitting.issue_title_refusal),
                                   ("new_issue_operator", submitting.issue_operator_refusal)):
                problem = refusal(data.get(field) or "")
                if problem:
                    self.add_error(field, problem)
        return data


def refuse_hidden_characters(value):
    """Refuses what submissions/hidden_characters.py calls hidden, next to the field."""
    hidden = first_hidden_character(value)
    if hidden is not None:
        raise forms.ValidationError(_("Invisible or text-direction characters are not allowed here (found U+%(code)s).")
                                    % {"code": f"{ord(hidden):04X}"}, code="hidden_character")
    return value


def unless_refused(problem, value):
    """`value`, or a service's refusal of it (a message; "" for none) as the field's error."""
    if problem:
        raise forms.ValidationError(problem, code="refused")
    return value


def refuse_a_name_shown_for_another(name, contestant=None):
    """A display name is how the leaderboard tells contestants apart: none may take another's (their
    display name or user name, whatever the case)."""
    others = Contestant.objects.exclude(pk=getattr(contestant, "pk", None))
    other = (others.filter(display_name__iexact=name).first()
             or others.filter(user__username__iexact=name).select_related("user").first())
    if other is not None:
        shown = other.display_name if other.display_name.lower() == name.lower() else other.user.username
        raise forms.ValidationError(_("Another contestant is shown as “%(name)s”; pick a name of your own.")
                                    % {"name": shown}, code="name_taken")
    return name


PR_HOST_NAMES = {"gitee_handle": "Gitee", "gitlink_handle": "GitLink", "github_handle": "GitHub"}


def refuse_a_handle_of_another(field, handle, contestant):
    """A host's webhook submits a pull request for the contestant who has its author's handle
    (services/pr_intake.handle_webhook): none may claim a handle another contestant has, whatever the case."""
    others = Contestant.objects.exclude(pk=getattr(contestant, "pk", None))
    if handle and others.filter(**{f"{field}__iexact": handle}).exists():
        raise forms.ValidationError(
            _("Another contestant has the %(host)s handle “%(handle)s”; if it is yours, ask the organizers.")
            % {"host": PR_HOST_NAMES[field], "handle": handle}, code="handle_taken")
    return handle


class RegisterForm(UserCreationForm):
    display_name = forms.CharField(max_length=100, required=False, label=_("Display name"),
                                   help_text=_("Shown on the leaderboard"))
    affiliation = forms.CharField(max_length=200, required=False, label=_("Affiliation"))
    email = forms.EmailField(required=False, label=_("Email"), help_text=_("For password reset mails"))
    accept_agreement = forms.BooleanField(
        required=True, label=_("I accept the contest agreement"),
        error_messages={"required": _("You must accept the contest agreement to take part.")})

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")

    def clean_display_name(self):
        return refuse_hidden_characters(self.cleaned_data["display_name"].strip())

    def clean_affiliation(self):
        return refuse_hidden_characters(self.cleaned_data["affiliation"].strip())

    def validate_password_for_user(self, user, password_field_name="password1"):
        # Django puts a weak password's errors under the confirmation; they are about the password.
        super().validate_password_for_user(user, password_field_name="password1")

    def clean_email(self):
        email = self.cleaned_data["email"]
        return unless_refused(accounts.email_refusal(email), email)

    def clean(self):
        data = super().clean()
        shown = data.get("display_name") or data.get("username")
        if shown and "display_name" not in self.errors and "username" not in self.errors:
            try:
                refuse_a_name_shown_for_another(shown)
            except forms.ValidationError as exc:
                self.add_error("display_name" if data.get("display_name") else "username", exc)
        return data


class ResetPasswordForm(SetPasswordForm):
    """The password reset's new password, its errors under it (Django's are under the confirmation)."""

    def validate_password_for_user(self, user, password_field_name="new_password1"):
        super().validate_password_for_user(user, password_field_name="new_password1")


class ThrottledLoginMixin:
    """Refuses sign-ins past the failure limits (services/login_throttle.py) before the password is
    checked, and counts each failed one."""

    @sensitive_variables()
    def clean(self):
        from submissions.services import login_throttle

        username = self.cleaned_data.get("username")
        address = login_throttle.client_address(self.request) if self.request is not None else ""
        refused = login_throttle.refusal(username, address)
        if refused:
            raise forms.ValidationError(refused, code="throttled")
        try:
            return super().clean()
        except forms.ValidationError as exc:
            # A wrong password, not a right one refused (an inactive account, a contestant at the admin).
            if self.get_user() is None and "invalid_login" in _codes(exc):
                login_throttle.record_failure(username, address)
            raise


def _codes(error):
    return {e.code for e in getattr(error, "error_list", [error])}


class ThrottledAuthenticationForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass


class ProfileForm(forms.ModelForm):
    class Meta:
        model = Contestant
        fields = ("display_name", "affiliation", "gitee_handle", "gitlink_handle", "github_handle")
        labels = {"display_name": _("Display name"), "affiliation": _("Affiliation"),
                  "gitee_handle": _("Gitee handle"), "gitlink_handle": _("GitLink handle"),
                  "github_handle": _("GitHub handle")}

    def clean_display_name(self):
        name = self.cleaned_data["display_name"].strip()
        if not name:
            raise forms.ValidationError(_("The display name must not be empty."))
        return refuse_a_name_shown_for_another(refuse_hidden_characters(name), self.instance)

    def clean_affiliation(self):
        return refuse_hidden_characters(self.cleaned_data["affiliation"].strip())

    def clean_gitee_handle(self):
        return refuse_a_handle_of_another("gitee_handle", self.cleaned_data["gitee_handle"], self.instance)

    def clean_gitlink_handle(self):
        return refuse_a_handle_of_another("gitlink_handle", self.cleaned_data["gitlink_handle"], self.instance)

    def clean_github_handle(self):
        return refuse_a_handle_of_another("github_handle", self.cleaned_data["github_handle"], self.instance)


class PullRequestForm(forms.Form):
    pr_url = forms.URLField(label=_("Pull request URL"), max_length=500, assume_scheme="https",
                            help_text=_("A pull request on Gitee, GitLink or GitHub that adds S1/<issue code>/"))
    issue = forms.ModelChoiceField(queryset=Issue.objects.none(), required=False, label=_("Issue"),
                                   empty_label=_("— every folder of my issues in the PR —"))

    def __init__(self, *args, contestant=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["issue"].queryset = submitting.issues_open_to(contestant)
        self.fields["issue"].label_from_instance = _issue_label


LEVEL_CHOICES = [("", "—"), (1, _("1: one operator")), (2, _("2: 2-9 fused operators")), (3, _("3: fused with MMA")),
                 (4, _("4: complex fused operator for LLM inference"))]


class IssueForm(forms.Form):
    season = forms.ModelChoiceField(queryset=Season.objects.filter(is_open=True), empty_label=None, label=_("Season"))
    title = forms.CharField(max_length=200, label=_("Title"),
                            help_text=_("What the task is, e.g. 对001-example数据集进行性能优化"))
    operator = forms.CharField(max_length=200, required=False, label=_("Operator"),
                               help_text=_("e.g. torch.nn.functional.gelu"))
    framework = forms.ChoiceField(choices=Framework.choices, initial=Framework.PYTORCH, label=_("Framework"))
    level = forms.TypedChoiceField(choices=LEVEL_CHOICES, coerce=int, empty_value=None, required=False,
                                   label=_("Claimed level"))
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), required=False, label=_("Description"),
                                  max_length=ISSUE_DESCRIPTION_MAX_CHARS,
                                  help_text=_("Expected result, how to verify it, background"))

    def clean_title(self):
        title = self.cleaned_data["title"]
        return unless_refused(submitting.issue_title_refusal(title), title)

    def clean_operator(self):
        operator = self.cleaned_data["operator"]
        return unless_refused(submitting.issue_operator_refusal(operator), operator)


class IssueFilterForm(forms.Form):
    q = forms.CharField(required=False, label=_("Search"),
                        widget=forms.SearchInput(attrs={"maxlength": SEARCH_MAX_CHARS}))
    season = forms.ModelChoiceField(queryset=Season.objects.all(), required=False, to_field_name="code",
                                    label=_("Season"), empty_label=_("any season"))
    framework = forms.ChoiceField(choices=[("", _("any framework"))] + list(Framework.choices), required=False,
                                  label=_("Framework"))
    level = forms.TypedChoiceField(choices=[("", _("any level"))] + LEVEL_CHOICES[1:], coerce=int, empty_value=None,
                                   required=False, label=_("Level"))
    mine = forms.BooleanField(required=False, label=_("only mine"))

    def __init__(self, data=None, *args, **kwargs):
        # A longer search is cut before the form sees it: searched, and shown in the box, as cut.
        self.search_cut = False
        if data is not None and "q" in data:
            data = data.copy()
            data["q"], self.search_cut = bounded_search(data["q"])
        super().__init__(data, *args, **kwargs)
