from django.core.management.base import BaseCommand, CommandError

from submissions.services import fleet


class Command(BaseCommand):
    help = "Drain an agent's worker: it finishes its current run and takes no more until resumed (audited)."
    resume = False

    def add_arguments(self, parser):
        parser.add_argument("name", help="the worker's name, e.g. h100-host-1-gpu0")
        parser.add_argument("--agent", help="the agent it belongs to, where several agents have a worker of that name")
        parser.add_argument("--reason", default="", help="why (kept in the audit trail, shown to the worker)")

    def handle(self, name, agent=None, reason="", **options):
        try:
            worker = fleet.find_worker(name, agent)
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        change = fleet.resume_worker if self.resume else fleet.drain_worker
        try:
            changed = change(worker, actor_label="manage.py", reason=reason)
        except fleet.DrainRefused as exc:
            raise CommandError(str(exc)) from exc
        verb = "taking runs" if self.resume else "draining"
        already = "" if changed else " (it already was)"
        self.stdout.write(f"worker {worker.agent.name}/{worker.name}: {verb}{already}")
