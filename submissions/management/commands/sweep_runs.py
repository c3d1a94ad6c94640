import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections

from submissions.services.recovery import sweep_runs


class Command(BaseCommand):
    help = ("Enqueue again the runs whose job was lost or whose agent went silent. With --loop, every "
            "SWEEP_INTERVAL_SECONDS until stopped: what recovers runs when no agent calls in.")

    def add_arguments(self, parser):
        parser.add_argument("--loop", action="store_true", help="sweep again and again until stopped")
        parser.add_argument("--interval", type=float, help="seconds between sweeps (default: SWEEP_INTERVAL_SECONDS)")

    def handle(self, **options):
        if not options["loop"]:
            self.stdout.write(f"{sweep_runs()} run(s) requeued or closed")
            return
        interval = options["interval"] or settings.SWEEP_INTERVAL_SECONDS
        while True:
            started = time.monotonic()
            try:
                touched = sweep_runs()
                if touched:
                    self.stdout.write(f"{touched} run(s) requeued or closed", ending="\n")
                    self.stdout.flush()
            except Exception as exc:  # the database or Redis away for a moment: try again next time
                self.stderr.write(f"sweep failed: {exc}")
                close_old_connections()
            time.sleep(max(0.0, interval - (time.monotonic() - started)))
