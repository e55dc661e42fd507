"""``ContextBuilder``: a token-budgeted context of a thread for a model.

::

    builder = ContextBuilder(ContextBuilderConfig(max_tokens=8000, strategy="recent"))
    context = builder.build("thread_123", "agent-1", system_prompt="You help.")
    context.messages, context.partitions, context.dropped.blocks

``build()`` raises only for bad arguments (``InvalidContextConfig``) and for a thread the
caller may not see (``ThreadNotFound``) or a leaf of another thread
(``EntryNotInThread``); a part that fails to load is left out and reported in ``errors``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cogitator_memory.context.assembler import ContextAssembler
from cogitator_memory.context.build_run import ContextBuild
from cogitator_memory.context.config import (
    ContextBuilderConfig,
    ContextBuilderDeps,
    check_budget,
    check_time_zone,
    default_reserve,
)
from cogitator_memory.context.relevance import (
    MAX_CACHED_INPUTS,
    MAX_CACHED_VECTORS,
    VectorCache,
)
from cogitator_memory.embeddings.message_index import message_index_enabled
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.services import EmbeddingService, get_embedding_service
from cogitator_memory.exceptions import InvalidContextConfig
from cogitator_memory.items.services import MemoryItems

if TYPE_CHECKING:
    from cogitator_memory.context.result import BuiltContext
    from cogitator_memory.context.seams import Retriever
    from cogitator_memory.embeddings.types import EmbeddingStore
    from cogitator_memory.grants import Grants

__all__ = ["ContextBuilder"]


def _texts(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or not all(isinstance(text, str) for text in value):
        raise InvalidContextConfig({field: "A list of texts."})
    return [text for text in value if text.strip()]


def _optional_text(value: Any, field: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidContextConfig({field: "A text, or None."})
    return value or None


class ContextBuilder:
    """Builds contexts of threads by ``config`` from ``deps``.

    Raises ``InvalidContextConfig`` for partition shares over 1. The relevant strategy
    without an embedding service builds as recent does and says so in ``errors``.
    """

    def __init__(
        self, config: ContextBuilderConfig | None = None, deps: ContextBuilderDeps | None = None
    ) -> None:
        self.config = config or ContextBuilderConfig()
        self.deps = deps or ContextBuilderDeps()
        self.assembler = ContextAssembler(
            self.config.partitions, hybrid=self.config.strategy == "hybrid"
        )
        # Per builder, so a conversation's entries are embedded once across its turns.
        self.entry_vectors = VectorCache(MAX_CACHED_VECTORS)
        self.input_vectors = VectorCache(MAX_CACHED_INPUTS)

    def memory_items(self) -> MemoryItems:
        if self.deps.memory_items is None:
            self.deps.memory_items = MemoryItems(clock=self.deps.clock)
        return self.deps.memory_items

    def retriever(self) -> Retriever:
        """The recall search of hybrid: the deps' one, or a ``MemoryRetriever`` kept for the
        builder's lifetime (it caches the vectors of the turns it embedded)."""
        if self.deps.retriever is None:
            from cogitator_memory.recall.retriever import MemoryRetriever

            self.deps.retriever = MemoryRetriever(
                embedding_service=self.deps.embedding_service,
                store=self.deps.store,
                reranker=self.deps.reranker,
            )
        return self.deps.retriever

    def embedding_service(self) -> EmbeddingService | None:
        if self.deps.embedding_service is not None:
            return self.deps.embedding_service
        return get_embedding_service()

    def store(self) -> EmbeddingStore:
        return self.deps.store if self.deps.store is not None else get_embedding_store()

    def uses_message_index(self) -> bool:
        if self.deps.message_index is not None:
            return self.deps.message_index
        return message_index_enabled()

    def build(
        self,
        thread_id: str,
        agent_id: str,
        user_id: str | None = None,
        system_prompt: str | None = None,
        pinned: Sequence[str] = (),
        index: str | None = None,
        brief: str | None = None,
        current_input: str | None = None,
        max_tokens: int | None = None,
        reserve_tokens: int | None = None,
        leaf_id: str | None = None,
        as_of: datetime | None = None,
        time_zone: str | None = None,
        grants: Grants | None = None,
    ) -> BuiltContext:
        """The context of ``thread_id`` (its active branch, or the branch ending at
        ``leaf_id``) for ``agent_id`` and ``user_id``, read ``as_of`` (now by default) in
        ``time_zone`` (the config's by default), within ``max_tokens`` (the config's by
        default) less ``reserve_tokens``, as ``grants`` reach it.

        Raises ``InvalidContextConfig`` for a bad argument or no budget from either side,
        ``ThreadNotFound`` for a thread ``grants`` do not reach, ``EntryNotInThread`` for
        a leaf of another thread. Parts that fail to load are reported in ``errors``, and
        so is a relevant build without an embedding service (built as recent).
        """
        budget = check_budget(max_tokens, field="max_tokens", minimum=1)
        if budget is None:
            budget = self.config.max_tokens
        if budget is None:
            raise InvalidContextConfig(
                {"max_tokens": "No budget: give max_tokens to the config or to build()."}
            )
        reserve = check_budget(reserve_tokens, field="reserve_tokens")
        if reserve is None:
            reserve = self.config.reserve_tokens
        if reserve is None:
            reserve = default_reserve(budget)
        zone = check_time_zone(time_zone) if time_zone is not None else self.config.time_zone
        if as_of is not None and (not isinstance(as_of, datetime) or as_of.tzinfo is None):
            raise InvalidContextConfig({"as_of": "An aware datetime (with its time zone)."})
        for name, value in (("thread_id", thread_id), ("agent_id", agent_id)):
            if not isinstance(value, str) or not value:
                raise InvalidContextConfig({name: "A non-empty text."})
        run = ContextBuild(
            self,
            thread_id=thread_id,
            agent_id=agent_id,
            user_id=_optional_text(user_id, "user_id"),
            system_prompt=_optional_text(system_prompt, "system_prompt"),
            pinned=_texts(pinned, "pinned"),
            index=_optional_text(index, "index"),
            brief=_optional_text(brief, "brief"),
            current_input=_optional_text(current_input, "current_input"),
            available=max(0, budget - reserve),
            leaf_id=leaf_id,
            as_of=as_of or self.deps.clock(),
            time_zone=zone,
            grants=grants,
        )
        return run.build()
