"""MemoryRetriever: each channel finds what it should, fusion and thresholds, small talk,
what may never come back (held, other threads, branches, tenants), the reranker seam and
item vectors embedded once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.items.vectors import ITEM_SOURCE_TYPE, embed_items
from cogitator_memory.recall.retriever import MemoryRetriever
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry
from cogitator_memory.threads.selectors import get_path
from tests.search.support import ConceptEmbeddings

pytestmark = pytest.mark.django_db

ANCHOR = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)
ANA = MemoryScope("concierge", user_id="ana")
BEN = MemoryScope("concierge", user_id="ben")


class Clock:
    def __init__(self, now: datetime = ANCHOR) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def conversation(
    texts: Sequence[str], *, agent: str = "concierge", user: str = "ana", days_ago: int = 30
) -> list[Entry]:
    """A thread of these turns, one a day, the last ``days_ago - len + 1`` days ago."""
    thread = threads.create_thread(agent, {"userId": user})
    start = ANCHOR - timedelta(days=days_ago)
    return [
        threads.add_entry(
            thread.pk,
            role="user" if n % 2 == 0 else "assistant",
            content=text,
            created_at=start + timedelta(days=n),
        )
        for n, text in enumerate(texts)
    ]


FILLER = [f"Filler turn number {n} about nothing in particular." for n in range(20)]


def ids(retrieval: Any) -> list[str]:
    return [hit.id for hit in retrieval.hits]


def write(
    scope: MemoryScope, subject: str, attribute: str, value: str, **fields: Any
) -> MemoryItem:
    items = MemoryItems(clock=Clock(fields.pop("at", ANCHOR - timedelta(days=10))))
    new = NewItem(
        kind=fields.pop("kind", "fact"),
        subject=subject,
        attribute=attribute,
        value=value,
        trust="system",
        confidence=0.9,
        **fields,
    )
    return items.write(scope, new).item


# --- turns ---------------------------------------------------------------------------------


def test_small_talk_returns_no_hits() -> None:
    # given
    history = conversation(["I adopted a dog named Rex.", *FILLER])

    # when
    retrieval = MemoryRetriever().retrieve(input="thanks!", anchor=ANCHOR, history=history)

    # then
    assert retrieval.analysis.search is False
    assert retrieval.hits == []


def test_keyword_channel_finds_the_turn_holding_the_words() -> None:
    # given
    history = conversation([*FILLER[:10], "My sister Ines moved to Coimbra.", *FILLER[10:]])

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Where did Ines move?", anchor=ANCHOR, history=history
    )

    # then
    best = retrieval.hits[0]
    assert best.kind == "entry"
    assert best.entry is not None and "Coimbra" in best.entry.content
    assert best.channels["entry_keyword"].rank == 1
    assert best.channels["entry_keyword"].score > 0


def test_vector_channel_finds_other_words_of_one_meaning() -> None:
    # given: the concept embedder puts "automobile" and "car" on one dimension
    history = conversation([*FILLER, "My car broke."])
    service = ConceptEmbeddings()

    # when
    retrieval = MemoryRetriever(embedding_service=service).retrieve(
        input="automobile", anchor=ANCHOR, history=history
    )

    # then
    assert retrieval.hits[0].entry is not None
    assert "car" in retrieval.hits[0].entry.content
    assert "entry_vector" in retrieval.hits[0].channels


def test_turn_vectors_are_embedded_once_per_retriever() -> None:
    # given
    history = conversation([*FILLER, "The car broke down."])
    service = ConceptEmbeddings()
    retriever = MemoryRetriever(embedding_service=service)

    # when
    retriever.retrieve(input="automobile", anchor=ANCHOR, history=history)
    retriever.retrieve(input="vehicle repair", anchor=ANCHOR, history=history)

    # then: the history once, then the two inputs
    embedded = [text for call in service.calls for text in call]
    assert len(embedded) == len(history) + 2


def test_vector_thresholds_keep_045_and_06_of_the_best() -> None:
    # given
    history = conversation(["alpha", "beta", "gamma", "delta"])
    cosines = {
        history[0].pk: 0.9,
        history[1].pk: 0.55,  # at least 0.45 and 0.6 x 0.9 = 0.54: kept
        history[2].pk: 0.5,  # under 0.54: dropped
        history[3].pk: 0.3,  # under 0.45: dropped
    }

    # when
    retrieval = MemoryRetriever().retrieve(
        input="zeta omega", anchor=ANCHOR, history=history, cosines=cosines
    )

    # then
    vector_ranked = {hit.id for hit in retrieval.hits if "entry_vector" in hit.channels}
    assert vector_ranked == {history[0].pk, history[1].pk}


def test_fusion_puts_a_turn_two_channels_agree_on_first() -> None:
    # given: one turn holds the words, another is nearest by vector, a third is both
    history = conversation(["hiking gear list", "mountains trip", "hiking in the mountains"])
    cosines = {history[1].pk: 0.8, history[2].pk: 0.75, history[0].pk: 0.1}

    # when
    retrieval = MemoryRetriever().retrieve(
        input="hiking", anchor=ANCHOR, history=history, cosines=cosines
    )

    # then
    assert ids(retrieval)[0] == history[2].pk
    assert set(retrieval.hits[0].channels) >= {"entry_keyword", "entry_vector"}


def test_time_channel_finds_turns_of_the_day_named() -> None:
    # given: turns one a day; the one of yesterday shares no word with the question
    history = conversation([*FILLER[:9], "We booked the restaurant."], days_ago=10)
    yesterday = history[-1]
    assert yesterday.created_at.date() == (ANCHOR - timedelta(days=1)).date()

    # when
    retrieval = MemoryRetriever().retrieve(
        input="What did we do yesterday?", anchor=ANCHOR, history=history
    )

    # then
    assert retrieval.analysis.time is not None
    assert ids(retrieval)[0] == yesterday.pk
    assert "entry_time" in retrieval.hits[0].channels


def test_time_channel_reads_the_day_in_the_turn_zone() -> None:
    # given: a turn at 23:30 UTC on 19 October is 20 October in Lisbon (UTC+1)
    thread = threads.create_thread("concierge", {"userId": "ana"})
    late = threads.add_entry(
        thread.pk,
        role="user",
        content="Dinner at Ramiro.",
        created_at=datetime(2026, 10, 19, 23, 30, tzinfo=UTC),
    )
    early = threads.add_entry(
        thread.pk,
        role="user",
        content="Lunch at home.",
        created_at=datetime(2026, 10, 19, 12, 0, tzinfo=UTC),
    )

    # when
    lisbon = MemoryRetriever().retrieve(
        input="What did we eat yesterday?",
        anchor=ANCHOR,
        time_zone="Europe/Lisbon",
        history=[late, early],
    )

    # then
    timed = [hit.id for hit in lisbon.hits if "entry_time" in hit.channels]
    assert timed == [late.pk]


def test_entity_channel_finds_turns_naming_an_entity_of_memory() -> None:
    # given: an item about Rex, and a turn naming Rex among others
    history = conversation([*FILLER, "Rex chewed the sofa again.", *FILLER[:3]])
    write(ANA, "Rex", "species", "dog")

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Tell me about rex", anchor=ANCHOR, history=history, scope=ANA
    )

    # then
    turns = [hit for hit in retrieval.hits if hit.kind == "entry"]
    assert turns[0].entry is not None and "Rex" in turns[0].entry.content
    assert "entry_entity" in turns[0].channels


def test_held_entries_and_items_never_come_back() -> None:
    # given
    history = conversation(["Ines moved to Coimbra.", "Ines likes Coimbra.", *FILLER])
    item = write(ANA, "Ines", "home city", "Coimbra")

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Where does Ines live? Coimbra?",
        anchor=ANCHOR,
        history=history,
        scope=ANA,
        held={history[0].pk, item.pk},
    )

    # then
    assert history[0].pk not in ids(retrieval)
    assert item.pk not in ids(retrieval)
    assert history[1].pk in ids(retrieval)


def test_neighbor_channel_brings_the_reply_next_to_a_hit() -> None:
    # given: the answer names nothing the question does; the turn before it does
    history = conversation(
        [*FILLER[:5], "Which camera did you buy?", "The small Fuji one.", *FILLER[5:]]
    )

    # when
    retrieval = MemoryRetriever().retrieve(
        input="camera bought", anchor=ANCHOR, history=history, limit=5
    )

    # then
    assert history[6].pk in ids(retrieval)
    reply = next(hit for hit in retrieval.hits if hit.id == history[6].pk)
    assert "entry_neighbor" in reply.channels


# --- items --------------------------------------------------------------------------------


def test_item_channels_find_items_by_words_entity_and_time() -> None:
    # given
    home = write(ANA, "Ana", "home city", "Lisbon")
    trip = write(
        ANA,
        "Ana",
        "trip",
        "Porto with Ines",
        kind="event",
        valid_from=datetime(2026, 4, 10, tzinfo=UTC),
        ends_at=datetime(2026, 4, 14, tzinfo=UTC),
        at=datetime(2026, 4, 15, tzinfo=UTC),
    )
    write(ANA, "Ines", "job", "nurse")

    # when
    by_words = MemoryRetriever().retrieve(input="home city?", anchor=ANCHOR, scope=ANA)
    by_time = MemoryRetriever().retrieve(
        input="Where was I last April?", anchor=ANCHOR, scope=ANA, items=[home, trip]
    )

    # then
    assert ids(by_words)[0] == home.pk
    assert "item_keyword" in by_words.hits[0].channels
    timed = [hit.id for hit in by_time.hits if "item_time" in hit.channels]
    assert timed == [trip.pk]


def test_item_graph_walks_from_a_named_entity_to_its_items() -> None:
    # given: Ines is named; her items hold no word of the question
    nurse = write(ANA, "Ines", "job", "nurse")
    write(ANA, "Ana", "home city", "Lisbon")

    # when
    retrieval = MemoryRetriever().retrieve(input="what about Ines?", anchor=ANCHOR, scope=ANA)

    # then
    assert ids(retrieval)[0] == nurse.pk
    assert {"item_entity", "item_graph"} <= set(retrieval.hits[0].channels)


def test_evidence_of_the_best_items_brings_their_turns() -> None:
    # given: an item quoting a turn that shares no word with the question
    history = conversation([*FILLER, "She starts at the hospital on Monday.", *FILLER[:4]])
    write(
        ANA,
        "Ines",
        "job",
        "nurse",
        evidence=[NewEvidence(quote="She starts at the hospital", entry_id=history[20].pk)],
    )

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Ines job?", anchor=ANCHOR, history=history, scope=ANA
    )

    # then
    turn = next(hit for hit in retrieval.hits if hit.id == history[20].pk)
    assert "entry_evidence" in turn.channels


def test_item_vectors_are_embedded_once() -> None:
    # given
    service = ConceptEmbeddings()
    car = write(ANA, "Ana", "vehicle", "a red car")
    write(ANA, "Ana", "pet", "a dog")
    retriever = MemoryRetriever(embedding_service=service)

    # when
    first = retriever.retrieve(input="automobile", anchor=ANCHOR, scope=ANA)
    MemoryRetriever(embedding_service=service).retrieve(
        input="automobile", anchor=ANCHOR, scope=ANA
    )

    # then: two items embedded in one call, then only inputs
    item_calls = [call for call in service.calls if len(call) > 1 or "car" in call[0]]
    assert len(item_calls) == 1
    assert Embedding.objects.filter(source_type=ITEM_SOURCE_TYPE).count() == 2
    assert ids(first)[0] == car.pk
    assert "item_vector" in first.hits[0].channels


def test_embed_items_skips_items_with_a_vector() -> None:
    # given
    service = ConceptEmbeddings()
    item = write(ANA, "Ana", "pet", "a dog")

    # when
    first = embed_items([item.pk], service=service)
    second = embed_items([item.pk], service=service)

    # then
    assert (first, second) == (1, 0)
    stored = Embedding.objects.get(source_type=ITEM_SOURCE_TYPE, source_id=item.pk)
    assert (stored.agent_id, stored.user_id) == ("concierge", "ana")


# --- what may never come back ----------------------------------------------------------------


def test_items_of_another_user_or_agent_are_never_returned() -> None:
    # given
    write(ANA, "Ana", "home city", "Lisbon")
    write(BEN, "Ben", "home city", "Lisbon")
    write(MemoryScope("other-agent", user_id="ana"), "Ana", "home city", "Lisbon")

    # when
    retrieval = MemoryRetriever().retrieve(input="Lisbon home city", anchor=ANCHOR, scope=ANA)

    # then
    owners = {(hit.item.agent_id, hit.item.user_id) for hit in retrieval.hits if hit.item}
    assert owners == {("concierge", "ana")}


def test_items_given_are_narrowed_to_what_access_sees() -> None:
    # given
    ana = write(ANA, "Ana", "home city", "Lisbon")
    ben = write(BEN, "Ben", "home city", "Lisbon")
    access = Grants(agent_ids=frozenset({"concierge"}), user_ids={"concierge": frozenset({"ana"})})

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Lisbon", anchor=ANCHOR, items=[ana, ben], grants=access
    )

    # then
    assert ids(retrieval) == [ana.pk]


def test_turns_of_another_thread_in_history_are_left_out() -> None:
    # given
    mine = conversation(["Ines moved to Coimbra.", *FILLER])
    theirs = conversation(["Ines moved to Coimbra too."], user="ben")

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Ines Coimbra",
        anchor=ANCHOR,
        history=[*mine, *theirs],
        thread_id=mine[0].thread_id,
    )

    # then
    assert theirs[0].pk not in ids(retrieval)
    assert mine[0].pk in ids(retrieval)


def test_history_of_a_thread_access_may_not_see_returns_nothing() -> None:
    # given
    history = conversation(["Ines moved to Coimbra."], user="ben")
    access = Grants(agent_ids=frozenset({"concierge"}), user_ids={"concierge": frozenset({"ana"})})

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Ines Coimbra", anchor=ANCHOR, history=history, grants=access
    )

    # then
    assert retrieval.hits == []


def test_thread_mode_finds_older_turns_of_the_branch_only() -> None:
    # given: a branch forks after the first turn; the other branch holds the words too
    trunk = conversation(["We talked about Coimbra.", "Ines moved to Coimbra.", *FILLER[:5]])
    thread_id = trunk[0].thread_id
    other = threads.add_entry(
        thread_id,
        role="user",
        content="Coimbra, Ines, Coimbra.",
        parent_id=trunk[0].pk,
        activate=False,
    )
    leaf = trunk[-1]

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Ines Coimbra",
        anchor=ANCHOR,
        thread_id=thread_id,
        before_seq=trunk[-2].seq,
        leaf_id=leaf.pk,
    )

    # then
    found = ids(retrieval)
    assert trunk[1].pk in found
    assert other.pk not in found
    assert all(hit.entry is not None and hit.entry.seq < trunk[-2].seq for hit in retrieval.hits)


def test_thread_mode_respects_access() -> None:
    # given
    history = conversation(["Ines moved to Coimbra.", *FILLER[:3]], user="ben")
    access = Grants(agent_ids=frozenset({"concierge"}), user_ids={"concierge": frozenset({"ana"})})

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Ines Coimbra", anchor=ANCHOR, thread_id=history[0].thread_id, grants=access
    )

    # then
    assert retrieval.hits == []


def test_thread_mode_and_history_mode_agree_on_a_linear_thread() -> None:
    # given
    history = conversation([*FILLER[:8], "Ines moved to Coimbra.", *FILLER[8:]])
    thread_id = history[0].thread_id

    # when
    by_thread = MemoryRetriever().retrieve(input="Ines Coimbra", anchor=ANCHOR, thread_id=thread_id)
    by_history = MemoryRetriever().retrieve(
        input="Ines Coimbra", anchor=ANCHOR, history=get_path(thread_id)
    )

    # then
    assert ids(by_thread)[0] == ids(by_history)[0] == history[8].pk


# --- the reranker seam ---------------------------------------------------------------------


class ReversingReranker:
    def __init__(self) -> None:
        self.seen: list[Sequence[str]] = []

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        self.seen.append(texts)
        return [float(n) for n in range(len(texts))]


class FailingReranker:
    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        raise RuntimeError("model not loaded")


def test_reranker_reorders_the_best_hits() -> None:
    # given
    history = conversation(["Coimbra Ines", "Coimbra", "Ines", *FILLER])
    plain = MemoryRetriever().retrieve(input="Ines Coimbra", anchor=ANCHOR, history=history)
    reranker = ReversingReranker()

    # when
    reranked = MemoryRetriever(reranker=reranker).retrieve(
        input="Ines Coimbra", anchor=ANCHOR, history=history
    )

    # then
    assert ids(reranked) == list(reversed(ids(plain)))
    assert "reranker" in reranked.hits[0].channels
    assert reranked.errors == []


def test_a_failing_reranker_leaves_the_order_with_a_relevance_error() -> None:
    # given
    history = conversation(["Coimbra Ines", "Coimbra", "Ines", *FILLER])
    plain = MemoryRetriever().retrieve(input="Ines Coimbra", anchor=ANCHOR, history=history)

    # when
    failed = MemoryRetriever(reranker=FailingReranker()).retrieve(
        input="Ines Coimbra", anchor=ANCHOR, history=history
    )

    # then
    assert ids(failed) == ids(plain)
    assert [(error.source, error.message) for error in failed.errors] == [
        ("relevance", "the reranker failed: model not loaded")
    ]


def test_a_failing_embedding_service_leaves_keyword_recall_with_a_semantic_error() -> None:
    # given
    from tests.search.support import FailingEmbeddings

    history = conversation(["Ines moved to Coimbra.", *FILLER])

    # when
    retrieval = MemoryRetriever(embedding_service=FailingEmbeddings()).retrieve(
        input="Ines Coimbra", anchor=ANCHOR, history=history
    )

    # then
    assert ids(retrieval)[0] == history[0].pk
    assert [error.source for error in retrieval.errors] == ["semantic"]


def test_limit_caps_the_hits() -> None:
    # given
    history = conversation([f"Coimbra note {n}" for n in range(30)])

    # when
    retrieval = MemoryRetriever().retrieve(input="Coimbra", anchor=ANCHOR, history=history, limit=7)

    # then
    assert len(retrieval.hits) == 7


def test_a_written_item_is_embedded_in_the_background_once(
    with_concepts: None, django_capture_on_commit_callbacks: Any
) -> None:
    # given: the concept embedder is the configured provider
    from cogitator_memory.embeddings.services import get_embedding_service

    service = get_embedding_service()
    assert isinstance(service, ConceptEmbeddings)

    # when: an item is written, then the same statement again (a merge)
    with django_capture_on_commit_callbacks(execute=True):
        item = write(ANA, "Ana", "vehicle", "a red car")
    with django_capture_on_commit_callbacks(execute=True):
        write(ANA, "Ana", "vehicle", "a red car")
    MemoryRetriever().retrieve(input="automobile", anchor=ANCHOR, scope=ANA)

    # then: one vector, scoped like the item; recall embedded only its input
    stored = Embedding.objects.get(source_type=ITEM_SOURCE_TYPE, source_id=item.pk)
    assert (stored.agent_id, stored.user_id, stored.index_name) == ("concierge", "ana", "items")
    assert [call for call in service.calls if call != ["automobile"]] == [
        ["Ana vehicle: a red car"]
    ]


def test_a_turn_is_read_with_the_question_it_answers() -> None:
    # given: the answer holds none of the words asked; the question before it does
    history = conversation(
        [*FILLER[:5], "Which camera did you buy?", "The small Fuji one.", *FILLER[5:]]
    )
    same_minute = history[5].created_at
    Entry.objects.filter(pk=history[6].pk).update(created_at=same_minute)
    history[6].created_at = same_minute

    # when
    retrieval = MemoryRetriever().retrieve(input="camera bought", anchor=ANCHOR, history=history)

    # then: both are found by their words, the answer through the question's
    keyword = [hit.id for hit in retrieval.hits if "entry_keyword" in hit.channels]
    assert history[5].pk in keyword and history[6].pk in keyword


def test_turns_of_a_speaker_the_input_names_come_first() -> None:
    # given: two turns as near to the question, said by Ana and by Ben
    thread = threads.create_thread("concierge", {"userId": "ana"})
    by_ben = threads.add_entry(thread.pk, role="user", name="Ben", content="I went hiking.")
    by_ana = threads.add_entry(thread.pk, role="user", name="Ana", content="I went hiking.")

    # when
    retrieval = MemoryRetriever().retrieve(
        input="Where did Ana go hiking?", anchor=ANCHOR, history=[by_ben, by_ana]
    )

    # then
    assert ids(retrieval)[:2] == [by_ana.pk, by_ben.pk]


def test_the_reranker_comes_from_settings_and_only_from_a_local_directory(
    settings: Any, tmp_path: Any
) -> None:
    # given
    from django.core.exceptions import ImproperlyConfigured

    from cogitator_memory.recall.rerank import CrossEncoderReranker

    # then: none by default
    assert MemoryRetriever().reranker is None

    # when: a directory is named (the model is read on the first rerank, not here)
    settings.COGITATOR_MEMORY = {"RECALL": {"RERANKER_PATH": str(tmp_path)}}
    reranker = MemoryRetriever().reranker

    # then
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.path == tmp_path

    # when: a path that is not a directory
    settings.COGITATOR_MEMORY = {"RECALL": {"RERANKER_PATH": str(tmp_path / "missing")}}

    # then
    with pytest.raises(ImproperlyConfigured, match="does not exist"):
        MemoryRetriever()


@pytest.mark.parametrize("limit", [0, -1, 2.5, True])
def test_a_bad_limit_is_refused(limit: Any) -> None:
    # given
    from cogitator_memory.exceptions import InvalidInput

    # then
    with pytest.raises(InvalidInput, match="limit"):
        MemoryRetriever().retrieve(input="Coimbra", anchor=ANCHOR, limit=limit)
