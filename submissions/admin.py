import json

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from submissions import board_versions, models
from submissions.pages.forms import ThrottledAdminAuthenticationForm
from submissions.rules import ranking, weights
from submissions.services import accounts, audit, fleet, seasons, standings, weighting

# The admin's sign-in counts and refuses failures as the site's does (services/login_throttle.py).
admin.site.login_form = ThrottledAdminAuthenticationForm


class AccountChangeForm(UserChangeForm):
    def clean_email(self):
        email = self.cleaned_data.get("email", "")
        refused = accounts.email_refusal(email, account=self.instance)
        if refused:
            raise ValidationError(refused)
        return email


# An address another account has is a form error here too, not the database's refusal as a 500.
admin.site.unregister(get_user_model())


@admin.register(get_user_model())
class AccountAdmin(UserAdmin):
    form = AccountChangeForm


@admin.register(models.GpuType)
class GpuTypeAdmin(admin.ModelAdmin):
    list_display = ("slug", "name")


@admin.register(models.Season)
class SeasonAdmin(admin.ModelAdmin):
    list_display = ("code", "name", "ranking_rule", "rubric", "second_judging", "is_open", "starts_at", "ends_at")
    filter_horizontal = ("gpu_types",)

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        # Organizers see which settings each rule takes, next to the JSON they type.
        form.base_fields["ranking_settings"].help_text = format_html(
            "{}<ul>{}</ul>", form.base_fields["ranking_settings"].help_text,
            format_html_join("", "<li><code>{}</code> ({}): <code>{}</code>, {} <code>{}</code>. {}</li>",
                             ((name, label, s.key, _("default"), json.dumps(s.default), s.help)
                              for name, label, spec in ranking.settings_catalog() for s in spec)))
        return form

    def save_model(self, request, obj, form, change):
        """The rule and its settings (validated by Season.clean) go through the service, which audits
        the change and re-ranks the standings."""
        ranking = (obj.ranking_rule, obj.ranking_settings)
        weight_rule = (obj.dataset_weight_rule, obj.dataset_weight_settings)
        if change:
            (obj.ranking_rule, obj.ranking_settings, obj.dataset_weight_rule,
             obj.dataset_weight_settings) = models.Season.objects.values_list(
                "ranking_rule", "ranking_settings", "dataset_weight_rule", "dataset_weight_settings").get(pk=obj.pk)
        super().save_model(request, obj, form, change)
        seasons.change_ranking(obj, *ranking, actor=request.user, reason="changed in the admin")
        # validated by Season.clean but for the issues 'samples' names, which must be the season's
        try:
            weighting.change_weights(obj, *weight_rule, actor=request.user, reason="changed in the admin")
        except weights.WeightSettingsError as exc:
            self.message_user(request, _("The weight rule was not changed: %(error)s") % {"error": exc},
                              level=messages.ERROR)


