"""Finding nodes by any of their names (``nodes_named``): the name or an alias holding the
words, case and spacing aside, by the rule of node keys."""

from __future__ import annotations

from cogitator_memory.graph.inputs import node_key
from cogitator_memory.graph.querysets import GraphNodeQuerySet

__all__ = ["nodes_named"]


def nodes_named(nodes: GraphNodeQuerySet, words: str) -> GraphNodeQuerySet:
    """The nodes of ``nodes`` whose name or an alias holds ``words``.

    Matched in Python over the names of ``nodes`` (narrow them first): aliases are JSON,
    which the two databases store as different texts (SQLite escapes what is not ASCII),
    and their rules of case differ, so a match in SQL would differ between them."""
    wanted = node_key(words)
    found = [
        pk
        for pk, name, aliases in nodes.values_list("pk", "name", "aliases").iterator(2000)
        if any(
            wanted in node_key(text)
            for text in (name, *(aliases if isinstance(aliases, list) else []))
            if isinstance(text, str)
        )
    ]
    return nodes.filter(pk__in=found)
