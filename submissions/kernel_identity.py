"""When two submissions are the same kernel (pure functions, no database).

Judging the same code again only draws another sample of its timing noise, and the board would then
show the luckier sample. So a contestant's kernel has one ranked figure: a submission whose kernel a
judged submission of theirs in the season already holds is refused, pointing at that one
(services/submitting.py). What does not change the kernel does not make another one: the readme and
other prose, the self-test (run_code.py), blank lines and trailing whitespace, line endings, the
folder the files were zipped in (the bundle reader drops it). The reference counts by its
fingerprint (fingerprints.reference_fingerprint: the operator, not its formatting), so the same
kernel for another operator is another submission.
"""
import hashlib
import posixpath

from submissions.agent_protocol import REFERENCE_NAMES, SELF_TEST_NAME
from submissions.fingerprints import reference_fingerprint

PROSE_SUFFIXES = (".md", ".txt", ".rst")
PROSE_NAMES = ("readme", "license", "licence", "changelog", "notes")


def is_prose(path: str) -> bool:
    name = posixpath.basename(path).lower()
    return name.endswith(PROSE_SUFFIXES) or name.split(".")[0] in PROSE_NAMES


def normalized(text: str) -> str:
    """The text without what no compiler or interpreter reads differently: trailing whitespace, blank
    lines and the kind of line ending. Leading whitespace stays (Python's blocks are made of it)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines if line.strip())


def kernel_digest(files: dict[str, str]) -> str:
    """sha256 of what makes the kernel: every file but prose and the self-test, normalized, with the
    reference as its fingerprint."""
    reference_name = next((name for name in REFERENCE_NAMES if name in files), None)
    digest = hashlib.sha256()
    reference = files.get(reference_name) if reference_name else None
    digest.update(b"reference\0" + (reference_fingerprint(reference) if reference is not None else "").encode() + b"\0")
    for path in sorted(files):
        if path == reference_name or posixpath.basename(path) == SELF_TEST_NAME or is_prose(path):
            continue
        data = normalized(files[path]).encode()
        digest.update(f"{path}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()
