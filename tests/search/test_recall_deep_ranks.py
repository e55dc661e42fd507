"""Recall's deep ranks: the hits past the first ``DEEP_START`` come from a wider pool (turns
under the vector thresholds, a second hop through the words the best turns share), and
the first ``DEEP_START`` stay as the fused ranking places them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from cogitator_memory.search.deep_ranks import DEEP_START
from cogitator_memory.search.retriever import MemoryRetriever
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db

ANCHOR = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)
FILLER = [f"Filler turn number {n} about nothing in particular." for n in range(40)]


def conversation(texts: Sequence[str]) -> list[Entry]:
    """A thread of these turns, one a day (no turn is read with another)."""
    thread = threads.create_thread("concierge", {"userId": "ana"})
    start = ANCHOR - timedelta(days=len(texts) + 1)
    return [
        threads.add_entry(
            thread.pk, role="user", content=text, created_at=start + timedelta(days=n)
        )
        for n, text in enumerate(texts)
    ]


def test_a_turn_under_the_vector_thresholds_only_fills_the_deep_ranks() -> None:
    # given: one turn well over the thresholds, one under both (0.3 < 0.45)
    history = conversation(["alpha", *FILLER[:5], "beta"])
    cosines = {history[0].pk: 0.9, history[-1].pk: 0.3}
    retriever = MemoryRetriever()

    # when
    shallow = retriever.retrieve(
        input="zeta omega", anchor=ANCHOR, history=history, cosines=cosines, limit=DEEP_START
    )
    deep = retriever.retrieve(
        input="zeta omega", anchor=ANCHOR, history=history, cosines=cosines, limit=50
    )

    # then: the context's ranks never hold it; ranks past them do, after those
    below = history[-1].pk
    assert shallow.hits[0].id == history[0].pk
    assert below not in {hit.id for hit in shallow.hits}
    assert [hit.id for hit in deep.hits[: len(shallow.hits)]] == [hit.id for hit in shallow.hits]
    assert deep.hits[len(shallow.hits)].id == below
    wide = deep.hits[len(shallow.hits)].channels
    assert set(wide) == {"entry_vector_wide"}
    assert wide["entry_vector_wide"].rank == 2
    assert wide["entry_vector_wide"].score == pytest.approx(0.3)


def test_the_first_ranks_are_the_same_whatever_the_limit() -> None:
    # given: many turns holding the words asked for, and vectors under the thresholds
    texts = [f"We talked about the garden and plant number {n}." for n in range(60)]
    history = conversation(texts)
    cosines = {entry.pk: 0.2 + 0.001 * n for n, entry in enumerate(history)}
    retriever = MemoryRetriever()

    # when
    shallow = retriever.retrieve(
        input="the garden plant", anchor=ANCHOR, history=history, cosines=cosines, limit=DEEP_START
    )
    deep = retriever.retrieve(
        input="the garden plant", anchor=ANCHOR, history=history, cosines=cosines, limit=50
    )

    # then
    assert [hit.id for hit in deep.hits[:DEEP_START]] == [hit.id for hit in shallow.hits]
    assert len(deep.hits) == 50
    assert len({hit.id for hit in deep.hits}) == 50


def test_a_second_hop_finds_a_turn_through_words_the_best_turns_share() -> None:
    # given: two turns about camping name the lake; a third names the lake, not camping,
    # far from them
    history = conversation(
        [
            "We went camping at Lake Tahoe with the kids.",
            *FILLER[:20],
            "Camping by Lake Tahoe was lovely, the kids loved it.",
            *FILLER[20:],
            "Swimming in Tahoe: the water was freezing!",
        ]
    )
    retriever = MemoryRetriever()

    # when
    shallow = retriever.retrieve(
        input="Where did we go camping?", anchor=ANCHOR, history=history, limit=DEEP_START
    )
    deep = retriever.retrieve(
        input="Where did we go camping?", anchor=ANCHOR, history=history, limit=50
    )

    # then: only the second hop finds the swim
    swim = history[-1].pk
    assert swim not in {hit.id for hit in shallow.hits}
    found = {hit.id: hit for hit in deep.hits}
    assert swim in found
    assert set(found[swim].channels) == {"entry_second_hop"}
