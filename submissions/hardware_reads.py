"""What the pages and the API say of the GPU types that judge a bundle: per GPU type of the season, whether
it judges this bundle and why not (services/hardware's plan), and how many workers could take its runs now."""
from django.utils.translation import gettext_lazy as _

from submissions import fleet_status, season_access_reads
from submissions.selectors import open_seasons
from submissions.services import hardware


def judging_hardware(season, files=None, online=None):
    """What the pages say before and while judging, per GPU type of the season: whether it judges this
    bundle (files: path -> text; None: a bundle that runs anywhere) and why not, and how many workers
    could take its runs now (`online`: fleet_status.workers_online(), when the caller has it)."""
    online = fleet_status.workers_online() if online is None else online
    plan = hardware.plan_for(season, files or {})
    rows = ([{"gpu_type": g, "judged": True, "why_not": "", "online": online.get(g.pk, 0)} for g in plan.judged]
            + [{"gpu_type": g, "judged": False, "why_not": why, "online": online.get(g.pk, 0)}
               for g, why in plan.skipped])
    return sorted(rows, key=lambda row: row["gpu_type"].slug)


def open_seasons_hardware(contestant):
    """For the submit page: each open season the contestant can submit to, with its GPU types, the
    workers online for each, and whether it judges CPU bundles only (a CUDA bundle is refused there)."""
    online = fleet_status.workers_online()
    seasons = open_seasons().prefetch_related("gpu_types")
    result = []
    for season in seasons:
        rows = judging_hardware(season, online=online)
        refusal = season_access_reads.refusal(season, contestant)
        result.append({"season": season, "rows": rows,
                       "cpu_only": bool(rows) and all(row["gpu_type"].is_cpu for row in rows),
                       # a ban, or an invite-only season that has not admitted them: why it refuses them
                       "access_refusal": refusal,
                       # not admitted (and not banned): an invite code takes them in, on the join page
                       "needs_invite": bool(refusal) and season_access_reads.active_ban(season, contestant) is None})
    return result


def submission_hardware(submission, online=None, *, show_code=True):
    """For the submission page: the season's GPU types with this bundle's plan and the workers online.
    Without `show_code` (a viewer who may not see the code, can_see_code) no reason names the CUDA
    markers found: they quote the code's file names and what it uses."""
    files = {f.path: f.content for f in submission.files.all()}
    rows = judging_hardware(submission.issue.season, files, online=online)
    if submission.profile_of_id:  # a profile of one run: made on that run's GPU type alone
        profiled = {run.gpu_type_id for run in submission.runs.all()}
        rows = [row if row["gpu_type"].pk in profiled or not row["judged"] else
                {**row, "judged": False, "why_not": str(_("a profile of run #%(run)s is made on its GPU type alone")
                                                       % {"run": submission.profile_of_id})}
                for row in rows]
    if not show_code:
        rows = [row if row["judged"] else {**row, "why_not": hardware.needs_cuda_reason_without_markers()}
                for row in rows]
        return {"rows": rows, "cuda_markers": []}
    return {"rows": rows, "cuda_markers": hardware.plan_for(submission.issue.season, files).cuda_markers}
