"""Telling the submission's failures from the harness's own: calls into submission code are
wrapped, and what they raise becomes a SubmissionFailure tagged with the stage."""

import contextlib
import traceback


class SubmissionFailure(Exception):
    """Something submission code raised (or a device fault it caused), tagged with the stage."""

    def __init__(self, stage: str, exc: BaseException):
        super().__init__(f"{stage}: {exc!r}")
        self.stage = stage
        self.exc = exc


def as_submission_failure(stage: str, exc: BaseException) -> BaseException:
    if isinstance(exc, (SubmissionFailure, KeyboardInterrupt)):
        return exc
    return SubmissionFailure(stage, exc)


@contextlib.contextmanager
def submission_code(stage: str):
    """Marks a call into submission code: what it raises, SystemExit included, is the submission's."""
    try:
        yield
    except BaseException as exc:
        raise as_submission_failure(stage, exc) from exc


def guarded(stage: str, fn):
    """Like submission_code, for calls in the timed loop (a bare try costs nothing when nothing fails)."""

    def call():
        try:
            return fn()
        except BaseException as exc:
            raise as_submission_failure(stage, exc) from exc

    return call


def is_device_fault(exc: BaseException) -> bool:
    """A CUDA error surfacing in harness code (at a synchronize) was caused by the kernel that ran."""
    return type(exc).__name__ == "AcceleratorError" or "CUDA error" in str(exc)


def qualified_type(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def describe_error(origin: str, stage: str, exc: BaseException) -> dict:
    return {
        "origin": origin,  # "submission" or "harness"
        "stage": stage,
        "type": qualified_type(exc),
        "message": str(exc)[-8000:],
        "traceback": "".join(traceback.format_exception(exc))[-16000:],
    }
