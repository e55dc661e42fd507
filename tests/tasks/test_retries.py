"""One retry policy for every task of the app: the tasks of jobs of record retry through
their rows (``tests/tasks/test_jobs_of_record.py``), the others through Celery with the
same kind of backoff."""

from __future__ import annotations

from django.db import OperationalError

from cogitator_memory.exceptions import EmbeddingServiceError
from cogitator_memory.tasks.compaction import compact_thread
from cogitator_memory.tasks.context import note_retrieved_task
from cogitator_memory.tasks.embeddings import embed_entries_task, embed_items_task
from cogitator_memory.tasks.extraction import extract_thread_task
from cogitator_memory.tasks.forgetting import forget_user_task
from cogitator_memory.tasks.retries import TASK_MAX_RETRIES, TASK_RETRY_BACKOFF_MAX

RETRIED_TASKS = {
    embed_items_task: (EmbeddingServiceError,),
    note_retrieved_task: (),
}
# Their rows hold their tries: Celery retries none of them, and each is acknowledged
# after it ran.
JOB_TASKS = (extract_thread_task, compact_thread, embed_entries_task, forget_user_task)


def test_every_retried_task_waits_out_a_busy_database_and_its_own_failures_alike() -> None:
    for task, own_failures in RETRIED_TASKS.items():
        assert set(task.autoretry_for) == {*own_failures, OperationalError}, task.name
        assert task.max_retries == TASK_MAX_RETRIES, task.name
        assert task.retry_backoff is True and task.retry_jitter is True, task.name
        assert task.retry_backoff_max == TASK_RETRY_BACKOFF_MAX, task.name


def test_tasks_are_acknowledged_after_they_ran_except_a_retrieval_count() -> None:
    for task in RETRIED_TASKS:
        assert task.acks_late is (task is not note_retrieved_task), task.name


def test_the_tasks_of_jobs_of_record_leave_their_retries_to_their_rows() -> None:
    for task in JOB_TASKS:
        assert not getattr(task, "autoretry_for", ()), task.name
        assert task.acks_late is True, task.name
        assert task.ignore_result is True, task.name
