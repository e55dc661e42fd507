"""Laying an assembly out as a ``BuiltContext``: the messages in prompt-cache order, the
turn's memory context, what was kept and what was left out.

``messages``: one system message (the system prompt, pinned texts, the index), then the
compaction summary and the history with ``cache_breakpoint: True`` on the last message and
on the last message of the turn before it, then one user message with the turn's
``<memory_context>`` (the brief, then each section under its heading).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cogitator_memory.context.assembler import Assembly, ContextBlock, DroppedBlock
from cogitator_memory.context.history import entry_block, mark_turn_ends, trim_to_turn_start
from cogitator_memory.context.result import (
    BuiltContext,
    ContextMetadata,
    DroppedContext,
    RecalledContext,
)
from cogitator_memory.context.retrieval_counts import note_retrieved_later
from cogitator_memory.context.turn_context import (
    EARLIER_IN_CONVERSATION,
    FROM_MEMORY,
    GRAPH_CONTEXT,
    KNOWN_FACTS,
    PART_SEPARATOR,
    RELEVANT_CONTEXT,
    TURN_SECTIONS,
    format_turn_context,
    heading,
)

if TYPE_CHECKING:
    from cogitator_memory.context.build_run import ContextBuild, HistorySelection
    from cogitator_memory.threads.models import Entry

__all__ = [
    "built_context",
    "conversation_messages",
    "history_kept",
    "turn_context",
    "without_recalled_history",
]


def history_kept(
    assembly: Assembly, run: bool, conversation: Sequence[Entry], *, complete: bool = True
) -> tuple[list[ContextBlock], list[DroppedBlock]]:
    """The history blocks kept, oldest first, and those a reply's start trimmed."""
    kept = sorted(assembly.kept["recent"], key=lambda block: block.payload[0].seq)
    if not run:
        return kept, []
    entries = [block.payload[0] for block in kept]
    _, trimmed = trim_to_turn_start(entries, conversation, complete=complete)
    if not trimmed:
        return kept, []
    gone = {entry.pk for entry in trimmed}
    dropped = [
        DroppedBlock("recent", "budget", block.tokens, block.source_id, block)
        for block in kept
        if block.source_id in gone
    ]
    assembly.tokens["recent"] = assembly.tokens.get("recent", 0) - sum(
        block.tokens for block in kept if block.source_id in gone
    )
    if not assembly.tokens["recent"]:
        del assembly.tokens["recent"]
    return [block for block in kept if block.source_id not in gone], dropped


def without_recalled_history(assembly: Assembly, history: list[ContextBlock]) -> list[DroppedBlock]:
    """Recalled turns the final history holds after all are left out as duplicates."""
    in_history = {block.source_id for block in history}
    kept, dropped = [], []
    for block in assembly.kept["recall"]:
        if heading(block) == EARLIER_IN_CONVERSATION and block.source_id in in_history:
            dropped.append(
                DroppedBlock("recall", "duplicate", block.tokens, block.source_id, block)
            )
            assembly.tokens["recall"] = assembly.tokens.get("recall", 0) - block.tokens
        else:
            kept.append(block)
    assembly.kept["recall"] = kept
    return dropped


