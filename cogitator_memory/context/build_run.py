"""One ``build()`` of a context builder, step by step (``ContextBuild``): load each part,
select the history by the strategy, fit the partitions, lay out the messages. A part that
fails to load is left out and reported with its source. ``ContextBuilder``
(``context/builder.py``) is the public face; ``context/result.py`` is what it returns."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, cast

from cogitator_memory.compaction.history import COMPACTION
from cogitator_memory.context.assembler import Assembly, ContextBlock
from cogitator_memory.context.brief_step import brief_for_build
from cogitator_memory.context.facts import (
    fact_blocks,
    facts_among,
    observation_blocks,
    observations_for_turn,
    read_facts,
)
from cogitator_memory.context.history import entry_block, summary_block
from cogitator_memory.context.layout import built_context, history_kept, is_fact
from cogitator_memory.context.reading import read_history
from cogitator_memory.context.recall_step import recall_for_turn
from cogitator_memory.context.relevance import (
    SCORED_ENTRIES,
    cosines_from_index,
    cosines_in_process,
)
from cogitator_memory.context.result import BuiltContext, ContextBuildError, ErrorSource
from cogitator_memory.context.semantic import search_results, semantic_blocks
from cogitator_memory.context.turn_context import (
    FROM_MEMORY,
    GRAPH_CONTEXT,
    PART_SEPARATOR,
    SYSTEM_GROUP,
    TURN_GROUP,
    framing_tokens,
    heading,
    line_tokens,
    turn_groups,
)
from cogitator_memory.exceptions import EmbeddingsNotConfigured, EntryNotInThread, ThreadNotFound
from cogitator_memory.grants import MemoryScope
from cogitator_memory.threads.models import CONVERSATION_TYPES, Thread
from cogitator_memory.tokens import count_tokens

if TYPE_CHECKING:
    from cogitator_memory.context.builder import ContextBuilder
    from cogitator_memory.context.seams import Observation
    from cogitator_memory.grants import Grants
    from cogitator_memory.graph.context_options import GraphContextOptions
    from cogitator_memory.items.models import MemoryItem
    from cogitator_memory.threads.models import Entry

logger = logging.getLogger(__name__)

__all__ = ["ContextBuild"]

T = TypeVar("T")
# A history of up to this many entries is read whole (what was left out is reported in
# full); past it, only as far as the budget reaches. About 2 ms of reading on PostgreSQL.
HISTORY_READ_FLOOR = 200
# Hybrid without the message index reads the branch of a thread of up to this many
# entries whole and gives the retriever every older turn (it reads each with the turns
# next to it, which the keyword index of entries does not); a longer thread's branch is
# searched through that index. LoCoMo's conversations run to about 700 turns.
HYBRID_WHOLE_HISTORY = 1000
# Why a relevant build kept the recent history instead (the specification's build() falls
# back to recent when relevance cannot be scored, and reports it).
NO_EMBEDDING_SERVICE = (
    "EmbeddingsNotConfigured: the relevant strategy needs an embedding service "
    "(COGITATOR_MEMORY['EMBEDDINGS']['PROVIDER'], or deps.embedding_service); "
    "the context was built as recent."
)
# What a build never swallows: the caller's mistakes.
ARGUMENT_ERRORS = (ThreadNotFound, EntryNotInThread)


@dataclass
class HistorySelection:
    """The history blocks of a strategy, each partition's fitting mode, and the entries
    it did not pick (left out as ``not-selected``)."""

    blocks: list[ContextBlock] = field(default_factory=list)
    run: bool = True
    not_selected: list[Entry] = field(default_factory=list)


class ContextBuild:
    """The state of one build."""

    def __init__(
        self,
        builder: ContextBuilder,
        *,
        thread_id: str,
        agent_id: str,
        user_id: str | None,
        system_prompt: str | None,
        pinned: list[str],
        index: str | None,
        brief: str | None,
        current_input: str | None,
        available: int,
        leaf_id: str | None,
        as_of: datetime,
        time_zone: str,
        grants: Grants | None,
    ) -> None:
        self.builder = builder
        self.config = builder.config
        self.thread_id = thread_id
        self.agent_id = agent_id
        self.user_id = user_id
        self.system_prompt = system_prompt if self.config.include_system_prompt else None
        self.pinned = pinned
        self.index = index
        self.brief = brief
        self.current_input = current_input
        self.available = available
        self.leaf_id = leaf_id
        self.as_of = as_of
        self.time_zone = time_zone
        self.grants = grants
        self.errors: list[ContextBuildError] = []
        self.warnings: list[str] = []
        self.summary: Entry | None = None
        self.conversation: list[Entry] = []
        self.history_complete = True
        self.entry_blocks: dict[str, ContextBlock] = {}
        self.semantic_hits: list[Any] = []
        self.graph: Any = None
        self.fact_items: list[MemoryItem] = []
        self.brief_cards: list[Any] = []
        # Raises InvalidInput for ids that cannot name a scope.
        self.memory_scope = MemoryScope(agent_id, user_id=user_id, thread_id=thread_id)

    # --- parts that may fail ---------------------------------------------------------

    def attempt(self, source: ErrorSource, load: Callable[[], T], default: T) -> T:
        """``load()``, or ``default`` with the failure reported under ``source``."""
        try:
            return load()
        except ARGUMENT_ERRORS:
            raise
        except Exception as exc:
            logger.warning("Context of thread %s built without %s: %s", self.thread_id, source, exc)
            self.errors.append(ContextBuildError(source, _describe(exc), exc))
            return default

    def history_bound(self) -> tuple[Callable[[Entry], bool] | None, int]:
        """When a thread without compactions has been read far enough: past what a recent
        run can hold (tool results at the cost of their note) and past the newest
        ``HISTORY_READ_FLOOR`` entries, so what is left out of a history of usual length
        is reported whole; for hybrid without the message index, the newest
        ``SCORED_ENTRIES`` older than that too when there is an embedding service, and
        the branch of a thread of up to ``HYBRID_WHOLE_HISTORY`` entries whole. None: read
        the whole history (relevant through the index searches all of it). With it, how
        many entries to read at first (what the bound needs at least)."""
        indexed = self.builder.uses_message_index()
        strategy = self.config.strategy
        if strategy == "relevant" and self.builder.embedding_service() is None:
            strategy = "recent"
        if strategy == "relevant" and indexed:
            return None, HISTORY_READ_FLOOR
        if strategy == "relevant" and not self.current_input:
            strategy = "recent"
        entries_needed = max(HISTORY_READ_FLOOR, SCORED_ENTRIES if strategy == "relevant" else 0)
        # Hybrid without the message index scores the newest turns older than the history
        # it keeps with the embedding service: those are read too.
        scores_older = strategy == "hybrid" and not indexed
        older_needed = SCORED_ENTRIES if scores_older and self.builder.embedding_service() else 0
        if strategy == "hybrid" and not indexed and self.branch_may_be_short():
            entries_needed = max(entries_needed, HYBRID_WHOLE_HISTORY)
        tokens = 0
        count = 0
        at_budget: int | None = None

        def enough(entry: Entry) -> bool:
            nonlocal tokens, count, at_budget
            block = self.block_of(entry)
            tokens += min(block.tokens, block.fallback.tokens if block.fallback else block.tokens)
            count += 1
            if at_budget is None and tokens > self.available:
                at_budget = count
            return at_budget is not None and count >= max(entries_needed, at_budget + older_needed)

        # One more than needed: the read then knows whether the branch goes on.
        return enough, entries_needed + 1

    def branch_may_be_short(self) -> bool:
        """Whether the thread holds few enough entries that any of its branches is read
        whole by hybrid without the message index (a thread's seqs count its entries)."""
        written = Thread.objects.filter(pk=self.thread_id).values_list("next_seq", flat=True)
        return (written.first() or 0) <= HYBRID_WHOLE_HISTORY

    def load_history(self) -> None:
        bound, first_step = self.history_bound()
        read = self.attempt(
            "history",
            lambda: read_history(
                self.thread_id,
                self.leaf_id,
                grants=self.grants,
                enough=bound,
                first_step=first_step,
            ),
            None,
        )
        history = read.entries if read is not None else []
        self.history_complete = read is None or read.complete
        if history and history[0].type == COMPACTION:
            self.summary = history[0]
            history = history[1:]
        self.conversation = [entry for entry in history if entry.type in CONVERSATION_TYPES]

    # --- blocks -----------------------------------------------------------------------

    def fixed_blocks(self) -> list[ContextBlock]:
        """The system prompt, the input, pinned texts, the index, the summary, the brief."""
        blocks: list[ContextBlock] = []
        if self.system_prompt:
            blocks.append(
                ContextBlock(
                    "system",
                    self.system_prompt,
                    count_tokens(self.system_prompt),
                    source_id="system_prompt",
                    groups=(SYSTEM_GROUP,),
                )
            )
        if self.current_input:
            blocks.append(
                ContextBlock(
                    "final",
                    self.current_input,
                    count_tokens(self.current_input),
                    source_id="current_input",
                )
            )
        for number, text in enumerate(self.pinned):
            blocks.append(
                ContextBlock(
                    "pinned",
                    text,
                    count_tokens(PART_SEPARATOR + text),
                    source_id=f"pinned:{number}",
                    groups=(SYSTEM_GROUP,),
                )
            )
        if self.index:
            blocks.append(
                ContextBlock(
                    "index",
                    self.index,
                    count_tokens(PART_SEPARATOR + self.index),
                    source_id="index",
                    groups=(SYSTEM_GROUP,),
                )
            )
        if self.summary is not None:
            blocks.append(summary_block(self.summary))
        if self.brief:
            blocks.append(
                ContextBlock(
                    "brief",
                    self.brief,
                    line_tokens(self.brief + PART_SEPARATOR),
                    source_id="brief",
                    groups=(TURN_GROUP,),
                )
            )
        return blocks

    def recalls(self) -> bool:
        """Whether this build recalls older turns and items (hybrid with an input)."""
        return self.config.strategy == "hybrid" and bool(self.current_input)

    @cached_property
    def recallable_items(self) -> list[MemoryItem] | None:
        """The items recall searches (``MemoryItems.recallable``), read once a build;
        None when the read failed (reported once, under facts)."""
        items = self.builder.memory_items()
        return self.attempt(
            "facts",
            lambda: items.recallable(self.memory_scope, as_of=self.as_of, grants=self.grants),
            None,
        )

    def facts(self) -> list[ContextBlock]:
        """The facts the run sees at ``as_of``; a build that recalls takes them from the
        items recall searches, read once."""
        if not self.config.include_facts:
            return []
        if self.recalls():
            recallable = self.recallable_items
            read = facts_among(recallable, self.as_of) if recallable is not None else None
        else:
            items = self.builder.memory_items()
            read = self.attempt(
                "facts",
                lambda: read_facts(items, self.memory_scope, as_of=self.as_of, grants=self.grants),
                None,
            )
        if read is None:
            return []
        self.fact_items = read.facts
        return fact_blocks(read.facts, read.previous)

    def observations(self, recalled_item_ids: Sequence[str] = ()) -> list[ContextBlock]:
        """Up to three observations of the entities the turn names or recalls."""
        source = self.builder.deps.observations
        if source is None:
            return []
        none_found: list[Observation] = []
        found = self.attempt(
            "facts", lambda: list(source.read(self.memory_scope, grants=self.grants)), none_found
        )
        return observation_blocks(
            observations_for_turn(found, self.current_input, recalled_item_ids)
        )

    def semantic_context(self) -> list[ContextBlock]:
        if not (self.config.include_semantic_context and self.current_input):
            return []
        service = self.builder.embedding_service()
        if service is None:
            return []
        text = self.current_input
        self.semantic_hits = self.attempt(
            "semantic",
            lambda: search_results(
                text,
                agent_id=self.agent_id,
                service=service,
                store=self.builder.store(),
                grants=self.grants,
                include_shared=self.builder.deps.include_shared,
            ),
            [],
        )
        return semantic_blocks(self.semantic_hits)

    def graph_context(self) -> list[ContextBlock]:
        source = self.builder.deps.graph
        if not self.config.include_graph_context or source is None:
            return []
        self.graph = self.attempt(
            "graph",
            lambda: source.graph_context(
                agent_id=self.agent_id,
                user_id=self.user_id,
                input=self.current_input,
                as_of=self.as_of,
                grants=self.grants,
                thread_id=self.thread_id,
                options=cast("GraphContextOptions", self.config.graph_context_options),
            ),
            None,
        )
        if self.graph is None:
            return []
        blocks = []
        groups = turn_groups(GRAPH_CONTEXT)
        for kind, lines in (("node", self.graph.nodes), ("edge", self.graph.edges)):
            for line in lines:
                rendered = f"- {line.text}"
                blocks.append(
                    ContextBlock(
                        "recall",
                        line.text,
                        line_tokens(rendered),
                        source_id=line.id,
                        rendered=rendered,
                        groups=groups,
                        payload=(kind, line),
                    )
                )
        return blocks

    # --- strategies -------------------------------------------------------------------

    def block_of(self, entry: Entry) -> ContextBlock:
        """The history block of an entry, made once a build."""
        block = self.entry_blocks.get(entry.pk)
        if block is None:
            block = self.entry_blocks[entry.pk] = entry_block(entry)
        return block

    def recent_history(self) -> HistorySelection:
        """The newest entries as one unbroken run back from the newest."""
        return HistorySelection(
            blocks=[self.block_of(entry) for entry in reversed(self.conversation)]
        )

    def relevant_history(self) -> HistorySelection:
        """The entries most similar to the input that fit, sent in conversation order;
        the recent run without an input, without an embedding service (reported under
        relevance) or when scoring fails."""
        if not self.current_input or not self.conversation:
            return self.recent_history()
        service = self.builder.embedding_service()
        if service is None:
            self.errors.append(
                ContextBuildError("relevance", NO_EMBEDDING_SERVICE, EmbeddingsNotConfigured())
            )
            return self.recent_history()
        text = self.current_input
        if self.builder.uses_message_index():
            candidates = self.conversation
            scores = self.attempt("relevance", lambda: self.index_scores(text, candidates), None)
        else:
            candidates = self.conversation[-SCORED_ENTRIES:]
            scores = self.attempt(
                "relevance",
                lambda: cosines_in_process(
                    text,
                    candidates,
                    service=service,
                    entry_vectors=self.builder.entry_vectors,
                    input_vectors=self.builder.input_vectors,
                ),
                None,
            )
        if scores is None:
            return self.recent_history()
        position = {entry.pk: number for number, entry in enumerate(self.conversation)}
        scored = [entry for entry in candidates if entry.pk in scores]
        scored.sort(key=lambda entry: (scores[entry.pk], position[entry.pk]), reverse=True)
        picked = {entry.pk for entry in scored}
        return HistorySelection(
            blocks=[self.block_of(entry) for entry in scored],
            run=False,
            not_selected=[entry for entry in self.conversation if entry.pk not in picked],
        )

    def index_scores(self, text: str, candidates: list[Entry]) -> dict[str, float]:
        """Cosines of the thread's entries from the message index; the newest entries the
        index does not hold yet (embedded in the background) are embedded here, once per
        builder."""
        service = self.builder.embedding_service()
        assert service is not None
        scores = cosines_from_index(
            text,
            self.thread_id,
            service=service,
            store=self.builder.store(),
            input_vectors=self.builder.input_vectors,
            limit=max(SCORED_ENTRIES, len(candidates)),
        )
        missing = [entry for entry in candidates[-SCORED_ENTRIES:] if entry.pk not in scores]
        if missing:
            scores.update(
                cosines_in_process(
                    text,
                    missing,
                    service=service,
                    entry_vectors=self.builder.entry_vectors,
                    input_vectors=self.builder.input_vectors,
                )
            )
        return scores

    def select_history(self) -> HistorySelection:
        if self.config.strategy == "relevant":
            return self.relevant_history()
        return self.recent_history()

    # --- the build --------------------------------------------------------------------

    def build(self) -> BuiltContext:
        self.load_history()
        selection = self.select_history()
        fixed = [*self.fixed_blocks(), *self.facts()]
        others = [*self.semantic_context(), *self.graph_context()]
        runs = {"recent"} if selection.run else set()
        if self.recalls():
            # The history the budget keeps is known before recall looks past it: fit it
            # with the recall partition's room held, then search, then fit for real.
            first = self.builder.assembler.assemble(
                self.available,
                [*fixed, *others, *selection.blocks],
                runs=runs,
                overheads=framing_tokens(),
                claims={"recall": self.available},
            )
            history, _ = history_kept(
                first, selection.run, self.conversation, complete=self.history_complete
            )
            held_facts = [block.payload.pk for block in first.kept["facts"] if is_fact(block)]
            recall = recall_for_turn(self, [block.payload[0] for block in history], held_facts)
            recalled_items = [
                block.payload[0].pk for block in recall if heading(block) == FROM_MEMORY
            ]
            blocks = [
                *fixed,
                *brief_for_build(self, recall),
                *self.observations(recalled_items),
                *recall,
                *others,
                *selection.blocks,
            ]
            # Recall gets no more than it was held, so the history keeps at least what the
            # retriever was told it holds.
            limits = {"recall": first.tokens.get("recall", 0) + first.claimed.get("recall", 0)}
        else:
            blocks = [*fixed, *self.observations(), *others, *selection.blocks]
            limits = {}
        assembly = self.builder.assembler.assemble(
            self.available, blocks, runs=runs, overheads=framing_tokens(), limits=limits
        )
        self.check_system_prompt(assembly)
        return built_context(self, assembly, selection)

    def check_system_prompt(self, assembly: Assembly) -> None:
        system = assembly.tokens.get("system", 0)
        if system > self.available:
            self.warnings.append(
                f"The system prompt takes {system} tokens, more than the {self.available} "
                "the budget leaves (max_tokens - reserve_tokens); it is sent whole."
            )


def _describe(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {message}"
