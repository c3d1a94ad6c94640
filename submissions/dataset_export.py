"""A season's accepted samples as a dataset: the files and their bytes (docs/dataset.md).

    gpucodeforces-<season>/
      README.md         the dataset card (Hugging Face front matter: `load_dataset(folder)` reads the manifest)
      dataset.json      what the dataset is: season, licence, weight rule, rubric, GPU types, counts
      manifest.jsonl    one JSON object a line, one line a sample, sorted by sample id (the issue code)
      SHA256SUMS        `sha256sum -c SHA256SUMS` checks every other file
      samples/<ID>/     the sample's bundle files as submitted (torchcode.py, cudacode.py, ...)

Deterministic: the same season state gives the same bytes. Keys are sorted, samples and files are in
order, no time comes from the clock (`as_of` is the newest review, counted run or weight change the
dataset reflects), nothing is translated, and the archive's entries carry that time, root's owner and
fixed modes. The export's number is not in the files (it names the folder they are kept in), so
exporting an unchanged season again gives the same bytes again.
"""
import gzip
import hashlib
import io
import json
import posixpath
import re
import tarfile
from dataclasses import dataclass
from datetime import timezone

from django.conf import settings
from django.db.models import Q
from django.utils import translation

from submissions import input_specs, selectors
from submissions.agent_protocol import CANDIDATE_NAMES, LLM_VARIANT_NAME, REFERENCE_NAMES
from submissions.bundles import SAFE_PATH
from submissions.models import AuditEntry, Verdict
from submissions.rules import ranked_runs, rubrics, weights

SCHEMA_VERSION = 1  # keys added keep the number (docs/dataset.md); a key changed or removed bumps it
MANIFEST = "manifest.jsonl"
INFO = "dataset.json"
CARD = "README.md"
CHECKSUMS = "SHA256SUMS"
SAMPLES = "samples"
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
WEIGHT_ACTIONS = ("season.weights_changed", "sample.weight_changed")


class DatasetExportError(ValueError):
    """The season cannot be exported as it is; the message names the sample and what is wrong."""


@dataclass(frozen=True)
class Dataset:
    root: str  # the folder name the files live in (and the archive's top folder)
    files: dict  # path relative to root -> bytes, sorted by path
    sample_count: int
    as_of: object  # datetime or None (no samples)
    left_out: tuple = ()  # (sample id, why) of the accepted samples whose runs did not pass, not included
    included: tuple = ()  # the sample ids among those an organizer included by hand

    @property
    def manifest_sha256(self):
        return hashlib.sha256(self.files[MANIFEST]).hexdigest()


def safe_name(season):
    """The season's code where it is safe as a file name, else `season-<id>`."""
    code = season.code
    return code if SAFE_NAME.match(code) and ".." not in code else f"season-{season.pk}"


def dataset_name(season):
    return f"gpucodeforces-{safe_name(season)}"


def iso(moment):
    """A time as ISO 8601 in UTC with microseconds and `Z`, the same for every database."""
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def json_line(value):
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _file_name(submission, path):
    parts = path.split("/")
    if not SAFE_PATH.match(path) or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise DatasetExportError(f"sample {submission.issue.code} (submission #{submission.pk}): the file path "
                                 f"{path!r} cannot be written safely")
    return posixpath.normpath(path)


def _measurements(submission):
    """Per GPU type where the sample ranks, its ranked figure's run (ranked_runs): the measured times."""
    runs = list(submission.runs.all())
    figures = ranked_runs.by_gpu_type(runs)
    gpu_types = {run.gpu_type_id: run.gpu_type for run in runs}
    rows = []
    for gpu_type_id, figure in sorted(figures.items(), key=lambda item: gpu_types[item[0]].slug):
        run = figure.run
        rows.append({
            "gpu_type": gpu_types[gpu_type_id].slug,
            "gpu_name": gpu_types[gpu_type_id].name,
            "device_name": run.device_name or None,
            "reference_ms": _float(run.reference_median_ms),
            "candidate_ms": _float(run.candidate_median_ms),
            "speedup": _float(run.speedup),
            "tflops": _float(run.tflops),
            "bandwidth_gbs": _float(run.bandwidth_gbs),
            "runs_counted": figure.runs_counted,
            "run_id": run.pk,
            "harness_version": run.harness_version or (run.result or {}).get("harness_version") or None,
            "finished_at": iso(run.finished_at),
        })
    return rows, [figure.run for figure in figures.values()]


def _float(value):
    return None if value is None else float(value)


def _inputs(files, counted_runs):
    for run in sorted(counted_runs, key=lambda r: r.pk):
        measured = input_specs.from_result(run.result)
        if measured is not None:
            return measured, "run"
    reference = next((files[name] for name in REFERENCE_NAMES if name in files), "")
    static = input_specs.from_source(reference)
    return (static, "source") if static is not None else (None, None)


