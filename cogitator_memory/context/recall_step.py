"""The recall step of a hybrid build, once a turn's history is fitted: the retriever
(``recall/retriever.py``) asked for what lies past the history the budget keeps, its
hits turned into blocks by ``context/recall_blocks.py``.

With the message index the retriever searches the thread before the oldest turn the
history keeps, on the branch being built (the keyword index of entries, time, entities,
the thread's vectors in the store). Without it the builder scores the newest 200 turns
older than the history (embedded once per builder) and gives the retriever those cosines
and, in a thread of up to ``HYBRID_WHOLE_HISTORY`` entries, every older turn of the branch;
a longer thread's branch is searched through the thread's indexes instead of read. A
scoring that fails leaves a recall without vectors and a relevance error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args
from zoneinfo import ZoneInfo

from cogitator_memory.context.assembler import ContextBlock
from cogitator_memory.context.recall_blocks import RECALL_LIMIT, recall_blocks
from cogitator_memory.context.relevance import SCORED_ENTRIES, cosines_in_process
from cogitator_memory.context.result import ContextBuildError, ErrorSource

if TYPE_CHECKING:
    from cogitator_memory.context.build_run import ContextBuild
    from cogitator_memory.threads.models import Entry

__all__ = ["older_cosines", "recall_for_turn"]

ERROR_SOURCES = frozenset(get_args(ErrorSource))


def recall_for_turn(
    run: ContextBuild, history: list[Entry], held_facts: list[str]
) -> list[ContextBlock]:
    """Older turns and items the retriever finds for the input, as recall blocks."""
    assert run.current_input is not None
    text = run.current_input
    retriever = run.builder.retriever()
    oldest = history[0].seq if history else None
    older = [entry for entry in run.conversation if oldest is None or entry.seq < oldest]
    where: dict[str, Any]
    cosines: dict[str, float] | None = None
    if run.builder.uses_message_index():
        # The vectors are in the store: the retriever searches the whole thread before
        # the history kept, compacted entries included.
        where = {"thread_id": run.thread_id, "before_seq": oldest, "leaf_id": run.leaf_id}
    else:
        cosines = older_cosines(run, text, older)
        if run.history_complete:
            # The whole branch was read: the retriever searches its older turns, each
            # with the turns next to it.
            where = {"history": older, "thread_id": run.thread_id if older else None}
        else:
            # A long branch: its older turns are searched through the thread's indexes,
            # not read here, so a build costs what its budget holds.
            where = {"thread_id": run.thread_id, "before_seq": oldest, "leaf_id": run.leaf_id}
    held = [*(entry.pk for entry in history), *held_facts]
    items = run.recallable_items
    retrieval = run.attempt(
        "relevance",
        lambda: retriever.retrieve(
            input=text,
            anchor=run.as_of,
            time_zone=run.time_zone,
            held=held,
            cosines=cosines,
            items=items,
            scope=run.memory_scope,
            grants=run.grants,
            limit=RECALL_LIMIT,
            **where,
        ),
        None,
    )
    if retrieval is None:
        return []
    for error in retrieval.errors:
        source: ErrorSource = (
            error.source if error.source in ERROR_SOURCES else "relevance"  # type: ignore[assignment]
        )
        run.errors.append(ContextBuildError(source, error.message))
    path = {entry.pk for entry in run.conversation}
    return run.attempt(
        "history",
        lambda: recall_blocks(
            retrieval.hits,
            zone=ZoneInfo(run.time_zone),
            as_of=run.as_of,
            path=path,
            in_context={entry.pk for entry in history},
            held_items=set(held_facts),
        ),
        [],
    )


def older_cosines(run: ContextBuild, text: str, older: list[Entry]) -> dict[str, float]:
    """Cosines of the newest 200 older turns to the input, embedded once per builder;
    empty (a recall without vectors) without a service or when scoring fails."""
    service = run.builder.embedding_service()
    if service is None or not older:
        return {}
    scores = run.attempt(
        "relevance",
        lambda: cosines_in_process(
            text,
            older[-SCORED_ENTRIES:],
            service=service,
            entry_vectors=run.builder.entry_vectors,
            input_vectors=run.builder.input_vectors,
        ),
        None,
    )
    return scores if scores is not None else {}
