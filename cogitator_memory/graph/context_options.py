"""How far the graph context of a turn reaches (``GraphContextOptions``): the context
builder's ``graph_context_options``, checked by the rules of a traversal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from cogitator_memory.graph.inputs import MAX_DEPTH, Errors

__all__ = ["MAX_CONTEXT_NODES", "GraphContextOptions"]

# Every node is a line of the turn's memory context and one more walk's worth of reading:
# a prompt has no use for more than this.
MAX_CONTEXT_NODES = 200


@dataclass(frozen=True)
class GraphContextOptions:
    """``depth``: how many edges from a node the turn names (0: those nodes alone).
    ``max_nodes``: the most nodes sent, those the turn names first, then the nearest.
    ``relations``: the relations followed (None: every one). Only active nodes and edges
    are read, as they held at the build's ``as_of``. Raises ``InvalidGraphInput``."""

    depth: int = 2
    max_nodes: int = 20
    relations: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        errors = Errors()
        errors.bound("depth", self.depth, 0, MAX_DEPTH)
        errors.bound("max_nodes", self.max_nodes, 1, MAX_CONTEXT_NODES)
        relations = errors.relations(self.relations)
        errors.raise_any()
        object.__setattr__(self, "relations", None if relations is None else tuple(relations))

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> GraphContextOptions:
        """The options of a mapping of their fields. Raises ``InvalidGraphInput`` (also for
        an unknown name)."""
        known = {option.name for option in fields(cls)}
        errors = Errors()
        for name in sorted(set(options) - known, key=str):
            errors.add(str(name), f"Unknown option; the options are {sorted(known)}.")
        errors.raise_any()
        return cls(**dict(options))
