"""The run's state machine (submissions/services/run_states.py) is the only code that changes a run's
status: a new path that sets it elsewhere would skip what every transition does (the queue slot it
frees, the job it pushes or withdraws, the attempt it records)."""
import ast
from pathlib import Path

import submissions

STATE_MACHINE = Path(submissions.__file__).parent / "services" / "run_states.py"


def status_changes(path):
    """(line, what) of each place in a module that sets a status: `x.status = RunStatus.X`,
    `.update(status=...)`, `.create(..., status=...)`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "status" and "RunStatus" in ast.unparse(node.value):
                    found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("update", "create"):
            for keyword in node.keywords:
                if keyword.arg == "status" and "RunStatus" in ast.unparse(keyword.value):
                    found.append((node.lineno, ast.unparse(node)))
    return found


def test_only_the_state_machine_changes_a_runs_status():
    elsewhere = {f"{path.relative_to(STATE_MACHINE.parents[2])}:{line}": code
                 for path in Path(submissions.__file__).parent.rglob("*.py")
                 if path != STATE_MACHINE and "migrations" not in path.parts
                 for line, code in status_changes(path)}
    assert not elsewhere, elsewhere
    assert len(status_changes(STATE_MACHINE)) >= 6  # queue, wait (twice), start, finish, give up, cancel


def test_the_check_finds_a_status_set_outside_the_state_machine(tmp_path):
    module = tmp_path / "rogue.py"
    module.write_text("def close(run):\n    run.status = RunStatus.DONE\n    Run.objects.filter(pk=1).update(status=RunStatus.QUEUED)\n")
    assert [line for line, _ in status_changes(module)] == [2, 3]
