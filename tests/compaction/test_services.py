"""The summary strategy of ``CompactionService`` and reading through a compaction, with a
scripted model, on both databases."""

from __future__ import annotations

from typing import Any

import pytest

from cogitator_memory.compaction import hierarchical
from cogitator_memory.compaction.config import CompactionConfig, config_from_settings
from cogitator_memory.compaction.history import (
    HISTORY_ENTRY_TYPES,
    compacted_history,
    history_messages,
    read_compacted_history,
)
from cogitator_memory.compaction.services import (
    SUMMARY_PROMPT,
    CompactionService,
    plan_compaction,
    write_compaction,
)
from cogitator_memory.exceptions import (
    CompactionDropsOpenItems,
    CompactionStale,
    InvalidCompactionConfig,
    LLMUnavailable,
)
from cogitator_memory.llm.scripted import ScriptedAnswer, ScriptedModel
from cogitator_memory.threads import selectors, services
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db

AGENT = "concierge"


def conversation(thread_id: str, count: int, *, tokens: int = 10) -> list[Entry]:
    return [
        services.add_entry(
            thread_id,
            role="user" if number % 2 == 0 else "assistant",
            content=f"message {number}",
            token_count=tokens,
        )
        for number in range(count)
    ]


@pytest.fixture
def thread_id() -> str:
    return services.create_thread(AGENT, {"userId": "ana"}, thread_id="long").pk


def test_a_config_needs_a_threshold_and_sane_numbers() -> None:
    with pytest.raises(InvalidCompactionConfig) as caught:
        CompactionConfig()
    assert "threshold" in caught.value.errors
    with pytest.raises(InvalidCompactionConfig) as caught:
        CompactionConfig(strategy="flat", threshold=0, keep_recent=-1)  # type: ignore[arg-type]
    assert set(caught.value.errors) == {"strategy", "threshold", "keep_recent"}
    with pytest.raises(InvalidCompactionConfig):
        CompactionConfig.from_dict({"threshold": 10, "threshhold": 5})
    assert CompactionConfig(message_threshold=5).chapter_tokens == 4000
    assert config_from_settings().threshold == 8000


def test_below_the_threshold_nothing_is_written(thread_id: str) -> None:
    conversation(thread_id, 5)
    model = ScriptedModel()
    entry = CompactionService(model).compact(thread_id, CompactionConfig(threshold=1000))
    assert entry is None
    assert model.calls == []


def test_a_crossed_threshold_writes_a_compaction_and_keeps_everything(thread_id: str) -> None:
    # given 12 entries of 10 tokens, over a threshold of 100 tokens
    entries = conversation(thread_id, 12)
    model = ScriptedModel(["They talked about twelve things."])
    config = CompactionConfig(
        threshold=100, keep_recent=4, summary_model="small", summary_prompt="Keep names."
    )
    # when
    compaction = CompactionService(model).compact(thread_id, config)
    # then the model saw the 8 older entries, with the model and prompt of the config
    assert compaction is not None
    [call] = model.calls
    assert [message["content"] for message in call.messages] == [
        f"message {number}" for number in range(8)
    ]
    assert call.model == "small"
    assert call.prompt == f"{SUMMARY_PROMPT}\n\nKeep names."
    # and the entry closes the active branch, naming the kept and covered entries
    assert compaction.type == "compaction"
    assert compaction.parent_id == entries[-1].pk
    assert selectors.get_thread(thread_id).active_leaf_id == compaction.pk  # type: ignore[union-attr]
    assert compaction.event == {
        "strategy": "summary",
        "summary": "They talked about twelve things.",
        "first_kept_entry_id": entries[8].pk,
        "covered_to_entry_id": entries[7].pk,
    }
    # and a reader gets the summary, then the kept four; nothing was deleted
    history = read_compacted_history(thread_id)
    assert [entry.pk for entry in history] == [compaction.pk] + [e.pk for e in entries[8:]]
    assert history_messages(history)[0] == {
        "role": "system",
        "content": "Summary of the conversation so far:\nThey talked about twelve things.",
    }
    assert [e.pk for e in selectors.get_entries(thread_id)] == [e.pk for e in entries]
    assert Entry.objects.filter(thread_id=thread_id).count() == 13
    path = selectors.get_path(thread_id, types=HISTORY_ENTRY_TYPES)
    assert [e.pk for e in compacted_history(path)] == [e.pk for e in history]


