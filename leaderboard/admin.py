from django.contrib import admin

from leaderboard import services
from leaderboard.models import ScoreboardFreeze


@admin.register(ScoreboardFreeze)
class ScoreboardFreezeAdmin(admin.ModelAdmin):
    list_display = ("season", "frozen_at", "frozen_by")
    readonly_fields = ("season", "frozen_at", "frozen_by")

    def has_add_permission(self, request):
        return False  # freezing takes a snapshot: use the season action or `manage.py freeze_scoreboard`

    def delete_model(self, request, obj):
        services.unfreeze_scoreboard(obj.season, request.user, reason="unfrozen in admin")
