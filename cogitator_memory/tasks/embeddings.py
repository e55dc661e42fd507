"""Tasks of the message index: embed entries.

Each takes entry ids (never entries) and calls one service of
``embeddings/message_index.py``. A task embeds its entries together with the entries
queued after them, in any thread, in one provider call, so a backlog is embedded in
batches however many threads it is spread over. It is safe to run twice: a store
replaces the vector of the same source, and entries that already have one are not
embedded again.
"""

from __future__ import annotations

import logging

from cogitator_memory.embeddings import message_index
from cogitator_memory.exceptions import EmbeddingServiceError
from cogitator_memory.items import vectors as item_vectors
from cogitator_memory.tasks.retries import retried_task
from cogitator_memory.threads.models import Entry

logger = logging.getLogger(__name__)


@retried_task(EmbeddingServiceError, ignore_result=True)
def embed_entries_task(entry_ids: list[str]) -> int:
    """Embed the entries that still exist into the message index, with the entries added
    after them, to any thread, that wait for their own tasks
    (``message_index.index_new_entries``: one provider call for the lot), skipping those
    that already have a vector there (a redelivered task embeds nothing twice). Returns
    how many were embedded."""
    # Most tasks of a burst find that an earlier task's batch took their entries: one
    # read tells them so.
    if message_index.all_indexed(entry_ids):
        return 0
    present = list(Entry.objects.filter(pk__in=entry_ids).values_list("pk", flat=True))
    if len(present) < len(set(entry_ids)):
        logger.info("Not embedding %d entries that are gone.", len(set(entry_ids)) - len(present))
    if not present:
        return 0
    return message_index.index_new_entries(present)


@retried_task(EmbeddingServiceError, ignore_result=True)
def embed_items_task(item_ids: list[str]) -> int:
    """Embed the memory items of these ids that have no vector yet, for recall's item
    vector channel (``items/vectors.embed_items``: one provider call); items that are gone
    are skipped, and a redelivered task embeds nothing twice. Returns how many were
    embedded."""
    return item_vectors.embed_items(item_ids)
