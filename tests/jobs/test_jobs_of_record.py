"""Jobs of record, in process on both databases: one worker claims a job however many
try at once; a failed try comes back after a backoff and is dead after its attempts; the
sweeper wakes a worker for what waits with no message on its way, and for what a lost
worker held; the admin's retry takes failed and dead jobs back; new turns are debounced
into one run per thread, whatever the number of web processes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from cogitator_memory.embeddings.models import PendingVector
from cogitator_memory.embeddings.pending_vectors import claim_batch
from cogitator_memory.exceptions import LLMError
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.items.runs import RunRecorder, schedule_extraction
from cogitator_memory.jobs import RunStatus, claim, retry_jobs, sweep
from cogitator_memory.tasks.embeddings import embed_entries_task
from cogitator_memory.tasks.extraction import extract_thread_task
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread

CLAIMERS = 6


@pytest.fixture
def through_a_broker() -> Iterator[dict[str, list[dict[str, Any]]]]:
    """Tasks sent as to a worker and recorded here, not run: what each send was given."""
    conf = extract_thread_task.app.conf
    conf.task_always_eager = False
    sent: dict[str, list[dict[str, Any]]] = {"extract": [], "embed": []}
    with (
        mock.patch.object(
            extract_thread_task,
            "apply_async",
            side_effect=lambda **kwargs: sent["extract"].append(kwargs),
        ),
        mock.patch.object(
            embed_entries_task,
            "apply_async",
            side_effect=lambda **kwargs: sent["embed"].append(kwargs),
        ),
    ):
        try:
            yield sent
        finally:
            conf.task_always_eager = True


def a_thread(thread_id: str = "t1") -> Thread:
    return services.create_thread("agent-1", {"userId": "ana"}, thread_id=thread_id)


def at_once(work: Any, count: int) -> list[Any]:
    """Run ``work`` in ``count`` threads started together; what each returned."""
    results: list[Any] = [None] * count
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(index: int) -> None:
        try:
            start.wait()
            results[index] = work()
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors, errors
    return results


@pytest.mark.django_db(transaction=True)
def test_one_of_many_workers_claiming_a_job_at_once_gets_it(
    through_a_broker: dict[str, Any],
) -> None:
    # given a queued run
    run = ExtractionRun.objects.create(thread=a_thread())
    # when six workers claim it at the same moment
    claimed = at_once(lambda: claim(ExtractionRun, run.pk), CLAIMERS)
    # then one has it, with one attempt counted and a lease
    assert sum(job is not None for job in claimed) == 1
    run.refresh_from_db()
    assert (run.status, run.attempts) == (RunStatus.RUNNING, 1)
    assert run.lease_until is not None and run.lease_until > timezone.now()


@pytest.mark.django_db(transaction=True)
def test_workers_claiming_batches_at_once_take_disjoint_entries_and_all_of_them(
    through_a_broker: dict[str, Any],
) -> None:
    # given 90 entries waiting for their vectors
    thread = a_thread()
    entries = [services.add_entry(thread.pk, role="user", content=f"m{n}") for n in range(90)]
    PendingVector.objects.bulk_create([PendingVector(entry=entry) for entry in entries])
    # when six workers each claim a batch of 20 at the same moment
    batches = at_once(lambda: claim_batch([], 20)[1], CLAIMERS)
    # then no entry is in two batches, and together they took what fits
    taken = [entry_id for batch in batches for entry_id in batch]
    assert len(taken) == len(set(taken)) == 90
    assert PendingVector.objects.filter(status=RunStatus.RUNNING).count() == 90


@pytest.mark.django_db(transaction=True)
def test_a_job_another_worker_has_locked_is_skipped_not_waited_for(
    through_a_broker: dict[str, Any],
) -> None:
    # given a queued run whose row another worker's claim holds locked (on PostgreSQL;
    # SQLite has no row locks, and takes writers in turn)
    run = ExtractionRun.objects.create(thread=a_thread())
    locked = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with transaction.atomic():
            ExtractionRun.objects.select_for_update().get(pk=run.pk)
            locked.set()
            release.wait(10)
        connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        # when this worker claims it
        claimed = claim(ExtractionRun, run.pk)
        run.refresh_from_db()
        if connection.vendor == "postgresql":
            # then it goes on at once with nothing, and the run is untouched
            assert claimed is None
            assert (run.status, run.attempts) == (RunStatus.QUEUED, 0)
        else:
            # then nothing held it: the claim's UPDATE decides (see the test above)
            assert claimed is not None
            assert (run.status, run.attempts) == (RunStatus.RUNNING, 1)
    finally:
        release.set()
        holder.join()


@pytest.mark.django_db
def test_a_running_job_whose_lease_holds_is_not_taken_and_one_past_it_is(
    through_a_broker: dict[str, Any],
) -> None:
    run = ExtractionRun.objects.create(
        thread=a_thread(),
        status=RunStatus.RUNNING,
        attempts=1,
        lease_until=timezone.now() + timedelta(minutes=5),
    )
    assert claim(ExtractionRun, run.pk) is None
    ExtractionRun.objects.filter(pk=run.pk).update(lease_until=timezone.now())
    taken = claim(ExtractionRun, run.pk)
    assert taken is not None and taken.attempts == 2


@pytest.mark.django_db
def test_a_failed_try_comes_back_after_a_backoff_and_is_dead_after_its_attempts(
    through_a_broker: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    # given a run, and a model that fails every time
    thread = a_thread()
    services.add_entry(thread.pk, role="user", content="I live in Lisbon")
    run = ExtractionRun.objects.create(thread=thread)
    failing = mock.patch(
        "cogitator_memory.tasks.extraction.extract_thread",
        side_effect=LLMError("scripted", "the model is down", status=503),
    )
    backoffs = []
    with failing:
        for _ in range(3):
            # when a worker runs it
            with django_capture_on_commit_callbacks(execute=True):
                extract_thread_task(thread.pk, run_id=run.pk)
            run.refresh_from_db()
            if run.status == RunStatus.QUEUED:
                # then it waits, with the error, and its task is sent for when it is due
                backoffs.append(run.run_after - run.updated_at)
                assert run.error == "llm_failed: The model service failed; try again later."
                assert through_a_broker["extract"][-1]["kwargs"] == {"run_id": run.pk}
                assert through_a_broker["extract"][-1]["countdown"] > 0
                ExtractionRun.objects.filter(pk=run.pk).update(run_after=timezone.now())
    # then each wait was longer than the one before, and after three tries it is dead
    assert len(backoffs) == 2 and backoffs[1] > backoffs[0] > timedelta(seconds=30)
    assert (run.status, run.attempts) == (RunStatus.DEAD, 3)
    assert run.error == (
        "Given up after 3 attempts. llm_failed: The model service failed; try again later."
    )
    assert run.finished_at is not None and run.lease_until is None


@pytest.mark.django_db
def test_the_sweeper_wakes_a_worker_for_what_waits_with_no_message_and_for_lost_workers(
    through_a_broker: dict[str, Any],
) -> None:
    now = timezone.now()
    never_sent = ExtractionRun.objects.create(thread=a_thread("a"))
    sent_just_now = ExtractionRun.objects.create(thread=a_thread("b"), published_at=now)
    sent_long_ago = ExtractionRun.objects.create(
        thread=a_thread("c"), published_at=now - timedelta(hours=1)
    )
    not_due = ExtractionRun.objects.create(
        thread=a_thread("d"), run_after=now + timedelta(minutes=1)
    )
    lost = ExtractionRun.objects.create(
        thread=a_thread("e"), status=RunStatus.RUNNING, attempts=1, lease_until=now
    )
    held = ExtractionRun.objects.create(
        thread=a_thread("f"),
        status=RunStatus.RUNNING,
        attempts=1,
        lease_until=now + timedelta(minutes=5),
    )
    ExtractionRun.objects.create(thread=a_thread("g"), status=RunStatus.DONE)
    ExtractionRun.objects.create(thread=a_thread("h"), status=RunStatus.DEAD)
    # when
    assert sweep() == {"extraction runs": 3}
    # then
    woken = {sent["kwargs"]["run_id"] for sent in through_a_broker["extract"]}
    assert woken == {never_sent.pk, sent_long_ago.pk, lost.pk}
    assert not woken & {sent_just_now.pk, not_due.pk, held.pk}
    # and a sweep right after finds nothing more to send
    assert sweep() == {}


@pytest.mark.django_db
def test_the_sweeper_sends_waiting_vectors_in_batches(
    through_a_broker: dict[str, Any],
) -> None:
    thread = a_thread()
    entries = [services.add_entry(thread.pk, role="user", content=f"m{n}") for n in range(70)]
    PendingVector.objects.all().delete()
    PendingVector.objects.bulk_create([PendingVector(entry=entry) for entry in entries])
    assert sweep() == {"pending vectors": 70}
    sizes = [len(sent["args"][0]) for sent in through_a_broker["embed"]]
    assert sizes == [64, 6]


@pytest.mark.django_db
def test_retry_takes_failed_and_dead_jobs_back_with_their_attempts_reset(
    through_a_broker: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    dead = ExtractionRun.objects.create(
        thread=a_thread("a"), status=RunStatus.DEAD, attempts=3, error="Given up"
    )
    done = ExtractionRun.objects.create(thread=a_thread("b"), status=RunStatus.DONE)
    with django_capture_on_commit_callbacks(execute=True):
        assert retry_jobs(ExtractionRun, [dead.pk, done.pk]) == 1
    dead.refresh_from_db()
    done.refresh_from_db()
    assert (dead.status, dead.attempts, dead.finished_at) == (RunStatus.QUEUED, 0, None)
    assert done.status == RunStatus.DONE
    assert [sent["kwargs"]["run_id"] for sent in through_a_broker["extract"]] == [dead.pk]


@pytest.mark.django_db
def test_new_turns_are_debounced_into_one_queued_run_per_thread(
    through_a_broker: dict[str, Any],
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # given extraction on, debounced by 30 s
    settings.COGITATOR_MEMORY = {"EXTRACTION": {"ENABLED": True, "DEBOUNCE_SECONDS": 30}}
    thread = a_thread()
    # when five turns come, each committed on its own (as from several web processes)
    for n in range(5):
        with django_capture_on_commit_callbacks(execute=True):
            services.add_entry(thread.pk, role="user", content=f"turn {n}")
    # then one run waits for 30 s, its task sent once, to run then
    [run] = ExtractionRun.objects.filter(thread=thread)
    assert run.status == RunStatus.QUEUED
    assert timedelta(seconds=29) < run.run_after - run.created_at <= timedelta(seconds=31)
    assert len(through_a_broker["extract"]) == 1
    assert through_a_broker["extract"][0]["countdown"] > 25
    # and a turn while it runs queues the next one, which the later turns join
    ExtractionRun.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING, lease_until=timezone.now() + timedelta(minutes=5)
    )
    for n in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            services.add_entry(thread.pk, role="user", content=f"later {n}")
    assert ExtractionRun.objects.filter(thread=thread, status=RunStatus.QUEUED).count() == 1
    assert ExtractionRun.objects.filter(thread=thread).count() == 2


@pytest.mark.django_db
def test_a_broker_that_is_down_leaves_jobs_queued_and_the_write_answered(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # given a broker that refuses, extraction on
    settings.COGITATOR_MEMORY = {"EXTRACTION": {"ENABLED": True, "DEBOUNCE_SECONDS": 0}}
    conf = extract_thread_task.app.conf
    conf.task_always_eager = False
    refused = mock.patch.object(
        extract_thread_task, "apply_async", side_effect=ConnectionError("broker down")
    )
    thread = a_thread()
    try:
        # when a turn is written
        with refused, django_capture_on_commit_callbacks(execute=True):
            entry = services.add_entry(thread.pk, role="user", content="hello")
        # then the turn stands, and its run waits, never sent
        assert Entry.objects.filter(pk=entry.pk).exists()
        [run] = ExtractionRun.objects.filter(thread=thread)
        assert (run.status, run.published_at) == (RunStatus.QUEUED, None)
        # and once the broker is back the sweeper sends it
        with mock.patch.object(extract_thread_task, "apply_async") as sent:
            assert sweep() == {"extraction runs": 1}
        assert sent.call_args.kwargs["kwargs"] == {"run_id": run.pk}
    finally:
        conf.task_always_eager = True


@pytest.mark.django_db
def test_a_report_renews_the_lease_of_a_running_job(through_a_broker: dict[str, Any]) -> None:
    run = ExtractionRun.objects.create(
        thread=a_thread(), status=RunStatus.RUNNING, lease_until=timezone.now()
    )
    RunRecorder(run.pk).progress(1, 3)
    run.refresh_from_db()
    assert run.lease_until is not None and run.lease_until > timezone.now() + timedelta(minutes=5)
    assert (run.windows_done, run.windows_total) == (1, 3)


@pytest.mark.django_db
def test_a_report_of_a_closed_job_changes_nothing(through_a_broker: dict[str, Any]) -> None:
    run = ExtractionRun.objects.create(thread=a_thread(), status=RunStatus.DEAD, error="x")
    RunRecorder(run.pk).progress(1, 3)
    RunRecorder(run.pk).finished(items_written=5)
    run.refresh_from_db()
    assert (run.status, run.items_written, run.windows_done) == (RunStatus.DEAD, 0, 0)


def test_schedule_extraction_is_what_the_trigger_calls() -> None:
    from cogitator_memory.tasks import triggers

    assert triggers.schedule_extraction is schedule_extraction
