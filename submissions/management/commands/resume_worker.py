from submissions.management.commands.drain_worker import Command as DrainCommand


class Command(DrainCommand):
    help = "Resume a drained worker: it takes runs again from its next heartbeat (audited)."
    resume = True
