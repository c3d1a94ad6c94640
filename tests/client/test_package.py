"""The client as installed: its console script, its upload body, and the site's words it shows."""
import email.parser
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

from gpucf import multipart, render

ROOT = Path(__file__).resolve().parents[2]


def test_the_console_script_is_the_command_line_and_the_package_is_installed():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    module, function = project["project"]["scripts"]["gpucf"].split(":")
    assert getattr(importlib.import_module(module), function).__module__ == "gpucf.cli"
    assert "gpucf*" in project["tool"]["setuptools"]["packages"]["find"]["include"]


def test_python_dash_m_gpucf_runs_without_django_or_torch_loaded():
    shown = subprocess.run([sys.executable, "-c", "import runpy, sys; sys.argv = ['gpucf', '--version'];\n"
                            "try:\n    runpy.run_module('gpucf', run_name='__main__')\nexcept SystemExit:\n    pass\n"
                            "print(sorted(m for m in ('django', 'torch', 'submissions', 'profiler_agent', 'requests')"
                            " if m in sys.modules))"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert shown.stdout.splitlines() == ["gpucf 0.1.0", "[]"]


def test_the_upload_body_is_a_multipart_form_with_the_fields_and_the_zip():
    zip_bytes = b"PK\x03\x04 binary \r\n--not-a-boundary \x00\xff"
    body, content_type = multipart.encode([("issue", "ABCDEF"), ("note", "vectorized, 两倍")],
                                          [("files", 'my "relu".zip', zip_bytes, "application/zip")])
    message = email.parser.BytesParser().parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    parts = {part.get_param("name", header="content-disposition"): part for part in message.get_payload()}
    assert parts["issue"].get_payload(decode=True) == b"ABCDEF"
    assert parts["note"].get_payload(decode=True).decode() == "vectorized, 两倍"
    assert parts["files"].get_payload(decode=True) == zip_bytes
    assert parts["files"].get_filename() == "my %22relu%22.zip" and parts["files"].get_content_type() == "application/zip"


def test_every_stage_the_site_reports_has_words_in_the_client():
    from submissions.models import RunStage

    assert set(render.STAGES) == set(RunStage.values)
