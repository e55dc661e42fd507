"""How a context builder is set up: ``ContextBuilderConfig`` (what to build) and
``ContextBuilderDeps`` (what to build it from)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils import timezone

from cogitator_memory.exceptions import InvalidContextConfig, InvalidInput
from cogitator_memory.graph.context_options import GraphContextOptions
from cogitator_memory.limits import is_whole_number

if TYPE_CHECKING:
    from cogitator_memory.context.seams import (
        Briefer,
        GraphContextSource,
        ObservationSource,
        Retriever,
    )
    from cogitator_memory.embeddings.services import EmbeddingService
    from cogitator_memory.embeddings.types import EmbeddingStore
    from cogitator_memory.items.services import MemoryItems

__all__ = [
    "MIN_RESERVE_TOKENS",
    "RESERVE_SHARE",
    "STRATEGIES",
    "ContextBuilderConfig",
    "ContextBuilderDeps",
    "GraphContextOptions",
    "Strategy",
    "check_budget",
    "check_time_zone",
    "default_reserve",
    "default_strategy",
]

Strategy = Literal["recent", "relevant", "hybrid"]
STRATEGIES: tuple[Strategy, ...] = ("recent", "relevant", "hybrid")
# What a request from outside (the API, the admin's preview) may ask a build for: a model's
# context window is under two million tokens today, and prompts stay within a request body.
MAX_REQUEST_BUDGET = 2_000_000
MAX_REQUEST_PROMPT_CHARS = 200_000
MAX_REQUEST_INPUT_CHARS = 10_000
# reserve_tokens by default: this share of the budget, and never less than the minimum.
RESERVE_SHARE = 0.1
MIN_RESERVE_TOKENS = 100


def check_time_zone(value: Any, *, field: str = "time_zone") -> str:
    """``value`` when it names an IANA zone; ``InvalidContextConfig`` otherwise."""
    if isinstance(value, str) and value and "\x00" not in value:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
        else:
            return value
    raise InvalidContextConfig({field: f"Unknown time zone {value!r}; give an IANA zone."})


def check_budget(value: Any, *, field: str, minimum: int = 0) -> int | None:
    """A number of tokens (whole, at least ``minimum``) or None."""
    if value is None:
        return None
    if not is_whole_number(value, minimum=minimum):
        raise InvalidContextConfig(
            {field: f"A number of tokens is a whole number of {minimum} or more, not {value!r}."}
        )
    return value


def default_strategy() -> Strategy:
    """hybrid where an embedding service is configured, else recent (as the
    specification's runtime chooses)."""
    from cogitator_memory.embeddings.message_index import message_index_enabled

    return "hybrid" if message_index_enabled() else "recent"


def default_reserve(budget: int) -> int:
    """10 % of the budget, at least 100 tokens."""
    return max(MIN_RESERVE_TOKENS, math.ceil(budget * RESERVE_SHARE))


@dataclass(frozen=True)
class ContextBuilderConfig:
    """What a context builder builds.

    ``max_tokens``: the budget (without it, every ``build()`` passes one).
    ``reserve_tokens``: kept free for the answer, 10 % of the budget (at least 100) by
    default. ``strategy``: ``recent``, ``relevant`` or ``hybrid``. ``partitions``: shares
    merged over ``DEFAULT_PARTITIONS``. ``time_zone``: the IANA zone of recalled dates and
    of the time a turn names. ``graph_context_options``: how far graph context reaches
    from the nodes a turn names (a ``GraphContextOptions`` or a mapping of its fields;
    the defaults when None). Raises ``InvalidContextConfig`` for any value that cannot
    work.
    """

    max_tokens: int | None = None
    reserve_tokens: int | None = None
    strategy: Strategy = "recent"
    include_system_prompt: bool = True
    include_facts: bool = False
    include_semantic_context: bool = False
    include_graph_context: bool = False
    graph_context_options: GraphContextOptions | Mapping[str, Any] | None = None
    partitions: Mapping[str, Any] = field(default_factory=dict)
    time_zone: str = "UTC"

    def __post_init__(self) -> None:
        check_budget(self.max_tokens, field="max_tokens", minimum=1)
        check_budget(self.reserve_tokens, field="reserve_tokens")
        if self.strategy not in STRATEGIES:
            raise InvalidContextConfig(
                {
                    "strategy": f"Unknown strategy {self.strategy!r}; the strategies are "
                    f"{list(STRATEGIES)}."
                }
            )
        check_time_zone(self.time_zone)
        for name in (
            "include_system_prompt",
            "include_facts",
            "include_semantic_context",
            "include_graph_context",
        ):
            if not isinstance(getattr(self, name), bool):
                raise InvalidContextConfig({name: "True or False."})
        object.__setattr__(self, "graph_context_options", graph_options(self.graph_context_options))


def graph_options(value: Any) -> GraphContextOptions:
    """``value`` as ``GraphContextOptions`` (the defaults for None). Raises
    ``InvalidContextConfig`` naming each bad option under ``graph_context_options``."""
    if value is None:
        return GraphContextOptions()
    if isinstance(value, GraphContextOptions):
        return value
    if not isinstance(value, Mapping):
        raise InvalidContextConfig(
            {"graph_context_options": "GraphContextOptions or a mapping of its fields."}
        )
    try:
        return GraphContextOptions.of(value)
    except InvalidInput as exc:
        raise InvalidContextConfig(
            {f"graph_context_options.{name}": messages for name, messages in exc.errors.items()}
        ) from exc


@dataclass
class ContextBuilderDeps:
    """What a context builder reads besides threads.

    ``memory_items``: facts and recalled items (a ``MemoryItems`` by default).
    ``embedding_service`` / ``store``: the configured ones when None. ``message_index``:
    whether entries' vectors are kept in the store (True when an embedding provider is
    configured, when None). ``retriever``: the recall search of hybrid (a
    ``MemoryRetriever`` over the service, store and ``reranker`` when None). ``graph`` and
    ``observations``: optional parts. ``briefer``: the pre-turn brief; with it, a build
    that recalls turns or items asks it once for cards about them, put in the brief
    partition (a failing briefer is reported under ``brief`` and the build goes on).
    ``include_shared``: whether search results include embeddings of no agent, user or
    thread (shared documents). ``clock``: "now" (tests pass their own).
    """

    memory_items: MemoryItems | None = None
    embedding_service: EmbeddingService | None = None
    store: EmbeddingStore | None = None
    message_index: bool | None = None
    retriever: Retriever | None = None
    reranker: Any = None
    graph: GraphContextSource | None = None
    observations: ObservationSource | None = None
    briefer: Briefer | None = None
    include_shared: bool = True
    clock: Callable[[], datetime] = timezone.now
