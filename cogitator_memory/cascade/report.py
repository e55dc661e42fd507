"""What a cascade did: ``CascadeReport``.

The entries, threads and summaries a cascade removed are listed by id (they are what the
caller named, or follow from it); what the stores derived from them is counted, by the
names the dependents count it under (``dependents.Forgotten``). The knowledge graph's
counts are ``graph.nodes``, ``graph.edges`` and ``graph.trimmed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "COUNT_LABELS",
    "CascadeReport",
    "EntriesReport",
    "FactsReport",
    "GraphReport",
    "ItemsReport",
    "counted_lines",
    "sum_counts",
]


@dataclass
class EntriesReport:
    """Entries deleted (events among them, and whole threads' entries) and redacted."""

    deleted: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)


@dataclass
class ItemsReport:
    """Memory items purged (they stood only on what went, or were of a forgotten
    scope), trimmed (they lost the quotes of what went) and marked stale (a rewind)."""

    purged: int = 0
    trimmed: int = 0
    stale: int = 0


@dataclass
class FactsReport:
    deleted: int = 0
    trimmed: int = 0


@dataclass
class GraphReport:
    nodes: int = 0
    edges: int = 0
    trimmed: int = 0


# ``dependents.Forgotten`` names -> (report field, sub-field or None).
_FORGOTTEN_FIELDS: dict[str, tuple[str, str | None]] = {
    "items.purged": ("items", "purged"),
    "items.trimmed": ("items", "trimmed"),
    "items.stale": ("items", "stale"),
    "entities": ("entities", None),
    "file_versions": ("file_versions", None),
    "files": ("files", None),
    "vectors": ("vectors", None),
    "vectors.queued": ("vectors_queued", None),
    "keyword_documents": ("keyword_documents", None),
    "sessions": ("sessions", None),
    "runs": ("runs", None),
    "extraction_windows": ("extraction_windows", None),
    "facts.deleted": ("facts", "deleted"),
    "facts.trimmed": ("facts", "trimmed"),
    "graph.nodes": ("graph", "nodes"),
    "graph.edges": ("graph", "edges"),
    "graph.trimmed": ("graph", "trimmed"),
    "playbook_rules": ("playbook_rules", None),
}


@dataclass
class CascadeReport:
    """What one cascade (``MemoryCascade``) removed, redacted or marked.

    - ``entries``: ``deleted`` and ``redacted`` entry ids (copies in forks and replies
      included; a deleted thread's entries included);
    - ``threads``: ids of the threads deleted; ``threads_changed``: ids of the threads
      that stay but lost or had redacted entries (forks, threads of others), or stopped
      listing a forgotten user;
    - ``summaries``: ids of the compaction entries deleted because they covered or quoted
      what went (their threads are compacted again, see ``recompacting``);
    - ``items``, ``entities``, ``file_versions`` (redacted or deleted), ``files`` (deleted),
      ``vectors`` (deleted; ``vectors_queued``: sent to an outside store through the
      outbox), ``keyword_documents``, ``sessions``, ``runs`` (jobs of record of deleted
      threads, or whose record named what went), ``extraction_windows`` (read windows
      that named what went, read again by the next extraction), ``admin_log_entries``
      (admin log rows about what went), ``task_results`` (Celery results forgotten),
      ``facts``, ``graph``, ``playbook_rules``: counts;
    - ``threads_out_of_reach``: threads listing a forgotten user that the caller's
      grants do not reach, left as they are;
    - ``other``: counts a dependent reported under a name this report does not know.
    """

    entries: EntriesReport = field(default_factory=EntriesReport)
    threads: list[str] = field(default_factory=list)
    threads_changed: list[str] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    recompacting: list[str] = field(default_factory=list)
    items: ItemsReport = field(default_factory=ItemsReport)
    entities: int = 0
    facts: FactsReport = field(default_factory=FactsReport)
    graph: GraphReport = field(default_factory=GraphReport)
    file_versions: int = 0
    files: int = 0
    playbook_rules: int = 0
    vectors: int = 0
    vectors_queued: int = 0
    keyword_documents: int = 0
    sessions: int = 0
    runs: int = 0
    extraction_windows: int = 0
    admin_log_entries: int = 0
    task_results: int = 0
    threads_out_of_reach: int = 0
    other: dict[str, int] = field(default_factory=dict)

    def add_forgotten(self, forgotten: Mapping[str, int]) -> None:
        """Count what a forget step (``dependents.forget_entries``) reported."""
        for name, count in forgotten.items():
            if not count:
                continue
            target = _FORGOTTEN_FIELDS.get(name)
            if target is None:
                self.other[name] = self.other.get(name, 0) + count
                continue
            top, sub = target
            if sub is None:
                setattr(self, top, getattr(self, top) + count)
            else:
                part = getattr(self, top)
                setattr(part, sub, getattr(part, sub) + count)

    def note_thread_changed(self, thread_id: str) -> None:
        if thread_id not in self.threads_changed and thread_id not in self.threads:
            self.threads_changed.append(thread_id)

    def note_thread_deleted(self, thread_id: str) -> None:
        if thread_id in self.threads_changed:
            self.threads_changed.remove(thread_id)
        if thread_id not in self.threads:
            self.threads.append(thread_id)

    def counts(self) -> dict[str, Any]:
        """``as_dict`` with every list replaced by its length."""
        return self.as_dict(ids=False)

    def is_empty(self) -> bool:
        """Whether the cascade changed nothing (every count 0, ``threads_out_of_reach``
        aside, which counts what it left): a cascade run again after it finished reports
        so."""
        counts = self.counts()
        counts.pop("threads_out_of_reach")
        return not any(_numbers(counts))

    def as_dict(self, *, ids: bool = True) -> dict[str, Any]:
        """The report as plain data (for the API); ``ids=False`` gives the lengths of the
        lists of ids instead of the lists (a large ``delete_user``)."""
        data: dict[str, Any] = {}
        for part in fields(self):
            value = getattr(self, part.name)
            if isinstance(value, list):
                data[part.name] = list(value) if ids else len(value)
            elif isinstance(value, dict):
                data[part.name] = dict(value)
            elif hasattr(value, "__dataclass_fields__"):
                data[part.name] = {
                    sub.name: (
                        (list(getattr(value, sub.name)) if ids else len(getattr(value, sub.name)))
                        if isinstance(getattr(value, sub.name), list)
                        else getattr(value, sub.name)
                    )
                    for sub in fields(value)
                }
            else:
                data[part.name] = value
        return data


