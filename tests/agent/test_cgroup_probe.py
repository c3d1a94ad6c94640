"""The cgroup probe's logic (profiler_agent.sandbox.cgroup.hierarchy) on a folder laid out like a cgroup v2
hierarchy: which controllers it takes, where it puts the agent, and the reason it gives when it
cannot; runs on any host (test_cgroup.py covers real hierarchies)."""

import os
from pathlib import Path

from profiler_agent.sandbox import cgroup


class fake_hierarchy:
    """cgroup2_mount and own_cgroup pointed at `root`, a folder with a cgroup `/agent` (a domain
    cgroup holding no process) whose parent hands it `available`; the probe's cache cleared."""

    def __init__(self, root: Path, available: str, own: str = "/agent"):
        self.root, self.own = root, own
        agent = root / "agent"
        agent.mkdir(parents=True)
        for name, text in (("cgroup.controllers", available), ("cgroup.subtree_control", ""),
                           ("cgroup.procs", ""), ("cgroup.type", "domain")):
            (agent / name).write_text(text)
        if own.endswith("/" + cgroup.AGENT_LEAF):
            (root / own.lstrip("/")).mkdir()

    def __enter__(self):
        self.saved = cgroup.cgroup2_mount, cgroup.own_cgroup, os.environ.pop(cgroup.SWITCH_ENV, None)
        cgroup.cgroup2_mount = lambda *_: (self.root, "/")
        cgroup.own_cgroup = lambda: self.own
        cgroup._cache.clear()
        return self.root / "agent"

    def __exit__(self, *exc):
        cgroup.cgroup2_mount, cgroup.own_cgroup, switch = self.saved
        if switch is not None:
            os.environ[cgroup.SWITCH_ENV] = switch
        cgroup._cache.clear()


def test_the_probe_takes_memory_alone_and_notes_that_pids_is_missing(tmp_path):
    with fake_hierarchy(tmp_path, "cpu memory hugetlb") as agent:
        where = cgroup.hierarchy()
    assert where == cgroup.Hierarchy(agent, ("memory",), ("pids",))
    assert (agent / "cgroup.subtree_control").read_text() == "+memory"  # pids is not asked for
    assert (agent / cgroup.AGENT_LEAF).is_dir()  # the leaf its processes moved to


def test_the_probe_enables_pids_too_where_it_is_available(tmp_path):
    with fake_hierarchy(tmp_path, "memory pids") as agent:
        where = cgroup.hierarchy()
    assert where == cgroup.Hierarchy(agent, ("memory", "pids"), ())
    assert (agent / "cgroup.subtree_control").read_text() == "+memory +pids"


def test_an_agent_already_in_its_leaf_uses_the_parent_as_the_base(tmp_path):
    with fake_hierarchy(tmp_path, "memory", own=f"/agent/{cgroup.AGENT_LEAF}") as agent:
        where = cgroup.hierarchy()
    assert where.base == agent and where.controllers == ("memory",)


def test_without_the_memory_controller_the_probe_gives_the_reason(tmp_path):
    for available, listed in (("pids hugetlb", "pids hugetlb"), ("", "none")):
        with fake_hierarchy(tmp_path / (available or "none"), available) as agent:
            try:
                cgroup.hierarchy()
                raise AssertionError(f"a hierarchy without the memory controller: {available!r}")
            except cgroup.Unavailable as exc:
                assert str(exc) == f"{agent}: the memory controller not available (cgroup.controllers: {listed})"
        assert (agent / "cgroup.subtree_control").read_text() == ""  # nothing enabled, nothing moved
        assert not (agent / cgroup.AGENT_LEAF).exists()
