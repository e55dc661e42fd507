"""Tasks of the message index: embed the entries waiting for their vectors.

``embed_entries_task`` takes entry ids (never entries): a batch of pending vectors, these
entries' first, then those waiting longest in any thread, claimed so that no two workers
embed one entry (``embeddings/pending_vectors.py``), goes to the provider in one call and
to the store in one write. It is safe to run twice: a redelivered task finds the pending
rows gone, and entries that already have a vector are not embedded again. A provider that
fails puts the batch back in the queue after a backoff.
"""

from __future__ import annotations

import logging

from celery import shared_task

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.embeddings import message_index
from cogitator_memory.exceptions import EmbeddingServiceError
from cogitator_memory.items import vectors as item_vectors
from cogitator_memory.tasks.retries import retried_task

logger = logging.getLogger(__name__)


# Acknowledged late: a worker lost mid-batch leaves the message to another (and the
# batch's lease to the sweeper). No Celery retries: the pending rows hold the tries.
@shared_task(acks_late=True, ignore_result=True)
def embed_entries_task(entry_ids: list[str]) -> int:
    """Embed a batch of the entries waiting for a vector, these first. Returns how many
    were embedded."""
    return message_index.index_new_entries(entry_ids)


@retried_task(EmbeddingServiceError, ignore_result=True)
def embed_items_task(item_ids: list[str]) -> int:
    """Embed the memory items of these ids that have no vector yet, for recall's item
    vector channel (``items/vectors.embed_items``: one provider call); items that are gone
    are skipped, and a redelivered task embeds nothing twice. Returns how many were
    embedded."""
    return item_vectors.embed_items(item_ids)


background.offer(Work.EMBED_ENTRIES, embed_entries_task)
