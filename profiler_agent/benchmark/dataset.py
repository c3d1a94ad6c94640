"""Reading an exported dataset (docs/dataset.md, "manifest.jsonl, schema 1"): a folder, or its .tar.gz
extracted safely into a scratch folder; dataset.json's schema checked, every file checked against
SHA256SUMS, and the manifest read line by line."""

from __future__ import annotations

import hashlib
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

SCHEMA = 1
INFO = "dataset.json"
MANIFEST = "manifest.jsonl"
CHECKSUMS = "SHA256SUMS"
MAX_MEMBERS = 100_000
MAX_TOTAL_BYTES = 4 * 1024**3
SAMPLE_KEYS = ("id", "reference_file", "candidate_file", "weight", "measurements")


class DatasetError(ValueError):
    """The dataset cannot be used as given; the message says what is wrong and where."""


@dataclass(frozen=True)
class Dataset:
    root: Path
    info: dict  # dataset.json
    samples: list[dict]  # manifest.jsonl, in its order
    checksum: str  # sha256 of manifest.jsonl (the site's DatasetExport.manifest_sha256)

    @property
    def name(self) -> str:
        return self.info.get("name") or self.root.name

    def file(self, relative: str) -> Path:
        """A path of the manifest, inside the dataset's folder."""
        return self.root.joinpath(*_safe(relative, "manifest").parts)


def _safe(name: str, where: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\\" in name:
        raise DatasetError(f"unsafe path in {where}: {name!r}")
    return path


def extract_tar(archive: Path, target: Path) -> None:
    """Extract a dataset archive: regular files and folders only, no absolute paths, no `..`, bounded."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            if len(members) > MAX_MEMBERS:
                raise DatasetError(f"{archive}: more than {MAX_MEMBERS} entries")
            if sum(m.size for m in members if m.isfile()) > MAX_TOTAL_BYTES:
                raise DatasetError(f"{archive}: expands to more than {MAX_TOTAL_BYTES} bytes")
            for member in members:
                relative = _safe(member.name.rstrip("/"), archive.name)
                destination = target.joinpath(*relative.parts)
                if member.isdir():
                    destination.mkdir(parents=True, exist_ok=True)
                elif member.isfile():
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    source = tar.extractfile(member)
                    with open(destination, "wb") as sink:
                        while chunk := source.read(1 << 20):
                            sink.write(chunk)
                else:
                    raise DatasetError(f"{archive.name}: {member.name!r} is not a regular file or folder")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise DatasetError(f"{archive}: not a readable .tar.gz ({exc})") from exc


def _find_root(folder: Path) -> Path:
    if (folder / INFO).is_file() or (folder / MANIFEST).is_file():
        return folder
    entries = [p for p in folder.iterdir()]
    if len(entries) == 1 and entries[0].is_dir():
        return _find_root(entries[0])
    raise DatasetError(f"no {INFO} or {MANIFEST} in {folder}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def check_sums(root: Path) -> None:
    """Every file SHA256SUMS names is there with its checksum (`sha256sum -c SHA256SUMS`)."""
    sums = root / CHECKSUMS
    if not sums.is_file():
        raise DatasetError(f"no {CHECKSUMS} in {root}: the dataset's files cannot be checked")
    for number, line in enumerate(sums.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise DatasetError(f"{CHECKSUMS} line {number}: not `<sha256>  <path>`")
        path = root.joinpath(*_safe(name, CHECKSUMS).parts)
        if not path.is_file():
            raise DatasetError(f"{CHECKSUMS} names {name}, which is missing")
        actual = _sha256(path)
        if actual != digest:
            raise DatasetError(f"checksum mismatch: {name} has sha256 {actual}, {CHECKSUMS} says {digest}")


def read_manifest(path: Path) -> list[dict]:
    samples, seen = [], set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            sample = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{MANIFEST} line {number}: not JSON ({exc})") from None
        if not isinstance(sample, dict):
            raise DatasetError(f"{MANIFEST} line {number}: not a JSON object")
        missing = [key for key in SAMPLE_KEYS if key not in sample]
        if missing:
            raise DatasetError(f"{MANIFEST} line {number}: no {', '.join(missing)} (schema {SCHEMA} has them)")
        if not isinstance(sample["id"], str) or sample["id"] in seen:
            raise DatasetError(f"{MANIFEST} line {number}: id {sample['id']!r} is not a string or comes twice")
        weight = sample["weight"]
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1000:
            raise DatasetError(f"{MANIFEST} line {number} ({sample['id']}): weight {weight!r} is not 0-1000")
        if not isinstance(sample["measurements"], list):
            raise DatasetError(f"{MANIFEST} line {number} ({sample['id']}): measurements is not a list")
        for key in ("reference_file", "candidate_file"):
            if sample[key] is not None:
                _safe(sample[key], f"{MANIFEST} line {number}")
        seen.add(sample["id"])
        samples.append(sample)
    return samples


def open_dataset(path: Path, scratch: Path) -> Dataset:
    """The dataset at `path` (its folder, or its .tar.gz extracted into `scratch`), checked."""
    path = Path(path)
    if path.is_dir():
        folder = path
    elif path.is_file():
        folder = Path(scratch) / "dataset"
        folder.mkdir(parents=True, exist_ok=True)
        extract_tar(path, folder)
    elif not path.exists():
        raise DatasetError(f"{path} does not exist")
    else:
        raise DatasetError(f"{path} is neither a folder nor a .tar.gz")
    root = _find_root(folder)
    if not (root / INFO).is_file():
        raise DatasetError(f"no {INFO} in {root}: cannot tell the dataset's schema")
    try:
        info = json.loads((root / INFO).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{INFO} is not JSON ({exc})") from None
    schema = info.get("schema") if isinstance(info, dict) else None
    if schema != SCHEMA:
        raise DatasetError(f"{INFO} says schema {schema!r}; this agent reads schema {SCHEMA} only "
                           f"(a newer profiler_agent may read it)")
    check_sums(root)
    manifest = root.joinpath(*_safe(str(info.get("manifest") or MANIFEST), INFO).parts)
    if not manifest.is_file():
        raise DatasetError(f"no {manifest.name} in {root}")
    return Dataset(root=root, info=info, samples=read_manifest(manifest), checksum=_sha256(manifest))
