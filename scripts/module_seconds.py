"""Writes tests/module_seconds.json from a pytest JUnit XML report: each test module's seconds (setup, call
and teardown of all its tests), which tests/conftest.py orders the modules by, longest first, so the
last modules the test workers take are short ones (docs/performance.md).

    bash scripts/test.sh --junitxml=var/junit.xml && .venv/bin/python scripts/module_seconds.py var/junit.xml
"""

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "module_seconds.json"


def module_seconds(report: Path) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(report).iter("testcase"):
        # classname: tests.agent.test_pch, or tests.agent.test_pch.TestSomething for a class's tests
        parts = [part for part in case.get("classname", "").split(".") if not part[:1].isupper()]
        if parts:
            seconds["/".join(parts) + ".py"] += float(case.get("time") or 0)
    return {module: round(value, 1) for module, value in sorted(seconds.items())}


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    OUT.write_text(json.dumps(module_seconds(Path(sys.argv[1])), indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