def test_entries_after_a_compaction_are_read_after_it_and_a_second_folds_the_first(
    thread_id: str,
) -> None:
    entries = conversation(thread_id, 6)
    model = ScriptedModel(["First summary.", "Second summary."])
    config = CompactionConfig(message_threshold=6, keep_recent=2)
    first = CompactionService(model).compact(thread_id, config)
    assert first is not None
    later = conversation(thread_id, 4)
    history = read_compacted_history(thread_id)
    assert [e.pk for e in history] == [first.pk, entries[4].pk, entries[5].pk] + [
        e.pk for e in later
    ]
    # when the kept two and the four new ones cross the threshold again
    second = CompactionService(model).compact(thread_id, config)
    # then the model got the first summary, then the entries not yet summarized
    assert second is not None
    contents = [message["content"] for message in model.calls[1].messages]
    assert contents[0] == "Summary of the conversation so far:\nFirst summary."
    assert contents[1:] == ["message 4", "message 5", "message 0", "message 1"]
    assert [e.pk for e in read_compacted_history(thread_id)] == [second.pk] + [
        e.pk for e in later[2:]
    ]
    # and the first compaction's branch position reads as it did
    assert [e.pk for e in read_compacted_history(thread_id, leaf_id=later[-1].pk)] == [
        e.pk for e in history
    ]


def test_keep_recent_tokens_keeps_whole_turns_opening_with_a_user_message(thread_id: str) -> None:
    entries = conversation(thread_id, 10)  # user, assistant, user, ...
    model = ScriptedModel(["Summary."])
    config = CompactionConfig(threshold=50, keep_recent_tokens=35)
    compaction = CompactionService(model).compact(thread_id, config)
    assert compaction is not None
    # 35 tokens hold the last three entries; the turn opens with the user message at 8
    assert compaction.event["first_kept_entry_id"] == entries[8].pk


def test_other_branches_keep_the_summarized_entries(thread_id: str) -> None:
    entries = conversation(thread_id, 8)
    CompactionService(ScriptedModel(["S."])).compact(
        thread_id, CompactionConfig(message_threshold=8, keep_recent=2)
    )
    side = services.add_entry(thread_id, role="user", content="side", parent_id=entries[3].pk)
    history = read_compacted_history(thread_id, leaf_id=side.pk)
    assert [e.pk for e in history] == [e.pk for e in entries[:4]] + [side.pk]


def test_no_model_configured_says_compaction_is_off(thread_id: str) -> None:
    conversation(thread_id, 4)
    with pytest.raises(LLMUnavailable):
        CompactionService().compact(thread_id, CompactionConfig(message_threshold=2, keep_recent=0))


@pytest.mark.parametrize("change", ["delete", "redact"])
def test_a_compaction_refuses_to_write_when_a_covered_entry_changed(
    thread_id: str, change: str
) -> None:
    # given a plan read, and a summary made
    entries = conversation(thread_id, 6)
    config = CompactionConfig(message_threshold=2, keep_recent=2)
    plan = plan_compaction(read_compacted_history(thread_id), config)
    # when an entry it covers goes meanwhile
    if change == "delete":
        services.delete_entry(entries[1].pk)
    else:
        services.redact_entry(entries[1].pk)
    # then nothing is written
    with pytest.raises(CompactionStale, match="deleted or redacted"):
        write_compaction(thread_id, plan, {"strategy": "summary", "summary": "S."})
    assert not Entry.objects.filter(type="compaction").exists()


def test_a_compaction_refuses_when_another_was_written_first(thread_id: str) -> None:
    conversation(thread_id, 6)
    config = CompactionConfig(message_threshold=2, keep_recent=2)
    plan = plan_compaction(read_compacted_history(thread_id), config)
    write_compaction(thread_id, plan, {"strategy": "summary", "summary": "First."})
    with pytest.raises(CompactionStale, match="another compaction"):
        write_compaction(thread_id, plan, {"strategy": "summary", "summary": "Second."})
    assert Entry.objects.filter(type="compaction").count() == 1


def test_a_compaction_refuses_when_the_branch_moved_off(thread_id: str) -> None:
    entries = conversation(thread_id, 6)
    config = CompactionConfig(message_threshold=2, keep_recent=2)
    plan = plan_compaction(read_compacted_history(thread_id), config)
    services.rewind(thread_id, entries[1].pk)
    with pytest.raises(CompactionStale, match="active branch"):
        write_compaction(thread_id, plan, {"strategy": "summary", "summary": "S."})


