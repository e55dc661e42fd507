"""Deleting and redacting entries, with what stands on them (``EntryCascade``): the
replies of the user messages among them, their copies in forks and forks of forks, the
compaction summaries that cover or quote them, and, through the dependents, what every
store derived from them. Each thread's batch is one transaction: derived memory first,
then the entries; then a second look for what was written meanwhile."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from cogitator_memory import dependents
from cogitator_memory.cascade.forks import copies_in, forks_of
from cogitator_memory.cascade.plans import (
    IDS_PER_FORGET,
    Redaction,
    ThreadChange,
    chunks,
    ids_of,
)
from cogitator_memory.cascade.replies import EntryRow, entry_rows, replies_of
from cogitator_memory.cascade.report import CascadeReport
from cogitator_memory.cascade.summaries import compact_again_after_commit, summaries_standing_on
from cogitator_memory.cascade.traces import (
    forget_admin_log,
    forget_cached_corpora_after_commit,
    thread_corpora,
)
from cogitator_memory.exceptions import EntryNotFound, InvalidInput, ThreadNotFound
from cogitator_memory.grants import Grants
from cogitator_memory.items.models import (
    Evidence,
    MemoryItem,
)
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.jsondata import storable_text
from cogitator_memory.threads import services as thread_services
from cogitator_memory.threads.locking import lock_thread
from cogitator_memory.threads.models import Entry, Thread
from cogitator_memory.threads.validation import validate_text


class EntryCascade:
    """Deletes and redacts entries with what stands on them (their replies, their copies
    in forks, the summaries that cover or quote them, what the stores derived), and holds
    what every part of ``MemoryCascade`` shares. ``grants``: who asks (None: trusted code,
    which reaches everything)."""

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
        ids = ids_of(entry_ids, "entry_ids")
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
        for chunk in chunks(entry_ids):
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
        for chunk in chunks(wanted):
            standing.update(MemoryItem.objects.filter(pk__in=chunk).values_list("pk", flat=True))
        return [item_id for item_id in wanted if item_id not in standing]

    def _look_again(self, entry_ids: Sequence[str], report: CascadeReport) -> None:
        """Once the entries went, take out what was derived from them meanwhile (a vector
        a task wrote between the first look and the deletion), each chunk in a
        transaction of its own."""
        for chunk in chunks(list(dict.fromkeys(entry_ids))):
            with transaction.atomic():
                self._forget(chunk, report)

    # --- threads -------------------------------------------------------------------------------
