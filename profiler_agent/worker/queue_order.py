"""The queues an agent's worker reads, in the order it reads them.

The site puts a GPU type's fresh runs on `gpu.<type>` and a rejudge's runs on `gpu.<type>.rejudge`
(protocol.vocabulary.REJUDGE_QUEUE_SUFFIX; a test keeps the site's submissions.models.REJUDGE_QUEUE_SUFFIX equal). An agent is told its fresh
queues (`--queue gpu.h100`); it reads all of them first, then their rejudge queues: RQ takes the
first non-empty queue in order, so a rejudge never delays a fresh submission.
"""

from __future__ import annotations

from profiler_agent.protocol.vocabulary import REJUDGE_QUEUE_SUFFIX as REJUDGE_SUFFIX


def listen_order(queues: list[str]) -> list[str]:
    """Fresh queues as given, then the rejudge queue of each; names already listed are kept once, so
    applying it twice changes nothing."""
    fresh = [q.removesuffix(REJUDGE_SUFFIX) for q in queues]
    ordered = [*fresh, *(q + REJUDGE_SUFFIX for q in fresh)]
    return list(dict.fromkeys(ordered))
