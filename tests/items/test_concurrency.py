"""Racing writers of one slot on PostgreSQL: Python threads, each with its own connection,
write states of one slot at once (in order of validity and told late alike), and the
agent's write lock and the layout after every write leave one timeline: one open state,
no two states holding at once, each closed where the next starts. Deleting the entries
states stand on, while they are written, lays the slot out under the same lock.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Entity, ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem, Slot
from cogitator_memory.threads import services as threads
from tests.threads.test_concurrency import race

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

ANA = MemoryScope("concierge", user_id="ana")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
WRITERS = 6
STATES_PER_WRITER = 25


def test_racing_writers_of_one_slot_converge_to_one_timeline() -> None:
    items = MemoryItems()

    def write(writer: int) -> None:
        draw = random.Random(writer)
        for number in range(STATES_PER_WRITER):
            start = T0 + timedelta(hours=draw.randrange(0, 10_000))
            items.write(
                ANA,
                NewItem(
                    kind="fact",
                    subject="Ana",
                    attribute="home city",
                    value=f"city {writer}-{number}",
                    trust="system",
                    valid_from=start,
                ),
            )

    race(write, WRITERS)

    entity = Entity.objects.get(key="ana")
    states = items.history(ANA, Slot(entity.pk, "home city"))
    assert len(states) == WRITERS * STATES_PER_WRITER
    assert [state.status for state in states].count(ItemStatus.ACTIVE) == 1
    assert states[-1].status == ItemStatus.ACTIVE and states[-1].valid_to is None
    for before, after in pairwise(states):
        assert before.status == ItemStatus.SUPERSEDED
        assert before.valid_to == after.valid_from
    recorded = sorted(MemoryItem.objects.values_list("recorded_at", flat=True))
    assert all(b - a >= timedelta(milliseconds=1) for a, b in pairwise(recorded))


def test_writes_racing_the_deletion_of_their_entries_leave_one_timeline() -> None:
    # given a conversation whose messages the writers quote
    thread = threads.create_thread("concierge", {"userId": "ana"})
    said = [
        threads.add_entry(thread.pk, role="user", content=f"I live in city {n}.").pk
        for n in range(WRITERS * 8)
    ]
    items = MemoryItems()

    def work(worker: int) -> None:
        draw = random.Random(worker)
        mine = said[worker::WRITERS]
        if worker == 0:
            # one deleter: the entries, and with them the states that stand on them alone
            for entry_id in draw.sample(said, len(said) // 2):
                threads.delete_entry(entry_id)
            return
        for number, entry_id in enumerate(mine):
            items.write(
                ANA,
                NewItem(
                    kind="fact",
                    subject="Ana",
                    attribute="home city",
                    value=f"city {worker}-{number}",
                    trust="system",
                    valid_from=T0 + timedelta(hours=draw.randrange(0, 10_000)),
                    evidence=[NewEvidence(quote="I live in", entry_id=entry_id)],
                ),
            )

    # when
    race(work, WRITERS)
    # then what is left is one timeline
    entity = Entity.objects.get(key="ana")
    states = items.history(ANA, Slot(entity.pk, "home city"))
    assert states
    assert [state.status for state in states].count(ItemStatus.ACTIVE) == 1
    assert states[-1].valid_to is None
    for before, after in pairwise(states):
        assert before.status == ItemStatus.SUPERSEDED
        assert before.valid_to == after.valid_from
