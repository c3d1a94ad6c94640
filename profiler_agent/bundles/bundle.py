"""Finding the files of a submission bundle (a folder, or a zip of one)."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from profiler_agent.bundles.zip_extract import extract_zip

# The first one present wins: seed 001 names the optimized version cudacode_opt.py, and its only real
# S1 submission used example_cudacode.py.
from profiler_agent.protocol.vocabulary import CANDIDATE_NAMES, LLM_VARIANT_NAME, REFERENCE_NAMES, SELF_TEST_NAME


class BundleError(ValueError):
    """The bundle cannot be judged as given (missing files, not a folder or zip, unsafe zip)."""


@dataclass(frozen=True)
class Bundle:
    root: Path
    reference: Path
    candidate: Path
    llm_variant: Path | None
    self_test: Path | None


def _first_present(root: Path, names: tuple[str, ...]) -> Path | None:
    for name in names:
        if (root / name).is_file():
            return root / name
    return None


def locate_bundle(root: Path) -> Bundle:
    root = Path(root)
    reference = _first_present(root, REFERENCE_NAMES)
    if reference is None:
        raise BundleError(f"no {' or '.join(REFERENCE_NAMES)} in {root}")
    candidate = _first_present(root, CANDIDATE_NAMES)
    if candidate is None:
        raise BundleError(f"no {', '.join(CANDIDATE_NAMES[:-1])} or {CANDIDATE_NAMES[-1]} in {root}")
    llm_variant = root / LLM_VARIANT_NAME
    self_test = root / SELF_TEST_NAME
    return Bundle(
        root=root,
        reference=reference,
        candidate=candidate,
        llm_variant=llm_variant if llm_variant.is_file() and llm_variant != candidate else None,
        self_test=self_test if self_test.is_file() else None,
    )


def _zip_root(extracted: Path) -> Path:
    """Files are expected at the zip root, but a zip of the folder itself is accepted too."""
    if _first_present(extracted, REFERENCE_NAMES):
        return extracted
    entries = [p for p in extracted.iterdir() if p.name != "__MACOSX"]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return extracted


def open_bundle(path: Path, scratch: Path) -> Bundle:
    """Locate the bundle at `path`; a zip is extracted into `scratch` first."""
    path = Path(path)
    if path.is_dir():
        return locate_bundle(path)
    if path.is_file() and zipfile.is_zipfile(path):
        target = Path(scratch) / "bundle"
        try:
            extract_zip(path, target)
        except ValueError as exc:
            raise BundleError(f"{path}: {exc}") from exc
        return locate_bundle(_zip_root(target))
    if not path.exists():
        raise BundleError(f"{path} does not exist")
    raise BundleError(f"{path} is neither a folder nor a .zip file")
