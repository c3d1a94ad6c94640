"""What `submit` uploads: a bundle folder zipped in memory, or a .zip file as it is.

The zip holds the folder's regular files at their paths inside it. A symbolic link (which could point
outside the folder, at a key or a password file) or anything else that is not a regular file is refused,
never followed; hidden files and folders (`.git`, `.venv`, ...) and `__pycache__` are left out, as the
site drops such clutter anyway. The site checks the rest (names, sizes, UTF-8) and says what it refuses.
"""
import io
import os
import stat
import zipfile
from pathlib import Path

from gpucf.outcomes import UsageError

LEFT_OUT = {"__pycache__", "__MACOSX"}
# Far above the site's limits (64 files, 5 MiB by default): past these, PATH is surely not a bundle.
MAX_FILES, MAX_BYTES = 1000, 64 * 1024 * 1024


def is_left_out(name):
    return name.startswith(".") or name in LEFT_OUT


def folder_files(folder):
    """{relative posix path: bytes} of the folder's regular files, walked without following links."""
    folder = Path(folder)
    files, total = {}, 0
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not is_left_out(d))
        for name in [*dirs, *sorted(n for n in names if not is_left_out(n))]:
            path = Path(root) / name
            relative = path.relative_to(folder).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise UsageError(f"{relative} in {folder} is a symbolic link: a bundle holds regular files only")
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise UsageError(f"{relative} in {folder} is not a regular file")
            total += os.lstat(path).st_size
            if len(files) >= MAX_FILES or total > MAX_BYTES:
                raise UsageError(f"{folder} holds more than {MAX_FILES} files or {MAX_BYTES // 2**20} MiB: "
                                 f"is it a bundle's folder?")
            files[relative] = path.read_bytes()
    if not files:
        raise UsageError(f"{folder} holds no file to submit")
    return files


def zipped(files):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for relative in sorted(files):
            archive.writestr(zipfile.ZipInfo(relative, date_time=(1980, 1, 1, 0, 0, 0)), files[relative],
                             compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def upload_of(path):
    """(file name, zip bytes) to upload for PATH: a folder (zipped here) or a .zip file."""
    path = Path(path).expanduser()
    try:
        if path.is_dir():
            return f"{path.resolve().name or 'bundle'}.zip", zipped(folder_files(path))
        if path.is_file() and path.suffix.lower() == ".zip":
            data = path.read_bytes()
            if not zipfile.is_zipfile(io.BytesIO(data)):
                raise UsageError(f"{path} is not a zip archive")
            return path.name, data
    except OSError as exc:
        raise UsageError(f"cannot read {exc.filename or path}: {exc.strerror or exc}") from None
    if not path.exists():
        raise UsageError(f"{path} does not exist")
    raise UsageError(f"{path} is neither a folder nor a .zip file")
