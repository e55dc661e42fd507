"""What the context builder asks of parts it does not own: the recall search, the graph,
observations of entities, the pre-turn brief. Each is a protocol; the builder works without
the part."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cogitator_memory.grants import Grants, MemoryScope
    from cogitator_memory.graph.context_options import GraphContextOptions
    from cogitator_memory.items.models import MemoryItem
    from cogitator_memory.recall.types import Retrieval
    from cogitator_memory.threads.models import Entry

__all__ = [
    "BriefSource",
    "Briefer",
    "GraphContext",
    "GraphContextSource",
    "GraphLine",
    "Observation",
    "ObservationSource",
    "Retriever",
]


class Retriever(Protocol):
    """The recall search of hybrid (``recall/retriever.py`` ``MemoryRetriever``): turns and
    items for the input, best first. ``history`` gives the turns to search; or
    ``thread_id`` with ``before_seq`` (and ``leaf_id`` for another branch) has the
    retriever search the thread's message index. ``held``: ids already in the context."""

    def retrieve(
        self,
        *,
        input: str,
        anchor: datetime,
        time_zone: str = "UTC",
        history: Sequence[Entry] = (),
        thread_id: str | None = None,
        before_seq: int | None = None,
        held: Sequence[str] = (),
        cosines: dict[str, float] | None = None,
        items: Sequence[MemoryItem] | None = None,
        scope: MemoryScope | None = None,
        item_cosines: dict[str, float] | None = None,
        grants: Grants | None = None,
        limit: int = 20,
        leaf_id: str | None = None,
    ) -> Retrieval: ...


@dataclass(frozen=True)
class GraphLine:
    """A node or an edge of graph context as a line of text, with its id."""

    id: str
    text: str
    payload: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class GraphContext:
    """The part of the knowledge graph a turn gets: nodes, then edges, as lines."""

    nodes: Sequence[GraphLine] = ()
    edges: Sequence[GraphLine] = ()


class GraphContextSource(Protocol):
    """Where graph context comes from (``context/graph_source.py`` ``MemoryGraphContext``
    reads the knowledge graph): the part of the graph the run of ``agent_id``, ``user_id``
    and ``thread_id`` sees for ``input``, as it held at ``as_of``, as far as ``options``
    reach (the config's ``graph_context_options``)."""

    def graph_context(
        self,
        *,
        agent_id: str,
        user_id: str | None,
        input: str | None,
        as_of: datetime,
        grants: Grants | None,
        thread_id: str | None = None,
        options: GraphContextOptions | None = None,
    ) -> GraphContext: ...


@dataclass(frozen=True)
class Observation:
    """What a model made of the facts about an entity (``upkeep/observations.py``)."""

    entity_id: str
    name: str
    text: str
    aliases: Sequence[str] = ()
    item_ids: Sequence[str] = ()


class ObservationSource(Protocol):
    """The observations a run of ``scope`` may read, within ``grants`` (the between-runs
    work fills it)."""

    def read(
        self, scope: MemoryScope, *, grants: Grants | None = None
    ) -> Sequence[Observation]: ...


@dataclass(frozen=True)
class BriefSource:
    """What memory found for a turn, as a brief is asked about it: ``ref`` names it
    (``turn:<entry id>`` or ``item:<item id>``), ``text`` is what a card may quote, ``date``
    when it was said or holds from, when known (``upkeep/brief.py`` re-exports it)."""

    ref: str
    text: str
    date: str | None = None


class Briefer(Protocol):
    """The pre-turn brief (``upkeep/brief.py`` ``MemoryBriefer``): cards for the turn's
    ``input`` from ``sources``, and the block of text a turn's memory context gets for
    them ("" for no cards). ``brief`` asks a model at most once and nothing without
    sources; it may raise (a failing model), which a build reports and builds without."""

    def brief(self, input: str, sources: Sequence[BriefSource]) -> Sequence[Any]: ...

    def block(self, cards: Sequence[Any]) -> str: ...
