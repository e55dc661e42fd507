"""The thread and entry services, one behaviour at a time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from cogitator_memory.exceptions import NotOnActiveBranch
from cogitator_memory.threads import selectors, services
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, EntryType, Thread
from cogitator_memory.tokens import MESSAGE_OVERHEAD, TOOL_CALL_OVERHEAD, count_entry_tokens

pytestmark = pytest.mark.django_db

MOMENT = datetime(2025, 3, 14, 15, 9, 26, tzinfo=UTC)


@pytest.fixture
def thread() -> Thread:
    return services.create_thread("agent-1", {"topic": "rome"}, thread_id="rome")


def leaf_of(thread_id: str) -> str | None:
    return Thread.objects.values_list("active_leaf_id", flat=True).get(pk=thread_id)


def path_ids(thread_id: str, leaf_id: str | None = None) -> list[str]:
    return [entry.id for entry in selectors.get_path(thread_id, leaf_id=leaf_id)]


def stored(entry_id: str) -> Entry:
    return Entry.objects.get(pk=entry_id)


def fork_of(entry: Entry) -> str:
    assert entry.metadata is not None
    original: str = entry.metadata["forkOf"]
    return original


# --- add_entry -------------------------------------------------------------------------


def test_add_entry_estimates_the_token_count_when_none_is_given(thread: Thread) -> None:
    # given: 11 characters
    content = "Hello there"
    # when
    entry = services.add_entry(thread.id, role="user", content=content)
    # then
    assert entry.token_count == MESSAGE_OVERHEAD + 3
    assert stored(entry.id).token_count == MESSAGE_OVERHEAD + 3


def test_add_entry_estimate_counts_the_tool_calls(thread: Thread) -> None:
    # given: "search" 2 tokens, '{"q": "rome"}' 4 tokens
    calls = [{"id": "call_1", "name": "search", "arguments": {"q": "rome"}}]
    # when
    entry = services.add_entry(thread.id, role="assistant", tool_calls=calls)
    # then
    assert entry.token_count == MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD + 2 + 4


@pytest.mark.parametrize("token_count", [10, 0])
def test_add_entry_keeps_an_explicit_token_count(thread: Thread, token_count: int) -> None:
    # given
    content = "A text whose estimate is far from the count given"
    # when
    entry = services.add_entry(thread.id, role="user", content=content, token_count=token_count)
    # then
    assert stored(entry.id).token_count == token_count


def test_add_entry_numbers_entries_from_one(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="One")
    # when
    second = services.add_entry(thread.id, role="assistant", content="Two")
    third = services.add_entry(thread.id, role="user", content="Three")
    # then
    assert [first.seq, second.seq, third.seq] == [1, 2, 3]
    assert Thread.objects.get(pk=thread.id).next_seq == 3


def test_add_entry_numbers_entries_across_branches(thread: Thread) -> None:
    # given
    root = services.add_entry(thread.id, role="user", content="Question")
    services.add_entry(thread.id, role="assistant", content="Answer")
    # when
    retry = services.add_entry(
        thread.id, role="assistant", content="Retry", parent_id=root.id, activate=False
    )
    then = services.add_entry(thread.id, role="user", content="Then")
    # then: one sequence per thread, whatever the branch
    assert (retry.seq, then.seq) == (3, 4)


def test_add_entry_goes_after_the_active_leaf_and_moves_it(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="Question")
    # when
    second = services.add_entry(thread.id, role="assistant", content="Answer")
    # then
    assert second.parent_id == first.id
    assert leaf_of(thread.id) == second.id


def test_the_first_entry_of_a_thread_is_a_root(thread: Thread) -> None:
    # given / when
    entry = services.add_entry(thread.id, role="user", content="Question")
    # then
    assert entry.parent_id is None
    assert leaf_of(thread.id) == entry.id


def test_add_entry_with_parent_none_starts_a_new_root(thread: Thread) -> None:
    # given
    services.add_entry(thread.id, role="user", content="Question")
    services.add_entry(thread.id, role="assistant", content="Answer")
    # when
    root = services.add_entry(thread.id, role="user", content="Fresh start", parent_id=None)
    # then
    assert stored(root.id).parent_id is None
    assert leaf_of(thread.id) == root.id
    assert path_ids(thread.id) == [root.id]


def test_add_entry_with_parent_on_another_branch_activates_that_branch(thread: Thread) -> None:
    # given
    question = services.add_entry(thread.id, role="user", content="Plan a day in Rome")
    services.add_entry(thread.id, role="assistant", content="Start at the Colosseum")
    # when
    retry = services.add_entry(
        thread.id, role="assistant", content="Start at the Vatican", parent_id=question.id
    )
    # then
    assert retry.parent_id == question.id
    assert leaf_of(thread.id) == retry.id
    assert path_ids(thread.id) == [question.id, retry.id]


def test_add_entry_with_activate_false_leaves_the_active_leaf(thread: Thread) -> None:
    # given
    question = services.add_entry(thread.id, role="user", content="Plan a day in Rome")
    colosseum = services.add_entry(thread.id, role="assistant", content="Start at the Colosseum")
    # when
    retry = services.add_entry(
        thread.id,
        role="assistant",
        content="Start at the Vatican",
        parent_id=question.id,
        activate=False,
    )
    # then
    assert leaf_of(thread.id) == colosseum.id
    assert path_ids(thread.id) == [question.id, colosseum.id]
    assert path_ids(thread.id, leaf_id=retry.id) == [question.id, retry.id]


def test_add_entry_with_activate_false_after_the_leaf_leaves_it(thread: Thread) -> None:
    # given
    question = services.add_entry(thread.id, role="user", content="Question")
    # when
    draft = services.add_entry(thread.id, role="assistant", content="Draft", activate=False)
    # then
    assert draft.parent_id == question.id
    assert leaf_of(thread.id) == question.id


def test_a_tool_result_gets_the_tool_role_by_default(thread: Thread) -> None:
    # given / when
    entry = services.add_entry(
        thread.id, type=EntryType.TOOL_RESULT, content="42", tool_call_id="call_1"
    )
    # then
    assert entry.role == "tool"
    assert stored(entry.id).role == "tool"
    assert stored(entry.id).tool_call_id == "call_1"


def test_add_entry_keeps_a_given_created_at(thread: Thread) -> None:
    # given / when
    entry = services.add_entry(thread.id, role="user", content="Old", created_at=MOMENT)
    # then
    assert stored(entry.id).created_at == MOMENT


def test_add_entry_stamps_the_current_time_by_default(thread: Thread) -> None:
    # given
    before = timezone.now()
    # when
    entry = services.add_entry(thread.id, role="user", content="Now")
    # then
    assert before <= stored(entry.id).created_at <= timezone.now()


def test_add_entry_stores_an_event_payload(thread: Thread) -> None:
    # given / when
    entry = services.add_entry(
        thread.id, type=EntryType.MODEL_CHANGE, event={"from": "small", "to": "large"}
    )
    # then
    row = stored(entry.id)
    assert (row.type, row.event, row.role) == (
        "model_change",
        {"from": "small", "to": "large"},
        None,
    )


# --- delete_entry ----------------------------------------------------------------------


def test_deleting_a_middle_entry_joins_its_child_to_its_parent(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="One")
    middle = services.add_entry(thread.id, role="assistant", content="Two")
    last = services.add_entry(thread.id, role="user", content="Three")
    # when
    services.delete_entry(middle.id)
    # then
    assert selectors.get_entry(middle.id) is None
    assert stored(last.id).parent_id == first.id
    assert leaf_of(thread.id) == last.id
    assert path_ids(thread.id) == [first.id, last.id]


def test_deleting_a_root_makes_its_children_roots(thread: Thread) -> None:
    # given
    root = services.add_entry(thread.id, role="user", content="Question")
    left = services.add_entry(thread.id, role="assistant", content="Left")
    right = services.add_entry(thread.id, role="assistant", content="Right", parent_id=root.id)
    # when
    services.delete_entry(root.id)
    # then
    assert stored(left.id).parent_id is None
    assert stored(right.id).parent_id is None
    assert path_ids(thread.id) == [right.id]
    assert path_ids(thread.id, leaf_id=left.id) == [left.id]


def test_deleting_the_active_leaf_moves_the_leaf_to_its_parent(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="One")
    second = services.add_entry(thread.id, role="assistant", content="Two")
    # when
    services.delete_entry(second.id)
    # then
    assert leaf_of(thread.id) == first.id
    assert path_ids(thread.id) == [first.id]


def test_deleting_the_only_entry_leaves_no_active_leaf(thread: Thread) -> None:
    # given
    only = services.add_entry(thread.id, role="user", content="One")
    # when
    services.delete_entry(only.id)
    # then
    assert leaf_of(thread.id) is None
    assert path_ids(thread.id) == []


def test_deleting_an_entry_off_the_active_branch_leaves_the_leaf(thread: Thread) -> None:
    # given
    root = services.add_entry(thread.id, role="user", content="Question")
    draft = services.add_entry(
        thread.id, role="assistant", content="Draft", parent_id=root.id, activate=False
    )
    answer = services.add_entry(thread.id, role="assistant", content="Answer")
    # when
    services.delete_entry(draft.id)
    # then
    assert leaf_of(thread.id) == answer.id


def test_the_children_of_a_deleted_entry_keep_their_order(thread: Thread) -> None:
    # given
    root = services.add_entry(thread.id, role="user", content="Question")
    middle = services.add_entry(thread.id, role="assistant", content="Thinking")
    children = [
        services.add_entry(
            thread.id, role="user", content=f"Child {n}", parent_id=middle.id, activate=False
        )
        for n in range(3)
    ]
    seqs = [child.seq for child in children]
    # when
    services.delete_entry(middle.id)
    # then
    moved = Entry.objects.filter(parent_id=root.id).order_by("seq")
    assert [(child.id, child.seq) for child in moved] == [
        (child.id, seq) for child, seq in zip(children, seqs, strict=True)
    ]
    assert [e.id for e in selectors.get_entries(thread.id)] == [root.id] + [c.id for c in children]


def test_a_deleted_entry_seq_is_not_given_again(thread: Thread) -> None:
    # given
    services.add_entry(thread.id, role="user", content="One")
    last = services.add_entry(thread.id, role="assistant", content="Two")
    services.delete_entry(last.id)
    # when
    again = services.add_entry(thread.id, role="assistant", content="Two again")
    # then
    assert again.seq == 3


# --- redact_entry ----------------------------------------------------------------------


def test_redact_entry_replaces_the_text(thread: Thread) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="My passport is X123")
    # when
    redacted = services.redact_entry(entry.id, at=MOMENT)
    # then
    assert redacted is not None
    assert redacted.content == REDACTED_TEXT
    assert stored(entry.id).content == "[redacted]"


def test_redact_entry_replaces_content_parts_with_the_text(thread: Thread) -> None:
    # given
    entry = services.add_entry(
        thread.id,
        role="user",
        content=[
            {"type": "text", "text": "My passport"},
            {"type": "image_url", "image_url": {"url": "https://example.com/passport.png"}},
        ],
    )
    # when
    services.redact_entry(entry.id, at=MOMENT)
    # then
    assert stored(entry.id).content == "[redacted]"


def test_redact_entry_keeps_only_the_identity_of_tool_calls(thread: Thread) -> None:
    # given
    entry = services.add_entry(
        thread.id,
        role="assistant",
        content="Looking it up",
        tool_calls=[
            {
                "id": "call_1",
                "name": "lookup_passport",
                "arguments": {"number": "X123"},
                "replay": {"state": "pending", "arguments": {"number": "X123"}},
                "argumentsError": "number X123 is not valid",
            },
            {"id": "call_2", "name": "notify", "arguments": '{"to": "alice@example.com"}'},
        ],
    )
    # when
    services.redact_entry(entry.id, at=MOMENT)
    # then
    assert stored(entry.id).tool_calls == [
        {"id": "call_1", "name": "lookup_passport", "arguments": "[redacted]"},
        {"id": "call_2", "name": "notify", "arguments": "[redacted]"},
    ]


def test_redact_entry_replaces_tool_results_and_keeps_call_ids(thread: Thread) -> None:
    # given
    entry = services.add_entry(
        thread.id,
        type=EntryType.TOOL_RESULT,
        content="Passport X123 found",
        tool_call_id="call_1",
        tool_results=[
            {"callId": "call_1", "name": "lookup_passport", "result": {"number": "X123"}},
            {"callId": "call_2", "name": "notify", "result": "sent to alice@example.com"},
        ],
    )
    # when
    services.redact_entry(entry.id, at=MOMENT)
    # then
    row = stored(entry.id)
    assert row.content == "[redacted]"
    assert row.tool_call_id == "call_1"
    assert row.role == "tool"
    assert row.tool_results == [
        {"callId": "call_1", "name": "lookup_passport", "result": "[redacted]"},
        {"callId": "call_2", "name": "notify", "result": "[redacted]"},
    ]


def test_redact_entry_drops_the_error_text_of_a_tool_result(thread: Thread) -> None:
    # given
    entry = services.add_entry(
        thread.id,
        type=EntryType.TOOL_RESULT,
        content="Failed",
        tool_call_id="call_1",
        tool_results=[
            {"callId": "call_1", "result": None, "error": "no passport X123 on file"},
        ],
    )
    # when
    services.redact_entry(entry.id, at=MOMENT)
    # then
    assert "X123" not in str(stored(entry.id).tool_results)


def test_redact_entry_drops_the_sender_name_of_a_user_message(thread: Thread) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", name="alice", content="I am Alice")
    # when
    services.redact_entry(entry.id, at=MOMENT)
    # then
    row = stored(entry.id)
    assert row.name is None
    assert "name" not in row.as_dict()


def test_redact_entry_keeps_the_name_of_an_assistant_message(thread: Thread) -> None:
    # given
    entry = services.add_entry(thread.id, role="assistant", name="planner", content="Hi Alice")
    # when
    services.redact_entry(entry.id, at=MOMENT)
    # then
    assert stored(entry.id).name == "planner"


def test_redact_entry_records_when_and_why(thread: Thread) -> None:
    # given
    entry = services.add_entry(
        thread.id, role="user", content="My passport is X123", metadata={"source": "chat"}
    )
    # when
    services.redact_entry(entry.id, at=MOMENT, reason="the user asked")
    # then
    row = stored(entry.id)
    assert row.redaction is not None
    assert parse_datetime(row.redaction["at"]) == MOMENT
    assert row.redaction["reason"] == "the user asked"
    assert row.metadata == {"source": "chat", "redacted": row.redaction}
    assert row.is_redacted


def test_redact_entry_without_reason_records_no_reason(thread: Thread) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="My passport is X123")
    # when
    services.redact_entry(entry.id, at=MOMENT)
    # then
    row = stored(entry.id)
    assert row.redaction is not None
    assert set(row.redaction) == {"at"}
    assert row.metadata == {"redacted": row.redaction}


def test_redact_entry_without_a_moment_records_now(thread: Thread) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="My passport is X123")
    before = timezone.now()
    # when
    services.redact_entry(entry.id)
    # then
    row = stored(entry.id)
    assert row.redaction is not None
    at = parse_datetime(row.redaction["at"])
    assert at is not None
    assert before <= at <= timezone.now()


def test_redact_entry_keeps_the_place_of_the_entry(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="Hello")
    entry = services.add_entry(thread.id, role="user", content="My passport is X123")
    last = services.add_entry(thread.id, role="assistant", content="Noted")
    # when
    services.redact_entry(entry.id, at=MOMENT)
    # then
    row = stored(entry.id)
    assert (row.parent_id, row.seq, row.type, row.role) == (first.id, 2, "message", "user")
    assert stored(last.id).parent_id == entry.id
    assert path_ids(thread.id) == [first.id, entry.id, last.id]
    assert leaf_of(thread.id) == last.id


def test_redact_entry_recomputes_the_token_count(thread: Thread) -> None:
    # given
    entry = services.add_entry(
        thread.id, role="user", content="My passport is X123 " * 20, token_count=500
    )
    # when
    services.redact_entry(entry.id, at=MOMENT)
    # then: "[redacted]" is 10 characters
    row = stored(entry.id)
    assert row.token_count == MESSAGE_OVERHEAD + 3
    assert row.token_count == count_entry_tokens(row)


def test_redact_entry_returns_the_entry_as_stored(thread: Thread) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", name="alice", content="Secret")
    # when
    redacted = services.redact_entry(entry.id, at=MOMENT, reason="asked")
    # then
    assert redacted is not None
    assert redacted.as_dict() == stored(entry.id).as_dict()


def test_redact_entry_gives_none_for_a_missing_entry(thread: Thread) -> None:
    # given / when
    result = services.redact_entry("entry_does_not_exist", at=MOMENT)
    # then
    assert result is None


# --- rewind ----------------------------------------------------------------------------


def test_rewind_moves_the_active_leaf_back_along_the_branch(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="One")
    services.add_entry(thread.id, role="assistant", content="Two")
    services.add_entry(thread.id, role="user", content="Three")
    # when
    result = services.rewind(thread.id, first.id)
    # then
    assert result.active_leaf_id == first.id
    assert leaf_of(thread.id) == first.id
    assert path_ids(thread.id) == [first.id]


def test_rewind_deletes_nothing(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="One")
    second = services.add_entry(thread.id, role="assistant", content="Two")
    third = services.add_entry(thread.id, role="user", content="Three")
    # when
    services.rewind(thread.id, first.id)
    # then: the entries after it are a branch of their own
    assert path_ids(thread.id, leaf_id=third.id) == [first.id, second.id, third.id]
    assert [e.id for e in selectors.get_entries(thread.id)] == [first.id, second.id, third.id]


def test_an_entry_added_after_a_rewind_starts_a_new_branch(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="One")
    second = services.add_entry(thread.id, role="assistant", content="Two")
    services.rewind(thread.id, first.id)
    # when
    other = services.add_entry(thread.id, role="assistant", content="Two, again")
    # then
    assert other.parent_id == first.id
    assert path_ids(thread.id) == [first.id, other.id]
    assert path_ids(thread.id, leaf_id=second.id) == [first.id, second.id]


def test_rewind_to_the_current_leaf_writes_nothing(thread: Thread) -> None:
    # given
    services.add_entry(thread.id, role="user", content="One")
    last = services.add_entry(thread.id, role="assistant", content="Two")
    # when
    with CaptureQueriesContext(connection) as queries:
        result = services.rewind(thread.id, last.id)
    # then
    assert result.active_leaf_id == last.id
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert writes == []


def test_rewind_refuses_an_entry_on_another_branch(thread: Thread) -> None:
    # given
    question = services.add_entry(thread.id, role="user", content="Question")
    answer = services.add_entry(thread.id, role="assistant", content="Answer")
    retry = services.add_entry(
        thread.id, role="assistant", content="Retry", parent_id=question.id, activate=False
    )
    # when
    with pytest.raises(NotOnActiveBranch) as raised:
        services.rewind(thread.id, retry.id)
    # then
    assert str(raised.value) == (
        f"Entry {retry.id!r} is not on the active branch of thread 'rome'; "
        "rewind goes back along the active branch, checkout switches branches."
    )
    assert leaf_of(thread.id) == answer.id


# --- checkout --------------------------------------------------------------------------


def test_checkout_makes_another_branch_active(thread: Thread) -> None:
    # given
    question = services.add_entry(thread.id, role="user", content="Question")
    services.add_entry(thread.id, role="assistant", content="Answer")
    retry = services.add_entry(
        thread.id, role="assistant", content="Retry", parent_id=question.id, activate=False
    )
    # when
    result = services.checkout(thread.id, retry.id)
    # then
    assert result.active_leaf_id == retry.id
    assert path_ids(thread.id) == [question.id, retry.id]


def test_checkout_of_an_inner_entry_ends_the_branch_there(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="One")
    second = services.add_entry(thread.id, role="assistant", content="Two")
    services.add_entry(thread.id, role="user", content="Three")
    # when
    services.checkout(thread.id, second.id)
    # then
    assert path_ids(thread.id) == [first.id, second.id]


def test_an_entry_added_after_checkout_goes_on_the_checked_out_branch(thread: Thread) -> None:
    # given
    question = services.add_entry(thread.id, role="user", content="Question")
    services.add_entry(thread.id, role="assistant", content="Answer")
    retry = services.add_entry(
        thread.id, role="assistant", content="Retry", parent_id=question.id, activate=False
    )
    services.checkout(thread.id, retry.id)
    # when
    follow_up = services.add_entry(thread.id, role="user", content="Follow-up")
    # then
    assert follow_up.parent_id == retry.id


# --- fork_thread -----------------------------------------------------------------------


def rome_with_two_answers(thread: Thread) -> tuple[Entry, Entry, Entry]:
    question = services.add_entry(thread.id, role="user", content="Plan a day in Rome")
    colosseum = services.add_entry(thread.id, role="assistant", content="Start at the Colosseum")
    vatican = services.add_entry(
        thread.id,
        role="assistant",
        content="Start at the Vatican",
        parent_id=question.id,
        activate=False,
    )
    return question, colosseum, vatican


def test_fork_thread_uses_the_new_thread_id_given(thread: Thread) -> None:
    # given
    _question, _colosseum, vatican = rome_with_two_answers(thread)
    # when
    fork = services.fork_thread(thread.id, vatican.id, "rome-vatican")
    # then
    assert fork.id == "rome-vatican"
    assert fork.agent_id == "agent-1"
    assert selectors.get_thread("rome-vatican") is not None


def test_fork_thread_generates_a_thread_id_when_none_is_given(thread: Thread) -> None:
    # given
    question = services.add_entry(thread.id, role="user", content="Question")
    # when
    first = services.fork_thread(thread.id, question.id)
    second = services.fork_thread(thread.id, question.id)
    # then
    assert first.id.startswith("thread_")
    assert len({first.id, second.id, thread.id}) == 3


def test_fork_thread_copies_the_branch_up_to_the_entry(thread: Thread) -> None:
    # given
    question, _colosseum, vatican = rome_with_two_answers(thread)
    # when
    fork = services.fork_thread(thread.id, vatican.id, "rome-vatican")
    # then
    copies = selectors.get_entries(fork.id)
    assert [(c.role, c.content) for c in copies] == [
        ("user", "Plan a day in Rome"),
        ("assistant", "Start at the Vatican"),
    ]
    assert [fork_of(c) for c in copies] == [question.id, vatican.id]
    assert not {c.id for c in copies} & {question.id, vatican.id}


def test_fork_thread_does_not_copy_what_comes_after_the_entry(thread: Thread) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="One")
    services.add_entry(thread.id, role="assistant", content="Two")
    # when
    fork = services.fork_thread(thread.id, first.id, "only-one")
    # then
    assert [c.content for c in selectors.get_entries(fork.id)] == ["One"]


def test_fork_thread_chains_the_copies_and_activates_the_last(thread: Thread) -> None:
    # given
    _question, _colosseum, vatican = rome_with_two_answers(thread)
    # when
    fork = services.fork_thread(thread.id, vatican.id, "rome-vatican")
    # then
    path = selectors.get_path(fork.id)
    assert [c.content for c in path] == ["Plan a day in Rome", "Start at the Vatican"]
    assert path[0].parent_id is None
    assert path[1].parent_id == path[0].id
    assert fork.active_leaf_id == path[1].id


def test_fork_thread_keeps_the_metadata_and_fields_of_each_entry(thread: Thread) -> None:
    # given
    calls = [{"id": "call_1", "name": "search", "arguments": {"q": "rome"}}]
    entry = services.add_entry(
        thread.id,
        role="assistant",
        name="planner",
        content="Searching",
        tool_calls=calls,
        metadata={"source": "plan"},
        token_count=42,
        created_at=MOMENT,
    )
    # when
    fork = services.fork_thread(thread.id, entry.id, "rome-copy")
    # then
    (copy,) = selectors.get_entries(fork.id, include_tool_calls=True)
    assert copy.metadata == {"source": "plan", "forkOf": entry.id}
    assert (copy.name, copy.tool_calls, copy.token_count, copy.created_at) == (
        "planner",
        calls,
        42,
        MOMENT,
    )


def test_fork_thread_names_its_origin_in_forked_from(thread: Thread) -> None:
    # given
    _question, _colosseum, vatican = rome_with_two_answers(thread)
    # when
    fork = services.fork_thread(thread.id, vatican.id, "rome-vatican")
    # then
    assert fork.metadata["forkedFrom"] == {"threadId": "rome", "entryId": vatican.id}
    assert Thread.objects.get(pk=fork.id).metadata["forkedFrom"] == {
        "threadId": "rome",
        "entryId": vatican.id,
    }


def test_the_origin_lists_each_fork_in_memory_forks(thread: Thread) -> None:
    # given
    _question, colosseum, vatican = rome_with_two_answers(thread)
    # when
    services.fork_thread(thread.id, vatican.id, "rome-vatican")
    services.fork_thread(thread.id, colosseum.id, "rome-colosseum")
    # then
    origin = Thread.objects.get(pk=thread.id)
    assert origin.metadata["memoryForks"] == ["rome-vatican", "rome-colosseum"]
    assert origin.metadata["topic"] == "rome"


def test_the_fork_does_not_copy_paused_run_nor_memory_forks(thread: Thread) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="Question")
    services.fork_thread(thread.id, entry.id, "earlier-fork")
    services.update_thread(thread.id, {"pausedRun": {"runId": "run-1"}, "user": "user-123"})
    # when
    fork = services.fork_thread(thread.id, entry.id, "later-fork")
    # then
    assert fork.metadata == {
        "topic": "rome",
        "user": "user-123",
        "forkedFrom": {"threadId": "rome", "entryId": entry.id},
    }
    assert Thread.objects.get(pk=thread.id).metadata["pausedRun"] == {"runId": "run-1"}


def test_fork_thread_copies_events_on_the_branch(thread: Thread) -> None:
    # given
    services.add_entry(thread.id, role="user", content="Question")
    services.add_entry(thread.id, type=EntryType.LABEL, event={"label": "checkpoint"})
    answer = services.add_entry(thread.id, role="assistant", content="Answer")
    # when
    fork = services.fork_thread(thread.id, answer.id, "with-events")
    # then
    copies = selectors.get_path(fork.id, types="all")
    assert [(c.type, c.event) for c in copies] == [
        ("message", None),
        ("label", {"label": "checkpoint"}),
        ("message", None),
    ]


def test_fork_thread_numbers_the_copies_from_one(thread: Thread) -> None:
    # given: the branch holds seq 1, 3 and 5 of the origin
    first = services.add_entry(thread.id, role="user", content="One")
    services.add_entry(thread.id, role="assistant", content="Other", activate=False)
    second = services.add_entry(thread.id, role="assistant", content="Two")
    services.add_entry(thread.id, role="user", content="Other", activate=False)
    third = services.add_entry(thread.id, role="user", content="Three")
    assert [first.seq, second.seq, third.seq] == [1, 3, 5]
    # when
    fork = services.fork_thread(thread.id, third.id, "renumbered")
    # then
    assert [c.seq for c in selectors.get_entries(fork.id)] == [1, 2, 3]
    assert services.add_entry(fork.id, role="assistant", content="Four").seq == 4


def test_a_fork_can_be_forked(thread: Thread) -> None:
    # given
    _question, _colosseum, vatican = rome_with_two_answers(thread)
    fork = services.fork_thread(thread.id, vatican.id, "first-fork")
    fork_leaf = fork.active_leaf_id
    assert fork_leaf is not None
    # when
    second = services.fork_thread(fork.id, fork_leaf, "second-fork")
    # then
    first_copies = selectors.get_entries("first-fork")
    second_copies = selectors.get_entries("second-fork")
    assert [fork_of(c) for c in second_copies] == [c.id for c in first_copies]
    assert second.metadata == {
        "topic": "rome",
        "forkedFrom": {"threadId": "first-fork", "entryId": fork_leaf},
    }
    assert Thread.objects.get(pk="first-fork").metadata["memoryForks"] == ["second-fork"]
    assert Thread.objects.get(pk=thread.id).metadata["memoryForks"] == ["first-fork"]


def test_fork_thread_leaves_the_origin_entries_as_they_were(thread: Thread) -> None:
    # given
    _question, colosseum, vatican = rome_with_two_answers(thread)
    before = [e.as_dict() for e in selectors.get_entries(thread.id)]
    # when
    services.fork_thread(thread.id, vatican.id, "rome-vatican")
    # then
    assert [e.as_dict() for e in selectors.get_entries(thread.id)] == before
    assert leaf_of(thread.id) == colosseum.id


# --- threads ---------------------------------------------------------------------------


def test_create_thread_with_an_existing_id_merges_the_metadata(thread: Thread) -> None:
    # given: the fixture thread has {"topic": "rome"}
    services.update_thread(thread.id, {"user": "user-123"})
    # when
    again = services.create_thread(
        "agent-1", {"user": "user-456", "resolved": False}, thread_id=thread.id
    )
    # then
    expected = {"topic": "rome", "user": "user-456", "resolved": False}
    assert again.metadata == expected
    assert Thread.objects.get(pk=thread.id).metadata == expected


def test_create_thread_upsert_moves_updated_at(thread: Thread) -> None:
    # given
    Thread.objects.filter(pk=thread.id).update(updated_at=MOMENT)
    # when
    again = services.create_thread("agent-1", {"user": "user-123"}, thread_id=thread.id)
    # then
    assert again.updated_at > MOMENT
    assert Thread.objects.get(pk=thread.id).updated_at == again.updated_at


def test_update_thread_merges_by_default(thread: Thread) -> None:
    # given
    services.update_thread(thread.id, {"user": "user-123", "resolved": False})
    # when
    updated = services.update_thread(thread.id, {"resolved": True})
    # then
    expected = {"topic": "rome", "user": "user-123", "resolved": True}
    assert updated.metadata == expected
    assert Thread.objects.get(pk=thread.id).metadata == expected


def test_update_thread_with_replace_drops_the_other_keys(thread: Thread) -> None:
    # given
    services.update_thread(thread.id, {"user": "user-123"})
    # when
    updated = services.update_thread(thread.id, {"resolved": True}, replace=True)
    # then
    assert updated.metadata == {"resolved": True}
    assert Thread.objects.get(pk=thread.id).metadata == {"resolved": True}


def test_update_thread_moves_updated_at(thread: Thread) -> None:
    # given
    Thread.objects.filter(pk=thread.id).update(updated_at=MOMENT)
    # when
    updated = services.update_thread(thread.id, {"resolved": True})
    # then
    assert updated.updated_at > MOMENT


def test_clear_thread_keeps_the_thread_and_its_metadata(thread: Thread) -> None:
    # given
    services.add_entry(thread.id, role="user", content="One")
    services.add_entry(thread.id, role="assistant", content="Two")
    # when
    services.clear_thread(thread.id)
    # then
    kept = selectors.get_thread(thread.id)
    assert kept is not None
    assert kept.metadata == {"topic": "rome"}
    assert selectors.get_entries(thread.id, types="all") == []


def test_clear_thread_resets_the_active_leaf(thread: Thread) -> None:
    # given
    services.add_entry(thread.id, role="user", content="One")
    # when
    result = services.clear_thread(thread.id)
    # then
    assert result.active_leaf_id is None
    assert leaf_of(thread.id) is None
    assert services.add_entry(thread.id, role="user", content="Again").parent_id is None


def test_clear_thread_leaves_other_threads_alone(thread: Thread) -> None:
    # given
    other = services.create_thread("agent-1", thread_id="other")
    kept = services.add_entry(other.id, role="user", content="Stay")
    services.add_entry(thread.id, role="user", content="Go")
    # when
    services.clear_thread(thread.id)
    # then
    assert [e.id for e in selectors.get_entries(other.id)] == [kept.id]
    assert leaf_of(other.id) == kept.id
