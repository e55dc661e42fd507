"""Deleting a thread whole (``ThreadCascade``): its entries and what stands on them, the
copies of its entries in its forks, the memory of its own scope, its sessions and its
jobs of record."""

from __future__ import annotations

from django.db import transaction

from cogitator_memory.background import Work
from cogitator_memory.cascade.entries import EntryCascade
from cogitator_memory.cascade.plans import ThreadChange
from cogitator_memory.cascade.report import CascadeReport
from cogitator_memory.cascade.scopes import (
    forget_thread_scope,
)
from cogitator_memory.cascade.traces import (
    forget_admin_log,
    forget_cached_corpora_after_commit,
    forget_task_results_after_commit,
    thread_corpora,
)
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.exceptions import ThreadNotFound
from cogitator_memory.items.models import (
    ExtractionRun,
)
from cogitator_memory.jsondata import storable_text
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads import services as thread_services
from cogitator_memory.threads.locking import lock_thread
from cogitator_memory.threads.models import Entry, Thread


class ThreadCascade(EntryCascade):
    """``delete_thread``."""

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
                *((Work.COMPACT_THREAD, pk) for pk in runs_of(CompactionRun, thread.pk)),
                *((Work.EXTRACT_THREAD, pk) for pk in runs_of(ExtractionRun, thread.pk)),
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


def runs_of(model: type[CompactionRun] | type[ExtractionRun], thread_id: str) -> list[str]:
    return list(model.objects.filter(thread_id=thread_id).values_list("pk", flat=True))
