"""The agent's side of the job protocol on a CUDA host, without Redis: `judge_run(run_id, attempt)`
against a small real HTTP site (tests/agent/fake_site.py) that answers start with a secret, paths and
options, serves examples/001-example, and records what the agent sends. Prints one table.

Usage (repo root, on the GPU host): python bench/judge/job_protocol.py [--device cuda]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from profiler_agent.worker import agent_config  # noqa: E402
from profiler_agent.worker.judge_job import ForeignUrl, judge_run  # noqa: E402
from tests.agent.fake_site import FakeSite, zipped  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--example", default="001-example")
    args = parser.parse_args()
    site, attacker = FakeSite(), FakeSite()
    site.bundles = {"b.zip": zipped(args.example)}
    site.run_bundles = {"1": "b.zip"}
    site.start_answers = {"2": {"bundle_url": f"{attacker.url}/bundles/b.zip"}}
    agent_config.install(agent_config.AgentConfig(site=site.url, token="gpu-check-token", name="gpu-check",
                                                  device=args.device))
    rows = []
    try:
        outcome = judge_run(1, 1)
        result = site.posts("/result")["1"]
        timing = (result["json"].get("timing") or {})
        rows.append(("legit run: status", outcome["status"]))
        rows.append(("legit run: speedup", timing.get("speedup")))
        rows.append(("legit run: device", (result["json"].get("device") or {}).get("name")))
        rows.append(("start body", site.posts("/start")["1"]["json"]))
        rows.append(("result carried the start secret", result["headers"].get("X-Job-Secret") == "secret-1"))
        try:
            judge_run(2, 1)
            rows.append(("foreign bundle URL", "FOLLOWED (bad)"))
        except ForeignUrl:
            rows.append(("foreign bundle URL", "refused"))
        rows.append(("requests to the foreign host", len(attacker.requests)))
    finally:
        site.close()
        attacker.close()
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
