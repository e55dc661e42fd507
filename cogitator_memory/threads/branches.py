"""Branches: rewind, checkout and fork."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from cogitator_memory import dependents, signals
from cogitator_memory.exceptions import NotOnActiveBranch, ThreadAlreadyExists
from cogitator_memory.grants import Grants
from cogitator_memory.threads.locking import lock_thread
from cogitator_memory.threads.models import (
    FORK_OF_KEY,
    FORKED_FROM_KEY,
    FORKS_KEY,
    PAUSED_RUN_KEY,
    Entry,
    Thread,
    new_entry_id,
)
from cogitator_memory.threads.paths import walk_ids_until, walk_up
from cogitator_memory.threads.selectors import entry_in_thread
from cogitator_memory.threads.validation import validate_thread_id

__all__ = ["checkout", "fork_thread", "rewind"]

# Entries read per step while copying a branch into a fork.
FORK_WALK_STEP = 1024


@transaction.atomic
def rewind(thread_id: str, to_entry_id: str, *, grants: Grants | None = None) -> Thread:
    """Move the active leaf back to an entry of the active branch; nothing is deleted.

    The entries after it stay on a branch of their own. Raises ``ThreadNotFound``,
    ``EntryNotInThread`` and ``NotOnActiveBranch`` (use ``checkout`` to switch branches).
    """
    thread = lock_thread(thread_id, grants=grants)
    target = entry_in_thread(to_entry_id, thread_id, field="to_entry_id")
    if thread.active_leaf_id == target.pk:
        return thread
    if thread.active_leaf_id is None or target.pk not in walk_ids_until(
        thread.active_leaf_id, target.pk
    ):
        raise NotOnActiveBranch(target.pk, thread_id)
    thread.active_leaf = target
    thread.save(update_fields=["active_leaf"])
    return thread


@transaction.atomic
def checkout(thread_id: str, entry_id: str, *, grants: Grants | None = None) -> Thread:
    """Make the branch that ends at ``entry_id`` the active one.

    Raises ``ThreadNotFound`` and ``EntryNotInThread``.
    """
    thread = lock_thread(thread_id, grants=grants)
    target = entry_in_thread(entry_id, thread_id, field="entry_id")
    if thread.active_leaf_id != target.pk:
        thread.active_leaf = target
        thread.save(update_fields=["active_leaf"])
    return thread


def _branch_to(entry: Entry) -> list[Entry]:
    """The entries from the root down to ``entry``, oldest first."""
    branch: list[Entry] = []
    cursor: str | None = entry.pk
    while cursor is not None:
        step = walk_up(cursor, FORK_WALK_STEP)
        branch.extend(step)
        cursor = step[-1].parent_id if step else None
    branch.reverse()
    return branch


def _renamed(value: Any, copied_ids: dict[str, str]) -> Any:
    """A JSON value with every text that is the id of a copied entry replaced by the id
    of its copy (an event such as a compaction names entries of its branch)."""
    if isinstance(value, str):
        return copied_ids.get(value, value)
    if isinstance(value, list):
        return [_renamed(item, copied_ids) for item in value]
    if isinstance(value, dict):
        return {key: _renamed(item, copied_ids) for key, item in value.items()}
    return value


def _copy(
    original: Entry,
    *,
    thread_id: str,
    parent_id: str | None,
    seq: int,
    copied_ids: dict[str, str],
) -> Entry:
    return Entry(
        id=new_entry_id(),
        thread_id=thread_id,
        parent_id=parent_id,
        seq=seq,
        type=original.type,
        role=original.role,
        content=original.content,
        name=original.name,
        tool_call_id=original.tool_call_id,
        tool_calls=original.tool_calls,
        tool_results=original.tool_results,
        # The entries an event names (a compaction's first kept entry, its atoms' quotes)
        # are on the branch copied: the copy names their copies.
        event=_renamed(original.event, copied_ids),
        metadata={**(original.metadata or {}), FORK_OF_KEY: original.pk},
        token_count=original.token_count,
        created_at=original.created_at,
        redaction=original.redaction,
    )


@transaction.atomic
def fork_thread(
    thread_id: str,
    at_entry_id: str,
    new_thread_id: str | None = None,
    *,
    grants: Grants | None = None,
) -> Thread:
    """Copy the branch from the root up to ``at_entry_id`` into a new thread.

    Each copy names its original in ``metadata.forkOf``, and an event copied names the
    copies of the entries its original named; the new thread names its origin
    in ``metadata.forkedFrom`` (``{"threadId", "entryId"}``) and the origin lists the new
    thread in ``metadata.memoryForks``. A paused run of the origin (``metadata.pausedRun``)
    is not copied. The fork belongs to the origin's agent and user. Raises
    ``ThreadNotFound``, ``EntryNotInThread``, ``InvalidInput`` for a bad new id and
    ``ThreadAlreadyExists``.
    """
    if new_thread_id is not None:
        validate_thread_id(new_thread_id, field="new_thread_id")
    origin = lock_thread(thread_id, grants=grants)
    at = entry_in_thread(at_entry_id, thread_id, field="at_entry_id")
    if new_thread_id is not None and Thread.objects.filter(pk=new_thread_id).exists():
        raise ThreadAlreadyExists(new_thread_id)

    branch = _branch_to(at)
    metadata = {
        key: value
        for key, value in (origin.metadata or {}).items()
        if key not in (FORKS_KEY, FORKED_FROM_KEY, PAUSED_RUN_KEY)
    }
    metadata[FORKED_FROM_KEY] = {"threadId": origin.pk, "entryId": at.pk}
    fork = Thread(agent_id=origin.agent_id, metadata=metadata)
    if new_thread_id is not None:
        fork.id = new_thread_id
    try:
        with transaction.atomic():
            fork.save(force_insert=True)
    except IntegrityError as exc:
        raise ThreadAlreadyExists(fork.pk) from exc

    copies: list[Entry] = []
    copied_ids: dict[str, str] = {}
    for seq, original in enumerate(branch, start=1):
        parent_id = copied_ids.get(original.parent_id) if original.parent_id else None
        copy = _copy(
            original, thread_id=fork.pk, parent_id=parent_id, seq=seq, copied_ids=copied_ids
        )
        copied_ids[original.pk] = copy.pk
        copies.append(copy)
    Entry.objects.bulk_create(copies, batch_size=500)
    dependents.entries_added(copies)
    Thread.objects.filter(pk=fork.pk).update(
        next_seq=len(copies), active_leaf_id=copies[-1].pk if copies else None
    )
    fork.refresh_from_db()

    forks = list((origin.metadata or {}).get(FORKS_KEY) or [])
    forks.append(fork.pk)
    origin.metadata = {**(origin.metadata or {}), FORKS_KEY: forks}
    origin.updated_at = timezone.now()
    origin.save(update_fields=["metadata", "updated_at"])

    def announce() -> None:
        for copy in copies:
            signals.entry_added.send(sender=Entry, entry=copy)

    transaction.on_commit(announce)
    return fork
