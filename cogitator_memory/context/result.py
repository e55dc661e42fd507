"""What ``ContextBuilder.build()`` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from cogitator_memory.context.assembler import DroppedBlock

if TYPE_CHECKING:
    from cogitator_memory.embeddings.types import SearchHit
    from cogitator_memory.items.models import MemoryItem
    from cogitator_memory.threads.models import Entry

__all__ = [
    "BuiltContext",
    "ContextBuildError",
    "ContextMetadata",
    "DroppedContext",
    "ErrorSource",
    "RecalledContext",
]

ErrorSource = Literal["history", "facts", "semantic", "graph", "relevance", "brief"]


@dataclass(frozen=True)
class ContextBuildError:
    """A part of the context that failed to load and was left out, and why."""

    source: ErrorSource
    message: str
    error: BaseException | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, str]:
        return {"source": self.source, "message": self.message}


@dataclass
class RecalledContext:
    """What hybrid recalled for the turn and sent: older turns and memory items."""

    entries: list[Entry] = field(default_factory=list)
    items: list[MemoryItem] = field(default_factory=list)


@dataclass
class DroppedContext:
    """What was left out: history entries in conversation order (for relevant and hybrid
    also entries not selected; hybrid not those recalled), facts, search results and graph
    nodes that did not fit, the tokens of all of it, and every block with its reason."""

    entries: list[Entry] = field(default_factory=list)
    facts: list[MemoryItem] = field(default_factory=list)
    semantic_results: list[SearchHit] = field(default_factory=list)
    graph_nodes: list[Any] = field(default_factory=list)
    token_count: int = 0
    blocks: list[DroppedBlock] = field(default_factory=list)


@dataclass
class ContextMetadata:
    original_message_count: int = 0
    included_message_count: int = 0
    facts_included: int = 0
    semantic_results_included: int = 0
    graph_nodes_included: int = 0
    graph_edges_included: int = 0


@dataclass
class BuiltContext:
    """A context ready for a model.

    ``messages``: one system message (system prompt, pinned, index), the compaction
    summary and the history (``cache_breakpoint`` on the last message and on the last
    message of the turn before it), then one user message with the turn's
    ``memory_context``. ``partitions``: tokens per partition, the input (``final``)
    included. ``token_count``: tokens of the context without the input. ``truncated``:
    history entries were left out.
    """

    messages: list[dict[str, Any]]
    memory_context: str | None
    partitions: dict[str, int]
    facts: list[MemoryItem]
    semantic_results: list[SearchHit]
    recalled: RecalledContext | None
    token_count: int
    truncated: bool
    dropped: DroppedContext
    errors: list[ContextBuildError]
    warnings: list[str]
    metadata: ContextMetadata
    graph_context: Any = None
    # The cards of the pre-turn brief (``deps.briefer``), whose block the brief partition
    # holds; empty without a briefer, without recall or when it failed.
    brief_cards: list[Any] = field(default_factory=list)
