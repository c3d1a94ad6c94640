"""What `gpucf submit PATH` uploads: a folder's regular files zipped in memory, or a .zip as it is."""
import io
import os
import zipfile
from pathlib import Path

import pytest

from gpucf import bundles, outcomes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def members(data):
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_a_folder_is_zipped_with_its_files_at_their_paths_and_clutter_left_out(tmp_path):
    bundle = tmp_path / "my-relu"
    (bundle / "kernels").mkdir(parents=True)
    (bundle / "torchcode.py").write_text("reference")
    (bundle / "cudacode.py").write_text("candidate")
    (bundle / "kernels" / "relu.cu").write_text("__global__")
    for clutter in (".git/config", "__pycache__/cudacode.cpython-311.pyc", ".env", "kernels/.swp"):
        (bundle / clutter).parent.mkdir(exist_ok=True)
        (bundle / clutter).write_text("left out")
    name, data = bundles.upload_of(bundle)
    assert name == "my-relu.zip"
    assert members(data) == {"cudacode.py": b"candidate", "kernels/relu.cu": b"__global__",
                             "torchcode.py": b"reference"}
    assert bundles.upload_of(bundle)[1] == data  # the same folder, the same bytes


def test_the_example_bundle_zips_as_its_files(tmp_path):
    _, data = bundles.upload_of(EXAMPLES / "relu-cpu")
    assert members(data) == {p.name: p.read_bytes() for p in (EXAMPLES / "relu-cpu").iterdir() if p.is_file()}


@pytest.mark.parametrize("link_to", ["outside-file", "outside-dir", "inside.py"])
def test_a_symbolic_link_is_refused_never_followed(tmp_path, link_to):
    secret = tmp_path / "outside-file"
    secret.write_text("a private key")
    (tmp_path / "outside-dir").mkdir()
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "inside.py").write_text("x = 1")
    link = bundle / "torchcode.py"
    os.symlink(bundle / link_to if link_to == "inside.py" else tmp_path / link_to, link)
    with pytest.raises(outcomes.UsageError) as refused:
        bundles.upload_of(bundle)
    assert "torchcode.py" in str(refused.value) and "symbolic link" in str(refused.value)


def test_a_file_that_is_not_regular_is_refused(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "torchcode.py").write_text("x")
    os.mkfifo(bundle / "pipe")
    with pytest.raises(outcomes.UsageError, match="pipe in .* is not a regular file"):
        bundles.upload_of(bundle)


def test_a_zip_goes_as_it_is_and_what_is_no_zip_is_refused(tmp_path):
    archive = tmp_path / "bundle.ZIP"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as made:
        made.writestr("relu/torchcode.py", "reference")
    archive.write_bytes(buffer.getvalue())
    assert bundles.upload_of(archive) == ("bundle.ZIP", buffer.getvalue())
    fake = tmp_path / "fake.zip"
    fake.write_text("not a zip")
    with pytest.raises(outcomes.UsageError, match="is not a zip archive"):
        bundles.upload_of(fake)


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "does not exist"),
    (lambda p: p.write_text("x"), "is neither a folder nor a .zip file"),
    (lambda p: p.mkdir(), "holds no file to submit"),
])
def test_a_path_that_is_no_bundle_is_a_usage_error(tmp_path, make, message):
    path = tmp_path / "thing"
    make(path)
    with pytest.raises(outcomes.UsageError, match=message) as refused:
        bundles.upload_of(path)
    assert refused.value.exit_code == 2


def test_a_folder_far_larger_than_any_bundle_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(bundles, "MAX_FILES", 3)
    for index in range(4):
        (tmp_path / f"f{index}.py").write_text("x")
    with pytest.raises(outcomes.UsageError, match="is it a bundle's folder"):
        bundles.upload_of(tmp_path)
