from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self):
        from django.db.models.signals import post_delete

        from leaderboard import freeze_controls, selectors
        from leaderboard.models import ScoreboardFreeze
        from submissions import board_versions, freeze_reads
        from submissions.pages import season_settings

        # A freeze deleted without unfreeze_scoreboard (the admin's bulk delete): the board thaws.
        post_delete.connect(lambda sender, instance, **kwargs: board_versions.bump(instance.season_id),
                            sender=ScoreboardFreeze, weak=False, dispatch_uid="board_versions.freeze_deleted")
        # The season settings page shows the freeze's control, which the domain does not import.
        season_settings.add_section(freeze_controls.SECTION, freeze_controls.freeze_section)
        # The domain's public pages hide what finished after a freeze (freeze_reads), which it does not import.
        freeze_reads.register(lambda season: getattr(selectors.figures_freeze(season), "frozen_at", None))
