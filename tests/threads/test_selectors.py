"""Reads of threads and entries: get_path, get_entries and list_threads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cogitator_memory.exceptions import PartialEntryNotSaveable
from cogitator_memory.threads import selectors
from cogitator_memory.threads.models import Entry, EntryType, Role, Thread
from tests.factories import EntryFactory, ThreadFactory, create_branch

pytestmark = pytest.mark.django_db

START = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
CALLS = [{"id": "call_1", "name": "search", "arguments": {"q": "rome"}}]
RESULTS = [{"callId": "call_1", "name": "search", "result": "3 hits"}]


def ids(entries: list[Entry]) -> list[str]:
    return [entry.id for entry in entries]


def event(thread: Thread, **kwargs: object) -> Entry:
    return EntryFactory.create(
        thread=thread, type=EntryType.LABEL, role=None, content=None, event={"label": "x"}, **kwargs
    )


@pytest.fixture
def thread() -> Thread:
    return ThreadFactory.create()


# --- get_path: types -------------------------------------------------------------------


def test_get_path_skips_events_by_default(thread: Thread) -> None:
    # given
    question = EntryFactory.create(thread=thread)
    event(thread)
    answer = EntryFactory.create(thread=thread, role=Role.ASSISTANT)
    # when
    path = selectors.get_path(thread.id)
    # then
    assert ids(path) == [question.id, answer.id]


def test_get_path_returns_tool_results_by_default(thread: Thread) -> None:
    # given
    call = EntryFactory.create(thread=thread, role=Role.ASSISTANT, content=None, tool_calls=CALLS)
    result = EntryFactory.create(
        thread=thread, type=EntryType.TOOL_RESULT, role=Role.TOOL, tool_call_id="call_1"
    )
    # when
    path = selectors.get_path(thread.id)
    # then
    assert ids(path) == [call.id, result.id]


def test_get_path_with_types_all_returns_events(thread: Thread) -> None:
    # given
    question = EntryFactory.create(thread=thread)
    label = event(thread)
    answer = EntryFactory.create(thread=thread, role=Role.ASSISTANT)
    # when
    path = selectors.get_path(thread.id, types="all")
    # then
    assert ids(path) == [question.id, label.id, answer.id]


def test_get_path_with_a_list_of_types_returns_only_those(thread: Thread) -> None:
    # given
    EntryFactory.create(thread=thread)
    label = event(thread)
    EntryFactory.create(thread=thread, role=Role.ASSISTANT)
    # when
    path = selectors.get_path(thread.id, types=["label"])
    # then
    assert ids(path) == [label.id]


# --- get_path: limit and paging --------------------------------------------------------


def test_get_path_limit_keeps_the_newest_entries_oldest_first(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 5)
    # when
    path = selectors.get_path(thread.id, limit=2)
    # then
    assert ids(path) == ids(branch[3:])


def test_get_path_limit_counts_only_the_entries_returned(thread: Thread) -> None:
    # given: the newest two messages are separated by events
    EntryFactory.create(thread=thread)
    older = EntryFactory.create(thread=thread)
    event(thread)
    event(thread)
    newer = EntryFactory.create(thread=thread)
    event(thread)
    # when
    path = selectors.get_path(thread.id, limit=2)
    # then
    assert ids(path) == [older.id, newer.id]


def test_get_path_limit_larger_than_the_branch_returns_the_whole_branch(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 3)
    # when
    path = selectors.get_path(thread.id, limit=50)
    # then
    assert ids(path) == ids(branch)


@pytest.mark.parametrize("limit", [0, None])
def test_get_path_without_a_limit_returns_the_whole_branch(
    thread: Thread, limit: int | None
) -> None:
    # given: longer than one walk step
    branch = create_branch(thread, 300)
    # when
    path = selectors.get_path(thread.id, limit=limit)
    # then
    assert ids(path) == ids(branch)


def test_get_path_before_returns_the_entries_older_than_it(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 5)
    # when
    path = selectors.get_path(thread.id, before=branch[3].id, limit=2)
    # then
    assert ids(path) == ids(branch[1:3])


def test_get_path_pages_back_with_before(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 7)
    # when
    pages = [selectors.get_path(thread.id, limit=3)]
    while pages[-1]:
        pages.append(selectors.get_path(thread.id, limit=3, before=pages[-1][0].id))
    # then
    assert [ids(page) for page in pages] == [
        ids(branch[4:7]),
        ids(branch[1:4]),
        ids(branch[0:1]),
        [],
    ]


def test_get_path_before_the_root_is_empty(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 3)
    # when
    path = selectors.get_path(thread.id, before=branch[0].id)
    # then
    assert path == []


def test_get_path_before_an_entry_of_another_branch_follows_that_branch(thread: Thread) -> None:
    # given
    root = EntryFactory.create(thread=thread)
    EntryFactory.create(thread=thread)
    side = EntryFactory.create(thread=thread, parent=root, activate=False)
    side_leaf = EntryFactory.create(thread=thread, parent=side, activate=False)
    # when
    path = selectors.get_path(thread.id, before=side_leaf.id)
    # then
    assert ids(path) == [root.id, side.id]


# --- get_path: branches ----------------------------------------------------------------


def test_get_path_follows_the_active_branch(thread: Thread) -> None:
    # given
    question = EntryFactory.create(thread=thread)
    EntryFactory.create(thread=thread, parent=question, activate=False)
    colosseum = EntryFactory.create(thread=thread, parent=question)
    # when
    path = selectors.get_path(thread.id)
    # then
    assert ids(path) == [question.id, colosseum.id]


def test_get_path_with_leaf_id_reads_another_branch(thread: Thread) -> None:
    # given
    question = EntryFactory.create(thread=thread)
    EntryFactory.create(thread=thread)
    vatican = EntryFactory.create(thread=thread, parent=question, activate=False)
    # when
    path = selectors.get_path(thread.id, leaf_id=vatican.id)
    # then
    assert ids(path) == [question.id, vatican.id]


def test_get_path_with_an_inner_leaf_id_stops_there(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 4)
    # when
    path = selectors.get_path(thread.id, leaf_id=branch[1].id)
    # then
    assert ids(path) == ids(branch[:2])


def test_get_path_of_an_empty_thread_is_empty(thread: Thread) -> None:
    # given / when
    path = selectors.get_path(thread.id)
    # then
    assert path == []


def test_get_path_stays_in_its_tree_when_several_roots_exist(thread: Thread) -> None:
    # given
    first_root = EntryFactory.create(thread=thread)
    EntryFactory.create(thread=thread)
    second_root = EntryFactory.create(thread=thread, parent=None)
    after = EntryFactory.create(thread=thread)
    # when
    path = selectors.get_path(thread.id)
    # then
    assert ids(path) == [second_root.id, after.id]
    assert first_root.id not in ids(path)


# --- get_path: tool calls --------------------------------------------------------------


def test_get_path_leaves_out_tool_calls_by_default(thread: Thread) -> None:
    # given
    EntryFactory.create(thread=thread, role=Role.ASSISTANT, tool_calls=CALLS)
    EntryFactory.create(
        thread=thread, type=EntryType.TOOL_RESULT, role=Role.TOOL, tool_results=RESULTS
    )
    # when
    path = selectors.get_path(thread.id)
    # then
    assert [(e.tool_calls, e.tool_results) for e in path] == [(None, None), (None, None)]


def test_get_path_with_include_tool_calls_returns_them(thread: Thread) -> None:
    # given
    EntryFactory.create(thread=thread, role=Role.ASSISTANT, tool_calls=CALLS)
    EntryFactory.create(
        thread=thread, type=EntryType.TOOL_RESULT, role=Role.TOOL, tool_results=RESULTS
    )
    # when
    path = selectors.get_path(thread.id, include_tool_calls=True)
    # then
    assert [(e.tool_calls, e.tool_results) for e in path] == [(CALLS, None), (None, RESULTS)]


# --- get_entries -----------------------------------------------------------------------


def test_get_entries_returns_every_branch_oldest_first(thread: Thread) -> None:
    # given
    question = EntryFactory.create(thread=thread, created_at=START)
    colosseum = EntryFactory.create(thread=thread, created_at=START + timedelta(minutes=1))
    vatican = EntryFactory.create(
        thread=thread, parent=question, activate=False, created_at=START + timedelta(minutes=2)
    )
    other_root = EntryFactory.create(
        thread=thread, parent=None, created_at=START + timedelta(minutes=3)
    )
    # when
    entries = selectors.get_entries(thread.id)
    # then
    assert ids(entries) == [question.id, colosseum.id, vatican.id, other_root.id]


def test_get_entries_is_in_time_order_not_branch_order(thread: Thread) -> None:
    # given: a child written with an older created_at than its parent, as an import may
    late = EntryFactory.create(thread=thread, created_at=START + timedelta(minutes=5))
    early = EntryFactory.create(thread=thread, created_at=START)
    # when
    entries = selectors.get_entries(thread.id)
    # then
    assert early.parent_id == late.id
    assert ids(entries) == [early.id, late.id]


def test_get_entries_skips_events_unless_asked(thread: Thread) -> None:
    # given
    question = EntryFactory.create(thread=thread)
    label = event(thread)
    # when
    default = selectors.get_entries(thread.id)
    every = selectors.get_entries(thread.id, types="all")
    # then
    assert ids(default) == [question.id]
    assert ids(every) == [question.id, label.id]


def test_get_entries_limit_keeps_the_newest_oldest_first(thread: Thread) -> None:
    # given
    entries = [
        EntryFactory.create(thread=thread, created_at=START + timedelta(minutes=n))
        for n in range(5)
    ]
    # when
    newest = selectors.get_entries(thread.id, limit=2)
    # then
    assert ids(newest) == ids(entries[3:])


def test_get_entries_limit_takes_the_newest_across_branches(thread: Thread) -> None:
    # given
    root = EntryFactory.create(thread=thread, created_at=START)
    main = EntryFactory.create(thread=thread, created_at=START + timedelta(minutes=1))
    side = EntryFactory.create(
        thread=thread, parent=root, activate=False, created_at=START + timedelta(minutes=2)
    )
    # when
    newest = selectors.get_entries(thread.id, limit=2)
    # then
    assert ids(newest) == [main.id, side.id]


def test_get_entries_limit_zero_returns_all(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 4)
    # when
    entries = selectors.get_entries(thread.id, limit=0)
    # then
    assert ids(entries) == ids(branch)


def test_get_entries_after_is_a_strict_lower_bound(thread: Thread) -> None:
    # given
    moments = [START + timedelta(minutes=n) for n in range(4)]
    entries = [EntryFactory.create(thread=thread, created_at=moment) for moment in moments]
    # when
    later = selectors.get_entries(thread.id, after=moments[1])
    # then
    assert ids(later) == ids(entries[2:])


def test_get_entries_before_is_a_strict_upper_bound(thread: Thread) -> None:
    # given
    moments = [START + timedelta(minutes=n) for n in range(4)]
    entries = [EntryFactory.create(thread=thread, created_at=moment) for moment in moments]
    # when
    earlier = selectors.get_entries(thread.id, before=moments[2])
    # then
    assert ids(earlier) == ids(entries[:2])


def test_get_entries_between_after_and_before(thread: Thread) -> None:
    # given
    moments = [START + timedelta(minutes=n) for n in range(5)]
    entries = [EntryFactory.create(thread=thread, created_at=moment) for moment in moments]
    # when
    between = selectors.get_entries(thread.id, after=moments[0], before=moments[4])
    # then
    assert ids(between) == ids(entries[1:4])


def test_get_entries_limit_applies_within_the_bounds(thread: Thread) -> None:
    # given
    moments = [START + timedelta(minutes=n) for n in range(5)]
    entries = [EntryFactory.create(thread=thread, created_at=moment) for moment in moments]
    # when
    page = selectors.get_entries(thread.id, before=moments[4], limit=2)
    # then
    assert ids(page) == ids(entries[2:4])


def test_get_entries_reads_only_its_thread(thread: Thread) -> None:
    # given
    mine = EntryFactory.create(thread=thread)
    EntryFactory.create(thread=ThreadFactory.create())
    # when
    entries = selectors.get_entries(thread.id)
    # then
    assert ids(entries) == [mine.id]


def test_get_entries_leaves_out_tool_calls_and_results_by_default(thread: Thread) -> None:
    # given
    EntryFactory.create(thread=thread, role=Role.ASSISTANT, tool_calls=CALLS)
    EntryFactory.create(
        thread=thread, type=EntryType.TOOL_RESULT, role=Role.TOOL, tool_results=RESULTS
    )
    # when
    entries = selectors.get_entries(thread.id)
    # then
    assert [(e.tool_calls, e.tool_results) for e in entries] == [(None, None), (None, None)]
    assert all("tool_calls" not in e.as_dict() for e in entries)


def test_get_entries_with_include_tool_calls_returns_them(thread: Thread) -> None:
    # given
    EntryFactory.create(thread=thread, role=Role.ASSISTANT, tool_calls=CALLS)
    EntryFactory.create(
        thread=thread, type=EntryType.TOOL_RESULT, role=Role.TOOL, tool_results=RESULTS
    )
    # when
    entries = selectors.get_entries(thread.id, include_tool_calls=True)
    # then
    assert [(e.tool_calls, e.tool_results) for e in entries] == [(CALLS, None), (None, RESULTS)]


def test_an_entry_read_without_tool_calls_refuses_to_be_saved(thread: Thread) -> None:
    # given
    written = EntryFactory.create(thread=thread, role=Role.ASSISTANT, tool_calls=CALLS)
    (entry,) = selectors.get_entries(thread.id)
    entry.content = "changed"
    # when
    with pytest.raises(PartialEntryNotSaveable) as raised:
        entry.save()
    # then
    assert str(raised.value) == (
        f"Entry {written.id!r} was read without its tool calls; saving it would erase them. "
        "Read it with include_tool_calls=True to change it."
    )
    row = Entry.objects.get(pk=written.id)
    assert (row.content, row.tool_calls) == (written.content, CALLS)


def test_an_entry_read_with_tool_calls_can_be_saved(thread: Thread) -> None:
    # given
    written = EntryFactory.create(thread=thread, role=Role.ASSISTANT, tool_calls=CALLS)
    (entry,) = selectors.get_entries(thread.id, include_tool_calls=True)
    entry.content = "changed"
    # when
    entry.save()
    # then
    row = Entry.objects.get(pk=written.id)
    assert (row.content, row.tool_calls) == ("changed", CALLS)


def test_an_entry_read_by_get_path_without_tool_calls_refuses_to_be_saved(thread: Thread) -> None:
    # given
    EntryFactory.create(thread=thread, role=Role.ASSISTANT, tool_calls=CALLS)
    (entry,) = selectors.get_path(thread.id)
    # when / then
    with pytest.raises(PartialEntryNotSaveable, match="was read without its tool calls"):
        entry.save()


# --- list_threads ----------------------------------------------------------------------


def test_list_threads_with_agent_ids_returns_the_threads_of_those_agents() -> None:
    # given
    alpha = ThreadFactory.create(agent_id="alpha", updated_at=START)
    beta = ThreadFactory.create(agent_id="beta", updated_at=START + timedelta(minutes=1))
    ThreadFactory.create(agent_id="gamma", updated_at=START + timedelta(minutes=2))
    # when
    page = selectors.list_threads(agent_ids=["alpha", "beta"])
    # then: the most recently updated first
    assert [t.id for t in page.threads] == [beta.id, alpha.id]
    assert page.next_cursor is None


def test_list_threads_with_no_agent_ids_returns_nothing() -> None:
    # given
    ThreadFactory.create(agent_id="alpha")
    # when
    page = selectors.list_threads(agent_ids=[])
    # then
    assert page.threads == []


def test_list_threads_with_agent_ids_pages_with_the_cursor() -> None:
    # given
    threads = [
        ThreadFactory.create(agent_id=agent, updated_at=START + timedelta(minutes=n))
        for n, agent in enumerate(["alpha", "beta", "gamma", "alpha", "beta"])
    ]
    wanted = [t.id for t in reversed(threads) if t.agent_id in {"alpha", "beta"}]
    # when
    first = selectors.list_threads(agent_ids=["alpha", "beta"], limit=2)
    second = selectors.list_threads(agent_ids=["alpha", "beta"], limit=2, cursor=first.next_cursor)
    # then
    assert [t.id for t in first.threads + second.threads] == wanted
    assert second.next_cursor is None
