"""The records of a user's export: each row as plain data, in the API's shapes.

Threads, entries and items are written as their ``as_dict`` (what the API serializes: a
field never set is absent, not null); an item carries its subject (id, name, kind) and its
evidence as the item detail of the API does; file versions, sessions and runs have the
fields of the API's answers about them, except the runs' ``error`` (what a worker met is for
operators, not part of the user's memory). Entities, which the API shows only as an item's
subject, are written with their aliases and scope.

Moments are RFC 3339 texts in UTC (``2026-01-31T12:00:00.123456Z``), as the API writes them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.files.models import MemoryFileVersion
from cogitator_memory.grants import SCOPE_FIELDS, MemoryScope
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.items.models import Entity, Evidence, ExtractionRun, MemoryItem
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads.models import Entry, Thread

__all__ = [
    "compaction_run_record",
    "dumps",
    "entity_record",
    "entry_record",
    "evidence_record",
    "extraction_run_record",
    "file_version_record",
    "item_record",
    "moment",
    "object_head",
    "session_record",
    "thread_record",
]


def moment(value: datetime) -> str:
    """A moment as the API writes it: RFC 3339 in UTC, ``Z`` for the offset."""
    text = value.astimezone(UTC).isoformat()
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return moment(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """``value`` as JSON text (non-ASCII kept as it is; moments as ``moment`` writes them)."""
    return json.dumps(value, ensure_ascii=False, default=_default)


def object_head(record: dict[str, Any]) -> str:
    """The JSON text of ``record`` without its closing brace, followed by ``, `` when it
    has keys: the start of an object whose last member (a long list) is streamed after."""
    members = ", ".join(f"{dumps(key)}: {dumps(value)}" for key, value in record.items())
    return "{" + members + (", " if members else "")


def thread_record(thread: Thread) -> dict[str, Any]:
    return thread.as_dict()


def entry_record(entry: Entry) -> dict[str, Any]:
    """The entry as stored: a redacted one with its ``[redacted]`` text and its
    ``redaction``."""
    return entry.as_dict()


def evidence_record(evidence: Evidence | GraphEvidence, *, entry_in_export: bool) -> dict[str, Any]:
    """A quote an item, a graph node or a graph edge stands on. ``entry_id`` and
    ``thread_id`` are given when the entry is one the export holds (a thread of the user
    the caller may see); the quote always."""
    record: dict[str, Any] = {
        "id": evidence.pk,
        "quote": evidence.quote,
        "verified": evidence.verified,
        "created_at": evidence.created_at,
    }
    if entry_in_export and evidence.entry_id is not None:
        record["entry_id"] = evidence.entry_id
        record["thread_id"] = evidence.entry_thread_id  # type: ignore[union-attr]
    if evidence.tool_call_id is not None:
        record["tool_call_id"] = evidence.tool_call_id
    if isinstance(evidence.file_range, dict):
        record["file_range"] = evidence.file_range
    return record


def item_record(item: MemoryItem, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    """An item of any status, with its subject's name and the quotes it stands on."""
    record = item.as_dict()
    record.pop("subject_id")
    subject = item.subject
    record["subject"] = {"id": subject.pk, "name": subject.name, "kind": subject.kind}
    record["evidence"] = evidence
    return record


def entity_record(entity: Entity) -> dict[str, Any]:
    record: dict[str, Any] = {"id": entity.pk, "name": entity.name, "kind": entity.kind}
    record.update(
        {name: value for name in SCOPE_FIELDS if (value := getattr(entity, name)) is not None}
    )
    record["aliases"] = entity.aliases
    record["created_at"] = entity.created_at
    return record


def file_version_record(version: MemoryFileVersion) -> dict[str, Any]:
    """One version of a memory file: its content, or a deletion (content and sha256 null);
    a redacted one with its ``[redacted]`` content."""
    scope = MemoryScope.of(version)
    record: dict[str, Any] = {
        "id": version.pk,
        "path": version.path,
        "sequence": version.sequence,
        "content": version.content,
        "sha256": version.sha256,
        "deleted": version.is_deletion,
        "scope": {
            name: value for name in SCOPE_FIELDS if (value := getattr(scope, name)) is not None
        },
        "author": version.author,
        "created_at": version.created_at,
        "redacted": version.is_redacted,
    }
    if version.renamed_from is not None:
        record["renamed_from"] = version.renamed_from
    return record


def session_record(session: ChannelSession) -> dict[str, Any]:
    return {
        "id": session.pk,
        "user_id": session.user_id,
        "channel_type": session.channel_type,
        "channel_id": session.channel_id,
        "agent_id": session.agent_id,
        "thread_id": session.thread_id,
        "status": session.status,
        "last_active_at": session.last_active_at,
        "created_at": session.created_at,
    }


def extraction_run_record(run: ExtractionRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "thread_id": run.thread_id,
        "status": run.status,
        "windows_done": run.windows_done,
        "windows_total": run.windows_total,
        "windows_skipped": run.windows_skipped,
        "calls": run.calls,
        "items_written": run.items_written,
        "attempts": run.attempts,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }


def compaction_run_record(run: CompactionRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "thread_id": run.thread_id,
        "status": run.status,
        "forced": run.forced,
        "compaction_entry_id": run.compaction_entry_id or None,
        "attempts": run.attempts,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }


def _graph_row(row: GraphNode | GraphEdge) -> dict[str, Any]:
    scope = MemoryScope.of(row)
    record: dict[str, Any] = {
        "id": row.pk,
        "scope": {
            name: value for name in SCOPE_FIELDS if (value := getattr(scope, name)) is not None
        },
        "properties": row.properties,
        "trust": row.trust,
        "status": row.status,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if row.valid_from is not None:
        record["valid_from"] = row.valid_from
    if row.valid_to is not None:
        record["valid_to"] = row.valid_to
    return record


def graph_node_record(node: GraphNode, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    """A node of any status, with its names and the quotes it stands on."""
    record = _graph_row(node)
    record.update(type=node.type, name=node.name, aliases=list(node.aliases))
    if node.entity_id is not None:
        record["entity_id"] = node.entity_id
    record["evidence"] = evidence
    return record


def graph_edge_record(edge: GraphEdge, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    """An edge of any status: the nodes it joins, how, and the quotes it stands on."""
    record = _graph_row(edge)
    record.update(source_id=edge.source_id, target_id=edge.target_id, relation=edge.relation)
    record["weight"] = edge.weight
    record["evidence"] = evidence
    return record
