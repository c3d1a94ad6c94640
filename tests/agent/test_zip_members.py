"""Zip members are inflated through a counting reader: a header that lies about a size stops it one
byte past the claim or the limit, with bounded memory; legacy (GBK, cp437) names are decoded."""
import io
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from profiler_agent.bundles import zip_members
from profiler_agent.bundles.zip_extract import extract_zip
from profiler_agent.bundles.zip_members import (MemberLies, MemberTooLarge, NameNotUtf8, iter_member, member_name,
                                               open_zip, read_member)
from tests.crafted_zips import deflated_zip, legacy_named_zip, lying_zip, misflagged_zip

REPO = Path(__file__).resolve().parents[2]
BOMB_BYTES = 64 * 1024 * 1024  # inflates from a ~64 KiB zip


def first_member(data: bytes):
    archive = zipfile.ZipFile(io.BytesIO(data))
    return archive, archive.infolist()[0]


def test_honest_members_read_back_as_zipfile_reads_them():
    files = {"a.py": b"print(1)\n" * 5000, "empty.txt": b"", "notes.txt": bytes(range(256)) * 300}
    with zipfile.ZipFile(io.BytesIO(deflated_zip(files))) as archive:
        for info in archive.infolist():
            assert read_member(archive, info, limit=1 << 20) == files[info.filename]


def test_reader_stops_one_byte_past_the_limit():
    archive, info = first_member(deflated_zip({"big.txt": b"x" * 500_000}))
    with archive, pytest.raises(MemberTooLarge) as refused:
        read_member(archive, info, limit=4096)
    assert refused.value.read_bytes == 4097 and refused.value.name == "big.txt"


def test_member_that_inflates_past_its_claimed_size_stops_there_with_bounded_memory():
    archive, info = first_member(lying_zip({"cudacode.py": b"\0" * BOMB_BYTES}, claimed={"cudacode.py": 1000}))
    assert info.file_size == 1000 and len(archive.fp.getvalue()) < BOMB_BYTES // 500
    tracemalloc.start()
    try:
        with archive, pytest.raises(MemberLies, match="holds more than the 1000 bytes its header says") as refused:
            for _ in iter_member(archive, info, limit=1 << 20):
                pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.value.read_bytes == 1001
    assert peak < 4 * 1024 * 1024


@pytest.mark.parametrize("name, encoding", [("我的算子/提示.py", "gbk"), ("我的算子/提示.py", "utf-8"),
                                            ("café/ÿ.py", "cp437")])
def test_legacy_names_are_decoded(name, encoding):
    archive, info = first_member(legacy_named_zip({name: b"x"}, encoding))
    assert not info.flag_bits & zip_members.UTF8_NAME_FLAG
    assert member_name(info) == name


@pytest.mark.parametrize("raw, legible", [("提示词.txt".encode("gbk"), "提示词.txt"), (b"caf\xe9\xff.py", "caf\\xe9\\xff.py")])
def test_a_name_flagged_utf8_that_is_not_is_refused_naming_it(tmp_path, raw, legible):
    """zipfile raises UnicodeDecodeError, not BadZipFile, for such an archive: it cannot list it at all."""
    data = misflagged_zip({b"torchcode.py": b"x = 1\n", raw: b"relu"})
    with pytest.raises(NameNotUtf8) as refused:
        open_zip(io.BytesIO(data))
    assert refused.value.name == legible and refused.value.raw == raw
    assert isinstance(refused.value, ValueError)  # what extract_zip's callers catch
    (tmp_path / "bundle.zip").write_bytes(data)
    with pytest.raises(NameNotUtf8, match="marked UTF-8"):
        extract_zip(tmp_path / "bundle.zip", tmp_path / "out")
    assert not list((tmp_path / "out").rglob("*.*"))


def test_site_and_agent_hold_the_same_reader():
    # Vendored, not imported: the site never imports the agent, the agent never imports the site.
    agent_copy = REPO / "profiler_agent" / "bundles" / "zip_members.py"
    site_copy = REPO / "submissions" / "zip_members.py"
    assert agent_copy.read_bytes() == site_copy.read_bytes()