def verdicts(submission):
    """Each GPU type's current run (selectors.latest_runs): its verdict (None while it is judged) and flags."""
    return [{"gpu_type": run.gpu_type.slug, "verdict": run.verdict or None, "flags": sorted(run.flags or [])}
            for run in selectors.latest_runs(submission)]


def not_passed(judged):
    """Why a sample's runs did not pass ('' when they did): its current runs that ended with another
    verdict than passed. A cancelled run, or one still judged, says nothing against it (a season benched
    offline cancels its runs: its samples were measured elsewhere)."""
    return ", ".join(f"{v['gpu_type']}: {v['verdict']}" for v in judged
                     if v["verdict"] not in (None, Verdict.PASSED, Verdict.CANCELLED))


def _sample(season, rule, submission, review, judged, included):
    """(manifest record, {path: bytes} of its folder, the times it reflects)."""
    issue, author = submission.issue, submission.contestant
    folder = f"{SAMPLES}/{issue.code}"
    texts = {_file_name(submission, f.path): f.content for f in submission.files.all()}
    data = {path: text.encode("utf-8") for path, text in texts.items()}
    measurements, counted_runs = _measurements(submission)
    inputs, inputs_source = _inputs(texts, counted_runs)
    weight = rule.weight_for(issue)

    def present(names):
        name = next((n for n in names if n in data), None)
        return f"{folder}/{name}" if name else None

    record = {
        "id": issue.code,
        "season": season.code,
        "title": issue.title,
        "operator": issue.operator or None,
        "framework": issue.framework,
        "level": issue.level,
        "path": folder,
        "reference_file": present(REFERENCE_NAMES),
        "candidate_file": present(CANDIDATE_NAMES),
        "llm_candidate_file": present((LLM_VARIANT_NAME,)),
        "prompt_file": present(("prompt.txt",)),
        "files": [{"path": f"{folder}/{path}", "size": len(content), "sha256": hashlib.sha256(content).hexdigest()}
                  for path, content in sorted(data.items())],
        "inputs": inputs,
        "inputs_source": inputs_source,
        "author": author.display_name,
        "affiliation": author.affiliation or None,
        "license": settings.DATASET_LICENSE,
        "agreement_version": author.agreement_version or None,
        "submission_id": submission.pk,
        "bundle_sha256": submission.bundle_sha256,
        "source": submission.source,
        "pr_url": submission.pr_url or None,
        "pr_commit": submission.pr_commit or None,
        "submitted_at": iso(submission.created_at),
        "review": {
            "accepted_at": iso(review.created_at),
            "base_score": float(review.base_score),
            "bonus": float(review.bonus),
            "points": [{"item": key, "points": float(points)} for key, points in sorted(review.rubric.items())],
            # accepted although the runs' findings would not have it (the organizer's reason), and points
            # that differ from what the runs suggested
            "accepted_by_override": bool(review.acceptance_override.strip()),
            "acceptance_override": review.acceptance_override.strip() or None,
            "points_override": review.override_reason.strip() or None,
        },
        "verdicts": judged,
        "included_by_organizer": included,
        "weight": weight.value,
        "weight_source": weight.source,
        "measurements": measurements,
    }
    times = [review.created_at] + [run.finished_at for run in counted_runs if run.finished_at]
    return record, {f"{folder}/{path}": content for path, content in data.items()}, times


def _weight_changed_at(season):
    issue_ids = [str(pk) for pk in season.issues.values_list("pk", flat=True)]
    entries = AuditEntry.objects.filter(
        Q(action="season.weights_changed", object_type="season", object_id=str(season.pk))
        | Q(action="sample.weight_changed", object_type="issue", object_id__in=issue_ids))
    latest = entries.order_by("-created_at").values_list("created_at", flat=True).first()
    return latest


def _info(season, rule, records, as_of):
    rubric = rubrics.rubric_of(season)
    return {
        "schema": SCHEMA_VERSION,
        "name": dataset_name(season),
        "season": {"code": season.code, "name": season.name, "description": season.description,
                   "starts_at": iso(season.starts_at), "ends_at": iso(season.ends_at)},
        "license": settings.DATASET_LICENSE,
        "as_of": iso(as_of),
        "sample_count": len(records),
        "manifest": MANIFEST,
        "checksums": CHECKSUMS,
        "weights": {"rule": rule.name, "settings": rule.settings,
                    "total": sum(r["weight"] for r in records)},
        "rubric": {"name": rubric.name, "items": [{"item": i.key, "points": i.points, "bonus": i.bonus}
                                                  for i in rubric.items]},
        "gpu_types": [{"slug": g.slug, "name": g.name} for g in season.gpu_types.order_by("slug")],
    }


