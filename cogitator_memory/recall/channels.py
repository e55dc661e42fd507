"""Recall's channels and their weights, in one place.

Each channel ranks turns ("entry_*") or memory items ("item_*") for one turn
(``recall/turn_channels.py``, ``recall/item_channels.py``); the rankings are fused by
weighted reciprocal rank (``recall/rescoring.py``) with the weights of the turn's kind of
question (``recall/query_analysis.py`` reads the kind). A hit's ``channels`` name the
channels that found it, and ``RERANKER`` where the reranker placed it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "CHANNELS",
    "CHANNEL_DEPTH",
    "CHANNEL_WEIGHTS",
    "ENTRY_CHANNELS",
    "ENTRY_ENTITY",
    "ENTRY_EVIDENCE",
    "ENTRY_KEYWORD",
    "ENTRY_NEIGHBOR",
    "ENTRY_TIME",
    "ENTRY_VECTOR",
    "ITEM_CHANNELS",
    "ITEM_ENTITY",
    "ITEM_GRAPH",
    "ITEM_KEYWORD",
    "ITEM_TIME",
    "ITEM_VECTOR",
    "RERANKER",
    "SEED_ITEMS",
    "SEED_TURNS",
]

# Turns found by their vectors, by BM25 over the branch, by the time the turn names, by
# the entities of memory it names, through the evidence of the best items, and next to
# the best turns.
ENTRY_VECTOR: Final = "entry_vector"
ENTRY_KEYWORD: Final = "entry_keyword"
ENTRY_TIME: Final = "entry_time"
ENTRY_ENTITY: Final = "entry_entity"
ENTRY_EVIDENCE: Final = "entry_evidence"
ENTRY_NEIGHBOR: Final = "entry_neighbor"
# Items found by BM25 over their text, by their own vectors, by the entities named, by
# the time they held, and by a walk over the graph of items and entities.
ITEM_VECTOR: Final = "item_vector"
ITEM_KEYWORD: Final = "item_keyword"
ITEM_TIME: Final = "item_time"
ITEM_ENTITY: Final = "item_entity"
ITEM_GRAPH: Final = "item_graph"

ENTRY_CHANNELS: Final = (
    ENTRY_VECTOR,
    ENTRY_KEYWORD,
    ENTRY_TIME,
    ENTRY_ENTITY,
    ENTRY_EVIDENCE,
    ENTRY_NEIGHBOR,
)
ITEM_CHANNELS: Final = (ITEM_VECTOR, ITEM_KEYWORD, ITEM_TIME, ITEM_ENTITY, ITEM_GRAPH)
CHANNELS: Final = ENTRY_CHANNELS + ITEM_CHANNELS
# Not a channel: where the reranker placed a hit it reordered, reported beside them.
RERANKER: Final = "reranker"

# How deep each channel ranks: deep enough that a hit one channel ranks low and another
# high still reaches the fused top 50.
CHANNEL_DEPTH: Final = 150
# The best items whose evidence turns (and graph neighbours) are followed, and the best
# turns whose neighbours are.
SEED_ITEMS: Final = 5
SEED_TURNS: Final = 10

_BASE: Final[Mapping[str, float]] = {
    ENTRY_VECTOR: 1.0,
    ENTRY_KEYWORD: 1.0,
    ENTRY_TIME: 0.6,
    ENTRY_ENTITY: 0.4,
    ENTRY_EVIDENCE: 0.6,
    ENTRY_NEIGHBOR: 0.3,
    ITEM_VECTOR: 1.0,
    ITEM_KEYWORD: 1.0,
    ITEM_TIME: 0.5,
    ITEM_ENTITY: 0.6,
    ITEM_GRAPH: 0.4,
}
# What each kind of question changes from the base weights: a temporal question leans on
# the time it names, an aggregate one on entities and the item graph (its answer is spread
# over many turns), an update on items (their states say what holds now), a preference on
# items and vectors (likes are said in many words).
_KIND_CHANGES: Final[Mapping[str, Mapping[str, float]]] = {
    "temporal": {ENTRY_TIME: 1.2, ITEM_TIME: 1.0},
    "aggregate": {
        ENTRY_ENTITY: 0.6,
        ITEM_ENTITY: 0.8,
        ITEM_GRAPH: 0.6,
        ENTRY_NEIGHBOR: 0.4,
    },
    "update": {ITEM_KEYWORD: 1.2, ITEM_VECTOR: 1.2, ENTRY_TIME: 0.4},
    "preference": {ITEM_VECTOR: 1.2, ENTRY_VECTOR: 1.2},
    "general": {},
}
# The weight of each channel, per kind of question.
CHANNEL_WEIGHTS: Final[Mapping[str, Mapping[str, float]]] = {
    kind: {**_BASE, **changes} for kind, changes in _KIND_CHANGES.items()
}
