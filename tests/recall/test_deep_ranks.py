"""Recall's ranks past the context builder's: the first ``CONTEXT_RANKS`` hits are the same
whatever the limit; past them hits follow their scores (MMR lays out only the first
``MMR_CHOSEN``), and the turns of a speaker the input names come before those of others."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from cogitator_memory.context.recall_blocks import RECALL_LIMIT
from cogitator_memory.recall.rescoring import CONTEXT_RANKS, MMR_CHOSEN
from cogitator_memory.recall.retriever import MemoryRetriever
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db

ANCHOR = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)


def conversation(turns: Sequence[tuple[str, str]]) -> list[Entry]:
    """A thread of these (speaker, text) turns, one a day (no turn is read with another)."""
    thread = threads.create_thread("concierge", {"userId": "ana"})
    start = ANCHOR - timedelta(days=len(turns) + 1)
    return [
        threads.add_entry(
            thread.pk, role="user", name=name, content=text, created_at=start + timedelta(days=n)
        )
        for n, (name, text) in enumerate(turns)
    ]


def ids(hits: Sequence[object]) -> list[str]:
    return [hit.id for hit in hits]  # type: ignore[attr-defined]


def test_the_context_builder_asks_for_no_more_than_the_ranks_kept() -> None:
    assert RECALL_LIMIT <= CONTEXT_RANKS <= MMR_CHOSEN


def test_past_the_context_ranks_the_named_speaker_turns_come_first() -> None:
    # given: sixty turns of Ben holding the words asked for, and one turn of Ana holding
    # fewer of them among her small talk: the fusion places hers after about forty of his
    # (Cy's turns keep Ana's from being the neighbours of a turn of Ben)
    history = conversation(
        [
            *[("Ana", f"Filler turn number {n} about nothing in particular.") for n in range(40)],
            ("Cy", "Hello there."),
            *[("Ben", f"Ana, I like to cook dish number {n} on Sundays.") for n in range(60)],
            ("Cy", "Hello again."),
            ("Ana", "After a long walk by the river with the dogs I tried to cook some rice."),
        ]
    )
    target = history[-1].pk
    retriever = MemoryRetriever()
    question = "What does Ana like to cook?"

    # when
    context = retriever.retrieve(input=question, anchor=ANCHOR, history=history, limit=20)
    deeper = retriever.retrieve(input=question, anchor=ANCHOR, history=history, limit=30)

    # then: the context's ranks are the same and never hold it; the next rank does
    assert ids(deeper.hits[:CONTEXT_RANKS]) == ids(context.hits)
    assert target not in ids(context.hits)
    assert deeper.hits[CONTEXT_RANKS].id == target


def test_without_a_speaker_named_the_deep_ranks_follow_their_scores() -> None:
    # given: pairs of turns saying the same, which MMR spreads apart
    history = conversation(
        [("Ben", f"We planted tomato number {n // 2} in the garden bed.") for n in range(80)]
    )
    retriever = MemoryRetriever()

    # when
    deep = retriever.retrieve(input="tomato garden", anchor=ANCHOR, history=history, limit=60)

    # then: past the ranks MMR lays out, the scores never rise
    scores = [hit.score for hit in deep.hits[MMR_CHOSEN:]]
    assert len(deep.hits) == 60
    assert scores == sorted(scores, reverse=True)


def test_the_first_ranks_are_the_same_whatever_the_limit() -> None:
    # given: two speakers saying much the same, the input naming one of them
    history = conversation(
        [
            (name, f"We talked about the garden and plant number {n}.")
            for n in range(50)
            for name in ("Ana", "Ben")
        ]
    )
    retriever = MemoryRetriever()
    question = "What did Ana plant in the garden?"

    # when
    context = retriever.retrieve(input=question, anchor=ANCHOR, history=history, limit=20)
    deep = retriever.retrieve(input=question, anchor=ANCHOR, history=history, limit=80)

    # then
    assert ids(deep.hits[:CONTEXT_RANKS]) == ids(context.hits)
    assert len(set(ids(deep.hits))) == 80
    names = [hit.entry.name for hit in deep.hits[CONTEXT_RANKS:]]  # type: ignore[union-attr]
    first_ben = names.index("Ben")
    assert "Ana" not in names[first_ben:]
