"""The agent takes a profile's .ncu-rep from the folder the sandbox user owns without following what
that user may have put in its place: the agent runs as root and sends the file to the site, where its
owner downloads it."""
import hashlib
import os

from profiler_agent.judge.profile_report import REPORT_FILE, taken_report


def test_a_plain_report_is_copied_with_its_size_and_digest(tmp_path):
    (tmp_path / "ncu").mkdir()
    (tmp_path / "ncu" / REPORT_FILE).write_bytes(b"report" * 1000)
    facts = taken_report(tmp_path / "ncu" / REPORT_FILE, tmp_path / "kept")
    assert facts["bytes"] == 6000 and facts["sha256"] == hashlib.sha256(b"report" * 1000).hexdigest()
    assert (tmp_path / "kept" / REPORT_FILE).read_bytes() == b"report" * 1000


def test_a_link_in_the_reports_place_is_never_followed(tmp_path):
    secret = tmp_path / "agent-token"
    secret.write_text("the agent's token")
    (tmp_path / "ncu").mkdir()
    (tmp_path / "ncu" / REPORT_FILE).symlink_to(secret)
    assert taken_report(tmp_path / "ncu" / REPORT_FILE, tmp_path / "kept") is None
    os.link(secret, tmp_path / "ncu" / "hard")  # a second name for the secret: refused too
    (tmp_path / "ncu" / REPORT_FILE).unlink()
    os.rename(tmp_path / "ncu" / "hard", tmp_path / "ncu" / REPORT_FILE)
    assert taken_report(tmp_path / "ncu" / REPORT_FILE, tmp_path / "kept") is None
    assert not (tmp_path / "kept" / REPORT_FILE).exists()


def test_a_linked_folder_is_never_followed(tmp_path):
    elsewhere = tmp_path / "agent-config"
    elsewhere.mkdir()
    (elsewhere / REPORT_FILE).write_text("the agent's configuration")
    (tmp_path / "ncu").symlink_to(elsewhere)
    assert taken_report(tmp_path / "ncu" / REPORT_FILE, tmp_path / "kept") is None


def test_a_fifo_in_the_reports_place_neither_blocks_nor_is_taken(tmp_path):
    (tmp_path / "ncu").mkdir()
    os.mkfifo(tmp_path / "ncu" / REPORT_FILE)
    assert taken_report(tmp_path / "ncu" / REPORT_FILE, tmp_path / "kept") is None


def test_ncus_log_is_read_without_following_a_link_in_its_place(tmp_path):
    from profiler_agent.judge.ncu_profiling import _read_head

    secret = tmp_path / "agent-token"
    secret.write_text("==ERROR== the agent's token")
    (tmp_path / "ncu").mkdir()
    log = tmp_path / "ncu" / "ncu.log"
    log.symlink_to(secret)
    assert _read_head(log) == ""
    log.unlink()
    log.write_text("==PROF== done")
    assert _read_head(log) == "==PROF== done"
