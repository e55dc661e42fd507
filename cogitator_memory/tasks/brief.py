"""The pre-turn brief as a task, for a project that asks for it from a worker and reads
the cards from its result backend.

A brief is for a turn about to be answered: it is not retried (an answer an hour later
helps no turn) and is acknowledged before it runs. It runs with no grants: the caller
that queues it has decided whose memory it reads.
"""

from __future__ import annotations

from celery import shared_task

from cogitator_memory.upkeep.brief import DEFAULT_BRIEF_CARDS
from cogitator_memory.upkeep.brief_turn import brief_for_turn

__all__ = ["brief_task"]


@shared_task(acks_late=False)
def brief_task(
    agent_id: str,
    user_id: str | None,
    thread_id: str | None,
    input: str,
    max_cards: int = DEFAULT_BRIEF_CARDS,
) -> list[dict[str, str]]:
    """The cards of ``brief_for_turn`` as dicts (``kind``, ``text``, ``quote``,
    ``source``), with the configured model."""
    cards = brief_for_turn(
        agent_id=agent_id,
        user_id=user_id,
        thread_id=thread_id,
        input=input,
        max_cards=max_cards,
    )
    return [card.as_dict() for card in cards]
