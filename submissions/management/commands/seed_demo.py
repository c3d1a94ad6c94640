"""Demo data: season S1, an organizer, two contestants, the seed's example-001 issue with a correct
and a wrong submission (judged by whichever agent serves the queues) and one accepted review."""
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from submissions.bundles import build_bundle
from submissions.models import GpuType, Season, Submission
from submissions.services import accounts, reviewing, submitting

EXAMPLES = Path(settings.BASE_DIR) / "examples"
DEMO_PASSWORD = "demo-password"


def read_example(name):
    folder = EXAMPLES / name
    if not folder.is_dir():
        raise CommandError(f"example bundle {folder} is missing")
    return build_bundle({p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()})


def user_contestant(username, display_name, affiliation, *, is_staff=False):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        return accounts.register_contestant(username, DEMO_PASSWORD, display_name=display_name,
                                            affiliation=affiliation, is_staff=is_staff)
    return accounts.contestant_for(user)


class Command(BaseCommand):
    help = "Create the demo season S1 with contestants, an issue, two submissions and a review (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--gpu-type", action="append", default=[], metavar="SLUG[:NAME]",
                            help="also judge S1 on this GPU type (e.g. h100:'NVIDIA H100'); cpu is always there")

    @transaction.atomic
    def handle(self, gpu_type, **options):
        cpu, _ = GpuType.objects.get_or_create(slug="cpu", defaults={"name": "CPU"})
        types = [cpu]
        for spec in gpu_type:
            slug, _, name = spec.partition(":")
            types.append(GpuType.objects.get_or_create(slug=slug, defaults={"name": name or slug.upper()})[0])
        season, _ = Season.objects.get_or_create(code="S1", defaults={
            "name": "GPUCodeForces S1 · evaluation dataset", "ranking_rule": "accepted_count",
            "description": "Build a weighted benchmark dataset of operators from PyTorch, Paddle, TF, JAX, MMCV and Transformers.",
        })
        season.gpu_types.add(*types)
        judged_on = ", ".join(t.name + (" (CPU bundles only)" if t.is_cpu else "") for t in season.gpu_types.order_by("slug"))
        self.stdout.write(f"season S1 is judged on: {judged_on}"
                          + ("; a bundle that needs CUDA is refused there" if all(t.is_cpu for t in season.gpu_types.all())
                             else ""))
        organizer = user_contestant("organizer", "Organizer", "GPU CodeForces", is_staff=True)
        alice = user_contestant("alice", "Alice", "Tsinghua University")
        bob = user_contestant("bob", "Bob", "Zhejiang University")
        if Submission.objects.filter(issue__season=season).exists():
            self.stdout.write("demo data already present")
            return
        relu = submitting.open_issue(season, alice, title="对001-example数据集进行性能优化 (ReLU)", operator="torch.relu",
                                     level=1, description="The seed's example-001: ReLU with a custom kernel.")
        correct = submitting.create_submission(alice, relu, read_example("relu-cpu"), note="C++ load_inline ReLU")
        second = submitting.open_issue(season, bob, title="ReLU, a second try", operator="torch.relu", level=1)
        submitting.create_submission(bob, second, read_example("relu-cpu-wrong"), note="scales the output by mistake")
        reviewing.review_submission(correct, organizer.user, "accepted", reason="demo: clean sample",
                                    rubric={"ground_truth": 2, "execution_time": 5, "throughput": 4, "bandwidth": 3},
                                    override_reason="demo data: scored before the runs are judged",
                                    acceptance_override="demo data: accepted before the runs are judged")
        self.stdout.write(f"demo data created: season S1, issues {relu.code} and {second.code}; "
                          f"users organizer/alice/bob with password '{DEMO_PASSWORD}'")
