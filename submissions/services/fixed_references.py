"""An issue's reference fixed by the organizers: once published, every submission to the issue is
judged on it (bundles.with_fixed_reference), so a contestant sends cudacode.py alone and cannot change
the problem. Published and withdrawn through `manage.py fix_reference`, each change audited."""
import ast

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from submissions.models import Issue
from submissions.services import audit

MAX_REFERENCE_CHARS = 200_000


class FixedReferenceRefused(ValueError):
    """The text cannot be a reference: the message says why."""


def reference_problems(text: str) -> list[str]:
    """What keeps `text` from being a reference the agent can load, read without running it: Python
    that parses, with a class Model, get_init_inputs, and get_inputs or get_cases (its input cases)."""
    if not text.strip():
        return [_("the reference is empty")]
    if len(text) > MAX_REFERENCE_CHARS:
        return [_("the reference is %(size)s characters; the limit is %(limit)s")
                % {"size": len(text), "limit": MAX_REFERENCE_CHARS}]
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [_("the reference is not valid Python (line %(line)s: %(message)s)") % {"line": exc.lineno, "message": exc.msg}]
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    problems = []
    if "Model" not in classes:
        problems.append(_("the reference defines no class Model"))
    if "get_init_inputs" not in functions:
        problems.append(_("the reference defines no get_init_inputs()"))
    if not {"get_inputs", "get_cases"} & functions:
        problems.append(_("the reference defines neither get_inputs() nor get_cases()"))
    return problems


@transaction.atomic
def publish(issue: Issue, text: str, *, actor_label: str, reason: str = "") -> None:
    problems = reference_problems(text)
    if problems:
        raise FixedReferenceRefused("; ".join(problems))
    issue = Issue.objects.select_for_update().get(pk=issue.pk)
    before = {"fixed_reference": bool(issue.fixed_reference)}
    issue.fixed_reference, issue.fixed_reference_at = text, timezone.now()
    issue.save(update_fields=["fixed_reference", "fixed_reference_at"])
    audit.record("issue.reference_fixed", issue, actor_label=actor_label, before=before,
                 after={"fixed_reference": True, "chars": len(text)}, reason=reason)


@transaction.atomic
def withdraw(issue: Issue, *, actor_label: str, reason: str = "") -> bool:
    """The issue takes the reference each submission carries again; False when none was fixed."""
    issue = Issue.objects.select_for_update().get(pk=issue.pk)
    if not issue.fixed_reference:
        return False
    issue.fixed_reference, issue.fixed_reference_at = "", None
    issue.save(update_fields=["fixed_reference", "fixed_reference_at"])
    audit.record("issue.reference_unfixed", issue, actor_label=actor_label, before={"fixed_reference": True},
                 after={"fixed_reference": False}, reason=reason)
    return True
