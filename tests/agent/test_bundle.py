import zipfile
from pathlib import Path

import pytest

from profiler_agent.executors.build_cache import extensions_dir
from profiler_agent.bundles.bundle import BundleError, locate_bundle, open_bundle
from profiler_agent.util.sizes import parse_size
from tests.crafted_zips import legacy_named_zip, lying_zip


def write(root: Path, *names: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / name).write_text(f"# {name}\n")
    return root


def test_candidate_names_are_tried_in_order_and_optional_files_found(tmp_path):
    root = write(tmp_path / "b", "example_torchcode.py", "example_cudacode.py", "cudacode_opt.py",
                 "cudacode_ori.py", "run_code.py")
    bundle = locate_bundle(root)
    assert bundle.reference.name == "example_torchcode.py"
    assert bundle.candidate.name == "cudacode_opt.py"
    assert bundle.llm_variant.name == "cudacode_ori.py"
    assert bundle.self_test.name == "run_code.py"
    write(root, "cudacode.py")
    assert locate_bundle(root).candidate.name == "cudacode.py"


def test_missing_files_are_named_in_the_error(tmp_path):
    with pytest.raises(BundleError, match="no torchcode.py or example_torchcode.py in"):
        locate_bundle(write(tmp_path / "a", "cudacode.py"))
    with pytest.raises(BundleError, match="no cudacode.py, cudacode_opt.py or example_cudacode.py"):
        locate_bundle(write(tmp_path / "b", "torchcode.py"))


def make_zip(path: Path, entries: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return path


@pytest.mark.parametrize("evil", ["../escaped.py", "/tmp/absolute-escape.py", "a/../../escaped.py"])
def test_a_zip_that_writes_outside_its_folder_is_refused(tmp_path, evil):
    archive = make_zip(tmp_path / "evil.zip", {"torchcode.py": "", "cudacode.py": "", evil: "boom"})
    with pytest.raises(BundleError, match="unsafe path"):
        open_bundle(archive, tmp_path / "scratch")
    assert not (tmp_path / "escaped.py").exists()
    assert not Path("/tmp/absolute-escape.py").exists()


def test_a_zip_of_a_folder_is_entered(tmp_path):
    archive = make_zip(tmp_path / "b.zip", {"relu/torchcode.py": "", "relu/cudacode.py": ""})
    bundle = open_bundle(archive, tmp_path / "scratch")
    assert bundle.root.name == "relu" and bundle.candidate.name == "cudacode.py"


def test_neither_folder_nor_zip_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(BundleError, match="neither a folder nor a .zip"):
        open_bundle(tmp_path / "notes.txt", tmp_path / "scratch")
    with pytest.raises(BundleError, match="does not exist"):
        open_bundle(tmp_path / "missing", tmp_path / "scratch")


def test_sizes():
    assert parse_size("4G") == 4 * 1024**3
    assert parse_size("512M") == 512 * 1024**2
    assert parse_size("1.5k") == 1536
    assert parse_size("2GiB") == 2 * 1024**3
    assert parse_size("1048576") == 1048576
    for bad in ("", "G", "-1G", "4X", "0"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_builds_are_keyed_by_source_bytes_and_device_kind(tmp_path):
    a = tmp_path / "a.py"
    b = tmp_path / "b.py"
    a.write_text("load_inline(name='relu', ...)  # one kernel")
    b.write_text("load_inline(name='relu', ...)  # another kernel")
    cache = tmp_path / "cache"
    assert extensions_dir(cache, a, "cpu") == extensions_dir(cache, a, "cpu")
    assert extensions_dir(cache, a, "cpu") != extensions_dir(cache, b, "cpu")
    assert extensions_dir(cache, a, "cpu") != extensions_dir(cache, a, "cuda")
    assert extensions_dir(cache, a, "cpu").parent == cache


BOMB_BYTES = 64 * 1024 * 1024  # inflates from a ~64 KiB zip


def test_agent_refuses_a_lying_zip_as_a_bundle_error(tmp_path):
    archive = tmp_path / "bomb.zip"
    archive.write_bytes(lying_zip({"torchcode.py": b"# reference\n", "cudacode.py": b"\0" * BOMB_BYTES},
                                  claimed={"cudacode.py": 100}))
    with pytest.raises(BundleError, match="'cudacode.py': the archive is damaged"):
        open_bundle(archive, tmp_path / "scratch")
    written = tmp_path / "scratch" / "bundle" / "cudacode.py"
    assert written.stat().st_size <= 100


def test_agent_extracts_a_gbk_named_folder(tmp_path):
    archive = tmp_path / "windows.zip"
    archive.write_bytes(legacy_named_zip({"我的算子/torchcode.py": b"# r\n", "我的算子/cudacode.py": b"# c\n"}))
    bundle = open_bundle(archive, tmp_path / "scratch")
    assert bundle.root.name == "我的算子" and bundle.candidate.read_text() == "# c\n"