def _card(info):
    hf_license = info["license"].lower()
    lines = [
        "---",
        f"license: {hf_license}",
        f"pretty_name: GPU CodeForces {info['season']['code']}",
        "configs:",
        "- config_name: default",
        f"  data_files: {MANIFEST}",
        "---",
        "",
        f"# {info['name']}",
        "",
        f"The accepted samples of GPU CodeForces season {info['season']['code']} ({info['season']['name']}): "
        f"{info['sample_count']} samples, as of {info['as_of'] or 'no sample yet'}.",
        "",
        f"- `{MANIFEST}`: one JSON object a line, one line a sample (schema {info['schema']}).",
        f"- `{INFO}`: the season, licence, weight rule and rubric.",
        f"- `{SAMPLES}/<id>/`: each sample's bundle: `torchcode.py` (the reference), `cudacode.py` (the candidate)...",
        f"- `{CHECKSUMS}`: check the files with `sha256sum -c {CHECKSUMS}`.",
        "",
        "Load the manifest with `datasets.load_dataset(\"json\", data_files=\"manifest.jsonl\")` or",
        "`pyarrow.json.read_json(\"manifest.jsonl\")`. Every sample carries a weight "
        f"(rule `{info['weights']['rule']}`); licence: {info['license']}.",
        "",
    ]
    return "\n".join(lines).encode("utf-8")


def build(season, include=()):
    """The season's dataset as it is now (the same state, the same bytes). An accepted sample whose runs
    did not pass (`not_passed`) is left out unless its id is in `include`; an id there that names no
    such sample is refused."""
    include = {code.strip().upper() for code in include if code.strip()}
    with translation.override("en"):
        rule = weights.rule_of(season)
        records, files, times, left_out, included = [], {}, [], [], []
        for submission, review in selectors.accepted_samples(season):
            judged = verdicts(submission)
            why = not_passed(judged)
            code = submission.issue.code
            if why and code not in include:
                left_out.append((code, why))
                continue
            if why:
                included.append(code)
            record, sample_files, sample_times = _sample(season, rule, submission, review, judged, bool(why))
            records.append(record)
            files.update(sample_files)
            times += sample_times
        unknown = sorted(include - set(included))
        if unknown:
            raise DatasetExportError(
                f"{', '.join(unknown)}: not an accepted sample of {season.code} whose runs did not pass; only those "
                "are left out unless included")
        records.sort(key=lambda r: r["id"])
        changed = _weight_changed_at(season)
        as_of = max(times + ([changed] if changed and times else []), default=None)
        info = _info(season, rule, records, as_of)
        files[MANIFEST] = "".join(json_line(r) + "\n" for r in records).encode("utf-8")
        files[INFO] = (json.dumps(info, ensure_ascii=False, sort_keys=True, indent=2, allow_nan=False) + "\n").encode()
        files[CARD] = _card(info)
        files[CHECKSUMS] = "".join(f"{hashlib.sha256(files[p]).hexdigest()}  {p}\n" for p in sorted(files)).encode()
    return Dataset(root=dataset_name(season), files=dict(sorted(files.items())), sample_count=len(records),
                   as_of=as_of, left_out=tuple(left_out), included=tuple(sorted(included)))


def archive(dataset):
    """The dataset as a .tar.gz under its root folder: entries in order, each with the dataset's
    `as_of` as its time, owner root, modes 644/755; gzip's own header time the same."""
    mtime = int(dataset.as_of.timestamp()) if dataset.as_of else 0
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=mtime, compresslevel=9) as zipped:
        with tarfile.open(fileobj=zipped, mode="w", format=tarfile.GNU_FORMAT) as tar:
            folders = sorted({posixpath.dirname(p) for p in dataset.files} | {""}, key=lambda p: p)
            seen = set()
            for folder in folders:  # every folder and its parents, before their files
                parts = folder.split("/") if folder else []
                for depth in range(len(parts) + 1):
                    name = "/".join([dataset.root] + parts[:depth])
                    if name not in seen:
                        seen.add(name)
                        tar.addfile(_entry(name, mtime, directory=True))
            for path, content in dataset.files.items():
                tar.addfile(_entry(f"{dataset.root}/{path}", mtime, size=len(content)), io.BytesIO(content))
    return raw.getvalue()


def _entry(name, mtime, *, directory=False, size=0):
    info = tarfile.TarInfo(name)
    info.mtime, info.uid, info.gid, info.uname, info.gname = mtime, 0, 0, "root", "root"
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = 0o755 if directory else 0o644
    info.size = size
    return info
