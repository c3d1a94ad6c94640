from django.core.management.base import BaseCommand, CommandError

from submissions.models import FinalSystemTest, Season
from submissions.services import final_system_tests


class Command(BaseCommand):
    help = ("Start a season's final system test after its end: every contestant's counted submission judged again "
            "on fresh inputs, the final standings from those runs alone (audited). With --status: its progress.")

    def add_arguments(self, parser):
        parser.add_argument("season", help="the season's code, e.g. S1")
        parser.add_argument("--reason", default="", help="why (kept in the audit trail)")
        parser.add_argument("--status", action="store_true", help="print the progress of the season's final system test")

    def handle(self, season, reason="", status=False, **options):
        found = Season.objects.filter(code=season).first()
        if found is None:
            raise CommandError(f"season {season} does not exist")
        if status:
            test = FinalSystemTest.objects.filter(season=found).first()
            if test is None:
                raise CommandError(f"season {season} has no final system test")
        else:
            try:
                test = final_system_tests.start(found, reason, actor_label="manage.py")
            except final_system_tests.FinalTestRefused as exc:
                raise CommandError(str(exc)) from exc
        judged, total, failed = final_system_tests.progress(test)
        state = "final" if test.is_finished else "running"
        self.stdout.write(f"final system test of {found.code}: {judged}/{total} runs judged, {failed} failed ({state})")
