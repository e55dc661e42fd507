"""``MemoryCascade``: forgetting, redacting and rewinding, with what stands on the entries.

What memory derives from a conversation keeps the entries it stands on (the evidence of
items, a compaction's first kept entry and atoms, a memory file version's place, a fork's
copies). The cascade follows that lineage when entries go, so nothing derived from a turn
outlives the turn:

- ``delete_entries`` / ``redact_entries``: the entries, the replies of the user messages
  among them (``cascade.replies``), their copies in forks and forks of forks
  (``cascade.forks``), and the compaction summaries that cover or quote any of them
  (``compaction.coverage``). Events are deleted, never redacted. What the stores derived
  from them goes through the dependents (``dependents.forget_entries``).
- ``delete_thread``: the thread whole, the copies of its entries in its forks, and the
  memory of its own scope (``cascade.scopes``).
- ``delete_user``: every thread of the user, the user's messages in threads of others that
  list the user (``metadata.memoryUserIds``) with their replies, the user's scope in every
  agent, the user's vectors and channel sessions, and their traces (``cascade.traces``).
- ``rewind``: nothing is deleted; the items that stood only on the entries left behind
  become stale, before the thread moves.

Order and transactions: each batch (one thread with the copies in its forks; one agent of a
forgotten user's scope) is one transaction, which takes what stands on the entries out
first and then the entries, so a cascade killed or failed part of the way leaves every
batch done or not begun, and run again (``missing_ok=True`` for ids that went) finishes the
rest. Once the entries went, the cascade looks again for what stands on them (a vector
written by a task meanwhile), in a transaction of its own.

Grants: a caller reaches only what its grants reach: an entry or thread they do not reach
answers as a missing one (``EntryNotFound``, ``ThreadNotFound``), and forgetting a user of
an agent they are not granted raises ``NoGrant``. What is derived from what they reach
(copies in forks, items, summaries) goes with it wherever it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from cogitator_memory import dependents, policy
from cogitator_memory.background import Work
from cogitator_memory.cascade.forks import copies_in, forks_of
from cogitator_memory.cascade.preview import previewing
from cogitator_memory.cascade.replies import EntryRow, entry_rows, replies_of
from cogitator_memory.cascade.report import CascadeReport
from cogitator_memory.cascade.scopes import (
    agents_with_data,
    forget_thread_scope,
    forget_user_scope,
)
from cogitator_memory.cascade.summaries import compact_again_after_commit, summaries_standing_on
from cogitator_memory.cascade.traces import (
    forget_admin_log,
    forget_cached_corpora_after_commit,
    forget_task_results_after_commit,
    thread_corpora,
    vacuum_after_commit,
)
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import EmbeddingFilter
from cogitator_memory.exceptions import EntryNotFound, InvalidInput, NoGrant, ThreadNotFound
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.grants import MEMORY_USERS_KEY, USER_ID_KEY, Grants, memory_users
from cogitator_memory.items.models import (
    Entity,
    Evidence,
    ExtractionRun,
    ExtractionWindow,
    ItemStatus,
    MemoryItem,
)
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.jsondata import storable_text
from cogitator_memory.keywords.cache import clear_cache
from cogitator_memory.keywords.models import KeywordCorpus, KeywordPosting, KeywordTerm
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads import services as thread_services
from cogitator_memory.threads.locking import lock_thread
from cogitator_memory.threads.models import Entry, EntryType, Role, Thread, ThreadUser
from cogitator_memory.threads.paths import walk_ids_until
from cogitator_memory.threads.selectors import entry_in_thread
from cogitator_memory.threads.validation import validate_text

__all__ = ["REWOUND", "MemoryCascade", "Progress"]

Progress = Callable[[int, int], None]
"""``progress(done, total)``: batches of a cascade over a user done, of all it found."""

REWOUND = "rewound"
# Ids per statement (SQLite bounds the parameters of one), and per call of the dependents.
IDS_PER_QUERY = 500
IDS_PER_FORGET = 5000
# Statuses a rewind marks stale; stale and let-go items stay as they are.
STANDING_STATUSES = (ItemStatus.SUGGESTED, ItemStatus.ACTIVE, ItemStatus.SUPERSEDED)
# The tables a cascade over a user empties the most (vacuumed after it on PostgreSQL).
USER_TABLES: tuple[type[Model], ...] = (
    Thread,
    ThreadUser,
    Entry,
    MemoryItem,
    Evidence,
    Entity,
    MemoryFileVersion,
    MemoryFileHead,
    Embedding,
    KeywordCorpus,
    KeywordTerm,
    KeywordPosting,
    ChannelSession,
    CompactionRun,
    ExtractionRun,
    ExtractionWindow,
)


@dataclass(frozen=True)
class Redaction:
    at: datetime
    reason: str | None


@dataclass
class ThreadChange:
    """What a cascade does to one thread: entries to delete (events, and every entry when
    deleting), entries to redact, summaries to delete, and every id it looked at (whose
    copies in forks it follows)."""

    thread_id: str
    delete: list[str] = field(default_factory=list)
    redact: list[str] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    considered: list[str] = field(default_factory=list)

    @property
    def gone(self) -> list[str]:
        return [*self.delete, *self.redact, *self.summaries]


def _chunks(ids: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(ids), IDS_PER_QUERY):
        yield list(ids[start : start + IDS_PER_QUERY])


def _ids(value: Any, field_name: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInput({field_name: "A list of ids is expected."})
    ids = list(value)
    if not all(isinstance(item, str) for item in ids):
        raise InvalidInput({field_name: "Every id is a text."})
    return list(dict.fromkeys(ids))


class MemoryCascade:
    """Forgets, redacts and rewinds with what stands on the entries. ``grants``: who
    asks (None: trusted code, which reaches everything)."""

    def __init__(
        self,
        grants: Grants | None = None,
        *,
        items: MemoryItems | None = None,
        clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.grants = grants
        self.items = items or MemoryItems()
        self.clock = clock

    # --- entries -------------------------------------------------------------------------

    def delete_entries(
        self, entry_ids: Iterable[str], *, keep_replies: bool = False, missing_ok: bool = False
    ) -> CascadeReport:
        """Delete these entries, the replies of the user messages among them (unless
        ``keep_replies``), their copies in forks, and what stands on all of them.

        Raises ``EntryNotFound`` for an id of no entry, or of one the grants do not reach
        (nothing is changed then); with ``missing_ok`` such ids are skipped, which is how
        a cascade that stopped part of the way is run again."""
        return self._entries(entry_ids, None, keep_replies=keep_replies, missing_ok=missing_ok)

    def redact_entries(
        self,
        entry_ids: Iterable[str],
        *,
        reason: str | None = None,
        at: datetime | None = None,
        keep_replies: bool = False,
        missing_ok: bool = False,
    ) -> CascadeReport:
        """Redact these entries and the replies of the user messages among them (unless
        ``keep_replies``), and their copies in forks: each keeps its place and loses what
        it said (``threads.services.redact_entry``). Events among them are deleted, not
        redacted, and listed in ``entries.deleted``. What stands on them goes.
        ``EntryNotFound`` and ``missing_ok`` as for ``delete_entries``."""
        validate_text(reason, "reason", max_length=1000)
        if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
            raise InvalidInput({"at": "at must be a datetime with a time zone."})
        redaction = Redaction(at=at or self.clock(), reason=reason)
        return self._entries(entry_ids, redaction, keep_replies=keep_replies, missing_ok=missing_ok)

    def _entries(
        self,
        entry_ids: Iterable[str],
        redaction: Redaction | None,
        *,
        keep_replies: bool,
        missing_ok: bool,
    ) -> CascadeReport:
        ids = _ids(entry_ids, "entry_ids")
        rows = {row.id: row for row in entry_rows([i for i in ids if storable_text(i)])}
        threads = {row.thread_id for row in rows.values()}
        reachable = self._reachable_threads(threads)
        by_thread: dict[str, list[str]] = {}
        for entry_id in ids:
            row = rows.get(entry_id)
            if row is None or row.thread_id not in reachable:
                if missing_ok:
                    continue
                raise EntryNotFound(entry_id)
            by_thread.setdefault(row.thread_id, []).append(entry_id)
        report = CascadeReport()
        gone: list[str] = []
        for thread_id, targets in by_thread.items():
            with transaction.atomic():
                try:
                    lock_thread(thread_id, grants=self.grants)
                except ThreadNotFound:
                    if missing_ok:
                        continue
                    raise EntryNotFound(targets[0]) from None
                changes = self._plan_tree(
                    thread_id,
                    entry_rows(targets, thread_id=thread_id),
                    redact=redaction is not None,
                    keep_replies=keep_replies,
                )
                gone.extend(self._apply(changes, redaction, report))
        self._look_again(gone, report)
        return report

    def _reachable_threads(self, thread_ids: Iterable[str]) -> set[str]:
        wanted = sorted(set(thread_ids))
        if self.grants is None:
            return set(wanted)
        return set(
            Thread.objects.filter(pk__in=wanted)
            .visible_to(self.grants)
            .values_list("pk", flat=True)
        )

    # --- planning --------------------------------------------------------------------------

    def _plan_thread(
        self, thread_id: str, targets: Sequence[EntryRow], *, redact: bool, keep_replies: bool
    ) -> ThreadChange:
        """What goes of one thread: the targets, their replies, the summaries on them."""
        change = ThreadChange(thread_id)
        if not targets:
            return change
        replies = [] if keep_replies else replies_of(targets)
        rows = list({row.id: row for row in [*targets, *replies]}.values())
        # A redacted entry lost its text already: only what still says something goes.
        live = [row for row in rows if not redact or row.is_event or not row.redacted]
        taken = {row.id for row in rows}
        summaries = [
            summary
            for summary in summaries_standing_on(thread_id, [row.id for row in live])
            if summary not in taken
        ]
        change.delete = [row.id for row in live if not redact or row.is_event]
        change.redact = [row.id for row in live if redact and not row.is_event]
        change.summaries = summaries
        change.considered = [*taken, *summaries]
        return change

    def _plan_tree(
        self,
        thread_id: str,
        targets: Sequence[EntryRow],
        *,
        redact: bool,
        keep_replies: bool,
        visited: set[str] | None = None,
    ) -> list[ThreadChange]:
        """The changes of a thread and, through the copies of what goes, of its forks and
        their forks (each fork locked as it is reached). The thread is locked already."""
        changes: list[ThreadChange] = []
        seen = visited if visited is not None else {thread_id}
        seen.add(thread_id)
        queue: list[tuple[str, Sequence[EntryRow]]] = [(thread_id, targets)]
        while queue:
            current, rows = queue.pop(0)
            change = self._plan_thread(current, rows, redact=redact, keep_replies=keep_replies)
            if change.gone:
                changes.append(change)
            if not change.considered:
                continue
            queue.extend(self._forks_to_follow(current, change.considered, seen))
        return changes

    def _forks_to_follow(
        self, thread_id: str, original_ids: Sequence[str], seen: set[str]
    ) -> list[tuple[str, list[EntryRow]]]:
        """The forks of the thread (not seen yet) holding copies of these entries, each
        locked, with the copies."""
        found: list[tuple[str, list[EntryRow]]] = []
        for fork_id in forks_of(thread_id):
            if fork_id in seen:
                continue
            seen.add(fork_id)
            try:
                # Copies are derived from what the caller reaches: they go wherever they are.
                lock_thread(fork_id)
            except ThreadNotFound:
                continue
            copies = copies_in(fork_id, original_ids)
            if copies:
                found.append((fork_id, copies))
        return found

    # --- applying ----------------------------------------------------------------------------

    def _forget(self, entry_ids: Sequence[str], report: CascadeReport) -> None:
        for start in range(0, len(entry_ids), IDS_PER_FORGET):
            report.add_forgotten(
                dependents.forget_entries(list(entry_ids[start : start + IDS_PER_FORGET]))
            )

    @staticmethod
    def _items_on(entry_ids: Sequence[str]) -> set[str]:
        items: set[str] = set()
        for chunk in _chunks(entry_ids):
            items.update(Evidence.objects.of_entries(chunk).values_list("item_id", flat=True))
        return items

    def _apply(
        self,
        changes: Sequence[ThreadChange],
        redaction: Redaction | None,
        report: CascadeReport,
        *,
        also_gone: Sequence[str] = (),
    ) -> list[str]:
        """Carry the changes out in the open transaction: what stands on every entry that
        goes first (``also_gone``: entries the caller deletes itself, a whole thread's),
        then the redactions and the deletions. Returns the ids of the entries gone."""
        gone = [entry_id for change in changes for entry_id in change.gone]
        every = [*gone, *also_gone]
        if not every:
            return []
        items_before = self._items_on(every)
        self._forget(every, report)
        for change in changes:
            for entry_id in change.redact:
                assert redaction is not None
                thread_services.redact_entry(entry_id, at=redaction.at, reason=redaction.reason)
            deleted = [*change.delete, *change.summaries]
            if deleted:
                report.add_forgotten(thread_services.delete_entries(change.thread_id, deleted))
            report.entries.deleted.extend(change.delete)
            report.entries.redacted.extend(change.redact)
            report.summaries.extend(change.summaries)
            report.admin_log_entries += forget_admin_log(Entry, deleted)
            report.note_thread_changed(change.thread_id)
        purged = self._gone_items(items_before)
        report.admin_log_entries += forget_admin_log(MemoryItem, purged)
        touched = [change.thread_id for change in changes]
        forget_cached_corpora_after_commit(thread_corpora(touched))
        recompact = [change.thread_id for change in changes if change.summaries]
        for thread_id in compact_again_after_commit(recompact):
            if thread_id not in report.recompacting:
                report.recompacting.append(thread_id)
        return every

    @staticmethod
    def _gone_items(candidates: Iterable[str]) -> list[str]:
        wanted = sorted(candidates)
        standing: set[str] = set()
        for chunk in _chunks(wanted):
            standing.update(MemoryItem.objects.filter(pk__in=chunk).values_list("pk", flat=True))
        return [item_id for item_id in wanted if item_id not in standing]

    def _look_again(self, entry_ids: Sequence[str], report: CascadeReport) -> None:
        """Once the entries went, take out what was derived from them meanwhile (a vector
        a task wrote between the first look and the deletion), each chunk in a
        transaction of its own."""
        for chunk in _chunks(list(dict.fromkeys(entry_ids))):
            with transaction.atomic():
                self._forget(chunk, report)

    # --- threads -------------------------------------------------------------------------------

    def delete_thread(self, thread_id: str, *, missing_ok: bool = False) -> CascadeReport:
        """Delete a thread whole: its entries and what stands on them, the copies of its
        entries in its forks (with their replies there), the items of its scope and the
        memory files kept for it alone (redacted, their files deleted), its sessions and
        its jobs of record (and their Celery results).

        Raises ``ThreadNotFound`` for a thread that is gone or the grants do not reach;
        with ``missing_ok`` that is a cascade with nothing to do."""
        report = CascadeReport()
        gone = self._thread_batch(thread_id, report, missing_ok=missing_ok)
        self._look_again(gone, report)
        return report

    def _thread_batch(
        self, thread_id: str, report: CascadeReport, *, missing_ok: bool
    ) -> list[str]:
        """Delete one thread in one transaction; returns the ids of the entries gone."""
        if not storable_text(thread_id):
            if missing_ok:
                return []
            raise ThreadNotFound(str(thread_id))
        with transaction.atomic():
            try:
                thread = lock_thread(thread_id, grants=self.grants)
            except ThreadNotFound:
                if missing_ok:
                    return []
                raise
            entry_ids = list(Entry.objects.of_thread(thread.pk).values_list("pk", flat=True))
            seen = {thread.pk}
            changes: list[ThreadChange] = []
            for fork_id, copies in self._forks_to_follow(thread.pk, entry_ids, seen):
                changes.extend(
                    self._plan_tree(fork_id, copies, redact=False, keep_replies=False, visited=seen)
                )
            runs = [
                *((Work.COMPACT_THREAD, pk) for pk in _runs_of(CompactionRun, thread.pk)),
                *((Work.EXTRACT_THREAD, pk) for pk in _runs_of(ExtractionRun, thread.pk)),
            ]
            sessions = list(
                ChannelSession.objects.filter(thread_id=thread.pk).values_list("pk", flat=True)
            )
            corpora = thread_corpora([thread.pk])
            gone = self._apply(changes, None, report, also_gone=entry_ids)
            forget_thread_scope(thread, report, items=self.items)
            thread_services.delete_thread(thread.pk)
            report.note_thread_deleted(thread.pk)
            report.entries.deleted.extend(entry_ids)
            report.runs += len(runs)
            report.sessions += len(sessions)
            report.admin_log_entries += (
                forget_admin_log(Thread, [thread.pk])
                + forget_admin_log(Entry, entry_ids)
                + forget_admin_log(ChannelSession, sessions)
                + forget_admin_log(
                    CompactionRun, [pk for work, pk in runs if work is Work.COMPACT_THREAD]
                )
                + forget_admin_log(
                    ExtractionRun, [pk for work, pk in runs if work is Work.EXTRACT_THREAD]
                )
            )
            forget_task_results_after_commit(runs, report)
            forget_cached_corpora_after_commit(corpora)
        return gone

    # --- users ---------------------------------------------------------------------------------

    def delete_user(
        self,
        user_id: str,
        *,
        agent_ids: Iterable[str] | None = None,
        progress: Progress | None = None,
        report: CascadeReport | None = None,
    ) -> CascadeReport:
        """Forget a user in these agents (None: every agent the grants reach; every agent
        for trusted code):

        - every thread whose user is the user, whole (``delete_thread`` each);
        - the messages the user wrote (``metadata.userId`` of a user message) in threads of
          others that list the user in ``metadata.memoryUserIds``, with their replies and
          copies, and the user taken off the list;
        - the items, entities and memory files of every scope of the user;
        - the vectors whose user is the user, the user's channel sessions, the admin log
          rows, Celery results and cached keyword corpora of what went; on PostgreSQL a
          ``VACUUM`` of the tables it emptied, in the background.

        One transaction per thread and per agent's scope: run again after a failure, it
        goes on where it stopped (and finds nothing once done). ``progress(done, total)``
        is called as batches finish; ``report``, when given, is the report the cascade
        adds to as it goes (a job of record reads it at each step) and returns. Raises
        ``InvalidInput`` for a bad user id and ``NoGrant`` for an agent (or the user) the
        grants do not reach."""
        if not storable_text(user_id) or not user_id or len(user_id) > 255:
            raise InvalidInput({"user_id": "A user id is a non-empty text."})
        agents, every_agent = self._agents_for(user_id, agent_ids)
        own = list(
            Thread.objects.filter(agent_id__in=agents, user_id=user_id)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        listing = ThreadUser.objects.filter(user_id=user_id).values_list("thread_id", flat=True)
        others_all = (
            Thread.objects.filter(pk__in=list(listing), agent_id__in=agents)
            .exclude(user_id=user_id)
            .order_by("pk")
        )
        others = list(
            (others_all if self.grants is None else others_all.visible_to(self.grants)).values_list(
                "pk", flat=True
            )
        )
        report = report if report is not None else CascadeReport()
        report.threads_out_of_reach = others_all.count() - len(others)
        total = len(own) + len(others) + len(agents) + 1
        done = 0

        def tick() -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(done, total)

        if progress is not None:
            progress(0, total)
        gone: list[str] = []
        for thread_id in own:
            gone.extend(self._thread_batch(thread_id, report, missing_ok=True))
            tick()
        for thread_id in others:
            gone.extend(self._messages_of_user_batch(thread_id, user_id, report))
            tick()
        for agent_id in agents:
            with transaction.atomic():
                forget_user_scope(agent_id, user_id, report, items=self.items)
            tick()
        with transaction.atomic():
            self._user_traces(user_id, agents, every_agent, report)
        self._look_again(gone, report)
        if not report.is_empty():
            vacuum_after_commit(USER_TABLES)
        tick()
        return report

    def _agents_for(self, user_id: str, agent_ids: Iterable[str] | None) -> tuple[list[str], bool]:
        """The agents to forget the user in, and whether they are every agent."""
        if agent_ids is not None:
            agents = _ids(agent_ids, "agent_ids")
            for agent_id in agents:
                policy.require_write(self.grants, agent_id, user_id, user_field="user_id")
            return agents, False
        if self.grants is None or self.grants.agent_ids is None:
            return agents_with_data(), True
        granted = sorted(self.grants.agent_ids)
        agents = [agent_id for agent_id in granted if self.grants.allows(agent_id, user_id)]
        if not agents:
            raise NoGrant(
                granted[0] if granted else "",
                user_id,
                agent_granted=bool(granted),
                user_field="user_id",
            )
        return agents, False

    def _messages_of_user_batch(
        self, thread_id: str, user_id: str, report: CascadeReport
    ) -> list[str]:
        """Delete the user's messages (and replies, and copies) in a thread of another,
        and take the user off its ``memoryUserIds``, in one transaction."""
        with transaction.atomic():
            try:
                thread = lock_thread(thread_id, grants=self.grants)
            except ThreadNotFound:
                return []
            said = Entry.objects.filter(
                thread_id=thread.pk,
                role=Role.USER,
                type=EntryType.MESSAGE,
                **{f"metadata__{USER_ID_KEY}": user_id},
            ).values_list("pk", flat=True)
            changes = self._plan_tree(
                thread.pk,
                entry_rows(list(said), thread_id=thread.pk),
                redact=False,
                keep_replies=False,
            )
            gone = self._apply(changes, None, report)
            listed = memory_users(thread.metadata)
            if user_id in listed:
                metadata = dict(thread.metadata or {})
                kept = [user for user in listed if user != user_id]
                if kept:
                    metadata[MEMORY_USERS_KEY] = kept
                else:
                    metadata.pop(MEMORY_USERS_KEY, None)
                thread_services.update_thread(thread.pk, metadata, replace=True)
                report.note_thread_changed(thread.pk)
        return gone

    def _user_traces(
        self, user_id: str, agents: Sequence[str], every_agent: bool, report: CascadeReport
    ) -> None:
        """The user's vectors (of every agent, or of those given), channel sessions, and
        every cached keyword corpus of this process."""
        store = get_embedding_store()
        # A store outside the database is changed at once, not rolled back: a dry run
        # (cascade.preview) leaves its vectors alone, and does not count them.
        filters = (
            []
            if not store.transactional and previewing()
            else [EmbeddingFilter(user_id=user_id)]
            if every_agent
            else [EmbeddingFilter(agent_id=agent_id, user_id=user_id) for agent_id in agents]
        )
        for vector_filter in filters:
            report.vectors += store.delete_by_filter(vector_filter)
        sessions = ChannelSession.objects.filter(user_id=user_id, agent_id__in=list(agents))
        session_ids = list(sessions.values_list("pk", flat=True))
        for chunk in _chunks(session_ids):
            report.sessions += ChannelSession.objects.filter(pk__in=chunk).delete()[0]
            report.admin_log_entries += forget_admin_log(ChannelSession, chunk)
        transaction.on_commit(clear_cache)

    # --- rewind --------------------------------------------------------------------------------

    def rewind(self, thread_id: str, to_entry_id: str) -> CascadeReport:
        """Move the thread's active leaf back to ``to_entry_id`` and mark stale the items
        that stood only on the entries left behind (``stale_because``: ``{"reason":
        "rewound", "threadId", "toEntryId", "at"}``), before the thread moves, in one
        transaction: a rewind refused leaves them as they were. Nothing is deleted; a
        thread at ``to_entry_id`` already is left as it is. Checking the left branch out
        again restores nothing: the items stay stale until a reviewer activates them.

        Raises ``ThreadNotFound``, ``EntryNotInThread`` and ``NotOnActiveBranch``."""
        report = CascadeReport()
        with transaction.atomic():
            thread = lock_thread(thread_id, grants=self.grants)
            target = entry_in_thread(to_entry_id, thread.pk, field="to_entry_id")
            if thread.active_leaf_id == target.pk:
                return report
            walked = (
                walk_ids_until(thread.active_leaf_id, target.pk)
                if thread.active_leaf_id is not None
                else []
            )
            if walked and walked[-1] == target.pk:
                left = walked[:-1]
                stale = self.items.mark_stale(
                    self._items_only_on(left),
                    {"reason": REWOUND, "threadId": thread.pk, "toEntryId": target.pk},
                    only_from=STANDING_STATUSES,
                    grants=self.grants,
                )
                report.items.stale += len(stale)
            # Refuses (NotOnActiveBranch) a target off the active branch: nothing changed.
            thread_services.rewind(thread.pk, target.pk, grants=self.grants)
            report.note_thread_changed(thread.pk)
        return report

    @staticmethod
    def _items_only_on(entry_ids: Sequence[str]) -> list[str]:
        """The items every quote of which is in these entries."""
        left = set(entry_ids)
        candidates: set[str] = set()
        for chunk in _chunks(list(entry_ids)):
            candidates.update(Evidence.objects.of_entries(chunk).values_list("item_id", flat=True))
        quotes: dict[str, set[str | None]] = {}
        for chunk in _chunks(sorted(candidates)):
            for item_id, entry_id in Evidence.objects.filter(item_id__in=chunk).values_list(
                "item_id", "entry_id"
            ):
                quotes.setdefault(item_id, set()).add(entry_id)
        return sorted(item for item, entries in quotes.items() if entries <= left)


def _runs_of(model: type[CompactionRun] | type[ExtractionRun], thread_id: str) -> list[str]:
    return list(model.objects.filter(thread_id=thread_id).values_list("pk", flat=True))
