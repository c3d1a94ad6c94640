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
from django.utils.translation import gettext as _, ngettext

from submissions.agent_protocol import CANDIDATE_NAMES, REFERENCE_NAMES, SELF_TEST_NAME
from submissions.zip_members import (MemberError, MemberLies, MemberUnsupported, NameNotUtf8, member_name, open_zip,
                                     read_member)

# Archive clutter that macOS and editors add; dropping it loses nothing of the bundle.
IGNORED_PARTS = {"__MACOSX", ".DS_Store", "__pycache__", ".git"}
SAFE_PATH = re.compile(r"^[A-Za-z0-9._\-/ ]+$")


# What makes a bundle need a CUDA device. The harness itself moves the model and the inputs to the
# agent's device, so pure-torch code runs on a CPU agent too; these run only where CUDA (and, for the
# builds, its toolkit) is: a CPU agent answers them "CUDA_HOME environment variable is not set".
CUDA_MARKERS = (
    (re.compile(r"\bcuda_sources\b"), "cuda_sources"),
    (re.compile(r"\bwith_cuda\s*=\s*True\b"), "with_cuda=True"),
    (re.compile(r"\b__global__\b"), "__global__"),
    (re.compile(r"#\s*include\s*[<\"](?:cuda|ATen/cuda/|c10/cuda/|cublas|cudnn|cub/|thrust/|mma\.h)"), "#include <cuda…>"),
    (re.compile(r"\bCUDAExtension\b"), "CUDAExtension"),
    (re.compile(r"^\s*(?:import|from)\s+(?:triton|cupy|pycuda|numba\.cuda)\b", re.M), "triton / CuPy / PyCUDA"),
    (re.compile(r"\.cuda\(\)"), ".cuda()"),
    (re.compile(r"""\bdevice\s*=\s*["']cuda"""), 'device="cuda"'),
)
# The contestant's own self-test runs informatively wherever it can; it does not decide the hardware.


def cuda_markers(files: dict[str, str]) -> list[str]:
    """Why this bundle needs a CUDA device, one "file: marker" per file (the first marker found);
    empty when it runs on a CPU agent too."""
    found = []
    for path in sorted(files):
        if not path.endswith(".py") or posixpath.basename(path) == SELF_TEST_NAME:
            continue
        label = next((label for pattern, label in CUDA_MARKERS if pattern.search(files[path])), None)
        if label is not None:
            found.append(f"{path}: {label}")
    return found


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


def human_size(n: int) -> str:
    if n < 1024:
        return ngettext("%(count)s byte", "%(count)s bytes", n) % {"count": n}
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}".replace(".0 ", " ")


def _too_large(path, size, limit):
    return _("'%(path)s' is %(size)s; the limit is %(limit)s a file") % {
        "path": path, "size": human_size(size), "limit": human_size(limit)}


def _path_parts(raw: str) -> list[str]:
    """The parts of a relative path that stays inside the bundle, or BundleError naming the problem."""
    path = raw.replace("\\", "/")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise BundleError([_("'%(path)s': absolute paths are not allowed in a bundle") % {"path": raw}])
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise BundleError([_("'%(path)s': the path leaves the bundle folder ('..')") % {"path": raw}])
    if not parts:
        raise BundleError([_("'%(path)s': empty file name") % {"path": raw}])
    return parts


def _safe_path(raw: str, parts: list[str]) -> str:
    normalized = posixpath.join(*parts)
    if len(normalized) > 255 or not SAFE_PATH.match(normalized):
        raise BundleError([_("'%(path)s': file names may use letters, digits, '.', '_', '-', ' ' and '/' only "
                              "(255 characters at most)") % {"path": raw}])
    return normalized


def clean_path(raw: str) -> str:
    """A safe relative POSIX path, or BundleError naming the problem."""
    return _safe_path(raw, _path_parts(raw))


def _is_ignored(path: str) -> bool:
    return any(part in IGNORED_PARTS for part in path.split("/"))


