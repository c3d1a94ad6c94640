"""A benchmark season seeded from bundle folders (docs/dataset.md): the season with its GPU types and
weight rule, its contestants, one issue and submission per bundle, each accepted by an organizer, then
its dataset exported (services/datasets.py) for `profiler_agent bench` on each GPU.

Nobody judges these submissions on the site: they are judged by `bench` on GPU machines that cannot
reach it. So each submission's queued runs are cancelled (services/cancelling.py) and it is accepted
with the organizer's acceptance override (services/reviewing.py), both with the plan's reason and
audited. Everything happens in one transaction: a failure leaves no season behind.

The plan is a JSON file (bench/fixtures/dataset_season.json): the season, the contestants, the reason, and the
samples, each a bundle folder (relative to the repository) with its operator's name, its category
(stored as the issue's operator, the key of the `operator` weight rule), level and framework. Keys
starting with "_" are comments; an object holding comments alone is a comment line in a list.
"""
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from submissions import dataset_export
from submissions.bundles import IGNORED_PARTS, BundleError, build_bundle
from submissions.models import ISSUE_DESCRIPTION_MAX_CHARS, Framework, GpuType, Season
from submissions.rules import weights
from submissions.services import accounts, audit, cancelling, datasets, reviewing, submitting, weighting


class SeedingRefused(ValueError):
    """The plan cannot be seeded as given; the message says what to fix. Nothing was written."""


@dataclass(frozen=True)
class PlannedSample:
    bundle: str  # as the plan names it
    folder: Path
    operator: str
    category: str
    level: int
    framework: str
    author: str
    title: str


@dataclass
class Plan:
    source: Path
    season_code: str
    season_name: str
    season_description: str
    gpu_types: list  # (slug, name)
    weight_rule: str
    weight_settings: dict
    organizer: str
    reason: str
    contestants: list  # {"username", "display_name", "affiliation"}
    samples: list = field(default_factory=list)

    def missing_bundles(self):
        return [s.bundle for s in self.samples if not s.folder.is_dir()]

    @property
    def dataset_name(self):
        return f"gpucodeforces-{self.season_code}"

    def categories(self):
        counts = {}
        for sample in self.samples:
            counts[sample.category] = counts.get(sample.category, 0) + 1
        return dict(sorted(counts.items()))