def test_entries_added_while_the_model_answered_are_kept(thread_id: str) -> None:
    conversation(thread_id, 6)
    config = CompactionConfig(message_threshold=2, keep_recent=0)
    plan = plan_compaction(read_compacted_history(thread_id), config)
    late = services.add_entry(thread_id, role="user", content="late")
    compaction = write_compaction(thread_id, plan, {"strategy": "summary", "summary": "S."})
    assert compaction.event["first_kept_entry_id"] == late.pk
    assert [e.pk for e in read_compacted_history(thread_id)] == [compaction.pk, late.pk]


def test_the_hierarchical_strategy_writes_levels(thread_id: str, monkeypatch: Any) -> None:
    from cogitator_memory.compaction import services as compaction_services

    class Result:
        handoff = "Open tasks:\n- ship it"
        levels = {"version": 1, "saga": None, "arcs": [], "chapters": []}

    seen: dict[str, Any] = {}

    def fake(entries: Any, previous_levels: Any, config: Any, summarize: Any) -> Result:
        seen.update(entries=[e.pk for e in entries], previous=previous_levels)
        return Result()

    monkeypatch.setattr(compaction_services, "compact_levels", fake)
    entries = conversation(thread_id, 4)
    compaction = CompactionService(ScriptedModel()).compact(
        thread_id, CompactionConfig(strategy="hierarchical", message_threshold=4, keep_recent=1)
    )
    assert compaction is not None
    assert seen == {"entries": [e.pk for e in entries[:3]], "previous": None}
    assert compaction.event["strategy"] == "hierarchical"
    assert compaction.event["summary"] == Result.handoff
    assert compaction.event["levels"] == Result.levels


def test_the_hierarchical_strategy_runs_the_real_levels_and_keeps_an_open_task(
    thread_id: str,
) -> None:
    # given a conversation with an open task line, and a model that finds no atoms
    services.add_entry(thread_id, role="user", content="TODO: renew the passport")
    conversation(thread_id, 5)
    model = ScriptedModel([ScriptedAnswer("[]", match=lambda _call: True, repeat=True)])
    config = CompactionConfig(strategy="hierarchical", message_threshold=4, keep_recent=1)
    # when
    compaction = CompactionService(model).compact(thread_id, config)
    # then the handoff holds the open task, and the levels hold the chapters
    assert compaction is not None
    assert "renew the passport" in compaction.event["summary"]
    assert compaction.event["levels"]["chapters"]
    history = read_compacted_history(thread_id)
    assert history[0].pk == compaction.pk


def test_a_hierarchical_compaction_that_would_drop_an_open_item_leaves_the_thread_as_it_was(
    thread_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a first compaction holding an open task
    services.add_entry(thread_id, role="user", content="TODO: renew the passport")
    conversation(thread_id, 5)
    model = ScriptedModel([ScriptedAnswer("[]", match=lambda _call: True, repeat=True)])
    config = CompactionConfig(strategy="hierarchical", message_threshold=4, keep_recent=1)
    first = CompactionService(model).compact(thread_id, config)
    assert first is not None
    conversation(thread_id, 6)
    before = list(Entry.objects.filter(thread_id=thread_id).order_by("seq").values())
    leaf = selectors.get_thread(thread_id).active_leaf_id  # type: ignore[union-attr]

    # when the next levels lose it (a fold that keeps only the newest chapter)
    def losing_fold(levels: dict[str, Any], *_args: Any) -> dict[str, Any]:
        return {"version": 1, "saga": None, "arcs": [], "chapters": levels["chapters"][-1:]}

    monkeypatch.setattr(hierarchical, "fold", losing_fold)
    # then the compaction is refused, and nothing of the thread changed
    with pytest.raises(CompactionDropsOpenItems) as refused:
        CompactionService(model).compact(thread_id, config)
    assert refused.value.dropped == ["task: renew the passport"]
    assert list(Entry.objects.filter(thread_id=thread_id).order_by("seq").values()) == before
    assert selectors.get_thread(thread_id).active_leaf_id == leaf  # type: ignore[union-attr]
    assert read_compacted_history(thread_id)[0].pk == first.pk
