"""What an attacker with write access to the agents' Redis names in forged jobs. Importing this
module, or calling its function, leaves a marker file: a test that finds none proves neither happened."""
import os
from pathlib import Path

_MARKER = os.environ.get("EVIL_MARKER")
if _MARKER:
    Path(_MARKER + ".imported").touch()


def touch_marker(*args, **kwargs):
    if _MARKER:
        Path(_MARKER + ".called").touch()
    return "pwned"