def _strip_comments(value):
    if isinstance(value, dict):
        return {k: _strip_comments(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list):  # an object of comments alone is a comment line of the list
        return [_strip_comments(v) for v in value
                if not (isinstance(v, dict) and v and all(str(k).startswith("_") for k in v))]
    return value


def _text(table, key, where, default=None):
    value = table.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise SeedingRefused(f"{where}: \"{key}\" must be a non-empty string")
    return value.strip()


def read_plan(path, season_code=None, base_dir=None):
    """The plan in the JSON file `path` (bundle folders relative to `base_dir`, default the repository),
    validated; SeedingRefused names what is wrong. Missing bundle folders are not checked here
    (Plan.missing_bundles) so that the whole list can be named at once."""
    path = Path(path)
    base_dir = Path(base_dir or settings.BASE_DIR)
    try:
        raw = _strip_comments(json.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise SeedingRefused(f"cannot read {path}: {exc.strerror or exc}")
    except ValueError as exc:
        raise SeedingRefused(f"{path} is not JSON: {exc}")
    if not isinstance(raw, dict) or not isinstance(raw.get("season"), dict):
        raise SeedingRefused(f"{path}: the top level must be an object with a \"season\" object")
    season = raw["season"]
    gpu_types = season.get("gpu_types")
    if not isinstance(gpu_types, list) or not gpu_types or not all(
            isinstance(g, dict) and isinstance(g.get("slug"), str) and isinstance(g.get("name"), str) for g in gpu_types):
        raise SeedingRefused(f"{path}: season.gpu_types must list {{\"slug\", \"name\"}} objects")
    weight_spec = season.get("weights") or {"rule": weights.DEFAULT_RULE, "settings": {}}
    try:
        rule = weights.get_rule(weight_spec.get("rule", weights.DEFAULT_RULE), weight_spec.get("settings") or {})
    except weights.WeightSettingsError as exc:
        raise SeedingRefused(f"{path}: season.weights: {exc}")
    contestants = raw.get("contestants")
    if not isinstance(contestants, list) or not contestants:
        raise SeedingRefused(f"{path}: \"contestants\" must list the samples' authors")
    people = []
    for index, person in enumerate(contestants):
        where = f"{path}: contestants[{index}]"
        if not isinstance(person, dict):
            raise SeedingRefused(f"{where} must be an object")
        people.append({"username": _text(person, "username", where),
                       "display_name": _text(person, "display_name", where, person.get("username")),
                       "affiliation": str(person.get("affiliation") or "")})
    usernames = [p["username"] for p in people]
    code = season_code or _text(season, "code", f"{path}: season")
    if len(code) > 16 or not dataset_export.SAFE_NAME.match(code) or ".." in code:
        raise SeedingRefused(f"season code {code!r}: at most 16 letters, digits, '.', '_' or '-' (it names the dataset)")
    plan = Plan(
        source=path, season_code=code,
        season_name=_text(season, "name", f"{path}: season"), season_description=str(season.get("description") or ""),
        gpu_types=[(g["slug"], g["name"]) for g in gpu_types], weight_rule=rule.name, weight_settings=rule.settings,
        organizer=_text(raw, "organizer", str(path)), reason=_text(raw, "reason", str(path)), contestants=people)
    samples = raw.get("samples")
    if not isinstance(samples, list) or not samples:
        raise SeedingRefused(f"{path}: \"samples\" must list the bundles")
    for index, sample in enumerate(samples):
        where = f"{path}: samples[{index}]"
        if not isinstance(sample, dict):
            raise SeedingRefused(f"{where} must be an object")
        bundle = _text(sample, "bundle", where)
        level = sample.get("level")
        if level not in (1, 2, 3, 4) or isinstance(level, bool):
            raise SeedingRefused(f"{where} ({bundle}): \"level\" must be 1, 2, 3 or 4, not {json.dumps(level)}")
        framework = sample.get("framework", Framework.PYTORCH)
        if framework not in Framework.values:
            raise SeedingRefused(f"{where} ({bundle}): \"framework\" must be one of {', '.join(Framework.values)}")
        author = sample.get("author", usernames[index % len(usernames)])
        if author not in usernames:
            raise SeedingRefused(f"{where} ({bundle}): author {author!r} is not in \"contestants\"")
        operator = _text(sample, "operator", where)
        folder = Path(bundle) if Path(bundle).is_absolute() else base_dir / bundle
        plan.samples.append(PlannedSample(
            bundle=bundle, folder=folder, operator=operator,
            category=weights.OperatorRule.normalize(_text(sample, "category", where)), level=level,
            framework=framework, author=author,
            title=str(sample.get("title") or f"{operator} ({folder.name})").strip()[:200]))
    twice = sorted({s.bundle for s in plan.samples if [t.folder for t in plan.samples].count(s.folder) > 1})
    if twice:
        raise SeedingRefused(f"{path}: listed more than once: {', '.join(twice)}")
    return plan


def read_bundle(sample):
    """The bundle of a planned sample, validated as an upload is (submissions/bundles.py)."""
    raw = {p.relative_to(sample.folder).as_posix(): p.read_bytes() for p in sorted(sample.folder.rglob("*"))
           if p.is_file() and not p.is_symlink() and p.suffix != ".pyc"
           and not IGNORED_PARTS & set(p.relative_to(sample.folder).parts)}
    return build_bundle(raw)


def _description(sample, bundle):
    readme = bundle.files.get("readme.md") or bundle.files.get("README.md") or ""
    text = f"Seeded from `{sample.bundle}` ({sample.category}, level {sample.level}).\n\n{readme}"
    return text[:ISSUE_DESCRIPTION_MAX_CHARS]


def _account(username, display_name, affiliation, *, is_staff=False):
    """The user's contestant, made with an unusable password when the user does not exist yet."""
    user = get_user_model().objects.filter(username=username).first()
    if user is not None:
        if is_staff and not user.is_staff:
            raise SeedingRefused(f"user {username!r} exists and is not staff: it cannot accept submissions")
        return accounts.contestant_for(user), False
    contestant = accounts.register_contestant(username, secrets.token_urlsafe(24), display_name=display_name,
                                              affiliation=affiliation, is_staff=is_staff)
    contestant.user.set_unusable_password()  # seeded: nobody signs in as it until an admin sets a password
    contestant.user.save(update_fields=["password"])
    return contestant, True


@dataclass
class Seeded:
    season: Season
    export: object
    samples: list  # (PlannedSample, Issue, Submission)
    created_users: list


def seed(plan):
    """Seed the plan's season and export its dataset (see the module's docstring); SeedingRefused when a
    bundle is missing or invalid, or the season exists already (nothing written then)."""
    missing = plan.missing_bundles()
    if missing:
        raise SeedingRefused(f"{len(missing)} bundle folder(s) listed in {plan.source} are missing: "
                             f"{', '.join(missing)}; nothing was created")
    bundles = []
    for sample in plan.samples:
        try:
            bundles.append(read_bundle(sample))
        except BundleError as exc:
            raise SeedingRefused(f"{sample.bundle} is not a valid bundle: {exc}; nothing was created")
    with transaction.atomic():
        existing = Season.objects.filter(code=plan.season_code).first()
        if existing is not None:
            raise SeedingRefused(
                f"season {plan.season_code} exists already ({existing.issues.count()} issues, "
                f"{existing.dataset_exports.count()} dataset exports); this command seeds a new season only: "
                f"name another with --season-code, or export {plan.season_code} again on its dataset page")
        created = []
        organizer, made = _account(plan.organizer, plan.organizer, "", is_staff=True)
        created += [plan.organizer] if made else []
        authors = {}
        for person in plan.contestants:
            authors[person["username"]], made = _account(person["username"], person["display_name"],
                                                         person["affiliation"])
            created += [person["username"]] if made else []
        season = Season.objects.create(code=plan.season_code, name=plan.season_name,
                                       description=plan.season_description)
        season.gpu_types.add(*(GpuType.objects.get_or_create(slug=slug, defaults={"name": name})[0]
                               for slug, name in plan.gpu_types))
        weighting.change_weights(season, plan.weight_rule, plan.weight_settings, actor=organizer.user,
                                 reason=plan.reason)
        seeded = []
        for sample, bundle in zip(plan.samples, bundles):
            author = authors[sample.author]
            try:
                issue = submitting.open_issue(season, author, title=sample.title, operator=sample.category,
                                              framework=sample.framework, level=sample.level,
                                              description=_description(sample, bundle))
                submission = submitting.create_submission(author, issue, bundle, note=f"seeded from {sample.bundle}")
            except submitting.SubmissionRefused as exc:
                raise SeedingRefused(f"{sample.bundle}: {exc}")
            for run in submission.runs.all():
                cancelling.cancel_run(run.pk, organizer.user, plan.reason)
            try:
                reviewing.review_submission(submission, organizer.user, "accepted", reason=plan.reason,
                                            acceptance_override=plan.reason)
            except reviewing.ReviewRefused as exc:
                raise SeedingRefused(f"{sample.bundle}: {exc}")
            seeded.append((sample, issue, submission))
        audit.record("season.seeded", season, actor=organizer.user, reason=plan.reason, after={
            "plan": str(plan.source), "gpu_types": [slug for slug, _ in plan.gpu_types],
            "samples": [{"issue": issue.code, "bundle": sample.bundle, "bundle_sha256": submission.bundle_sha256,
                         "category": sample.category, "level": sample.level} for sample, issue, submission in seeded]})
        try:
            export = datasets.export_season(season, actor=organizer.user, reason=plan.reason)
        except dataset_export.DatasetExportError as exc:
            raise SeedingRefused(f"the season's dataset cannot be exported: {exc}; nothing was created")
    return Seeded(season=season, export=export, samples=seeded, created_users=created)
