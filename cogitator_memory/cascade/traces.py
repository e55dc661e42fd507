"""Traces of what a cascade forgot outside the rows that held it.

- the admin log: ``LogEntry`` rows about an object that went (their ``object_repr`` is the
  object's text, an item's value; their ``change_message`` a reviewer's reason);
- vectors of items purged with a scope (item vectors that stand on entries are the
  dependents' to delete);
- Celery results of the jobs of record of deleted threads (their task id is the run's id),
  where a result backend keeps them;
- the in-process copies of keyword corpora (``keywords.cache``);
- on PostgreSQL, ``VACUUM`` of the tables a cascade over a user emptied, in the background
  (``Work.VACUUM_TABLES``), so dead rows do not wait for autovacuum.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from celery.backends.base import DisabledBackend
from django.apps import apps
from django.db import connections, router, transaction
from django.db.models import Model

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.cascade.report import CascadeReport
from cogitator_memory.embeddings.entry_vectors import DELETE_SOURCES, IDS_PER_MESSAGE
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.keywords.cache import forget_corpora
from cogitator_memory.keywords.models import DocumentKind, KeywordCorpus
from cogitator_memory.outbox import services as outbox

__all__ = [
    "delete_vectors_of",
    "forget_admin_log",
    "forget_cached_corpora_after_commit",
    "forget_task_results_after_commit",
    "thread_corpora",
    "vacuum_after_commit",
]

logger = logging.getLogger(__name__)

IDS_PER_QUERY = 500


def forget_admin_log(model: type[Model], object_ids: Iterable[Any]) -> int:
    """Delete the admin log rows about these objects of ``model``; how many went (0 when
    the admin is not installed)."""
    if not apps.is_installed("django.contrib.admin"):
        return 0
    from django.contrib.admin.models import LogEntry
    from django.contrib.contenttypes.models import ContentType

    ids = [str(object_id) for object_id in dict.fromkeys(object_ids)]
    if not ids:
        return 0
    content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
    deleted = 0
    for start in range(0, len(ids), IDS_PER_QUERY):
        chunk = ids[start : start + IDS_PER_QUERY]
        deleted += LogEntry.objects.filter(content_type=content_type, object_id__in=chunk).delete()[
            0
        ]
    return deleted


def delete_vectors_of(source_ids: Sequence[str], report: CascadeReport) -> None:
    """Delete the vectors of these sources (items purged with their scope): in the
    transaction where the store keeps its rows in the database, else through the outbox."""
    if not source_ids:
        return
    store = get_embedding_store()
    for start in range(0, len(source_ids), IDS_PER_MESSAGE):
        chunk = list(source_ids[start : start + IDS_PER_MESSAGE])
        if store.transactional:
            report.vectors += store.delete_by_sources(chunk)
        else:
            outbox.write(DELETE_SOURCES, {"source_ids": chunk})
            report.vectors_queued += len(chunk)


def thread_corpora(thread_ids: Sequence[str]) -> list[int]:
    """The ids of the keyword corpora of these threads (of entries and of vectors)."""
    corpora: list[int] = []
    for start in range(0, len(thread_ids), IDS_PER_QUERY):
        chunk = list(thread_ids[start : start + IDS_PER_QUERY])
        corpora.extend(
            KeywordCorpus.objects.filter(
                kind__in=DocumentKind.values, thread_id__in=chunk
            ).values_list("pk", flat=True)
        )
    return corpora


def forget_cached_corpora_after_commit(corpus_ids: Sequence[int]) -> None:
    """Drop this process's copies of these corpora once the transaction commits."""
    if corpus_ids:
        wanted = list(corpus_ids)
        transaction.on_commit(lambda: forget_corpora(wanted))


def forget_task_results_after_commit(
    runs: Sequence[tuple[Work, str]], report: CascadeReport
) -> None:
    """Once the transaction commits, forget the Celery results of these runs (the work
    that ran them, the run's id: its task id) where a result backend keeps them."""
    if not runs:
        return
    wanted = list(runs)

    def forget() -> None:
        for work, run_id in wanted:
            try:
                task = background.task_for(work)
            except Exception:  # no task offered for the work: nothing was kept
                continue
            if getattr(task, "ignore_result", False) or isinstance(task.backend, DisabledBackend):
                continue
            try:
                task.AsyncResult(run_id).forget()
            except Exception:
                logger.exception("Could not forget the result of task %s.", run_id)
                continue
            report.task_results += 1

    transaction.on_commit(forget)


def vacuum_after_commit(models: Iterable[type[Model]]) -> bool:
    """On PostgreSQL, once the transaction commits, send ``VACUUM`` of these models'
    tables to the background. Returns whether it was sent."""
    tables = sorted({model._meta.db_table for model in models})
    if not tables:
        return False
    connection = connections[router.db_for_write(next(iter(models)))]
    if connection.vendor != "postgresql":
        return False

    def send() -> None:
        try:
            background.task_for(Work.VACUUM_TABLES).delay(tables)
        except Exception:
            logger.exception("Could not send the VACUUM of %s.", ", ".join(tables))

    transaction.on_commit(send)
    return True