def _common_folder_depth(paths: list[list[str]]) -> int:
    """How many leading folders every path shares: a zip of a folder (`S1/ABCDEF/torchcode.py`, or a
    folder named in Chinese) is read as the folder's contents."""
    depth = 0
    while paths and all(len(parts) > depth + 1 for parts in paths) and len({p[depth] for p in paths}) == 1:
        depth += 1
    return depth


def _member_refused(path: str, exc: MemberError) -> str:
    if isinstance(exc, MemberLies) and exc.read_bytes > exc.claimed:
        return _("'%(path)s' inflates to more than the %(size)s its zip header says: the archive is damaged "
                 "or crafted") % {"path": path, "size": human_size(exc.claimed)}
    if isinstance(exc, MemberLies):
        return _("'%(path)s' does not match its zip header (size or CRC): the archive is damaged") % {"path": path}
    if isinstance(exc, MemberUnsupported) and exc.method == "encrypted":
        return _("'%(path)s' is encrypted in the zip; zip the bundle again without a password") % {"path": path}
    if isinstance(exc, MemberUnsupported):
        return _("'%(path)s' is compressed with %(method)s; zip the bundle again with deflate, the default of zip "
                 "tools") % {"path": path, "method": exc.method}
    return _("'%(path)s' inflates to more than %(limit)s") % {"path": path, "limit": human_size(exc.limit)}