def _numbers(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [number for item in value.values() for number in _numbers(item)]
    return [value] if isinstance(value, int) else []


def sum_counts(first: Any, second: Any) -> Any:
    """Two ``counts()`` (or parts of them) added up, key by key: a run that goes on after
    a failure adds what it does to what it had done."""
    if isinstance(first, dict) and isinstance(second, dict):
        return {
            key: sum_counts(first.get(key), second.get(key))
            for key in dict.fromkeys([*first, *second])
        }
    if first is None:
        return second
    if second is None:
        return first
    if isinstance(first, int) and isinstance(second, int):
        return first + second
    return second


# What each count of ``counts()`` is, in words, in the order a person reads them.
COUNT_LABELS: tuple[tuple[str, str], ...] = (
    ("threads", "threads deleted"),
    ("entries.deleted", "entries deleted"),
    ("entries.redacted", "entries redacted"),
    ("summaries", "compaction summaries deleted"),
    ("threads_changed", "threads changed (they stay)"),
    ("recompacting", "threads to compact again"),
    ("items.purged", "memory items purged"),
    ("items.trimmed", "memory items trimmed (quotes of what went removed)"),
    ("items.stale", "memory items marked stale"),
    ("entities", "entities deleted"),
    ("facts.deleted", "facts deleted"),
    ("facts.trimmed", "facts trimmed"),
    ("graph.nodes", "graph nodes deleted"),
    ("graph.edges", "graph edges deleted"),
    ("graph.trimmed", "graph nodes and edges trimmed"),
    ("playbook_rules", "playbook rules deleted"),
    ("file_versions", "memory file versions redacted or deleted"),
    ("files", "memory files deleted"),
    ("vectors", "vectors deleted"),
    ("vectors_queued", "vectors queued for deletion in the outside store"),
    ("keyword_documents", "keyword index documents removed"),
    ("sessions", "channel sessions deleted"),
    ("runs", "job runs deleted or cleaned"),
    ("extraction_windows", "extraction windows deleted"),
    ("admin_log_entries", "admin log entries deleted"),
    ("task_results", "Celery task results forgotten"),
    ("threads_out_of_reach", "threads listing the user out of reach (left as they are)"),
)


def counted_lines(counts: Mapping[str, Any], *, zeros: bool = False) -> list[tuple[str, int]]:
    """``counts()`` as (label, number) lines in reading order, the counts a dependent
    reported under other names last; without ``zeros``, only what is not 0."""
    lines: list[tuple[str, int]] = []
    for key, label in COUNT_LABELS:
        value: Any = counts
        for part in key.split("."):
            value = value.get(part, 0) if isinstance(value, Mapping) else 0
        number = int(value or 0)
        if number or zeros:
            lines.append((label, number))
    for name, number in sorted((counts.get("other") or {}).items()):
        if number or zeros:
            lines.append((str(name).replace("_", " "), int(number)))
    return lines
