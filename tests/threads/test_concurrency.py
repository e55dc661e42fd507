"""Racing writers on PostgreSQL: Python threads, each with its own connection, write to one
thread at once, and the row lock of the thread keeps seq gap-free and the tree whole.

SQLite serializes writers with one database lock, so these tests only mean something on
a server database.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from itertools import pairwise

import pytest
from django.db import connection

from cogitator_memory.threads import selectors, services
from cogitator_memory.threads.models import Entry, Thread

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

AGENT = "agent-1"
WRITERS = 8
ENTRIES_PER_WRITER = 200


def race(worker: Callable[[int], None], count: int = WRITERS) -> None:
    """Run ``worker(0..count-1)`` in as many Python threads, released together, and
    re-raise the first error any of them hit."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(number: int) -> None:
        try:
            start.wait(timeout=10)
            worker(number)
        except BaseException as exc:
            errors.append(exc)
        finally:
            # Each Python thread opened its own connection; the test database cannot be
            # dropped while one stays open.
            connection.close()

    threads = [threading.Thread(target=run, args=(number,)) for number in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a writer did not finish"
    if errors:
        raise errors[0]


def test_racing_add_entry_calls_give_one_gap_free_chain_of_every_entry() -> None:
    # given
    thread = services.create_thread(AGENT, thread_id="raced")

    def write(writer: int) -> None:
        for number in range(ENTRIES_PER_WRITER):
            services.add_entry(thread.id, role="user", content=f"{writer}:{number}", token_count=1)

    # when
    race(write)

    # then
    total = WRITERS * ENTRIES_PER_WRITER
    rows = list(
        Entry.objects.filter(thread_id=thread.id)
        .order_by("seq")
        .values_list("id", "parent_id", "seq", "content")
    )
    ids = [entry_id for entry_id, _, _, _ in rows]
    writers = [str(content).split(":")[0] for _, _, _, content in rows]
    stored = Thread.objects.get(pk=thread.id)
    # The writers really took turns: a run that wrote one writer after another would
    # prove nothing about locking.
    assert sum(a != b for a, b in pairwise(writers)) > WRITERS
    assert len(rows) == total
    assert [seq for _, _, seq, _ in rows] == list(range(1, total + 1))
    assert {parent_id for _, parent_id, _, _ in rows[1:]} <= set(ids)
    assert stored.active_leaf_id in set(ids)
    assert stored.next_seq == total
    # Each entry went after the active leaf of its moment, so the entries form one branch
    # in seq order, and each writer's entries keep that writer's order.
    assert [parent_id for _, parent_id, _, _ in rows] == [None, *ids[:-1]]
    assert stored.active_leaf_id == ids[-1]
    assert [entry.id for entry in selectors.get_path(thread.id)] == ids
    for writer in range(WRITERS):
        own = [content for _, _, _, content in rows if str(content).startswith(f"{writer}:")]
        assert own == [f"{writer}:{number}" for number in range(ENTRIES_PER_WRITER)]


def test_racing_upserts_of_one_explicit_id_give_one_thread_with_every_writers_key() -> None:
    # given
    def upsert(writer: int) -> None:
        services.create_thread(AGENT, {f"writer-{writer}": writer}, thread_id="shared-id")

    # when
    race(upsert)

    # then
    assert list(Thread.objects.values_list("id", flat=True)) == ["shared-id"]
    assert Thread.objects.get(pk="shared-id").metadata == {
        f"writer-{writer}": writer for writer in range(WRITERS)
    }


def test_racing_update_thread_calls_of_different_keys_all_survive() -> None:
    # given
    thread = services.create_thread(AGENT, {"topic": "support"})

    def update(writer: int) -> None:
        for round_number in range(10):
            services.update_thread(thread.id, {f"writer-{writer}": round_number})

    # when
    race(update)

    # then
    assert Thread.objects.get(pk=thread.id).metadata == {
        "topic": "support",
        **{f"writer-{writer}": 9 for writer in range(WRITERS)},
    }
