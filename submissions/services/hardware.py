"""Which hardware judges a submission, decided before it is stored.

A submission fans out to one run per GPU type of its season, except that a bundle needing CUDA
(bundles.cuda_markers) is never sent to the CPU type: a CPU agent can only fail it ("CUDA_HOME
environment variable is not set"), which says nothing about the code. A CUDA bundle in a season judged
on CPU alone is refused with a message saying so. A run on a GPU type no agent serves right now waits
in its queue, and the pages say that no agent for that GPU type is online (fleet_status).
"""
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from submissions.bundles import cuda_markers


class NoHardwareForBundle(ValueError):
    """None of the season's GPU types can judge this bundle."""


@dataclass
class Plan:
    """The GPU types that judge a bundle, those that do not (with why), and why it needs CUDA."""

    judged: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # (gpu_type, reason)
    cuda_markers: list = field(default_factory=list)

    @property
    def needs_cuda(self):
        return bool(self.cuda_markers)


def _needs_cuda_reason(markers):
    return _("this bundle needs a CUDA GPU (%(markers)s); a CPU agent cannot build or run it") % {
        "markers": "; ".join(markers)}


def needs_cuda_reason_without_markers():
    """Why a GPU type skips a bundle, told to whoever may not see its code: the markers name its files
    and what in them needs CUDA."""
    return _("this bundle needs a CUDA GPU; a CPU agent cannot build or run it")


def plan_for(season, files):
    """The judging plan of a bundle (path -> text) in a season."""
    markers = cuda_markers(files)
    plan = Plan(cuda_markers=markers)
    for gpu_type in season.gpu_types.order_by("slug"):
        if markers and gpu_type.is_cpu:
            plan.skipped.append((gpu_type, _needs_cuda_reason(markers)))
        else:
            plan.judged.append(gpu_type)
    return plan


def check_judgeable(season, files):
    """The plan, or NoHardwareForBundle when no GPU type of the season can judge the bundle."""
    plan = plan_for(season, files)
    if plan.judged or not plan.skipped:
        return plan
    raise NoHardwareForBundle(
        _("season %(season)s is judged on CPU only, and %(reason)s. Submit a bundle that runs on the CPU "
          "(a C++ or plain PyTorch candidate, like examples/relu-cpu), or ask the organizers to add a GPU type "
          "with an agent to the season.") % {"season": season.code, "reason": _needs_cuda_reason(plan.cuda_markers)})


def stored_files(submission):
    return {f.path: f.content for f in submission.files.all()}
