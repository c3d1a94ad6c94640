"""The `.ncu-rep` of a profile run: Nsight Compute's own report of the kernels it profiled, kept for its
owner (and the organizers) to open in Nsight Compute. The per-kernel figures the page shows are in the
run's result (`profile`); this is the file they were read from."""
from django.db import models

from submissions.models.runs import Run


class ProfileFile(models.Model):
    """One profile run's report file, sent by the agent that judged it (gzip-compressed within
    PROFILE_FILE_MAX_BYTES) and kept as Nsight Compute wrote it (PROFILE_REPORT_MAX_BYTES at most), in the
    database like a bundle's files, so nothing depends on a local disk."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="profile_file")
    content = models.BinaryField()
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    attempt = models.PositiveSmallIntegerField(help_text="The attempt whose agent sent it")
    uploaded_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"profile of run {self.run_id} ({self.size} bytes)"
