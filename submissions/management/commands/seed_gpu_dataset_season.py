"""Seed a benchmark season from bundle folders, accept every sample (organizer override, audited) and
export its dataset: the site's half of benchmarking GPUs offline (docs/dataset.md, "Benchmarking GPUs offline").

    python manage.py seed_gpu_dataset_season --bundles-file bench/fixtures/dataset_season.json --export-to DIR

Refuses, writing nothing, when a listed bundle folder is missing, a bundle is invalid, the season
exists already, or DIR already holds the dataset."""
import shutil
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from submissions.rules import weights
from submissions.services import dataset_seeding, datasets


class Command(BaseCommand):
    help = ("Create a GPU benchmark season from a list of bundle folders (bench/fixtures/dataset_season.json), accept each "
            "sample with the organizer's override, and export the season's dataset.")

    def add_arguments(self, parser):
        parser.add_argument("--bundles-file", type=Path, default=Path("bench/fixtures/dataset_season.json"),
                            help="the plan: season, contestants, reason, samples (default bench/fixtures/dataset_season.json)")
        parser.add_argument("--season-code", help="the season's code instead of the plan's")
        parser.add_argument("--export-to", type=Path, metavar="DIR",
                            help="also copy the exported dataset here: DIR/gpucodeforces-<code>/ and its .tar.gz")

    def handle(self, bundles_file, season_code, export_to, **options):
        try:
            plan = dataset_seeding.read_plan(bundles_file, season_code=season_code)
        except dataset_seeding.SeedingRefused as exc:
            raise CommandError(str(exc))
        if export_to is not None:
            taken = [p for p in (export_to / plan.dataset_name, export_to / f"{plan.dataset_name}.tar.gz") if p.exists()]
            if taken:
                raise CommandError(f"{taken[0]} exists already: choose another --export-to; nothing was created")
        try:
            seeded = dataset_seeding.seed(plan)
        except dataset_seeding.SeedingRefused as exc:
            raise CommandError(str(exc))
        season, export = seeded.season, seeded.export
        rule = weights.rule_of(season)
        self.stdout.write(f"season {season.code} ({season.name}) on "
                          f"{', '.join(g.name for g in season.gpu_types.order_by('slug'))}; weight rule {rule.name}")
        if seeded.created_users:
            self.stdout.write(f"accounts created (no password; set one in the admin to sign in): "
                              f"{', '.join(seeded.created_users)}")
        for sample, issue, submission in seeded.samples:
            self.stdout.write(f"  {issue.code}  {sample.category:<12} level {sample.level}  weight "
                              f"{rule.weight_for(issue).value:<4g} submission #{submission.pk:<5} {sample.bundle}")
        self.stdout.write("categories: " + ", ".join(f"{k} {v}" for k, v in plan.categories().items()))
        folder, archive = datasets.unpacked_path(export), datasets.archive_path(export)
        self.stdout.write(f"dataset v{export.number}: {export.sample_count} samples, manifest sha256 "
                          f"{export.manifest_sha256}\n  {folder}\n  {archive}")
        if export_to is not None:
            export_to.mkdir(parents=True, exist_ok=True)
            shutil.copytree(folder, export_to / folder.name)
            shutil.copy2(archive, export_to / archive.name)
            self.stdout.write(f"copied to {export_to / folder.name} and {export_to / archive.name}")
