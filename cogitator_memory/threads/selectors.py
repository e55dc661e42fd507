"""Reads of threads and entries."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from django.db.models import Q

from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import EntryNotInThread, InvalidInput, ThreadNotFound
from cogitator_memory.grants import Grants
from cogitator_memory.jsondata import storable_text
from cogitator_memory.limits import check_limit, page_limit
from cogitator_memory.threads.models import Entry, EntryType, Thread
from cogitator_memory.threads.paths import branch_chunks, doubling
from cogitator_memory.threads.querysets import EntryQuerySet, ThreadQuerySet
from cogitator_memory.threads.validation import THREAD_ID_PATTERN

__all__ = [
    "EntryPage",
    "ThreadPage",
    "entry_in_thread",
    "get_entries",
    "get_entry",
    "get_path",
    "get_thread",
    "list_threads",
    "page_entries",
    "page_threads",
    "visible_thread",
]

TypesArg = Iterable[str] | Literal["all"] | None


@dataclass(frozen=True)
class ThreadPage:
    """One page of ``list_threads``; pass ``next_cursor`` back for the next page."""

    threads: list[Thread] = field(default_factory=list)
    next_cursor: str | None = None


def get_thread(thread_id: str) -> Thread | None:
    """The thread with this id, or None."""
    if not storable_text(thread_id):
        return None
    return Thread.objects.filter(pk=thread_id).first()


def visible_thread(thread_id: object, grants: Grants | None, *, lock: bool = False) -> Thread:
    """The thread of this id if ``grants`` reach it (trusted code passes None).

    Raises ``ThreadNotFound`` for a thread that is missing and for one the grants do not
    reach alike, so ids of others cannot be told from ids never used. ``lock`` locks the
    row until the transaction ends (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's
    IMMEDIATE transaction holds the write lock already) and checks the grants on the
    locked row, so the check stays true until commit.
    """
    threads = Thread.objects.select_for_update() if lock else Thread.objects.all()
    thread = threads.filter(pk=thread_id).first() if storable_text(thread_id) else None
    if thread is None or (grants is not None and not grants.allows_thread(thread)):
        raise ThreadNotFound(str(thread_id))
    return thread


# Cursors are transparent page positions, each the text of a keyset: entry pages key on
# (created_at, seq) as "<microseconds since the epoch>.<seq>", thread pages on
# (updated_at, id) as "<microseconds since the epoch>~<thread id>". Every text of that shape
# names a position, so the API can publish the exact pattern; a moment outside the
# datetime range is clamped to its ends, a seq above the largest stored one to that.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
MOMENT_PART = r"(-?[0-9]{1,18})"
_THREAD_ID_PART = THREAD_ID_PATTERN.pattern.removeprefix("^").removesuffix("$")
ENTRY_CURSOR_PATTERN = re.compile(rf"^{MOMENT_PART}\.([0-9]{{1,19}})\Z")
THREAD_CURSOR_PATTERN = re.compile(rf"^{MOMENT_PART}~({_THREAD_ID_PART})\Z")
_MIN_MICROSECONDS = (datetime.min.replace(tzinfo=UTC) - _EPOCH) // _MICROSECOND
_MAX_MICROSECONDS = (datetime.max.replace(tzinfo=UTC) - _EPOCH) // _MICROSECOND
_MAX_SEQ = 2**63 - 1


def encode_keyset(moment: datetime, key: str | int) -> str:
    """A page position (a moment and a tie-breaking key) as a cursor."""
    microseconds = (moment - _EPOCH) // _MICROSECOND
    return f"{microseconds}.{key}" if isinstance(key, int) else f"{microseconds}~{key}"


def decode_keyset(cursor: Any, *, pattern: re.Pattern[str], made_by: str) -> tuple[datetime, str]:
    """The (moment in UTC, key text) of a cursor of ``pattern``, the moment clamped to
    the datetime range; ``InvalidInput`` for anything else."""
    found = pattern.match(cursor) if isinstance(cursor, str) else None
    if found is None:
        raise InvalidInput({"cursor": f"This cursor was not made by {made_by}."})
    microseconds = min(max(int(found[1]), _MIN_MICROSECONDS), _MAX_MICROSECONDS)
    return _EPOCH + microseconds * _MICROSECOND, found[2]


def page_threads(threads: ThreadQuerySet, *, limit: int | None, cursor: str | None) -> ThreadPage:
    """One page of ``threads``, most recently updated first, after ``cursor``.

    Keyset paging on (updated_at, id): a page never repeats or skips a thread, also when
    threads share an updated_at. Raises ``InvalidInput`` for a bad limit or cursor.
    """
    size = page_limit(limit)
    threads = threads.newest_first()
    if cursor:
        last_updated_at, last_id = decode_keyset(
            cursor, pattern=THREAD_CURSOR_PATTERN, made_by="list_threads"
        )
        threads = threads.filter(
            Q(updated_at__lt=last_updated_at) | Q(updated_at=last_updated_at, id__lt=last_id)
        )
    rows = list(threads[: size + 1])
    if len(rows) > size:
        return ThreadPage(
            threads=rows[:size],
            next_cursor=encode_keyset(rows[size - 1].updated_at, rows[size - 1].pk),
        )
    return ThreadPage(threads=rows)


def list_threads(
    *,
    grants: Grants | None = None,
    agent_id: str | None = None,
    agent_ids: Sequence[str] | None = None,
    metadata: dict[str, Any] | None = None,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> ThreadPage:
    """Threads, the most recently updated first, a page at a time.

    ``grants`` limits the threads to those its caller may see (all when None, for trusted
    code). Filters: one agent or several, metadata values (compared by value and JSON
    type), and ``updated_at`` strictly after / before a moment. Raises ``InvalidInput``
    for a bad limit, filter or cursor.
    """
    page_limit(limit)
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidInput({"metadata": "The metadata filter must be an object."})
    for name, moment in (("updated_after", updated_after), ("updated_before", updated_before)):
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            raise InvalidInput({name: f"{name} must be a datetime with a time zone."})

    threads = Thread.objects.all()
    if grants is not None:
        threads = threads.visible_to(grants)
    if agent_id is not None:
        threads = threads.filter(agent_id=agent_id)
    if agent_ids is not None:
        threads = threads.for_agents(agent_ids)
    if metadata:
        threads = threads.with_metadata(metadata)
    if updated_after is not None:
        threads = threads.filter(updated_at__gt=updated_after)
    if updated_before is not None:
        threads = threads.filter(updated_at__lt=updated_before)
    return page_threads(threads, limit=limit, cursor=cursor)


def _resolve_types(types: TypesArg) -> list[str] | None:
    """None for every type, else the list asked for (message and tool_result by default)."""
    if types == "all":
        return None
    if types is None:
        return [EntryType.MESSAGE.value, EntryType.TOOL_RESULT.value]
    if isinstance(types, str):
        types = [types]
    resolved = [str(t) for t in types]
    known = {choice.value for choice in EntryType}
    unknown = [t for t in resolved if t not in known]
    if unknown:
        raise InvalidInput(
            {
                "types": f"Unknown entry types: {', '.join(unknown)}; expected 'all' "
                f"or a list of: {', '.join(sorted(known))}."
            }
        )
    return resolved


def _strip_tool_fields(entries: list[Entry]) -> list[Entry]:
    for entry in entries:
        entry.tool_calls = None
        entry.tool_results = None
        # The instance no longer mirrors its row; Entry.save refuses it.
        entry._tool_fields_stripped = True  # type: ignore[attr-defined]
    return entries


def _check_limit(limit: int | None) -> int:
    """A limit of entries: None or 0 for all."""
    return 0 if limit is None else check_limit(limit, minimum=0)


def _require_thread(thread_id: str) -> Thread:
    return visible_thread(thread_id, None)


def _entries_query(
    thread_id: str,
    types: TypesArg,
    before: datetime | None,
    after: datetime | None,
) -> EntryQuerySet:
    resolved_types = _resolve_types(types)
    for name, moment in (("before", before), ("after", after)):
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            raise InvalidInput({name: f"{name} must be a datetime with a time zone."})
    _require_thread(thread_id)
    entries: EntryQuerySet = Entry.objects.of_thread(thread_id)
    if resolved_types is not None:
        entries = entries.of_types(resolved_types)
    if before is not None:
        entries = entries.filter(created_at__lt=before)
    if after is not None:
        entries = entries.filter(created_at__gt=after)
    return entries


def get_entries(
    thread_id: str,
    *,
    types: TypesArg = None,
    limit: int | None = None,
    before: datetime | None = None,
    after: datetime | None = None,
    include_tool_calls: bool = False,
) -> list[Entry]:
    """Entries of every branch of a thread, oldest first.

    Only message and tool_result entries unless ``types`` asks for more (``"all"`` or a
    list). ``limit`` keeps the newest ``limit`` (0 or None for all); ``before`` and
    ``after`` bound ``created_at`` strictly. Without ``include_tool_calls`` the entries
    come without their tool calls and tool results. Raises ``ThreadNotFound`` and
    ``InvalidInput``.
    """
    limit = _check_limit(limit)
    entries = _entries_query(thread_id, types, before, after)
    if limit:
        rows = list(entries.order_by("-created_at", "-seq")[:limit])
        rows.reverse()
    else:
        rows = list(entries.in_time_order())
    return rows if include_tool_calls else _strip_tool_fields(rows)


@dataclass(frozen=True)
class EntryPage:
    """One page of ``page_entries``, oldest first; ``next_cursor`` reaches older ones."""

    entries: list[Entry] = field(default_factory=list)
    next_cursor: str | None = None


def page_entries(
    thread_id: str,
    *,
    limit: int,
    cursor: str | None = None,
    types: TypesArg = None,
    before: datetime | None = None,
    after: datetime | None = None,
    include_tool_calls: bool = False,
) -> EntryPage:
    """The newest ``limit`` entries (of every branch) older than ``cursor``, oldest first.

    The same filters as ``get_entries``; keyset paging on (created_at, seq), so a page
    never repeats or skips an entry. Raises ``ThreadNotFound`` and ``InvalidInput``.
    """
    check_limit(limit)
    entries = _entries_query(thread_id, types, before, after)
    if cursor:
        created_at, seq_text = decode_keyset(
            cursor, pattern=ENTRY_CURSOR_PATTERN, made_by="page_entries"
        )
        seq = min(int(seq_text), _MAX_SEQ)
        entries = entries.filter(
            Q(created_at__lt=created_at) | Q(created_at=created_at, seq__lt=seq)
        )
    rows = list(entries.order_by("-created_at", "-seq")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    rows.reverse()
    next_cursor = encode_keyset(rows[0].created_at, rows[0].seq) if more and rows else None
    return EntryPage(
        entries=rows if include_tool_calls else _strip_tool_fields(rows), next_cursor=next_cursor
    )


def get_entry(entry_id: str) -> Entry | None:
    """The entry with this id, or None."""
    if not storable_text(entry_id):
        return None
    return Entry.objects.filter(pk=entry_id).first()


def get_path(
    thread_id: str,
    *,
    leaf_id: str | None = None,
    limit: int | None = None,
    before: str | None = None,
    types: TypesArg = None,
    include_tool_calls: bool = False,
) -> list[Entry]:
    """One branch, oldest first: the newest ``limit`` entries (0 or None for all) of the
    branch ending at ``leaf_id`` (the active leaf by default).

    ``before`` (an entry id) pages back: the entries above it on its branch (its
    ancestors), so a page continues from the oldest entry of the last one. The
    walk reads only as many entries as it returns (plus the events it skips), never the
    rest of the thread. Raises ``ThreadNotFound``, ``EntryNotInThread`` and
    ``InvalidInput``.
    """
    limit = _check_limit(limit)
    resolved_types = _resolve_types(types)
    thread = _require_thread(thread_id)
    if leaf_id is not None:
        start: str | None = entry_in_thread(leaf_id, thread_id, field="leaf_id").pk
    else:
        start = thread.active_leaf_id
    if before is not None:
        start = entry_in_thread(before, thread_id, field="before").parent_id

    wanted = set(resolved_types) if resolved_types is not None else None
    max_step = memory_settings.PATH_WALK_STEP
    step = min(max_step, max(limit + 8, 32)) if limit else max_step
    found: list[Entry] = []
    for chunk in branch_chunks(thread_id, start, thread.fork_seq, doubling(step, max_step)):
        for entry in chunk:
            if wanted is None or entry.type in wanted:
                found.append(entry)
                if limit and len(found) == limit:
                    break
        if limit and len(found) == limit:
            break
    found.reverse()
    return found if include_tool_calls else _strip_tool_fields(found)


def entry_in_thread(entry_id: Any, thread_id: str, *, field: str) -> Entry:
    """The entry ``entry_id`` of thread ``thread_id``; ``EntryNotInThread`` naming
    ``field`` when it is missing or belongs to another thread."""
    entry = (
        Entry.objects.filter(pk=entry_id, thread_id=thread_id).first()
        if storable_text(entry_id)
        else None
    )
    if entry is None:
        raise EntryNotInThread(str(entry_id), thread_id, field=field)
    return entry
