"""The partitions of a context: required first, shares, leftovers in fill order,
duplicates of a more lasting partition, runs and fallbacks."""

from __future__ import annotations

import pytest

from cogitator_memory.context.assembler import ContextAssembler, ContextBlock, fit_in_order
from cogitator_memory.context.partitions import (
    DEFAULT_PARTITIONS,
    HYBRID_RECALL_SHARE,
    PartitionBudget,
    merge_partitions,
)
from cogitator_memory.exceptions import InvalidContextConfig, InvalidInput


def block(partition: str, tokens: int, name: str, text: str | None = None) -> ContextBlock:
    return ContextBlock(partition, text or f"text of {name}", tokens, source_id=name)  # type: ignore[arg-type]


def test_the_default_partitions_are_the_spec_table() -> None:
    assert [name for name, budget in DEFAULT_PARTITIONS.items() if budget.required] == [
        "system",
        "pinned",
        "index",
        "summaries",
        "brief",
        "final",
    ]
    assert DEFAULT_PARTITIONS["facts"].share == 0.15
    assert DEFAULT_PARTITIONS["recall"].share == 0.35
    assert DEFAULT_PARTITIONS["recent"].share is None
    assert merge_partitions(hybrid=True)["recall"].share == HYBRID_RECALL_SHARE == 0.6


def test_shares_over_one_are_refused_with_a_typed_error() -> None:
    with pytest.raises(InvalidContextConfig) as caught:
        ContextAssembler({"facts": {"share": 0.5}, "recall": PartitionBudget(share=0.6)})
    assert isinstance(caught.value, InvalidInput)
    assert caught.value.errors == {
        "partitions": [
            "The shares of the partitions that are not required add up to 1.1; "
            "they may add up to 1 at most."
        ]
    }
    with pytest.raises(InvalidContextConfig, match="Unknown partition 'memo'"):
        ContextAssembler({"memo": {"share": 0.1}})
    with pytest.raises(InvalidContextConfig, match="A share is a number from 0 to 1"):
        ContextAssembler({"facts": {"share": -0.1}})


def test_required_partitions_are_fitted_first_and_the_rest_split_by_share() -> None:
    # given 1000 tokens, 100 of them required, and more facts, recall and history than fit
    blocks = [
        block("system", 40, "system"),
        block("final", 10, "input"),
        block("pinned", 50, "pinned"),
        *[block("facts", 30, f"fact{i}") for i in range(20)],
        *[block("recall", 50, f"recall{i}") for i in range(20)],
        *[block("recent", 100, f"entry{i}") for i in range(20)],
    ]
    # when
    assembly = ContextAssembler().assemble(1000, blocks)
    # then the required take what they need, and the 900 left split 15 % / 35 % / the rest
    assert assembly.tokens["system"] == 40
    assert assembly.tokens["final"] == 10
    assert assembly.tokens["pinned"] == 50
    # (by share alone: 4 facts of 30 in 135, 6 results of 50 in 315, 4 entries of 100 in
    # 450), and the 80 the shares could not place go to the facts first: 2 more facts
    assert assembly.tokens["facts"] == 180
    assert assembly.tokens["recall"] == 300
    assert assembly.tokens["recent"] == 400
    assert assembly.token_count <= 1000
    assert {d.reason for d in assembly.dropped} == {"budget"}


def test_no_partition_takes_more_than_it_needs_and_leftovers_go_in_fill_order() -> None:
    # given few facts and no recall: the history gets what they leave
    blocks = [
        block("facts", 10, "fact"),
        *[block("recent", 100, f"entry{i}") for i in range(20)],
    ]
    assembly = ContextAssembler().assemble(1000, blocks)
    assert assembly.tokens["facts"] == 10
    assert assembly.tokens["recent"] == 900
    # and facts short of room get the leftover before the history
    blocks = [
        *[block("facts", 100, f"fact{i}") for i in range(5)],
        *[block("recent", 20, f"entry{i}") for i in range(5)],
    ]
    assembly = ContextAssembler().assemble(1000, blocks)
    assert assembly.tokens == {"facts": 500, "recent": 100}


