"""Each cascade over the canary world: after it, no table holds a canary of what was
forgotten, every canary of everything else is still there, and the cascade run again
does nothing.

Two stores are also checked on their own: the vectors of items purged because their
entries went, and memory file versions written at entries that went (redacted there).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import Q

from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.grants import memory_users
from cogitator_memory.keywords.models import KeywordPosting, KeywordTerm
from cogitator_memory.threads.models import Entry, Thread
from tests.cascade.conftest import USERS, World, canaries, canary, tokens_in

pytestmark = pytest.mark.django_db

# The vectors of items (and their keyword documents).
ITEM_VECTOR_ROWS = {
    Embedding: Q(source_type="item"),
    KeywordPosting: Q(corpus__index_name="items"),
    KeywordTerm: Q(corpus__index_name="items"),
}
# Canaries of files written at the first message (its user's file, a file of the agent).
FILES_AT_E1 = {12, 14}


def ana(*numbers: int) -> set[str]:
    return {canary("ana", n) for n in numbers}


def every(user: str) -> set[str]:
    return {canary(user, n) for n in range(1, 22)}


def check(
    world: World,
    gone: set[str],
    *,
    unchecked: set[str] = frozenset(),  # type: ignore[assignment]
    leave_out: dict[Any, Q] | None = None,
) -> None:
    """No canary of ``gone`` is left in any table (rows of ``leave_out`` aside); every
    other canary of ana (``unchecked`` aside) and every canary of bea is still there."""
    found = canaries("CANARYANA", leave_out=leave_out)
    left = tokens_in(found) & gone
    assert not left, {table: tokens & gone for table, tokens in found.items() if tokens & gone}
    kept = every("ana") - gone - unchecked
    assert kept <= tokens_in(found), kept - tokens_in(found)
    assert tokens_in(canaries("CANARYBEA")) == every("bea")


def run(world: World, how: str) -> Any:
    cascade = MemoryCascade()
    user = world.users["ana"]
    if how == "delete_entries":
        return cascade.delete_entries([user.entries["e1"]], missing_ok=True)
    if how == "redact_entries":
        return cascade.redact_entries([user.entries["e1"]], reason="asked", missing_ok=True)
    if how == "delete_thread":
        return cascade.delete_thread(user.chat, missing_ok=True)
    if how == "delete_user":
        return cascade.delete_user("ana")
    raise AssertionError(how)


GONE = {
    # The first message, its replies (an event among them), the summary quoting it, the
    # entity of the item that stood on it alone, that item's admin log.
    # The memory file versions written at it (its user's file, a file of the agent).
    "delete_entries": ana(1, 2, 3, 4, 7, 17, 20, *FILES_AT_E1),
    "redact_entries": ana(1, 2, 3, 4, 7, 17, 20, *FILES_AT_E1),
    # The chat whole, copies in forks included; the items of its scope; its own files and
    # the versions written at its entries; its jobs of record.
    "delete_thread": ana(*range(1, 9), 13, 16, 17, 20, 21, *FILES_AT_E1),
    # Everything of ana, the version of the agent's file written at her message too.
    "delete_user": every("ana"),
}
LEAVE_OUT: dict[str, Any] = dict.fromkeys(GONE)
UNCHECKED: dict[str, set[str]] = {how: set() for how in GONE}
CASCADES = list(GONE)


@pytest.mark.parametrize("how", CASCADES)
def test_a_cascade_leaves_no_canary_of_what_it_forgot_and_every_other(
    world: World, how: str
) -> None:
    # given every canary of both users in place
    assert tokens_in(canaries("CANARYANA")) == every("ana")
    assert tokens_in(canaries("CANARYBEA")) == every("bea")

    # when
    report = run(world, how)

    # then
    assert not report.is_empty()
    check(world, GONE[how], unchecked=UNCHECKED[how], leave_out=LEAVE_OUT[how])


@pytest.mark.parametrize("how", CASCADES)
def test_a_cascade_run_again_does_nothing(world: World, how: str) -> None:
    run(world, how)

    again = run(world, how)

    assert again.is_empty(), again.counts()
    check(world, GONE[how], unchecked=UNCHECKED[how], leave_out=LEAVE_OUT[how])


@pytest.mark.parametrize("how", ["delete_entries", "redact_entries", "delete_thread"])
def test_the_vector_of_an_item_purged_with_its_entries_goes(world: World, how: str) -> None:
    run(world, how)

    in_item_vectors = canaries("CANARYANA", only=ITEM_VECTOR_ROWS)
    assert not tokens_in(in_item_vectors) & GONE[how]


@pytest.mark.parametrize("how", CASCADES)
def test_the_memory_file_versions_written_at_gone_entries_are_redacted(
    world: World, how: str
) -> None:
    run(world, how)

    assert not tokens_in(canaries("CANARYANA")) & ana(*FILES_AT_E1)


def test_forgetting_ana_takes_her_off_the_group_and_leaves_its_other_words(
    world: World,
) -> None:
    report = MemoryCascade().delete_user("ana")

    group = Thread.objects.get(pk=world.group)
    assert memory_users(group.metadata) == ["bea"]
    assert world.group in report.threads_changed
    said = list(Entry.objects.filter(thread_id=world.group).order_by("seq"))
    assert [str(entry.content) for entry in said] == [
        "Cleo starts.",
        f"{canary('bea', 18)} says bea.",
        f"{canary('bea', 19)} answers bea.",
        "Cleo ends.",
    ]
    assert said[1].parent_id == said[0].pk
    assert set(report.threads) == {
        world.users["ana"].chat,
        world.users["ana"].fork,
        world.users["ana"].fork2,
        world.users["ana"].session_thread,
    }


@pytest.mark.parametrize("how", CASCADES)
def test_a_cascade_that_failed_half_way_finishes_when_run_again(
    world: World, how: str, failing_dependent: Any
) -> None:
    # given a store that fails on the entries of a thread the cascade reaches late
    user = world.users["ana"]
    late = user.session_thread if how == "delete_user" else user.fork2
    store = failing_dependent(late)

    # when the cascade fails there
    with pytest.raises(RuntimeError, match="the store failed"):
        run(world, how)

    # then what went before stays gone, and the rest stands as it was
    if how == "delete_user":
        assert not Thread.objects.filter(pk=user.chat).exists()
        assert Thread.objects.filter(pk=user.session_thread).exists()
    else:
        assert Entry.objects.filter(pk=user.entries["e1"]).exists()

    # and run again once the store is back, it finishes clean
    store.failing = False
    run(world, how)
    check(world, GONE[how], unchecked=UNCHECKED[how], leave_out=LEAVE_OUT[how])
    assert run(world, how).is_empty()


def test_every_user_of_the_world_has_every_canary(world: World) -> None:
    for user in USERS:
        assert tokens_in(canaries(f"CANARY{user.upper()}")) == every(user)
