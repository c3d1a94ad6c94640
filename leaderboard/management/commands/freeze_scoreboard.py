from django.core.management.base import BaseCommand, CommandError

from leaderboard import services
from submissions.models import Season


class Command(BaseCommand):
    help = "Freeze (or with --unfreeze, thaw) a season's public scoreboard; cron can call it at the freeze time."

    def add_arguments(self, parser):
        parser.add_argument("season")
        parser.add_argument("--unfreeze", action="store_true")
        parser.add_argument("--reason", default="")

    def handle(self, season, unfreeze=False, reason="", **options):
        row = Season.objects.filter(code=season).first()
        if row is None:
            raise CommandError(f"season {season} does not exist")
        try:
            if unfreeze:
                services.unfreeze_scoreboard(row, reason=reason)
            else:
                services.freeze_scoreboard(row, reason=reason)
        except ValueError as exc:
            raise CommandError(str(exc))
        self.stdout.write(f"{row.code}: scoreboard {'unfrozen' if unfreeze else 'frozen'}")
