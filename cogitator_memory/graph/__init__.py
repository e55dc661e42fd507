"""The knowledge graph: ``MemoryGraph`` (``graph.services``) and its results.

``from cogitator_memory.graph import MemoryGraph`` imports the services on first use, so
importing the package (as ``cogitator_memory.models`` does for the models) pulls in
nothing else."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cogitator_memory.graph.services import GraphPath, MemoryGraph, Neighbourhood

__all__ = ["GraphPath", "MemoryGraph", "Neighbourhood"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from cogitator_memory.graph import services

        return getattr(services, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
