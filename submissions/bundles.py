"""Reading and validating a submitted bundle (a folder of files, or a zip of one).

The rules are the seeds' bundle format: a reference (`torchcode.py`) and a candidate
(`cudacode.py`), UTF-8 text, within size limits, with no path leaving the folder.
"""
import hashlib
import io
import posixpath
import re
import zipfile
from dataclasses import dataclass, field

from django.conf import settings

REFERENCE_NAMES = ("torchcode.py", "example_torchcode.py")
CANDIDATE_NAMES = ("cudacode.py", "cudacode_opt.py", "example_cudacode.py")
# Archive clutter that macOS and editors add; dropping it loses nothing of the bundle.
IGNORED_PARTS = {"__MACOSX", ".DS_Store", "__pycache__", ".git"}
SAFE_PATH = re.compile(r"^[A-Za-z0-9._\-/ ]+$")


class BundleError(ValueError):
    """The bundle is unacceptable; `errors` lists every reason, each readable on its own."""

    def __init__(self, errors):
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


@dataclass
class Bundle:
    files: dict[str, str] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for path in sorted(self.files):
            data = self.files[path].encode()
            digest.update(f"{path}\0{len(data)}\0".encode())
            digest.update(data)
        return digest.hexdigest()

    @property
    def reference_name(self):
        return next((n for n in REFERENCE_NAMES if n in self.files), None)

    @property
    def candidate_name(self):
        return next((n for n in CANDIDATE_NAMES if n in self.files), None)


def _limits():
    return settings.BUNDLE_MAX_FILE_BYTES, settings.BUNDLE_MAX_TOTAL_BYTES, settings.BUNDLE_MAX_FILES


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}" if unit == "bytes" else f"{n:.1f} {unit}".replace(".0 ", " ")
        n /= 1024
    return str(n)


def clean_path(raw: str) -> str:
    """A safe relative POSIX path, or BundleError naming the problem."""
    path = raw.replace("\\", "/")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise BundleError([f"'{raw}': absolute paths are not allowed in a bundle"])
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise BundleError([f"'{raw}': the path leaves the bundle folder ('..')"])
    if not parts:
        raise BundleError([f"'{raw}': empty file name"])
    normalized = posixpath.join(*parts)
    if len(normalized) > 255 or not SAFE_PATH.match(normalized):
        raise BundleError([f"'{raw}': file names may use letters, digits, '.', '_', '-', ' ' and '/' only (255 characters at most)"])
    return normalized


def _is_ignored(path: str) -> bool:
    return any(part in IGNORED_PARTS for part in path.split("/"))


def _strip_common_folder(raw_files: dict[str, bytes]) -> dict[str, bytes]:
    """A zip of a folder (`S1/ABCDEF/torchcode.py`) becomes the folder's contents."""
    while raw_files and all("/" in p for p in raw_files):
        tops = {p.split("/", 1)[0] for p in raw_files}
        if len(tops) != 1:
            break
        raw_files = {p.split("/", 1)[1]: data for p, data in raw_files.items()}
    return raw_files


def read_zip(data: bytes) -> dict[str, bytes]:
    """Raw files of a zip archive, checked for escapes, links and sizes before reading."""
    max_file, max_total, max_files = _limits()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise BundleError(["the archive is not a valid zip file"])
    errors, files, total = [], {}, 0
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                errors.append(f"'{info.filename}': symbolic links are not allowed in a bundle")
                continue
            try:
                path = clean_path(info.filename)
            except BundleError as exc:
                errors.extend(exc.errors)
                continue
            if _is_ignored(path):
                continue
            if info.file_size > max_file:
                errors.append(f"'{path}' is {_human(info.file_size)}; the limit is {_human(max_file)} a file")
                continue
            total += info.file_size
            if total > max_total:
                errors.append(f"the bundle unpacks to more than {_human(max_total)}")
                break
            if len(files) >= max_files:
                errors.append(f"the bundle has more than {max_files} files")
                break
            try:
                files[path] = archive.read(info)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as exc:
                errors.append(f"'{path}' could not be read from the archive: {exc}")
    if errors:
        raise BundleError(errors)
    return _strip_common_folder(files)


def build_bundle(raw_files: dict[str, bytes]) -> Bundle:
    """Validate raw files into a Bundle; raises BundleError listing every problem found."""
    max_file, max_total, max_files = _limits()
    errors = []
    if not raw_files:
        raise BundleError(["no files were submitted"])
    if len(raw_files) > max_files:
        errors.append(f"the bundle has {len(raw_files)} files; the limit is {max_files}")
    total = sum(len(d) for d in raw_files.values())
    if total > max_total:
        errors.append(f"the bundle is {_human(total)}; the limit is {_human(max_total)}")
    files = {}
    for raw_path, data in sorted(raw_files.items()):
        try:
            path = clean_path(raw_path)
        except BundleError as exc:
            errors.extend(exc.errors)
            continue
        if path in files:
            errors.append(f"'{path}' appears twice")
            continue
        if len(data) == 0:
            errors.append(f"'{path}' is empty")
            continue
        if len(data) > max_file:
            errors.append(f"'{path}' is {_human(len(data))}; the limit is {_human(max_file)} a file")
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(f"'{path}' is not UTF-8 text (byte {exc.start})")
            continue
        if "\x00" in text:
            errors.append(f"'{path}' contains NUL bytes; only text files are accepted")
            continue
        files[path] = text
    bundle = Bundle(files)
    names = set(raw_files) | set(files)
    if not any(n in names for n in REFERENCE_NAMES):
        errors.append("the bundle has no reference: add torchcode.py (or example_torchcode.py)")
    if not any(n in names for n in CANDIDATE_NAMES):
        errors.append("the bundle has no candidate: add cudacode.py (or cudacode_opt.py, example_cudacode.py)")
    if errors:
        raise BundleError(errors)
    return bundle


def bundle_from_uploads(uploads) -> Bundle:
    """Uploaded files (Django UploadedFile objects); a single .zip upload is unpacked."""
    raw = {}
    max_file, max_total, _ = _limits()
    for upload in uploads:
        name = upload.name or ""
        if upload.size is not None and upload.size > max(max_total, max_file) * 2:
            raise BundleError([f"'{name}' is {_human(upload.size)}; the limit is {_human(max_total)} a bundle"])
        data = upload.read()
        if name.lower().endswith(".zip"):
            for path, content in read_zip(data).items():
                if path in raw:
                    raise BundleError([f"'{path}' appears twice"])
                raw[path] = content
        else:
            # Browsers send only the base name; a folder upload may keep "relative/path".
            raw[name] = data
    return build_bundle(raw)


def bundle_to_zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            archive.writestr(path, files[path])
    return buffer.getvalue()
