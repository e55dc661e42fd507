"""Writing compactions: ``CompactionService``.

``compact(thread_id, config)`` reads the active branch through its newest compaction
(``history.read_compacted_history``), and when the conversation crosses a threshold of the
config it summarizes the entries since that compaction up to the kept tail (the previous
summary first) and appends one compaction entry at the end of the active branch, made the
active leaf. Nothing is deleted.

The model is asked outside any transaction. The write then happens in one transaction
holding the thread's lock (``threads/locking.py``), and refuses (``CompactionStale``,
nothing written) when, meanwhile, an entry it covers was deleted or redacted, the active
branch moved off the entries it covers, or another compaction was written after them: of
two compactions racing on one thread, one entry is written.

Strategy ``hierarchical`` calls ``compaction.hierarchical.compact_levels``, which gives
the summary (the handoff text) and the levels written into the event.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from cogitator_memory.compaction.config import CompactionConfig
from cogitator_memory.compaction.hierarchical import compact_levels
from cogitator_memory.compaction.history import (
    COMPACTION,
    SUMMARY_INTRO,
    compaction_event,
    entry_message,
    read_compacted_history,
)
from cogitator_memory.exceptions import CompactionStale
from cogitator_memory.grants import Grants
from cogitator_memory.llm.protocol import Message, Summarize
from cogitator_memory.llm.registry import require_summarizer
from cogitator_memory.threads import services as thread_services
from cogitator_memory.threads.locking import lock_thread
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry, Role
from cogitator_memory.threads.paths import walk_ids_until

__all__ = [
    "SUMMARY_PROMPT",
    "CompactionPlan",
    "CompactionService",
    "plan_compaction",
    "threshold_crossed",
]

SUMMARY_PROMPT = (
    "Summarize this conversation for the one who continues it. Keep names, facts, "
    "decisions, constraints, open tasks and open questions; say what was done. The first "
    "message may be the summary of what came before: fold it in."
)


@dataclass(frozen=True)
class CompactionPlan:
    """What a compaction of a branch would cover: ``previous`` the newest compaction entry
    (or None), ``summarized`` the conversation entries to summarize, ``kept`` the tail kept
    verbatim, ``tokens`` and ``messages`` the size of the conversation as read now."""

    previous: Entry | None
    summarized: list[Entry]
    kept: list[Entry]
    tokens: int
    messages: int


def threshold_crossed(plan: CompactionPlan, config: CompactionConfig) -> bool:
    """Whether the conversation holds ``threshold`` tokens or ``message_threshold``
    entries."""
    by_tokens = config.threshold is not None and plan.tokens >= config.threshold
    by_messages = config.message_threshold is not None and plan.messages >= config.message_threshold
    return by_tokens or by_messages


def _kept_start(conversation: Sequence[Entry], config: CompactionConfig) -> int:
    """Where the kept tail starts: the newest whole turns (each opening with a user
    message) within ``keep_recent_tokens``, else the newest ``keep_recent`` entries."""
    if config.keep_recent_tokens is not None:
        total = 0
        start = len(conversation)
        for index in range(len(conversation) - 1, -1, -1):
            total += conversation[index].token_count
            if total > config.keep_recent_tokens:
                break
            if conversation[index].role == Role.USER:
                start = index
        return start
    return max(0, len(conversation) - config.keep_recent)


def plan_compaction(history: Sequence[Entry], config: CompactionConfig) -> CompactionPlan:
    """Split a compacted history into what a compaction summarizes and what it keeps."""
    previous = history[0] if history and history[0].type == COMPACTION else None
    conversation = [entry for entry in history if entry.type in CONVERSATION_TYPES]
    start = _kept_start(conversation, config)
    tokens = sum(entry.token_count for entry in conversation)
    if previous is not None:
        tokens += previous.token_count
    return CompactionPlan(
        previous=previous,
        summarized=conversation[:start],
        kept=conversation[start:],
        tokens=tokens,
        messages=len(conversation),
    )


class CompactionService:
    """Compacts threads with ``summarize`` (a ``Summarize`` model client), or, when None,
    the configured model (``llm.registry.require_summarizer``) at the time of each call."""

    def __init__(self, summarize: Summarize | None = None) -> None:
        self._summarize = summarize

    @property
    def summarize(self) -> Summarize:
        return self._summarize or require_summarizer("Compaction")

    def compact(
        self,
        thread_id: str,
        config: CompactionConfig,
        *,
        grants: Grants | None = None,
        force: bool = False,
        after_write: Callable[[Entry], None] | None = None,
    ) -> Entry | None:
        """Compact the thread's active branch when it crosses a threshold of ``config``
        (``force``: whatever its size); returns the compaction entry written, or None when
        there was nothing to do. ``after_write`` is called with the entry in the
        transaction that writes it (a job of record marked done with it).

        Raises ``ThreadNotFound`` (also for a thread ``grants`` do not reach),
        ``LLMUnavailable`` without a model, ``LLMError`` when the model fails,
        ``CompactionStale`` when what it covers changed meanwhile (nothing written), and
        ``CompactionDropsOpenItems`` (hierarchical) when the new levels would lose an item
        the previous ones held open (nothing written).
        """
        plan = plan_compaction(read_compacted_history(thread_id, grants=grants), config)
        if not plan.summarized or not (force or threshold_crossed(plan, config)):
            return None
        if config.strategy == "hierarchical":
            event = self._hierarchical_event(thread_id, plan, config)
        else:
            event = self._summary_event(plan, config)
        return write_compaction(thread_id, plan, event, grants=grants, after_write=after_write)

    def _summary_event(self, plan: CompactionPlan, config: CompactionConfig) -> dict[str, Any]:
        messages: list[Message] = []
        if plan.previous is not None:
            summary = str(compaction_event(plan.previous).get("summary") or "")
            messages.append({"role": "user", "content": SUMMARY_INTRO + summary})
        messages.extend(entry_message(entry) for entry in plan.summarized)
        prompt = SUMMARY_PROMPT
        if config.summary_prompt:
            prompt = f"{SUMMARY_PROMPT}\n\n{config.summary_prompt}"
        answer = self.summarize(messages, model=config.summary_model, prompt=prompt)
        return {"strategy": "summary", "summary": answer.text.strip()}

    def _hierarchical_event(
        self, thread_id: str, plan: CompactionPlan, config: CompactionConfig
    ) -> dict[str, Any]:
        previous_levels = (
            compaction_event(plan.previous).get("levels") if plan.previous is not None else None
        )
        # CompactionDropsOpenItems leaves the thread as it was: nothing is written yet.
        result = compact_levels(plan.summarized, previous_levels, config, self.summarize)
        return {"strategy": "hierarchical", "summary": result.handoff, "levels": result.levels}


def write_compaction(
    thread_id: str,
    plan: CompactionPlan,
    event: dict[str, Any],
    *,
    grants: Grants | None = None,
    after_write: Callable[[Entry], None] | None = None,
) -> Entry:
    """Append the compaction entry in one locked transaction, after checking that what it
    covers still stands as it was read; ``CompactionStale`` (nothing written) otherwise."""
    covered_to = plan.summarized[-1].pk
    covered = [entry.pk for entry in plan.summarized]
    if plan.previous is not None:
        covered.append(plan.previous.pk)
    with transaction.atomic():
        thread = lock_thread(thread_id, grants=grants)
        standing = Entry.objects.filter(
            pk__in=covered, thread_id=thread.pk, redaction__isnull=True
        ).count()
        if standing != len(set(covered)):
            raise CompactionStale(thread.pk, "an entry it covers was deleted or redacted.")
        walked = (
            walk_ids_until(thread.active_leaf_id, covered_to)
            if thread.active_leaf_id is not None
            else []
        )
        if not walked or walked[-1] != covered_to:
            raise CompactionStale(thread.pk, "the active branch no longer holds what it covers.")
        later = walked[:-1]
        newer_compaction = (
            Entry.objects.filter(pk__in=later, type=COMPACTION)
            .exclude(pk=plan.previous.pk if plan.previous is not None else None)
            .exists()
        )
        if newer_compaction:
            raise CompactionStale(thread.pk, "another compaction was written first.")
        # The first entry after the summarized ones as the branch stands now, so entries
        # added while the model answered are kept too.
        first_kept = later[-1] if later else None
        full_event = {
            **event,
            "first_kept_entry_id": first_kept,
            "covered_to_entry_id": covered_to,
        }
        entry = thread_services.add_entry(
            thread.pk, type=COMPACTION, role=Role.SYSTEM, event=full_event, grants=grants
        )
        if after_write is not None:
            after_write(entry)
        return entry
