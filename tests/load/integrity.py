"""What must hold in the database after a load run, read through the models' fields:

- every thread and entry the API acknowledged is stored, once, with the id and seq its
  answer gave, and nothing the API refused or did not acknowledge is stored;
- each thread's seqs are distinct and without gaps, and its entries, in seq order, form
  one chain (every write went after the active leaf, so two entries with one parent would
  mean two writers read the same leaf), ending at the thread's active leaf;
- with the message index on, each entry has exactly one vector, carrying its thread's
  agent, user and id.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from tests.load.records import CreatedThread, LoadRun, WrittenEntry

POLL_SECONDS = 0.2


@dataclass
class Integrity:
    threads: int = 0
    entries: int = 0
    vectors: int | None = None
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    # Rows no 2xx answer acknowledged: writes that were refused or failed, stored anyway.
    unacknowledged: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    vector_problems: list[str] = field(default_factory=list)

    @property
    def lost_or_doubled(self) -> int:
        return len(self.lost) + len(self.doubled) + len(self.unacknowledged)

    def problems(self) -> list[str]:
        return [
            *(f"lost: {text}" for text in self.lost),
            *(f"doubled: {text}" for text in self.doubled),
            *(f"not acknowledged, stored: {text}" for text in self.unacknowledged),
            *(f"order: {text}" for text in self.order),
            *(f"vectors: {text}" for text in self.vector_problems),
        ]


def check_integrity(run: LoadRun, *, vectors: bool) -> Integrity:
    found = Integrity()
    check_threads(run, found)
    check_entries(run, found)
    if vectors:
        check_vectors(run, found)
    return found


def check_threads(run: LoadRun, found: Integrity) -> None:
    from cogitator_memory.threads.models import Thread

    sent = {thread.thread_id: thread for thread in run.threads}
    stored = {
        row["id"]: row
        for row in Thread.objects.filter(id__startswith=f"{run.tag}-").values(
            "id", "agent_id", "user_id"
        )
    }
    found.threads = len(stored)
    for thread_id, thread in sent.items():
        row = stored.get(thread_id)
        if row is None:
            found.lost.append(f"thread {thread_id}")
        elif (row["agent_id"], row["user_id"]) != (thread.agent_id, thread.user_id):
            found.order.append(
                f"thread {thread_id} is of {row['agent_id']}/{row['user_id']}, "
                f"made for {thread.agent_id}/{thread.user_id}"
            )
    refused = set(run.log.refused_threads)
    for thread_id in sorted(set(stored) - set(sent)):
        why = "refused" if thread_id in refused else "no 2xx answer"
        found.unacknowledged.append(f"thread {thread_id} ({why})")


def check_entries(run: LoadRun, found: Integrity) -> None:
    from cogitator_memory.threads.models import Entry, Thread

    written: dict[str, dict[str, WrittenEntry]] = defaultdict(dict)
    for entry in run.log.entries:
        written[entry.thread_id][entry.marker] = entry
    thread_ids = [thread.thread_id for thread in run.threads]
    rows: dict[str, list[tuple[str, int, str | None, str | None]]] = defaultdict(list)
    for thread_id, entry_id, seq, parent_id, metadata in (
        Entry.objects.filter(thread_id__in=thread_ids)
        .order_by("thread_id", "seq")
        .values_list("thread_id", "id", "seq", "parent_id", "metadata")
    ):
        rows[thread_id].append((entry_id, seq, parent_id, (metadata or {}).get("loadId")))
    leaves = dict(Thread.objects.filter(id__in=thread_ids).values_list("id", "active_leaf_id"))
    refused = set(run.log.refused_markers)
    for thread_id in thread_ids:
        stored = rows.get(thread_id, [])
        found.entries += len(stored)
        check_thread_entries(thread_id, stored, written.get(thread_id, {}), refused, found)
        check_chain(thread_id, stored, leaves.get(thread_id), found)


def check_thread_entries(
    thread_id: str,
    stored: list[tuple[str, int, str | None, str | None]],
    written: dict[str, WrittenEntry],
    refused: set[str],
    found: Integrity,
) -> None:
    by_marker: dict[str | None, list[tuple[str, int]]] = defaultdict(list)
    for entry_id, seq, _parent, marker in stored:
        by_marker[marker].append((entry_id, seq))
    for marker, entry in written.items():
        copies = by_marker.get(marker, [])
        if not copies:
            found.lost.append(f"entry {entry.entry_id} ({marker}) of {thread_id}")
        elif len(copies) > 1:
            found.doubled.append(f"{marker} of {thread_id} stored {len(copies)} times: {copies}")
        elif copies[0] != (entry.entry_id, entry.seq):
            found.order.append(
                f"{marker} of {thread_id} answered as {entry.entry_id} seq {entry.seq}, "
                f"stored as {copies[0][0]} seq {copies[0][1]}"
            )
    for marker in sorted(set(by_marker) - set(written), key=str):
        why = "refused" if marker in refused else "no 2xx answer"
        found.unacknowledged.append(f"{marker} in {thread_id} ({why}): {by_marker[marker]}")


def check_chain(
    thread_id: str,
    stored: list[tuple[str, int, str | None, str | None]],
    active_leaf: str | None,
    found: Integrity,
) -> None:
    seqs = [seq for _id, seq, _parent, _marker in stored]
    if seqs and seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        found.order.append(f"{thread_id}: seqs not distinct and gap-free: {seqs}")
    previous: str | None = None
    for entry_id, seq, parent_id, _marker in stored:
        if parent_id != previous:
            found.order.append(
                f"{thread_id}: entry {entry_id} (seq {seq}) follows {parent_id}, not {previous}"
            )
        previous = entry_id
    if active_leaf != previous:
        found.order.append(f"{thread_id}: active leaf {active_leaf}, last entry {previous}")


def stored_vectors(run: LoadRun) -> list[tuple[str, str | None, str | None, str | None]]:
    """(source id, thread id, agent id, user id) of every message vector of the run's
    threads."""
    from cogitator_memory.embeddings.message_index import MESSAGE_SOURCE_TYPE
    from cogitator_memory.embeddings.models import Embedding

    return list(
        Embedding.objects.filter(
            source_type=MESSAGE_SOURCE_TYPE,
            thread_id__in=[thread.thread_id for thread in run.threads],
        ).values_list("source_id", "thread_id", "agent_id", "user_id")
    )


def missing_vectors(run: LoadRun) -> int:
    have = {source_id for source_id, *_scope in stored_vectors(run)}
    return len({entry.entry_id for entry in run.log.entries} - have)


def wait_for_vectors(run: LoadRun, timeout: float) -> float | None:
    """Seconds until every acknowledged entry has a vector, or None after ``timeout``."""
    started = time.monotonic()
    while missing_vectors(run):
        if time.monotonic() - started > timeout:
            return None
        time.sleep(POLL_SECONDS)
    return time.monotonic() - started


def check_vectors(run: LoadRun, found: Integrity) -> None:
    threads: dict[str, CreatedThread] = {thread.thread_id: thread for thread in run.threads}
    rows = stored_vectors(run)
    found.vectors = len(rows)
    copies = Counter(source_id for source_id, *_scope in rows)
    scopes = {source_id: tuple(scope) for source_id, *scope in rows}
    entries = {entry.entry_id: entry for entry in run.log.entries}
    for entry_id, entry in entries.items():
        count = copies.get(entry_id, 0)
        if count != 1:
            found.vector_problems.append(f"entry {entry_id} of {entry.thread_id}: {count} vectors")
            continue
        thread = threads[entry.thread_id]
        expected = (thread.thread_id, thread.agent_id, thread.user_id)
        if scopes[entry_id] != expected:
            found.vector_problems.append(
                f"entry {entry_id}: vector scoped {scopes[entry_id]}, thread is {expected}"
            )
    for source_id in sorted(set(copies) - set(entries)):
        found.vector_problems.append(f"a vector of {source_id}, which no answer acknowledged")
