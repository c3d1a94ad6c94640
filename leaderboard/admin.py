from django.contrib import admin

from leaderboard import services
from leaderboard.models import ScoreboardFreeze


@admin.register(ScoreboardFreeze)
class ScoreboardFreezeAdmin(admin.ModelAdmin):
    list_display = ("season", "frozen_at", "frozen_by")
    readonly_fields = ("season", "frozen_at", "frozen_by")

    def has_add_permission(self, request):
        return False  # freezing takes a snapshot: use the season action or `manage.py freeze_scoreboard`

    # a thaw, whichever way it is deleted: audited, and the pull requests' held verdicts posted
    def delete_model(self, request, obj):
        services.unfreeze_scoreboard(obj.season, request.user, reason="unfrozen in admin")

    def delete_queryset(self, request, queryset):
        for freeze in queryset.select_related("season"):
            services.unfreeze_scoreboard(freeze.season, request.user, reason="unfrozen in admin")
