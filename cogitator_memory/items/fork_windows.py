"""What a fork's origins have read: a fork's copies are extracted once per memory scope.

A fork (``threads.branches.fork_thread``) begins with copies of a branch of its origin,
each naming its original in ``metadata.forkOf``, and names its origin and the entry it
was made at in ``metadata.forkedFrom``. What the copies say was said in the origin, and
the items found in it were written into the origin's memory scope (its agent and user):
reading the copies again into the same scope would write every item a second time and
call the model for nothing. Hence the rule, in both directions:

- ``read_by_origins``: while a fork's agent and user are those of its origin, the copies
  up to the last original the origin has read count as read (``extract_thread`` starts
  after them), whenever the origin read them, before the fork was made or after;
- ``record_in_origins``: a window a fork reads of its copies counts as read in its
  origin too (a row of zero calls and items in the origin's ``ExtractionWindow``\\ s), so
  an origin extracted after its fork skips what the fork read, and so does every other
  fork of it.

Forks of forks follow the chain, one origin after the other: a thread in between in
another scope neither gives nor takes what was read, and the chain goes on past it.

A fork in another scope (moved to another user) is that user's memory: the copies are
their history too, the origin's items are not theirs, so its copies are extracted into
its own scope like any thread's, and what it reads counts for none of its origins. The
rule reads each thread's scope when the extraction runs: a fork moved to another user
after an extraction keeps the windows it read, as any thread moved does.

What an origin has read of a branch is read as ``extract_thread`` reads one: everything
up to the end of a window that ends on it; a window that began on the copied branch and
ended past the entry the fork was made at read all of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from cogitator_memory.items.models import ExtractionWindow
from cogitator_memory.items.window_extractor import EXTRACTOR_VERSION
from cogitator_memory.threads.models import FORK_OF_KEY, FORKED_FROM_KEY, Entry, Thread
from cogitator_memory.threads.paths import walk_ids_until

__all__ = ["read_by_origins", "record_in_origins"]

# Origins followed at most: a chain of forks this long is no accident, and a cycle of
# hand-written ``forkedFrom`` values ends here.
MAX_FORK_DEPTH = 16
# Entry ids per query: well under SQLite's parameter limit.
IDS_PER_QUERY = 500


class _Level(NamedTuple):
    """One origin of the chain: the thread, and the branch of it that was copied (the
    originals of the copies, root first, up to the entry the fork was made at)."""

    thread: Thread
    branch: list[str]


def _forked_from(thread: Thread) -> tuple[str, str] | None:
    """(origin's id, entry the fork was made at), when the thread is a fork."""
    source = (thread.metadata or {}).get(FORKED_FROM_KEY)
    if not isinstance(source, dict):
        return None
    origin, at = source.get("threadId"), source.get("entryId")
    if isinstance(origin, str) and origin and isinstance(at, str) and at:
        return origin, at
    return None


def _originals(marks: Iterable[tuple[str, Any]], at: str) -> list[str]:
    """The originals of the copies a branch begins with, up to the copy of ``at``
    (``marks``: each entry of the branch, root first, with its ``metadata.forkOf``)."""
    originals: list[str] = []
    for _entry_id, original in marks:
        if not isinstance(original, str) or not original:
            break
        originals.append(original)
        if original == at:
            break
    return originals


def _fork_marks(entry_ids: Sequence[str], thread_id: str) -> list[tuple[str, Any]]:
    """Each of these entries, in their order, with its ``metadata.forkOf``, as far as
    they are entries of this thread (``forkOf`` is metadata a client may write too: a
    chain is followed only through entries that are where it says)."""
    marks: dict[str, Any] = {}
    for start in range(0, len(entry_ids), IDS_PER_QUERY):
        chunk = list(entry_ids[start : start + IDS_PER_QUERY])
        marks.update(
            Entry.objects.filter(pk__in=chunk, thread_id=thread_id).values_list(
                "pk", f"metadata__{FORK_OF_KEY}"
            )
        )
    found: list[tuple[str, Any]] = []
    for entry_id in entry_ids:
        if entry_id not in marks:
            break
        found.append((entry_id, marks[entry_id]))
    return found


def _origins(thread: Thread, path: Sequence[Entry]) -> Iterator[_Level]:
    """The chain of the thread's origins, nearest first, each with the branch of it the
    path's copies stand for (read as the chain is followed). Each branch is a prefix of
    the one before (index ``i`` of every branch stands for ``path[i]``)."""
    if _forked_from(thread) is None:
        # Not a fork: nothing to read of the path (extraction asks once per window).
        return
    # The path's own marks are read as far as its copies go, not along the whole path.
    marks: Iterable[tuple[str, Any]] = (
        (entry.pk, (entry.metadata or {}).get(FORK_OF_KEY)) for entry in path
    )
    current = thread
    for _depth in range(MAX_FORK_DEPTH):
        source = _forked_from(current)
        if source is None:
            break
        origin_id, at = source
        origin = Thread.objects.filter(pk=origin_id).first()
        if origin is None:
            break
        found = _fork_marks(_originals(marks, at), origin.pk)
        if not found:
            break
        yield _Level(origin, [entry_id for entry_id, _original in found])
        marks = found
        current = origin


def _same_scope(thread: Thread, other: Thread) -> bool:
    return (thread.agent_id, thread.user_id) == (other.agent_id, other.user_id)


def _read_end(thread_id: str, branch: list[str]) -> int:
    """The index in ``branch`` (of the thread, root first, ending where a fork was made)
    of the last entry the thread's windows read; -1 for none."""
    position = {entry_id: index for index, entry_id in enumerate(branch)}
    end = -1
    windows = ExtractionWindow.objects.filter(thread_id=thread_id, version=EXTRACTOR_VERSION)
    for first, last in windows.values_list("first_entry_id", "last_entry_id"):
        if last in position:
            end = max(end, position[last])
        elif (
            first in position
            and end < len(branch) - 1
            # A window is a stretch of one branch: one that began on this branch read all
            # of it when the entry the fork was made at lies between its ends (a walk as
            # long as the window).
            and branch[-1] in walk_ids_until(last, first)
        ):
            end = len(branch) - 1
    return end


def read_by_origins(thread: Thread, path: Sequence[Entry]) -> int:
    """The index in ``path`` (the thread's branch, root first) of the last entry that the
    thread's origins in its scope have read, through their originals; -1 for none."""
    end = -1
    for level in _origins(thread, path):
        if end >= len(level.branch) - 1:
            # The branches only get shorter: nothing further up reads further.
            break
        if _same_scope(thread, level.thread):
            end = max(end, _read_end(level.thread.pk, level.branch))
    return end


def record_in_origins(thread: Thread, path: Sequence[Entry], first: int, last: int) -> int:
    """Record in each origin of the thread's scope that the copies ``path[first..last]``
    were read (a window of the originals, with no calls and no items); call in the
    transaction that writes the thread's window. Copies past the entry the fork was made
    at, and turns added to the fork, stand for nothing there. Returns how many origins
    it was recorded in.

    Raises ``IntegrityError`` when an origin has that window already: a run of the origin
    (or of another fork of it) read the same stretch while the model answered this one,
    and the window of this run is then read by another run, as a window of its own
    thread raced is."""
    recorded = 0
    for level in _origins(thread, path):
        if first >= len(level.branch):
            break
        if not _same_scope(thread, level.thread):
            continue
        end = min(last, len(level.branch) - 1)
        ExtractionWindow.objects.create(
            thread=level.thread,
            first_entry_id=level.branch[first],
            last_entry_id=level.branch[end],
            version=EXTRACTOR_VERSION,
            entries=end - first + 1,
        )
        recorded += 1
    return recorded
