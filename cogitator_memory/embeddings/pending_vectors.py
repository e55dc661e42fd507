"""Entries waiting for their vectors: the message index's jobs of record.

An indexable entry gets a ``PendingVector`` in the transaction that adds it (``queue``),
and its task is published once that commits. A worker takes a batch of them
(``claim_batch``): the entries its task names first, then those waiting longest, locked
with ``SKIP LOCKED`` on PostgreSQL and marked with the batch's claim, so two workers
never embed one entry and a batch goes to the provider in one call. The pending rows are
deleted in the transaction that stores the vectors (``embed_pending``). A provider that
fails puts the batch back in the queue after a backoff, dead after ``JOBS["MAX_ATTEMPTS"]``
tries; a batch whose worker was lost is taken again once its lease runs out (the sweeper
wakes a worker for it).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from cogitator_memory.background import Work
from cogitator_memory.embeddings.models import PendingVector
from cogitator_memory.exceptions import EmbeddingServiceError
from cogitator_memory.jobs import (
    JobKind,
    RunStatus,
    job_settings,
    public_error,
    publish_on_commit,
    register_kind,
    retry_delay,
    tasks_run_eagerly,
)

if TYPE_CHECKING:
    from cogitator_memory.threads.models import Entry

logger = logging.getLogger(__name__)

__all__ = [
    "PENDING_VECTOR_JOBS",
    "claim_batch",
    "drop_embedded",
    "embed_pending",
    "queue",
    "register_pending_vector_jobs",
    "waiting",
]

# The sweeper wakes a worker per this many pending vectors: about one provider call.
SWEEP_BATCH = 64

PENDING_VECTOR_JOBS = JobKind(
    PendingVector, Work.EMBED_ENTRIES, args=lambda ids: (list(ids),), batch=SWEEP_BATCH
)


def register_pending_vector_jobs() -> None:
    register_kind(PENDING_VECTOR_JOBS)


def queue(entries: Sequence[Entry]) -> list[str]:
    """In the open transaction: a pending vector for each of these entries the message
    index takes (when it is on). Returns their ids; their task is published on commit."""
    from cogitator_memory.embeddings.message_index import is_indexable, message_index_enabled

    if not message_index_enabled():
        return []
    ids = [entry.pk for entry in entries if is_indexable(entry)]
    if ids:
        PendingVector.objects.bulk_create(
            [PendingVector(entry_id=entry_id) for entry_id in ids], ignore_conflicts=True
        )
    return ids


def waiting() -> int:
    """Entries still waiting for their vector (queued or being embedded)."""
    return PendingVector.objects.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).count()


def drop_embedded(entry_ids: Sequence[str]) -> int:
    """Delete the pending vectors of these entries that are not being embedded (queued,
    failed or dead) and now have their vector (a re-index embedded them). Returns how
    many."""
    from cogitator_memory.embeddings.message_index import MESSAGE_SOURCE_TYPE, MESSAGES_INDEX
    from cogitator_memory.embeddings.registry import get_embedding_store
    from cogitator_memory.embeddings.types import EmbeddingFilter

    rows = PendingVector.objects.filter(pk__in=list(entry_ids)).exclude(status=RunStatus.RUNNING)
    ids = list(rows.values_list("pk", flat=True))
    if not ids:
        return 0
    present = {
        embedding.source_id
        for embedding in get_embedding_store().get_by_sources(
            ids, filter=EmbeddingFilter(source_type=MESSAGE_SOURCE_TYPE, index=MESSAGES_INDEX)
        )
    }
    deleted, _ = rows.filter(pk__in=present).delete()
    return deleted


def _takeable(now: object) -> Q:
    return Q(status=RunStatus.QUEUED, run_after__lte=now) | Q(
        status=RunStatus.RUNNING, lease_until__lte=now
    )


def claim_batch(entry_ids: Sequence[str], size: int) -> tuple[str, list[str]]:
    """Take up to ``size`` pending vectors for this worker: those of ``entry_ids`` first,
    then those waiting longest. Rows out of attempts are closed as dead instead. Returns
    the batch's claim and the entry ids it took."""
    config = job_settings()
    now = timezone.now()
    token = uuid.uuid4().hex
    eager = tasks_run_eagerly()
    takeable = _takeable(now)
    if eager:
        # No queue to wait in: what is pending is due.
        takeable = Q(status=RunStatus.QUEUED) | takeable
    with transaction.atomic():
        rows = PendingVector.objects.filter(takeable).select_for_update(skip_locked=True)
        picked = list(rows.filter(pk__in=list(entry_ids)).values_list("pk", "attempts")[:size])
        if len(picked) < size:
            seen = [pk for pk, _ in picked]
            picked += list(
                rows.exclude(pk__in=seen)
                .order_by("run_after")
                .values_list("pk", "attempts")[: size - len(picked)]
            )
        spent = [pk for pk, attempts in picked if attempts >= config.max_attempts]
        if spent:
            PendingVector.objects.filter(pk__in=spent).update(
                status=RunStatus.DEAD,
                finished_at=now,
                lease_until=None,
                updated_at=now,
            )
            logger.warning("%d entries' vectors are dead after their attempts.", len(spent))
        take = [pk for pk, attempts in picked if attempts < config.max_attempts]
        if not take:
            return token, []
        # The condition again in the UPDATE: on SQLite another worker may have taken a
        # row since the read; only the rows this UPDATE takes carry this claim.
        PendingVector.objects.filter(takeable, pk__in=take).update(
            status=RunStatus.RUNNING,
            attempts=F("attempts") + 1,
            lease_until=now + config.lease,
            claim=token,
            started_at=Coalesce(F("started_at"), Value(now)),
            updated_at=now,
        )
    taken = list(
        PendingVector.objects.filter(pk__in=take, claim=token, status=RunStatus.RUNNING)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return token, taken


def _finish(token: str, entry_ids: Sequence[str]) -> None:
    """Delete the batch's pending rows (in the transaction that stores its vectors)."""
    PendingVector.objects.filter(pk__in=list(entry_ids), claim=token).delete()


def _release(token: str, entry_ids: Sequence[str], exc: BaseException) -> None:
    """The batch failed: back to the queue after a backoff, or dead after its attempts.
    Run eagerly there is no queue: the rows fail."""
    now = timezone.now()
    error = public_error(exc)
    rows = PendingVector.objects.filter(pk__in=list(entry_ids), claim=token)
    if tasks_run_eagerly():
        rows.update(
            status=RunStatus.FAILED, error=error, finished_at=now, lease_until=None, updated_at=now
        )
        return
    config = job_settings()
    spent = rows.filter(attempts__gte=config.max_attempts)
    spent.update(
        status=RunStatus.DEAD,
        error=f"Given up after {config.max_attempts} attempts. {error}",
        finished_at=now,
        lease_until=None,
        updated_at=now,
    )
    back = list(rows.filter(status=RunStatus.RUNNING).values_list("pk", "attempts"))
    for attempts in sorted({attempts for _, attempts in back}):
        PendingVector.objects.filter(
            pk__in=[pk for pk, tries in back if tries == attempts], claim=token
        ).update(
            status=RunStatus.QUEUED,
            error=error,
            lease_until=None,
            run_after=now + retry_delay(attempts),
            updated_at=now,
        )
    publish_on_commit(PendingVector, [pk for pk, _ in back])


def embed_pending(entry_ids: Sequence[str], *, batch_size: int) -> int:
    """Embed a batch of pending vectors, these entries' first, in one provider call, and
    store the vectors with the pending rows deleted in the same transaction. Entries that
    already have a vector are not sent (their rows go). Returns how many were embedded.
    A provider failure puts the batch back for a later try and is not raised."""
    from cogitator_memory.embeddings.message_index import index_entries

    token, taken = claim_batch(entry_ids, batch_size)
    if not taken:
        return 0
    try:
        return index_entries(taken, only_missing=True, finish=lambda: _finish(token, taken))
    except EmbeddingServiceError as exc:
        logger.warning("Embedding %d entries failed, tried again later: %s", len(taken), exc)
        _release(token, taken, exc)
        return 0
    except Exception as exc:
        _release(token, taken, exc)
        raise