def test_a_block_a_more_lasting_partition_holds_word_for_word_is_a_duplicate() -> None:
    blocks = [
        block("system", 20, "system", "You help Ana.  Ana is   vegan and lives in Lisbon."),
        block("facts", 5, "fact1", "Ana is vegan"),
        block("facts", 5, "fact2", "Ana likes jazz"),
        block("recall", 5, "hit1", "Ana likes jazz"),
        block("recall", 5, "hit2", "lives in Porto"),
    ]
    assembly = ContextAssembler().assemble(1000, blocks)
    assert [b.source_id for b in assembly.kept["facts"]] == ["fact2"]
    assert [b.source_id for b in assembly.kept["recall"]] == ["hit2"]
    assert [(d.partition, d.reason, d.source_id) for d in assembly.dropped] == [
        ("facts", "duplicate", "fact1"),
        ("recall", "duplicate", "hit1"),
    ]


def test_a_duplicate_of_a_dropped_block_is_kept() -> None:
    blocks = [
        block("pinned", 500, "pinned", "Ana is vegan and more"),
        block("facts", 5, "fact", "Ana is vegan"),
    ]
    assembly = ContextAssembler().assemble(100, blocks)
    assert assembly.kept["pinned"] == []
    assert [b.source_id for b in assembly.kept["facts"]] == ["fact"]
    assert assembly.dropped[0].reason == "oversized"


def test_a_run_ends_at_the_first_block_that_does_not_fit_unless_its_fallback_does() -> None:
    note = ContextBlock("recent", "[tool result omitted]", 5, source_id="tool")
    tool = ContextBlock("recent", "huge output", 400, source_id="tool", fallback=note)
    blocks = [
        block("recent", 30, "newest"),
        tool,
        block("recent", 30, "older"),
        block("recent", 60, "too-big"),
        block("recent", 5, "oldest"),
    ]
    fitted = fit_in_order(blocks, 100, run=True)
    assert [b.source_id for b in fitted.kept] == ["newest", "tool", "older"]
    assert fitted.kept[1] is note
    assert fitted.used == 65
    assert [(d.source_id, d.reason) for d in fitted.dropped] == [
        ("tool", "oversized"),
        ("too-big", "budget"),
        ("oldest", "budget"),
    ]
    # and without a run the small oldest block still fits
    fitted = fit_in_order(blocks, 100)
    assert [b.source_id for b in fitted.kept] == ["newest", "tool", "older", "oldest"]


def test_framing_is_paid_once_by_the_first_kept_block_of_its_group() -> None:
    blocks = [
        ContextBlock("facts", "a", 3, groups=("turn", "facts")),
        ContextBlock("facts", "b", 3, groups=("turn", "facts")),
        ContextBlock("recall", "c", 3, groups=("turn", "recall")),
    ]
    assembly = ContextAssembler().assemble(
        1000, blocks, overheads={"turn": 10, "facts": 2, "recall": 4}
    )
    assert assembly.tokens == {"facts": 18, "recall": 7}


def test_a_required_block_larger_than_what_is_left_is_oversized() -> None:
    blocks = [block("system", 90, "system"), block("brief", 20, "brief")]
    assembly = ContextAssembler().assemble(100, blocks)
    assert assembly.kept["brief"] == []
    assert [(d.partition, d.reason) for d in assembly.dropped] == [("brief", "oversized")]


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(InvalidContextConfig, match="A budget is a whole number"):
        ContextAssembler().assemble(-1, [])


def test_a_claim_holds_room_for_blocks_not_known_yet_and_a_limit_caps_a_partition() -> None:
    history = [block("recent", 100, f"entry{i}") for i in range(20)]
    # recall will want up to 60 % of 1000, the facts' unused 15 % and the 50 the history's
    # 25 % could not use (entries of 100)
    first = ContextAssembler(hybrid=True).assemble(1000, history, claims={"recall": 1000})
    assert first.claimed == {"recall": 800}
    assert first.tokens == {"recent": 200}
    # once recall is known, it is capped at what it was held and the history keeps its room
    recall = [block("recall", 50, f"hit{i}") for i in range(20)]
    final = ContextAssembler(hybrid=True).assemble(
        1000, [*recall, *history], limits={"recall": 300}
    )
    assert final.tokens == {"recall": 300, "recent": 700}
