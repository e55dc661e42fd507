"""Compaction summaries that stand on entries that go, and compacting their threads again.

Which summaries stand on which entries is the compaction's rule
(``compaction.coverage.summaries_standing_on``). A summary that goes is deleted (it is an
event), and its thread is not rebuilt in the cascade's transaction: once the cascade
commits, the thread is handed to the compaction of the background (``request_compaction``,
not forced), which writes a summary again from what stands when the thread is still past
its threshold. With compaction off (``COMPACTION["ENABLED"]`` false) or no model, nothing
is asked; the next trigger compacts the thread as any other.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from django.db import transaction

from cogitator_memory.compaction.coverage import summaries_standing_on
from cogitator_memory.compaction.runs import request_compaction
from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import CogitatorMemoryError

__all__ = ["compact_again_after_commit", "summaries_standing_on"]

logger = logging.getLogger(__name__)


def compact_again_after_commit(thread_ids: Collection[str]) -> list[str]:
    """Once the transaction commits, ask the background compaction of these threads
    (when compaction is on). Returns the threads it will ask for."""
    if not thread_ids or not memory_settings.COMPACTION["ENABLED"]:
        return []
    wanted = sorted(set(thread_ids))

    def ask() -> None:
        for thread_id in wanted:
            try:
                request_compaction(thread_id, forced=False)
            except CogitatorMemoryError as exc:  # gone meanwhile, no model configured
                logger.info("Not compacting thread %s again: %s", thread_id, exc)

    transaction.on_commit(ask)
    return wanted
