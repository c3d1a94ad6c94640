from django.core.management.base import BaseCommand

from submissions.services.judging import sweep_runs


class Command(BaseCommand):
    help = "Enqueue again the runs whose job was lost or whose agent went silent."

    def handle(self, **options):
        self.stdout.write(f"{sweep_runs()} run(s) requeued or closed")
