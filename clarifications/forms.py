"""The forms of the clarifications pages: a contestant's question, an organizer's answer and announcement."""
from django import forms
from django.utils.translation import gettext_lazy as _

from clarifications.models import ANNOUNCEMENT_MAX_CHARS, ANSWER_MAX_CHARS, QUESTION_MAX_CHARS
from submissions.models import Issue, Season

REASON_MAX_CHARS = 500
PRIVATE, PUBLIC = "private", "public"


def _reason():
    # the same words as every other organizer form's reason, not Django's bare "This field is required."
    return forms.CharField(label=_("Reason"), max_length=REASON_MAX_CHARS,
                           error_messages={"required": _("Say why: the reason is kept in the audit trail.")},
                           widget=forms.TextInput(attrs={"placeholder": _("reason (kept in the audit trail)")}))


class AskForm(forms.Form):
    question = forms.CharField(label=_("Your question"), max_length=QUESTION_MAX_CHARS,
                               widget=forms.Textarea(attrs={"rows": 4}),
                               help_text=_("Only you and the organizers see it. If they answer it for everyone, "
                                           "it is shown without your name."))
    issue = forms.CharField(label=_("Issue (optional)"), required=False, max_length=Issue._meta.get_field("code").max_length,
                            help_text=_("The code of the season's issue the question is about; leave it empty for a "
                                        "question about the rules."))


class AnswerForm(forms.Form):
    answer = forms.CharField(label=_("Answer"), max_length=ANSWER_MAX_CHARS, widget=forms.Textarea(attrs={"rows": 4}),
                             help_text=_("Markdown."))
    visibility = forms.ChoiceField(label=_("Who sees it"), widget=forms.RadioSelect, initial=PRIVATE,
                                   choices=[(PRIVATE, _("the asker alone")),
                                            (PUBLIC, _("everyone, without the asker's name"))])
    reason = _reason()

    @property
    def public(self):
        return self.cleaned_data["visibility"] == PUBLIC


class AnnouncementForm(forms.Form):
    season = forms.ModelChoiceField(label=_("Season"), queryset=Season.objects.order_by("-starts_at", "-pk"),
                                    to_field_name="code", empty_label=None)
    text = forms.CharField(label=_("Announcement"), max_length=ANNOUNCEMENT_MAX_CHARS,
                           widget=forms.Textarea(attrs={"rows": 4}),
                           help_text=_("Markdown. Shown to everyone on the season's page and leaderboard, newest first."))
    reason = _reason()
