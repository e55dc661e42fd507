"""Memory of a scope that goes whole: a deleted thread's own scope, a forgotten user's.

What stands on entries goes through the dependents (``dependents.forget_entries``); what
belongs to a scope stands on no entry in particular, and goes here:

- a deleted thread: the items of its scope (``thread_id`` the thread) are purged
  (``MemoryItems.purge``) with their vectors, its graph nodes and edges deleted, and the
  memory file versions kept for the thread alone are redacted and their files deleted (a
  deletion version through ``MemoryFiles``), so the path leaves every listing and the
  history keeps the redacted versions;
- a forgotten user: the items, entities, graph nodes and edges and memory files of every
  scope of the user (``user_id`` the user) in an agent are deleted, rows and all, with
  the items' vectors.

``agents_with_data`` finds the agents of the app's data (for trusted code forgetting a user
of every agent) with one short index probe per agent, not a scan.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from django.db import connections, router
from django.db.models import Model
from django.utils import timezone

from cogitator_memory.cascade.report import CascadeReport
from cogitator_memory.cascade.traces import delete_vectors_of, forget_admin_log
from cogitator_memory.dependents import Forgotten
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.limits import byte_size
from cogitator_memory.files.models import Author, MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.forgetting import forget_graph_scope
from cogitator_memory.graph.models import GraphEdge, GraphNode
from cogitator_memory.items.models import Entity, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads.models import REDACTED_TEXT, Thread
from cogitator_memory.upkeep.records import UpkeepRun, UpkeepScopeState

__all__ = ["agents_with_data", "forget_thread_scope", "forget_user_scope"]

IDS_PER_QUERY = 500


def _chunks(ids: Sequence[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(ids), IDS_PER_QUERY):
        yield list(ids[start : start + IDS_PER_QUERY])


def _purge_items(items: MemoryItems, ids: list[str], report: CascadeReport) -> None:
    for chunk in _chunks(ids):
        forgotten = Forgotten()
        purged, entities = items.purge(chunk, forgotten)
        report.add_forgotten(forgotten)
        report.items.purged += len(purged)
        report.entities += entities
        delete_vectors_of(purged, report)
        report.admin_log_entries += forget_admin_log(MemoryItem, purged)


def _forget_graph(
    report: CascadeReport,
    *,
    agent_id: str,
    user_id: str | None = None,
    thread_id: str | None = None,
) -> None:
    """The graph nodes and edges of the user's (or the thread's) scopes, and the admin
    log entries of them."""
    forgotten = Forgotten()
    nodes, edges = forget_graph_scope(
        forgotten, agent_id=agent_id, user_id=user_id, thread_id=thread_id
    )
    report.add_forgotten(forgotten)
    for chunk in _chunks(nodes):
        report.admin_log_entries += forget_admin_log(GraphNode, chunk)
    for chunk in _chunks(edges):
        report.admin_log_entries += forget_admin_log(GraphEdge, chunk)


def forget_thread_scope(thread: Thread, report: CascadeReport, *, items: MemoryItems) -> None:
    """Purge the items of the thread's scope, delete its graph nodes and edges, and
    redact the memory files kept for it alone, their files deleted. Call inside the
    transaction that deletes the thread."""
    scoped = MemoryItem.objects.filter(agent_id=thread.agent_id, thread_id=thread.pk)
    _purge_items(items, list(scoped.values_list("pk", flat=True)), report)
    _forget_graph(report, agent_id=thread.agent_id, thread_id=thread.pk)

    heads = MemoryFileHead.objects.filter(
        agent_id=thread.agent_id, thread_id=thread.pk, deleted=False
    ).order_by("path")
    files = MemoryFiles()
    for head in heads:
        access = FileAccess(scope=MemoryScope.of(head), author=Author.MEMORY)
        files.run(access, {"command": "delete", "path": head.path})
        report.files += 1
    versions = MemoryFileVersion.objects.filter(
        agent_id=thread.agent_id, thread_id=thread.pk, content__isnull=False, redaction__isnull=True
    )
    ids = list(versions.values_list("pk", flat=True))
    redaction = {"at": timezone.now().isoformat(), "reason": "its thread was deleted"}
    for chunk in _chunks(ids):
        report.file_versions += MemoryFileVersion.objects.filter(pk__in=chunk).update(
            content=REDACTED_TEXT, redaction=redaction
        )
        MemoryFileHead.objects.filter(version_id__in=chunk).update(size=byte_size(REDACTED_TEXT))


def forget_user_scope(
    agent_id: str, user_id: str, report: CascadeReport, *, items: MemoryItems
) -> None:
    """Delete the items, entities, graph nodes and edges and memory files of every scope
    of the user in the agent. Call inside a transaction."""
    owned = MemoryItem.objects.filter(agent_id=agent_id, user_id=user_id)
    _purge_items(items, list(owned.values_list("pk", flat=True)), report)
    _forget_graph(report, agent_id=agent_id, user_id=user_id)
    # The upkeep of the user's scopes: its runs (their counts, no text) and pass states.
    report.runs += UpkeepRun.objects.filter(agent_id=agent_id, user_id=user_id).delete()[0]
    UpkeepScopeState.objects.filter(agent_id=agent_id, user_id=user_id).delete()
    # Entities of the user no item is about (the purge took those it left without one).
    unused = Entity.objects.filter(agent_id=agent_id, user_id=user_id, items__isnull=True)
    entity_ids = list(unused.values_list("pk", flat=True))
    for chunk in _chunks(entity_ids):
        report.entities += Entity.objects.filter(pk__in=chunk).delete()[0]
        report.admin_log_entries += forget_admin_log(Entity, chunk)

    versions = MemoryFileVersion.objects.filter(agent_id=agent_id, user_id=user_id)
    version_ids = list(versions.values_list("pk", flat=True))
    if not version_ids:
        return
    heads = MemoryFileHead.objects.filter(agent_id=agent_id, user_id=user_id)
    head_ids = list(heads.values_list("pk", flat=True))
    report.files += len(head_ids)
    for chunk in _chunks(head_ids):
        MemoryFileHead.objects.filter(pk__in=chunk).delete()
        report.admin_log_entries += forget_admin_log(MemoryFileHead, chunk)
    for chunk in _chunks(version_ids):
        # A version (of this user or another scope) made from one that goes forgets it.
        MemoryFileVersion.objects.filter(previous_id__in=chunk).update(previous=None)
    for chunk in _chunks(version_ids):
        # Heads of other scopes never point at the user's versions; a stray one goes too.
        MemoryFileHead.objects.filter(version_id__in=chunk).delete()
        report.file_versions += MemoryFileVersion.objects.filter(pk__in=chunk).delete()[0]
        report.admin_log_entries += forget_admin_log(MemoryFileVersion, chunk)


# --- the agents of the data --------------------------------------------------------------

# Tables whose rows name an agent in an index that leads with ``agent_id``.
_AGENT_TABLES: tuple[type[Model], ...] = (
    Thread,
    MemoryItem,
    Entity,
    MemoryFileVersion,
    ChannelSession,
    Embedding,
    GraphNode,
)


def agents_with_data() -> list[str]:
    """Every agent that has threads, items, entities, memory files, sessions, vectors or
    graph nodes:
    per table, a walk from one agent to the next through the index that leads with the
    agent (a loose index scan, one probe per agent), on PostgreSQL and SQLite alike."""
    found: set[str] = set()
    for model in _AGENT_TABLES:
        connection = connections[router.db_for_read(model)]
        quote = connection.ops.quote_name
        table = quote(model._meta.db_table)
        column = quote("agent_id")
        sql = (
            f"WITH RECURSIVE agents(agent_id) AS ("
            f" SELECT MIN({column}) FROM {table}"
            f" UNION ALL"
            f" SELECT (SELECT MIN({column}) FROM {table} WHERE {column} > agents.agent_id)"
            f" FROM agents WHERE agents.agent_id IS NOT NULL"
            f") SELECT agent_id FROM agents WHERE agent_id IS NOT NULL"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql)
            found.update(row[0] for row in cursor.fetchall())
    return sorted(found)
