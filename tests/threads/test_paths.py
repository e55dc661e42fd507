"""Walking a branch toward its root, and what reading a branch costs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cogitator_memory.threads import selectors
from cogitator_memory.threads.models import Entry, Thread
from cogitator_memory.threads.paths import branch_chunks, walk_ids_until, walk_up
from tests.factories import EntryFactory, ThreadFactory, create_branch

pytestmark = pytest.mark.django_db

LIMIT = 50
# The largest step a walk for LIMIT entries may ask for: twice the page plus some slack
# for skipped events. Anything near the thread's size means the walk is not bounded.
MAX_STEP = 2 * LIMIT + 32


def ids(entries: list[Entry]) -> list[str]:
    return [entry.id for entry in entries]


@pytest.fixture
def thread() -> Thread:
    return ThreadFactory.create()


# --- walk_up ---------------------------------------------------------------------------


def test_walk_up_returns_the_entry_and_its_ancestors_nearest_first(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 4)
    # when
    walked = walk_up(branch[-1].id, 10)
    # then
    assert ids(walked) == ids(branch[::-1])


def test_walk_up_stops_after_the_number_of_steps(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 10)
    # when
    walked = walk_up(branch[-1].id, 3)
    # then
    assert ids(walked) == [branch[9].id, branch[8].id, branch[7].id]


def test_walk_up_with_one_step_returns_the_entry_alone(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 3)
    # when
    walked = walk_up(branch[1].id, 1)
    # then
    assert ids(walked) == [branch[1].id]


def test_walk_up_stops_at_the_root(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 10)
    # when
    walked = walk_up(branch[2].id, 100)
    # then
    assert ids(walked) == [branch[2].id, branch[1].id, branch[0].id]


def test_walk_up_does_not_go_down_other_branches(thread: Thread) -> None:
    # given
    root = EntryFactory.create(thread=thread)
    main = EntryFactory.create(thread=thread)
    side = EntryFactory.create(thread=thread, parent=root, activate=False)
    # when
    walked = walk_up(main.id, 10)
    # then
    assert ids(walked) == [main.id, root.id]
    assert side.id not in ids(walked)


def test_walk_up_returns_whole_entries(thread: Thread) -> None:
    # given
    root = EntryFactory.create(thread=thread, content="Question", metadata={"source": "chat"})
    # when
    (walked,) = walk_up(root.id, 1)
    # then
    assert walked.as_dict() == Entry.objects.get(pk=root.id).as_dict()


def test_walk_up_from_a_missing_entry_is_empty() -> None:
    # given / when
    walked = walk_up("entry_missing", 10)
    # then
    assert walked == []


# --- walk_ids_until --------------------------------------------------------------------


def test_walk_ids_until_stops_at_the_target(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 6)
    # when
    walked = walk_ids_until(branch[5].id, branch[2].id)
    # then: the target is included, nothing above it is read
    assert walked == [branch[5].id, branch[4].id, branch[3].id, branch[2].id]


def test_walk_ids_until_the_start_itself_is_the_start_alone(thread: Thread) -> None:
    # given
    branch = create_branch(thread, 3)
    # when
    walked = walk_ids_until(branch[2].id, branch[2].id)
    # then
    assert walked == [branch[2].id]


def test_walk_ids_until_a_target_off_the_branch_reaches_the_root(thread: Thread) -> None:
    # given
    root = EntryFactory.create(thread=thread)
    main = EntryFactory.create(thread=thread)
    side = EntryFactory.create(thread=thread, parent=root, activate=False)
    # when
    walked = walk_ids_until(main.id, side.id)
    # then
    assert walked == [main.id, root.id]
    assert side.id not in walked


# --- get_path costs O(limit) -----------------------------------------------------------


def queries_of_get_path(thread: Thread, **kwargs: Any) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        path = selectors.get_path(thread.id, limit=LIMIT, **kwargs)
    assert len(path) == LIMIT
    return [query["sql"] for query in captured.captured_queries]


def walk_steps(queries: list[str]) -> list[int]:
    """How many entries each read of the branch among the queries may return: the step
    bound of a recursive walk, or the LIMIT of a read by seq (a branch's part before the
    thread's first fork)."""
    steps: list[int] = []
    for sql in queries:
        if "WITH RECURSIVE" in sql:
            bounds = re.findall(r"<\s*'?(\d+)", sql)
            assert bounds, f"a walk without a bound: {sql}"
            steps.extend(int(bound) for bound in bounds)
        elif re.search(r'ORDER BY "cogitator_memory_entry"."seq" DESC', sql):
            bound = re.search(r"LIMIT (\d+)", sql)
            assert bound, f"a read by seq without a bound: {sql}"
            steps.append(int(bound.group(1)))
    return steps


@pytest.fixture
def short_thread() -> Thread:
    created = ThreadFactory.create()
    create_branch(created, 200)
    return created


@pytest.fixture
def long_thread() -> Thread:
    created = ThreadFactory.create()
    create_branch(created, 2_000)
    return created


def test_get_path_makes_as_many_queries_on_2000_entries_as_on_200(
    short_thread: Thread, long_thread: Thread
) -> None:
    # given / when
    short = queries_of_get_path(short_thread)
    long = queries_of_get_path(long_thread)
    # then
    assert len(long) == len(short)
    assert len(long) <= 3, long


def test_get_path_walk_is_bounded_by_the_limit(long_thread: Thread) -> None:
    # given / when
    queries = queries_of_get_path(long_thread)
    # then
    steps = walk_steps(queries)
    assert steps, queries
    assert max(steps) <= MAX_STEP


def test_get_path_paging_back_costs_the_same_deep_in_a_long_thread(
    short_thread: Thread, long_thread: Thread
) -> None:
    # given: a page of each thread that starts 100 entries below the leaf
    short_before = selectors.get_path(short_thread.id, limit=100, types="all")[0]
    long_before = selectors.get_path(long_thread.id, limit=100, types="all")[0]
    # when
    short = queries_of_get_path(short_thread, before=short_before.id)
    long = queries_of_get_path(long_thread, before=long_before.id)
    # then
    assert len(long) == len(short)
    assert len(long) <= 4, long
    assert max(walk_steps(long)) <= MAX_STEP


def test_get_path_with_leaf_id_costs_the_same_on_a_long_thread(
    short_thread: Thread, long_thread: Thread
) -> None:
    # given
    short_leaf = selectors.get_path(short_thread.id, limit=1)[0]
    long_leaf = selectors.get_path(long_thread.id, limit=1)[0]
    # when
    short = queries_of_get_path(short_thread, leaf_id=short_leaf.id)
    long = queries_of_get_path(long_thread, leaf_id=long_leaf.id)
    # then
    assert len(long) == len(short)
    assert len(long) <= 4, long
    assert max(walk_steps(long)) <= MAX_STEP


# --- reading by seq --------------------------------------------------------------------


def test_every_read_by_seq_is_a_window_of_seqs(long_thread: Thread) -> None:
    # given / when
    queries = queries_of_get_path(long_thread)
    # then: each read by seq bounds seq from below too, so no plan the database picks for
    # it (one that sorts the thread's entries below the leaf) reads more than its window
    reads = [sql for sql in queries if 'ORDER BY "cogitator_memory_entry"."seq" DESC' in sql]
    assert reads, queries
    for sql in reads:
        assert re.search(r'"cogitator_memory_entry"\."seq" <= ', sql), sql
        assert re.search(r'"cogitator_memory_entry"\."seq" > ', sql), sql


def test_a_gap_in_the_seqs_of_a_chain_is_read_past_by_seq(thread: Thread) -> None:
    # given a branch of 120 entries whose 50th and 51st rows went around the services (the
    # 52nd now follows the 49th), leaving a gap in the chain's seqs
    entries = create_branch(thread, 120)
    Entry.objects.filter(pk=entries[51].id).update(parent_id=entries[48].id)
    Entry.objects.filter(pk__in=[entries[49].id, entries[50].id]).delete()
    thread.refresh_from_db()
    kept = [entry for n, entry in enumerate(entries) if n not in (49, 50)]
    # when
    with CaptureQueriesContext(connection) as captured:
        chunks = list(
            branch_chunks(thread.id, thread.active_leaf_id, thread.fork_seq, iter([100, 100]))
        )
    # then the whole branch, nearest first, read by seq (a window past the gap), no walk
    assert [entry.id for chunk in chunks for entry in chunk] == ids(kept[::-1])
    sql = [query["sql"] for query in captured.captured_queries]
    assert not any("WITH RECURSIVE" in statement for statement in sql), sql
    # (two windows for the first chunk of 100, one for the rest)
    assert len(sql) == 3, sql
