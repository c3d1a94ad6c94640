"""The queues an agent's worker reads, in the order it reads them.

The site puts a GPU type's fresh runs on `gpu.<type>`, a rejudge's runs on `gpu.<type>.rejudge` and a
final system test's runs on `gpu.<type>.final` (protocol.vocabulary's suffixes; a test keeps the
site's submissions.models equal). An agent is told its fresh queues (`--queue gpu.h100`); it reads
their final queues first, then all of them, then their rejudge queues: RQ takes the first non-empty
queue in order, so a season's final system test waits for nothing and a rejudge never delays a fresh
submission. A site from before the final queues grants no `.final` queue: the worker then passes over
it (worker.job_claims) and reads the others as before.
"""

from __future__ import annotations

from profiler_agent.protocol.vocabulary import FINAL_QUEUE_SUFFIX as FINAL_SUFFIX
from profiler_agent.protocol.vocabulary import REJUDGE_QUEUE_SUFFIX as REJUDGE_SUFFIX


def fresh_queue(name: str) -> str:
    """The fresh queue a queue name belongs to (itself, or the one its suffix hangs from)."""
    for suffix in (REJUDGE_SUFFIX, FINAL_SUFFIX):
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def listen_order(queues: list[str]) -> list[str]:
    """The final queue of each fresh queue given, then the fresh queues as given, then the rejudge
    queue of each; names already listed are kept once, so applying it twice changes nothing."""
    fresh = list(dict.fromkeys(fresh_queue(q) for q in queues))
    ordered = [*(q + FINAL_SUFFIX for q in fresh), *fresh, *(q + REJUDGE_SUFFIX for q in fresh)]
    return list(dict.fromkeys(ordered))
