"""What the tests of forgetting share: a thread whose user told a secret, and a memory item
written from it, embedded, so its text is in the vectors and the keyword index."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.items.vectors import embed_items
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry, Thread
from tests.search.support import DIMENSIONS, concept_vector

AGENT = "agent-a"
U1 = MemoryScope(AGENT, user_id="u1")
SECRET_WORD = "peanutsecret"
SAID = "My pet is a dog PEANUTSECRET."


@dataclass
class Told:
    thread: Thread
    entry: Entry
    other: Entry
    item: MemoryItem


def tell_a_secret(*, thread_id: str = "t-pets", embed: bool = True) -> Told:
    """Thread ``thread_id`` of agent-a and user u1, where u1 says ``SAID``, then something
    else; the item "u1 pet: dog PEANUTSECRET" stands on the first entry alone, and is
    embedded (with the configured provider) when ``embed``."""
    thread = threads.create_thread(AGENT, {"userId": "u1"}, thread_id=thread_id)
    entry = threads.add_entry(thread.pk, role="user", content=SAID)
    other = threads.add_entry(thread.pk, role="user", content="Book a table for two.")
    item = (
        MemoryItems()
        .write(
            U1,
            NewItem(
                kind="fact",
                subject="u1",
                attribute="pet",
                value="dog PEANUTSECRET",
                trust="user",
                confidence=0.9,
                evidence=[NewEvidence(quote="a dog PEANUTSECRET", entry_id=entry.pk)],
            ),
        )
        .item
    )
    if embed:
        assert embed_items([item.pk]) == 1
    return Told(thread=thread, entry=entry, other=other, item=item)


class ForgettingEmbeddings:
    """The concept embedder (``tests.search.support``), which first calls
    ``ForgettingEmbeddings.meanwhile`` when set: what happens while a provider answers.
    Name it as the provider with ``FORGETTING_PROVIDER``."""

    provider = "forgetting"
    model = "concept-counts"
    meanwhile: Callable[[], object] | None = None

    def __init__(self, *, dimensions: int | None = None, **ignored: Any) -> None:
        self.dimensions = dimensions or DIMENSIONS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        hook, ForgettingEmbeddings.meanwhile = ForgettingEmbeddings.meanwhile, None
        if hook is not None:
            hook()
        return [concept_vector(text, self.dimensions) for text in texts]


FORGETTING_PROVIDER = "tests.lineage_support.ForgettingEmbeddings"
