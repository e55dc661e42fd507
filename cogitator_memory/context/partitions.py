"""The partitions of a built context and the share of the budget each may take.

| partition | holds                                   | default                      |
|-----------|-----------------------------------------|------------------------------|
| system    | the system prompt                       | required, sent whole         |
| pinned    | pinned texts of ``build()``             | required                     |
| index     | the index text of ``build()``           | required                     |
| summaries | the compaction summary                  | required                     |
| brief     | the brief text of ``build()``           | required                     |
| facts     | facts (and observations)                | 15 %                         |
| recall    | recall (hybrid), search results, graph  | 35 % (60 % for hybrid)       |
| recent    | history, selected by the strategy       | what the others leave        |
| final     | the current input, counted, not sent    | required, always counted     |

The table's order is also how lasting a partition is: a block that a kept block of an
earlier partition holds word for word is left out as a duplicate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from cogitator_memory.exceptions import InvalidContextConfig

__all__ = [
    "DEFAULT_PARTITIONS",
    "FILL_ORDER",
    "HYBRID_RECALL_SHARE",
    "LASTING_ORDER",
    "PARTITION_NAMES",
    "PartitionBudget",
    "PartitionName",
    "merge_partitions",
]

PartitionName = Literal[
    "system", "pinned", "index", "summaries", "brief", "facts", "recall", "recent", "final"
]
PARTITION_NAMES: tuple[PartitionName, ...] = (
    "system",
    "pinned",
    "index",
    "summaries",
    "brief",
    "facts",
    "recall",
    "recent",
    "final",
)
# Most lasting first: what a duplicate is checked against.
LASTING_ORDER = PARTITION_NAMES
# The order required partitions are fitted in: the input is counted right after the
# system prompt, so what is pinned never pushes it out.
REQUIRED_ORDER: tuple[PartitionName, ...] = (
    "system",
    "final",
    "pinned",
    "index",
    "summaries",
    "brief",
)
# Who gets the room the shares could not place, first come first served.
FILL_ORDER: tuple[PartitionName, ...] = ("facts", "recall", "recent")
HYBRID_RECALL_SHARE = 0.6


@dataclass(frozen=True)
class PartitionBudget:
    """How much of the budget a partition may take.

    ``required``: fitted first, before any share is split. ``share``: the part (0 to 1) of
    what the required partitions leave that the partition may take before leftovers are
    handed out; None for a partition that takes what the others leave (``recent``).
    """

    share: float | None = None
    required: bool = False


DEFAULT_PARTITIONS: Mapping[PartitionName, PartitionBudget] = MappingProxyType(
    {
        "system": PartitionBudget(required=True),
        "pinned": PartitionBudget(required=True),
        "index": PartitionBudget(required=True),
        "summaries": PartitionBudget(required=True),
        "brief": PartitionBudget(required=True),
        "facts": PartitionBudget(share=0.15),
        "recall": PartitionBudget(share=0.35),
        "recent": PartitionBudget(share=None),
        "final": PartitionBudget(required=True),
    }
)


def _budget(name: str, value: Any) -> PartitionBudget:
    if isinstance(value, PartitionBudget):
        budget = value
    elif isinstance(value, Mapping):
        unknown = sorted(set(value) - {"share", "required"})
        if unknown:
            raise InvalidContextConfig(
                {f"partitions.{name}": f"Unknown keys {unknown}; a partition has share, required."}
            )
        budget = PartitionBudget(
            share=value.get("share"), required=bool(value.get("required", False))
        )
    else:
        raise InvalidContextConfig(
            {f"partitions.{name}": "A partition budget is a PartitionBudget or a mapping."}
        )
    share = budget.share
    if share is not None and (
        isinstance(share, bool)
        or not isinstance(share, int | float)
        or not 0 <= share <= 1
        or share != share
    ):
        raise InvalidContextConfig(
            {f"partitions.{name}.share": f"A share is a number from 0 to 1, not {share!r}."}
        )
    return budget


def merge_partitions(
    overrides: Mapping[str, Any] | None = None, *, hybrid: bool = False
) -> dict[PartitionName, PartitionBudget]:
    """The default partitions (recall at 60 % for hybrid) with ``overrides`` on top.

    Raises ``InvalidContextConfig`` for an unknown partition, a share out of 0..1, or
    shares of the partitions that are not required adding up to more than 1.
    """
    merged: dict[PartitionName, PartitionBudget] = dict(DEFAULT_PARTITIONS)
    if hybrid:
        merged["recall"] = PartitionBudget(share=HYBRID_RECALL_SHARE)
    for name, value in (overrides or {}).items():
        if name not in PARTITION_NAMES:
            raise InvalidContextConfig(
                {
                    "partitions": f"Unknown partition {name!r}; the partitions are "
                    f"{list(PARTITION_NAMES)}."
                }
            )
        merged[name] = _budget(name, value)
    total = sum(budget.share or 0.0 for budget in merged.values() if not budget.required)
    if total > 1 + 1e-9:
        raise InvalidContextConfig(
            {
                "partitions": f"The shares of the partitions that are not required add up to "
                f"{total:g}; they may add up to 1 at most."
            }
        )
    return merged
