"""Fitting blocks of text into the partitions of a token budget.

``ContextAssembler.assemble(budget, blocks)`` fits the required partitions first, in the
order system, final, pinned, index, summaries, brief (each takes what it needs of what is
left). The other partitions split what those leave by their shares, none taking more than
its blocks need; what the shares could not place goes, partition by partition in fill
order (facts, recall, recent), to those still short of room. The system prompt and the
input are always kept and counted, even past the budget. Within a partition blocks are
fitted in the order given by ``fit_in_order``: a block that does not fit is left out and
the next one tried, or, for a partition fitted as a run (``runs``), the run ends there. A
block whose text a kept block of a more lasting partition holds word for word (spacing
aside) is left out as a duplicate (history entries never are: they are the conversation).

A block may name ``groups`` that cost tokens once, with the first kept block of the group
(the framing of a message, the heading of a section): ``overheads`` gives their costs and
the partition of that first block pays them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cogitator_memory.context.partitions import (
    FILL_ORDER,
    LASTING_ORDER,
    REQUIRED_ORDER,
    PartitionBudget,
    PartitionName,
    merge_partitions,
)
from cogitator_memory.exceptions import InvalidContextConfig
from cogitator_memory.limits import is_whole_number

__all__ = [
    "Assembly",
    "ContextAssembler",
    "ContextBlock",
    "DropReason",
    "DroppedBlock",
    "Fitted",
    "fit_in_order",
]

DropReason = Literal["budget", "duplicate", "not-selected", "oversized"]
# Sent whole (the system prompt) or always counted (the input), whatever the budget: they
# take what they need and the others share what is left, if anything.
ALWAYS_KEPT: frozenset[str] = frozenset({"system", "final"})
# The history is the conversation itself: a message the system prompt happens to hold
# ("yes") is not a duplicate.
NEVER_DUPLICATE: frozenset[str] = frozenset({"system", "recent", "final"})
_SPACE = re.compile(r"\s+")


def _normalized(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class ContextBlock:
    """One piece of a context: ``text`` (what duplicates are checked by), ``rendered``
    (what is sent, ``text`` when empty), its cost in ``tokens`` (framing groups aside),
    the id of what it came from, the ``groups`` whose framing it needs, and a shorter
    ``fallback`` kept in its place when it does not fit (the note of a large tool result).
    ``payload`` carries the source object (an entry, an item) for the caller."""

    partition: PartitionName
    text: str
    tokens: int
    source_id: str | None = None
    rendered: str = ""
    groups: tuple[str, ...] = ()
    fallback: ContextBlock | None = None
    payload: Any = field(default=None, compare=False, repr=False)

    @property
    def sent(self) -> str:
        return self.rendered or self.text


@dataclass(frozen=True)
class DroppedBlock:
    """A block left out: its partition, why (``budget``, ``duplicate``, ``not-selected``
    for what the strategy did not pick, ``oversized`` for a block larger than its partition
    could hold), its tokens and the id of its source."""

    partition: str
    reason: DropReason
    tokens: int
    source_id: str | None = None
    block: ContextBlock | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "reason": self.reason,
            "tokens": self.tokens,
            "source_id": self.source_id,
        }


@dataclass
class Fitted:
    """What ``fit_in_order`` kept (in the order given, a fallback in its block's place),
    what it left out, and the tokens it used, framing included."""

    kept: list[ContextBlock] = field(default_factory=list)
    dropped: list[DroppedBlock] = field(default_factory=list)
    used: int = 0


def fit_in_order(
    blocks: Iterable[ContextBlock],
    room: float,
    *,
    run: bool = False,
    overheads: Mapping[str, int] | None = None,
    opened: set[str] | None = None,
    is_duplicate: Callable[[ContextBlock], bool] | None = None,
) -> Fitted:
    """Keep the blocks that fit into ``room`` tokens, in the order given.

    A block that does not fit is replaced by its ``fallback`` when that fits, else left
    out (``oversized`` when it alone is larger than ``room``, ``budget`` otherwise); with
    ``run`` the first block left out ends the run and the rest are left out too. A block
    ``is_duplicate`` says is held elsewhere is left out as a ``duplicate``. ``opened``
    (changed in place) holds the groups whose framing is already paid.
    """
    costs = overheads or {}
    paid = opened if opened is not None else set()
    fitted = Fitted()
    ended = False
    for block in blocks:
        if ended:
            fitted.dropped.append(
                DroppedBlock(block.partition, "budget", block.tokens, block.source_id, block)
            )
            continue
        if is_duplicate is not None and is_duplicate(block):
            fitted.dropped.append(
                DroppedBlock(block.partition, "duplicate", block.tokens, block.source_id, block)
            )
            continue
        chosen: ContextBlock | None = None
        for candidate in (block, block.fallback):
            if candidate is None:
                continue
            cost = candidate.tokens + sum(
                costs.get(group, 0) for group in set(candidate.groups) - paid
            )
            if cost <= room - fitted.used:
                chosen = candidate
                fitted.used += cost
                paid.update(candidate.groups)
                break
        if chosen is None:
            framing = sum(costs.get(group, 0) for group in set(block.groups))
            reason: DropReason = "oversized" if block.tokens + framing > room else "budget"
            fitted.dropped.append(
                DroppedBlock(block.partition, reason, block.tokens, block.source_id, block)
            )
            ended = run
            continue
        fitted.kept.append(chosen)
        if chosen is not block:
            fitted.dropped.append(
                DroppedBlock(block.partition, "oversized", block.tokens, block.source_id, block)
            )
    return fitted


@dataclass
class Assembly:
    """The blocks kept per partition (in the order given), every block left out, the
    tokens each partition takes (framing included), the budget it was fitted to, and the
    room held for the claims of blocks not known yet."""

    kept: dict[PartitionName, list[ContextBlock]]
    dropped: list[DroppedBlock]
    tokens: dict[PartitionName, int]
    budget: int
    claimed: dict[PartitionName, int] = field(default_factory=dict)

    @property
    def token_count(self) -> int:
        return sum(self.tokens.values())

    def texts(self, partition: PartitionName) -> list[str]:
        return [block.sent for block in self.kept.get(partition, [])]


class _Fitting:
    """The state of one pass over the partitions: kept texts for duplicates, paid framing."""

    def __init__(self, overheads: Mapping[str, int]) -> None:
        self.overheads = overheads
        self.opened: set[str] = set()
        self.kept: dict[PartitionName, list[ContextBlock]] = {}
        self.dropped: list[DroppedBlock] = []
        self.tokens: dict[PartitionName, int] = {}
        self._held: list[tuple[int, str]] = []  # (lasting rank, normalized text)

    def copy(self) -> _Fitting:
        other = _Fitting(self.overheads)
        other.opened = set(self.opened)
        other.kept = {name: list(blocks) for name, blocks in self.kept.items()}
        other.dropped = list(self.dropped)
        other.tokens = dict(self.tokens)
        other._held = list(self._held)
        return other

    def duplicate_check(self, name: PartitionName) -> Callable[[ContextBlock], bool] | None:
        if name in NEVER_DUPLICATE:
            return None
        rank = LASTING_ORDER.index(name)

        def is_duplicate(block: ContextBlock) -> bool:
            text = _normalized(block.text)
            return bool(text) and any(
                held_rank < rank and text in held for held_rank, held in self._held
            )

        return is_duplicate

    def fit(
        self, name: PartitionName, blocks: Sequence[ContextBlock], room: int, *, run: bool
    ) -> Fitted:
        if name in ALWAYS_KEPT:
            fitted = fit_in_order(blocks, math.inf, overheads=self.overheads, opened=self.opened)
        else:
            fitted = fit_in_order(
                blocks,
                max(0, room),
                run=run,
                overheads=self.overheads,
                opened=self.opened,
                is_duplicate=self.duplicate_check(name),
            )
        self.kept[name] = fitted.kept
        self.dropped.extend(fitted.dropped)
        if fitted.used:
            self.tokens[name] = fitted.used
        rank = LASTING_ORDER.index(name)
        self._held.extend((rank, _normalized(block.text)) for block in fitted.kept)
        return fitted


class ContextAssembler:
    """Fits blocks into partitions (``DEFAULT_PARTITIONS`` with ``partitions`` merged on
    top, recall at 60 % with ``hybrid``). Raises ``InvalidContextConfig`` when the shares of
    the partitions that are not required add up to more than 1."""

    def __init__(
        self, partitions: Mapping[str, Any] | None = None, *, hybrid: bool = False
    ) -> None:
        self.partitions: dict[PartitionName, PartitionBudget] = merge_partitions(
            partitions, hybrid=hybrid
        )

    def _required(self) -> list[PartitionName]:
        first = [name for name in REQUIRED_ORDER if self.partitions[name].required]
        rest = [n for n in LASTING_ORDER if self.partitions[n].required and n not in first]
        return first + rest

    def _shared(self) -> list[PartitionName]:
        return [name for name in LASTING_ORDER if not self.partitions[name].required]

    def allotments(self, left: int) -> dict[PartitionName, int]:
        """The room each partition that is not required gets of ``left`` by its share
        alone; a partition of no share gets what the shares of the others leave."""
        shared = self._shared()
        rooms: dict[PartitionName, int] = {}
        for name in shared:
            share = self.partitions[name].share
            if share is not None:
                rooms[name] = math.floor(share * left)
        rest = max(0, left - sum(rooms.values()))
        for name in shared:
            if self.partitions[name].share is None:
                rooms[name] = rest
                rest = 0
        return rooms

    def assemble(
        self,
        budget: int,
        blocks: Iterable[ContextBlock],
        *,
        runs: Iterable[str] = (),
        overheads: Mapping[str, int] | None = None,
        claims: Mapping[str, int] | None = None,
        limits: Mapping[str, int] | None = None,
    ) -> Assembly:
        """Fit ``blocks`` (each partition's in the order to try them) into ``budget``.

        ``runs``: partitions fitted as one run. ``overheads``: the cost of each group's
        framing. ``claims``: tokens a partition will want for blocks not known yet (the
        recall of hybrid, found once the history is known): held for it as if they were
        blocks (``Assembly.claimed``), so the other partitions are fitted as they will be.
        ``limits``: the most a partition may take.
        """
        if not is_whole_number(budget):
            raise InvalidContextConfig({"budget": "A budget is a whole number of 0 or more."})
        as_run = set(runs)
        costs = dict(overheads or {})
        by_partition: dict[PartitionName, list[ContextBlock]] = {n: [] for n in LASTING_ORDER}
        for block in blocks:
            if block.partition not in by_partition:
                raise InvalidContextConfig(
                    {"blocks": f"Unknown partition {block.partition!r} of a block."}
                )
            by_partition[block.partition].append(block)

        state = _Fitting(costs)
        remaining = budget
        for name in self._required():
            fitted = state.fit(name, by_partition[name], max(0, remaining), run=name in as_run)
            remaining -= fitted.used
        left = max(0, remaining)
        shared = self._shared()
        allotted = self.allotments(left)

        wanted = {name: max(0, int(tokens)) for name, tokens in (claims or {}).items()}
        caps = {name: max(0, int(tokens)) for name, tokens in (limits or {}).items()}

        def need(name: PartitionName) -> int:
            groups = {group for block in by_partition[name] for group in block.groups}
            framing = sum(costs.get(group, 0) for group in groups)
            total = sum(block.tokens for block in by_partition[name]) + framing
            return min(total + wanted.get(name, 0), caps.get(name, left))

        claimed: dict[PartitionName, int] = {}

        def fit(fitting: _Fitting, name: PartitionName, room: int) -> int:
            """Fit a partition's blocks, then its claim into what they leave."""
            room = min(room, caps.get(name, room))
            used = fitting.fit(name, by_partition[name], room, run=name in as_run).used
            if wanted.get(name):
                claimed[name] = min(wanted[name], room - used)
                used += claimed[name]
            return used

        # First pass: each by its share, no more than it needs.
        first = state.copy()
        used = {name: fit(first, name, min(allotted[name], need(name))) for name in shared}
        # Second pass: the room the shares left goes to the partitions still short of it,
        # in fill order (which is also their lasting order by default).
        leftover = left - sum(used.values())
        fill = [name for name in FILL_ORDER if name in shared]
        fill += [name for name in shared if name not in fill]
        final = state.copy()
        for name in shared:
            taken = fit(final, name, used[name] + (leftover if name in fill else 0))
            if name in fill:
                leftover -= taken - used[name]
        kept = {name: final.kept.get(name, []) for name in LASTING_ORDER}
        return Assembly(
            kept=kept,
            dropped=final.dropped,
            tokens=final.tokens,
            budget=budget,
            claimed={name: tokens for name, tokens in claimed.items() if tokens},
        )
