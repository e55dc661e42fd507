"""The checks of the load test find what they look for: after a small run (one client,
tasks eager, no embeddings), rows changed behind the API's back are each reported as the
problem they are, and an answer holding another principal's label is a leak."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.db.models import F
from django.test import override_settings

from cogitator_memory.threads.models import Entry, Thread
from tests.load.client import LoadClient, ThreadDirectory
from tests.load.driver import run_load
from tests.load.integrity import check_integrity
from tests.load.records import LoadRun
from tests.load.tenancy import make_tenancy

pytestmark = pytest.mark.django_db(transaction=True)

REQUESTS = 60


@pytest.fixture
def small_run(live_server: Any) -> Iterator[LoadRun]:
    rest_framework = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {}}
    with override_settings(REST_FRAMEWORK=rest_framework):
        yield run_load(live_server.url + "/api/memory/", make_tenancy(1), REQUESTS)


def own_thread_entries(run: LoadRun) -> list[Entry]:
    """The stored entries of the fullest thread only its client wrote, in seq order."""
    shared = {thread.thread_id for thread in run.shared_threads}
    counts: dict[str, int] = {}
    for entry in run.log.entries:
        if entry.thread_id not in shared:
            counts[entry.thread_id] = counts.get(entry.thread_id, 0) + 1
    fullest = max(counts, key=lambda thread_id: counts[thread_id])
    return list(Entry.objects.filter(thread_id=fullest).order_by("seq"))


def test_an_untouched_run_has_no_problems(small_run: LoadRun) -> None:
    integrity = check_integrity(small_run, vectors=False)
    assert small_run.log.failures == []
    assert integrity.problems() == []
    assert integrity.entries == len(small_run.log.entries) > 0


def test_an_entry_stored_under_another_marker_is_one_lost_and_one_doubled(
    small_run: LoadRun,
) -> None:
    # given
    first, second, *_rest = own_thread_entries(small_run)
    marker = (first.metadata or {})["loadId"]
    # when
    Entry.objects.filter(pk=second.pk).update(metadata={"loadId": marker})
    # then
    integrity = check_integrity(small_run, vectors=False)
    assert [text.split(" ")[1] for text in integrity.lost] == [second.pk]
    assert len(integrity.doubled) == 1 and marker in integrity.doubled[0]
    assert integrity.lost_or_doubled == 2


def test_a_gap_in_the_seqs_and_a_second_child_of_one_parent_are_out_of_order(
    small_run: LoadRun,
) -> None:
    # given
    first, second, third, *_rest = own_thread_entries(small_run)
    # when the last seq jumps, and the third entry hangs from the first like the second
    Entry.objects.filter(pk=third.pk).update(parent_id=first.pk)
    last = own_thread_entries(small_run)[-1]
    Entry.objects.filter(pk=last.pk).update(seq=F("seq") + 5)
    # then
    problems = "\n".join(check_integrity(small_run, vectors=False).order)
    assert "seqs not distinct and gap-free" in problems
    assert f"entry {third.pk} (seq {third.seq}) follows {first.pk}, not {second.pk}" in problems


def test_rows_no_answer_acknowledged_are_reported(small_run: LoadRun) -> None:
    # given
    thread = own_thread_entries(small_run)[0].thread
    # when a thread and an entry appear that no client was told of
    Thread.objects.create(id=f"{small_run.tag}-c0a-t999", agent_id=thread.agent_id)
    Entry.objects.filter(pk=own_thread_entries(small_run)[-1].pk).update(
        metadata={"loadId": "load-c0a-e999"}
    )
    # then
    unacknowledged = check_integrity(small_run, vectors=False).unacknowledged
    assert any(text.startswith(f"thread {small_run.tag}-c0a-t999 ") for text in unacknowledged)
    assert any(text.startswith("load-c0a-e999 in ") for text in unacknowledged)


def test_an_answer_holding_another_principals_label_is_a_leak() -> None:
    tenancy = make_tenancy(2)
    with httpx.Client(base_url="http://127.0.0.1:9/") as http:
        client = LoadClient(0, tenancy, [], ThreadDirectory(), http, requests=0, seed=0)
    principal = tenancy.clients[0][0]
    client.scan_for_leaks("search", principal, "search/", '"tenant-c0a" "tenant-shared"')
    assert client.log.leaks == []
    client.scan_for_leaks("search", principal, "search/", '{"content": "x (tenant-c1b)"}')
    assert client.log.leaks == [f"{principal.label} saw tenant-c1b in search search/"]