def read_zip(data: bytes) -> dict[str, bytes]:
    """Raw files of a zip archive, checked for escapes, links and sizes. Every member is inflated through
    a counting reader (zip_members) that stops at the limits and at the size the header claims."""
    max_file, max_total, max_files = _limits()
    try:
        archive = open_zip(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise BundleError([_("the archive is not a valid zip file")])
    except NameNotUtf8 as exc:
        raise BundleError([_("'%(path)s': the zip marks this file name as UTF-8, but it is not; zip the folder again "
                             "with a tool that writes UTF-8 names (7-Zip, or zip on Linux or macOS), or rename the "
                             "file") % {"path": exc.name}])
    errors, entries, files, total = [], [], {}, 0
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            name = member_name(info)
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                errors.append(_("'%(path)s': symbolic links are not allowed in a bundle") % {"path": name})
                continue
            try:
                parts = _path_parts(name)
            except BundleError as exc:
                errors.extend(exc.errors)
                continue
            if not _is_ignored("/".join(parts)):
                entries.append((name, parts, info))
        depth = _common_folder_depth([parts for _name, parts, _info in entries])
        for name, parts, info in entries:
            try:
                path = _safe_path(name, parts[depth:])
            except BundleError as exc:
                errors.extend(exc.errors)
                continue
            if path in files:
                errors.append(_("'%(path)s' appears twice") % {"path": path})
                continue
            if info.file_size > max_file:
                errors.append(_too_large(path, info.file_size, max_file))
                continue
            if total + info.file_size > max_total:
                errors.append(_("the bundle unpacks to more than %(limit)s") % {"limit": human_size(max_total)})
                break
            if len(files) >= max_files:
                errors.append(_("the bundle has more than %(limit)s files") % {"limit": max_files})
                break
            try:
                files[path] = read_member(archive, info, min(max_file, max_total - total))
            except MemberError as exc:
                errors.append(_member_refused(path, exc))
                continue
            total += len(files[path])
    if errors:
        raise BundleError(errors)
    return files


def _same_reference(sent: bytes, fixed: str) -> bool:
    """A copy of the fixed reference, whatever its line endings and the blank space at its end."""
    normalised = lambda text: text.replace("\r\n", "\n").rstrip()  # noqa: E731
    try:
        return normalised(sent.decode("utf-8")) == normalised(fixed)
    except UnicodeDecodeError:
        return False


def with_fixed_reference(raw_files: dict[str, bytes], fixed_reference: str, issue_code: str = "") -> dict[str, bytes]:
    """The files with the issue's fixed reference (services/fixed_references.py) as torchcode.py, so the
    problem stays the organizers'. A reference the contestant sent (kept to judge locally) must be a copy
    of it: one that differs is refused, never dropped without a word."""
    if not fixed_reference or not raw_files:
        return raw_files
    differing = [path for path, data in raw_files.items()
                 if path in REFERENCE_NAMES and not _same_reference(data, fixed_reference)]
    if differing:
        raise BundleError([_("the reference of issue %(issue)s is fixed by the organizers and every submission is "
                             "judged on theirs; your %(file)s differs from it: leave it out, or copy the current one "
                             "from the issue's page") % {"issue": issue_code, "file": differing[0]}])
    kept = {path: data for path, data in raw_files.items() if path not in REFERENCE_NAMES}
    return {**kept, REFERENCE_NAMES[0]: fixed_reference.encode()}


def build_bundle(raw_files: dict[str, bytes], fixed_reference: str = "", issue_code: str = "") -> Bundle:
    """Validate raw files into a Bundle; raises BundleError listing every problem found.
    `fixed_reference`: the issue's (`issue_code`), which stands for any reference among the files."""
    max_file, max_total, max_files = _limits()
    errors = []
    if not raw_files:
        raise BundleError([_("no files were submitted")])
    raw_files = with_fixed_reference(raw_files, fixed_reference, issue_code)
    if len(raw_files) > max_files:
        errors.append(_("the bundle has %(count)s files; the limit is %(limit)s") % {"count": len(raw_files), "limit": max_files})
    total = sum(len(d) for d in raw_files.values())
    if total > max_total:
        errors.append(_("the bundle is %(size)s; the limit is %(limit)s") % {"size": human_size(total), "limit": human_size(max_total)})
    files = {}
    for raw_path, data in sorted(raw_files.items()):
        try:
            path = clean_path(raw_path)
        except BundleError as exc:
            errors.extend(exc.errors)
            continue
        if path in files:
            errors.append(_("'%(path)s' appears twice") % {"path": path})
            continue
        if len(data) == 0:
            errors.append(_("'%(path)s' is empty") % {"path": path})
            continue
        if len(data) > max_file:
            errors.append(_too_large(path, len(data), max_file))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(_("'%(path)s' is not UTF-8 text (byte %(byte)s)") % {"path": path, "byte": exc.start})
            continue
        if "\x00" in text:
            errors.append(_("'%(path)s' contains NUL bytes; only text files are accepted") % {"path": path})
            continue
        files[path] = text
    bundle = Bundle(files)
    names = set(raw_files) | set(files)
    if not any(n in names for n in REFERENCE_NAMES):
        errors.append(_("the bundle has no reference: add torchcode.py (or example_torchcode.py)"))
    if not any(n in names for n in CANDIDATE_NAMES):
        errors.append(_("the bundle has no candidate: add cudacode.py (or cudacode_opt.py, example_cudacode.py)"))
    if errors:
        raise BundleError(errors)
    return bundle


def bundle_from_uploads(uploads, fixed_reference: str = "", issue_code: str = "") -> Bundle:
    """Uploaded files (Django UploadedFile objects); a single .zip upload is unpacked. `fixed_reference`:
    the issue's (build_bundle)."""
    raw = {}
    max_file, max_total, _files = _limits()
    for upload in uploads:
        name = upload.name or ""
        if upload.size is not None and upload.size > max(max_total, max_file) * 2:
            raise BundleError([_("'%(path)s' is %(size)s; the limit is %(limit)s a bundle")
                               % {"path": name, "size": human_size(upload.size), "limit": human_size(max_total)}])
        data = upload.read()
        if name.lower().endswith(".zip"):
            for path, content in read_zip(data).items():
                if path in raw:
                    raise BundleError([_("'%(path)s' appears twice") % {"path": path}])
                raw[path] = content
        else:
            # Browsers send only the base name; a folder upload may keep "relative/path".
            raw[name] = data
    return build_bundle(raw, fixed_reference, issue_code)


def bundle_to_zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            archive.writestr(path, files[path])
    return buffer.getvalue()
