"""A brief for a turn asked for on its own (the API, a task): recall within the caller's
grants finds the sources, as ``POST /api/memory/recall/`` finds its hits, and a
``MemoryBriefer`` turns them into cards."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from django.utils import timezone

from cogitator_memory import policy
from cogitator_memory.context.brief_step import sources_of_hits
from cogitator_memory.context.config import check_time_zone
from cogitator_memory.context.recall_blocks import RECALL_LIMIT
from cogitator_memory.exceptions import InvalidBriefInput, ThreadNotFound
from cogitator_memory.grants import MemoryScope
from cogitator_memory.llm.registry import require_summarizer
from cogitator_memory.recall.retriever import MemoryRetriever
from cogitator_memory.threads.selectors import visible_thread
from cogitator_memory.upkeep.brief import (
    DEFAULT_BRIEF_CARDS,
    BriefCard,
    MemoryBriefer,
    check_max_cards,
)

if TYPE_CHECKING:
    from cogitator_memory.context.seams import Retriever
    from cogitator_memory.grants import Grants
    from cogitator_memory.llm.protocol import Summarize

__all__ = ["BRIEF_WORK", "brief_for_turn"]

# How a missing model names this work (``LLMUnavailable``).
BRIEF_WORK = "The pre-turn brief"


def brief_for_turn(
    *,
    agent_id: str,
    input: str,
    user_id: str | None = None,
    thread_id: str | None = None,
    max_cards: int = DEFAULT_BRIEF_CARDS,
    grants: Grants | None = None,
    as_of: datetime | None = None,
    time_zone: str = "UTC",
    summarize: Summarize | None = None,
    retriever: Retriever | None = None,
    **briefer_options: Any,
) -> list[BriefCard]:
    """The brief cards for ``input`` from what recall finds in the memory of ``agent_id``
    (and ``user_id``), and in the older turns of ``thread_id``'s active branch when given.

    Checked in this order, so a caller learns nothing of memory its grants do not reach:
    ``InvalidBriefInput`` for a bad ``max_cards`` or input, ``NoGrant`` where ``grants``
    do not reach the scope, ``ThreadNotFound`` for a thread not visible or of another
    agent or user, ``LLMUnavailable`` without a model (``summarize`` None and none
    configured). Then at most one model call, none when recall finds nothing;
    ``LLMError`` when the model fails. ``briefer_options``: ``max_tokens``, ``prompt``.
    """
    max_cards = check_max_cards(max_cards)
    if not isinstance(input, str) or not input.strip():
        raise InvalidBriefInput({"input": "The turn's text, not blank."})
    check_time_zone(time_zone)
    policy.require_read(grants, agent_id, user_id, user_field="user_id")
    options: dict[str, Any] = {}
    if thread_id is not None:
        thread = visible_thread(thread_id, grants)
        if thread.agent_id != agent_id or (user_id is not None and thread.user_id != user_id):
            raise ThreadNotFound(thread.pk)
        scope = MemoryScope(agent_id, user_id=thread.user_id, thread_id=thread.pk)
        options = {"thread_id": thread.pk}
    else:
        scope = MemoryScope(agent_id, user_id=user_id)
    briefer = MemoryBriefer(
        summarize or require_summarizer(BRIEF_WORK), max_cards=max_cards, **briefer_options
    )
    retrieval = (retriever or MemoryRetriever()).retrieve(
        input=input,
        anchor=as_of or timezone.now(),
        time_zone=time_zone,
        scope=scope,
        grants=grants,
        limit=RECALL_LIMIT,
        **options,
    )
    return briefer.brief(input, sources_of_hits(retrieval.hits, ZoneInfo(time_zone)))
