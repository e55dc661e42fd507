"""Search results for the turn ("Relevant context:"): the embeddings of the agent (and
shared ones) nearest to the input, other than messages, which are the history's."""

from __future__ import annotations

from cogitator_memory.context.assembler import ContextBlock
from cogitator_memory.context.turn_context import RELEVANT_CONTEXT, line_tokens, turn_groups
from cogitator_memory.embeddings.message_index import MESSAGE_SOURCE_TYPE
from cogitator_memory.embeddings.services import EmbeddingService
from cogitator_memory.embeddings.types import EmbeddingFilter, EmbeddingStore, SearchHit
from cogitator_memory.grants import Grants
from cogitator_memory.search.hybrid import semantic_search

__all__ = ["SEMANTIC_RESULTS", "search_results", "semantic_blocks"]

# Search results a turn considers; those that fit go in.
SEMANTIC_RESULTS = 10


def search_results(
    input: str,
    *,
    agent_id: str,
    service: EmbeddingService,
    store: EmbeddingStore,
    grants: Grants | None,
    limit: int = SEMANTIC_RESULTS,
    include_shared: bool = True,
) -> list[SearchHit]:
    """The ``limit`` embeddings nearest to ``input`` that the agent sees (its own and,
    with ``include_shared``, those of no agent), messages aside. Raises what the service
    and the store raise."""
    hits = semantic_search(
        input,
        limit=limit * 2,
        filter=EmbeddingFilter(agent_id=agent_id),
        store=store,
        service=service,
        grants=grants,
        include_shared=include_shared,
    )
    return [hit for hit in hits if hit.embedding.source_type != MESSAGE_SOURCE_TYPE][:limit]


def semantic_blocks(hits: list[SearchHit]) -> list[ContextBlock]:
    """One line of the recall partition per result, best first."""
    blocks = []
    for hit in hits:
        text = " ".join(hit.embedding.content.split())
        if not text:
            continue
        line = f"- {text}"
        blocks.append(
            ContextBlock(
                "recall",
                text,
                line_tokens(line),
                source_id=hit.embedding.source_id,
                rendered=line,
                groups=turn_groups(RELEVANT_CONTEXT),
                payload=hit,
            )
        )
    return blocks
