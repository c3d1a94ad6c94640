from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from submissions.models import Issue
from submissions.services import fixed_references


class Command(BaseCommand):
    help = ("Publish an issue's reference as fixed: every later submission to it is judged on this torchcode.py "
            "and may send cudacode.py alone (audited). --withdraw: submissions carry their own reference again.")

    def add_arguments(self, parser):
        parser.add_argument("issue", help="the issue's code, e.g. ABCDEF")
        parser.add_argument("reference", nargs="?", help="the torchcode.py to fix (not with --withdraw)")
        parser.add_argument("--withdraw", action="store_true")
        parser.add_argument("--reason", default="", help="why (kept in the audit trail)")

    def handle(self, issue, reference=None, withdraw=False, reason="", **options):
        row = Issue.objects.filter(code=issue.strip().upper()).first()
        if row is None:
            raise CommandError(f"issue {issue} does not exist")
        if withdraw:
            changed = fixed_references.withdraw(row, actor_label="manage.py", reason=reason)
            self.stdout.write(f"issue {row.code}: reference {'no longer fixed' if changed else 'was not fixed'}")
            return
        if not reference:
            raise CommandError("give the torchcode.py to fix, or --withdraw")
        try:
            text = Path(reference).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {reference}: {exc}") from exc
        try:
            fixed_references.publish(row, text, actor_label="manage.py", reason=reason)
        except fixed_references.FixedReferenceRefused as exc:
            raise CommandError(f"{reference} refused: {exc}") from exc
        self.stdout.write(f"issue {row.code}: reference fixed ({len(text)} characters); submissions need only cudacode.py")