@admin.register(models.Contestant)
class ContestantAdmin(admin.ModelAdmin):
    list_display = ("display_name", "user", "affiliation", "created_at")
    search_fields = ("display_name", "user__username", "affiliation")


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("contestant", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("token_hash", "prefix")


@admin.register(models.Issue)
class IssueAdmin(admin.ModelAdmin):
    list_display = ("code", "title", "season", "author", "framework", "level", "created_at")
    list_filter = ("season", "framework", "level")
    search_fields = ("code", "title", "operator")


class SubmissionFileInline(admin.TabularInline):
    model = models.SubmissionFile
    extra = 0
    fields = ("path", "size", "sha256")
    readonly_fields = fields


class RunInline(admin.TabularInline):
    model = models.Run
    extra = 0
    fields = ("gpu_type", "status", "verdict", "speedup", "attempts", "agent", "worker", "gpu_uuid", "finished_at")
    readonly_fields = fields


@admin.register(models.Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "issue", "contestant", "source", "created_at")
    list_filter = ("source", "issue__season")
    inlines = [SubmissionFileInline, RunInline]


@admin.register(models.Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("name", "is_active", "trusted", "served_gpu_types", "queues", "last_heartbeat_at")
    list_editable = ("trusted",)  # the organizer's word: its passed results need no second judging
    readonly_fields = ("token_hash", "queues", "inventory", "versions", "last_heartbeat_at")
    filter_horizontal = ("gpu_types",)

    def save_model(self, request, obj, form, change):
        """Trusting a host (its passed results need no second judging) is audited."""
        before = models.Agent.objects.filter(pk=obj.pk).values_list("trusted", flat=True).first() if change else None
        super().save_model(request, obj, form, change)
        if before is not None and before != obj.trusted:
            audit.record("agent.trust_changed", obj, actor=request.user, before={"trusted": before},
                         after={"trusted": obj.trusted}, reason="changed in the admin")

    @admin.display(description="GPU types served")
    def served_gpu_types(self, agent):
        return ", ".join(t.slug for t in agent.gpu_types.all())


@admin.register(models.AgentWorker)
class AgentWorkerAdmin(admin.ModelAdmin):
    """What workers report is read-only here; draining and resuming go through the audited service."""

    list_display = ("name", "agent", "gpu_index", "gpu_model", "harness_version", "draining", "last_heartbeat_at")
    list_filter = ("draining", "agent")
    readonly_fields = ("agent", "name", "gpu_index", "gpu_uuid", "gpu_model", "driver", "memory_bytes",
                       "harness_version", "current_run", "draining", "drain_reason", "first_seen_at",
                       "last_heartbeat_at")
    actions = ("drain", "resume")

    def has_add_permission(self, request):
        return False

    @admin.action(description=gettext_lazy("Drain: finish the current run, take no more"))
    def drain(self, request, queryset):
        for worker in queryset:
            fleet.drain_worker(worker, actor=request.user, reason="drained in the admin")

    @admin.action(description=gettext_lazy("Resume: take runs again"))
    def resume(self, request, queryset):
        for worker in queryset:
            fleet.resume_worker(worker, actor=request.user, reason="resumed in the admin")


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "submission", "gpu_type", "status", "verdict", "speedup", "attempts", "agent", "worker",
                    "created_at")
    list_filter = ("status", "verdict", "gpu_type")


@admin.register(models.Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ("submission", "decision", "base_score", "bonus", "reviewer", "created_at")

    # Reviews are history: a new decision is a new review, made in the organizer console.
    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """The audit trail is append-only: visible here, never editable."""

    list_display = ("created_at", "actor_label", "action", "object_type", "object_id", "reason")
    list_filter = ("action", "object_type")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.Standing)
class StandingAdmin(admin.ModelAdmin):
    list_display = ("season", "rank", "contestant", "accepted_count", "base_score", "bonus", "submission_count")
    list_filter = ("season",)

    # Saving one bumps its board's version through a signal (board_versions) and re-keys its place in
    # the board (standings.store); deleting one bumps the version here, in the deletion's transaction.
    @transaction.atomic
    def save_model(self, request, obj, form, change):
        board_versions.bump(obj.season_id)
        standings.store(obj.season, obj, {})

    @transaction.atomic
    def delete_model(self, request, obj):
        board_versions.bump(obj.season_id)
        super().delete_model(request, obj)

    @transaction.atomic
    def delete_queryset(self, request, queryset):
        board_versions.bump(*queryset.values_list("season_id", flat=True).distinct())
        super().delete_queryset(request, queryset)


@admin.register(models.SubmissionFlag)
class SubmissionFlagAdmin(admin.ModelAdmin):
    list_display = ("submission", "kind", "other_submission", "similarity", "created_at")
    list_filter = ("kind",)


@admin.register(models.Rejudge)
class RejudgeAdmin(admin.ModelAdmin):
    list_display = ("scope", "target", "requested_by", "reason", "created_at")
    readonly_fields = ("scope", "target", "requested_by", "reason")


@admin.register(models.BenchmarkRun)
class BenchmarkRunAdmin(admin.ModelAdmin):
    list_display = ("gpu_name", "dataset_name", "dataset_version", "speedup_score", "relative_time_score",
                    "contestant", "created_at")
    list_filter = ("device_kind", "season")
    readonly_fields = ("samples",)
