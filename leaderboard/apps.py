from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self):
        from django.db.models.signals import post_delete

        from leaderboard.models import ScoreboardFreeze
        from submissions import board_versions

        # A freeze deleted without unfreeze_scoreboard (the admin's bulk delete): the board thaws.
        post_delete.connect(lambda sender, instance, **kwargs: board_versions.bump(instance.season_id),
                            sender=ScoreboardFreeze, weak=False, dispatch_uid="board_versions.freeze_deleted")