def built_context(
    run: ContextBuild, assembly: Assembly, selection: HistorySelection
) -> BuiltContext:
    """What a build returns, from its assembly: messages, what was kept and left out,
    the counts. Sent facts and recalled items are counted in the background."""
    history, trimmed = history_kept(
        assembly, selection.run, run.conversation, complete=run.history_complete
    )
    dropped_blocks = [*assembly.dropped, *trimmed]
    dropped_blocks += without_recalled_history(assembly, history)
    dropped_blocks += [
        DroppedBlock("recent", "not-selected", block.tokens, block.source_id, block)
        for block in (entry_block(entry, with_note=False) for entry in selection.not_selected)
    ]
    messages = conversation_messages(assembly, history)
    memory_context = turn_context(assembly)
    if memory_context:
        messages.append({"role": "user", "content": memory_context})

    turns = [
        block.payload[0]
        for block in assembly.kept["recall"]
        if heading(block) == EARLIER_IN_CONVERSATION
    ]
    recalled_items = [
        block.payload[0] for block in assembly.kept["recall"] if heading(block) == FROM_MEMORY
    ]
    recalled_entries = [entry for turn in turns for entry in turn.entries]
    sent = {block.source_id for block in history} | {e.pk for e in recalled_entries}
    left_out = [entry for entry in run.conversation if entry.pk not in sent]
    hybrid = run.config.strategy == "hybrid"
    semantic_kept = [block.payload for block in assembly.kept["recall"] if is_hit(block)]
    kept_hits = {id(hit) for hit in semantic_kept}
    graph_kept = [block.payload for block in assembly.kept["recall"] if is_graph(block)]
    graph_nodes_kept = {id(line) for kind, line in graph_kept if kind == "node"}
    facts_kept = [block.payload for block in assembly.kept["facts"] if is_fact(block)]
    kept_fact_ids = {item.pk for item in facts_kept}
    note_retrieved_later(
        [item.pk for item in [*facts_kept, *recalled_items]], run.builder.deps.clock()
    )
    partitions: dict[str, int] = {
        name: tokens for name, tokens in assembly.tokens.items() if tokens
    }
    return BuiltContext(
        messages=messages,
        memory_context=memory_context or None,
        partitions=partitions,
        facts=facts_kept,
        semantic_results=semantic_kept,
        recalled=(
            RecalledContext(entries=recalled_entries, items=recalled_items) if hybrid else None
        ),
        token_count=sum(partitions.values()) - partitions.get("final", 0),
        truncated=bool(left_out)
        or not run.history_complete
        or any(d.partition == "recent" and d.reason == "oversized" for d in dropped_blocks),
        dropped=DroppedContext(
            entries=left_out,
            facts=[item for item in run.fact_items if item.pk not in kept_fact_ids],
            semantic_results=[hit for hit in run.semantic_hits if id(hit) not in kept_hits],
            graph_nodes=[
                line.payload if line.payload is not None else line
                for line in (run.graph.nodes if run.graph is not None else ())
                if id(line) not in graph_nodes_kept
            ],
            token_count=sum(block.tokens for block in dropped_blocks),
            blocks=dropped_blocks,
        ),
        errors=run.errors,
        warnings=run.warnings,
        metadata=ContextMetadata(
            original_message_count=len(run.conversation),
            included_message_count=len(history),
            facts_included=len(facts_kept),
            semantic_results_included=len(semantic_kept),
            graph_nodes_included=len(graph_nodes_kept),
            graph_edges_included=sum(1 for kind, _ in graph_kept if kind == "edge"),
        ),
        graph_context=run.graph,
        brief_cards=list(run.brief_cards),
    )


def conversation_messages(assembly: Assembly, history: list[ContextBlock]) -> list[dict[str, Any]]:
    """The system message, then the summary and the history with their breakpoints."""
    messages: list[dict[str, Any]] = []
    system_parts = [*assembly.texts("system"), *assembly.texts("pinned")]
    system_parts += assembly.texts("index")
    if system_parts:
        messages.append({"role": "system", "content": PART_SEPARATOR.join(system_parts)})
    conversation: list[dict[str, Any]] = []
    entries: list[Any] = []
    for block in assembly.kept["summaries"]:
        conversation.append(dict(block.payload[1]))
        entries.append(None)
    for block in history:
        conversation.append(dict(block.payload[1]))
        entries.append(block.payload[0])
    mark_turn_ends(conversation, entries)
    return messages + conversation


def turn_context(assembly: Assembly) -> str:
    """The brief and the turn's sections, in their order, as one block."""
    sections: dict[str, list[str]] = {heading: [] for heading in TURN_SECTIONS}
    for partition in ("facts", "recall"):
        for block in assembly.kept[partition]:
            section = heading(block)
            if section is not None:
                sections[section].append(block.sent)
    texts = [*assembly.texts("brief")]
    texts += [heading + "\n" + "\n".join(lines) for heading, lines in sections.items() if lines]
    return format_turn_context(texts)


def is_fact(block: ContextBlock) -> bool:
    return heading(block) == KNOWN_FACTS


def is_hit(block: ContextBlock) -> bool:
    return heading(block) == RELEVANT_CONTEXT


def is_graph(block: ContextBlock) -> bool:
    return heading(block) == GRAPH_CONTEXT
