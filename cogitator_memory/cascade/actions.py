"""The forgettings people and programs ask for, one action class each.

Like a review decision (``review.ReviewAction``), each forgetting the API and the admin
offer is a class that owns everything it is, and the API and the admin only build it with
the request's user, grants and way in (``Via``) and call it:

- **who may**: ``DeleteEntries`` (with their replies), ``RedactEntries``, ``DeleteThread``
  and ``RewindThread`` are writes of a thread: through the API the grants decide, as for
  every other write of a thread (adding entries, changing its metadata), an API key
  included; in the admin each takes a permission of its own (``permission``: Django's
  ``delete_entry`` and ``delete_thread``, ``redact_entry``, ``rewind_thread``).
  ``ForgetUser`` reaches every thread of a person and what memory keeps of them in every
  agent named, so it takes ``forget_user_memory`` everywhere and is refused to API keys:
  a key acts for a program, and forgetting a person is asked for by a person (trusted
  automation calls ``MemoryCascade.delete_user`` in the project's code);
- **the cascade** (``MemoryCascade`` with the caller's grants), and its **dry run**
  (``preview``: the same call rolled back, ``cascade.preview``), whose counts the
  confirmation pages show;
- **the record** (``cascade.audit``): a line in the log, and for a person an admin log
  row, saying what kind of forgetting and how many of each, never what went.

Errors are the typed exceptions: ``ForgetRefused`` (403) for a permission or an API key,
and the cascade's own (``EntryNotFound``, ``ThreadNotFound``, ``NoGrant``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from cogitator_memory.cascade.audit import (
    ADDITION,
    CHANGE,
    DELETION,
    counts_text,
    log_cascade,
    logger,
)
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.cascade.preview import dry_run
from cogitator_memory.cascade.report import CascadeReport, counted_lines
from cogitator_memory.cascade.runs import (
    check_agent_ids,
    check_user_id,
    forget_agents,
    request_forget,
)
from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.exceptions import ForgetRefused, InvalidInput
from cogitator_memory.grants import Grants
from cogitator_memory.jsondata import storable_text
from cogitator_memory.review import Via
from cogitator_memory.threads.models import Entry, Thread

__all__ = [
    "FORGET_PERMISSION",
    "CascadeAction",
    "DeleteEntries",
    "DeleteThread",
    "ForgetUser",
    "Preview",
    "RedactEntries",
    "RewindThread",
]

FORGET_PERMISSION = "cogitator_memory.forget_user_memory"
IDS_PER_QUERY = 500


@dataclass(frozen=True)
class Preview:
    """What a forgetting would do: the report's ``counts`` and, first, its entries told
    apart (``entries``: (label, number) lines, such as the chosen entries, their replies
    and their copies in forks)."""

    counts: dict[str, Any]
    entries: list[tuple[str, int]] = field(default_factory=list)

    def lines(self) -> list[tuple[str, int]]:
        """Every line a confirmation page shows: the entries told apart, then each count
        that is not 0."""
        return [*[line for line in self.entries if line[1]], *counted_lines(self.counts)]

    def is_empty(self) -> bool:
        return not counted_lines(self.counts)


def _threads_of(entry_ids: Sequence[str]) -> dict[str, str]:
    """entry id -> thread id, for the entries of these ids that stand."""
    found: dict[str, str] = {}
    ids = list(dict.fromkeys(entry_ids))
    for start in range(0, len(ids), IDS_PER_QUERY):
        found.update(
            Entry.objects.filter(pk__in=ids[start : start + IDS_PER_QUERY]).values_list(
                "pk", "thread_id"
            )
        )
    return found


def _entries_in(thread_ids: Sequence[str]) -> int:
    ids = list(dict.fromkeys(thread_ids))
    return sum(
        Entry.objects.filter(thread_id__in=ids[start : start + IDS_PER_QUERY]).count()
        for start in range(0, len(ids), IDS_PER_QUERY)
    )


class CascadeAction:
    """One kind of forgetting, asked for by ``user`` (None for an API key) with
    ``grants``, through ``via``; ``api_key``: the key a request authenticated with.

    A subclass sets ``name`` (what the log says it did: ``"deleted entries"``),
    ``permission`` and, when the permission is asked through the API too,
    ``checked_via``; ``refuses_api_keys`` for what only people may ask."""

    name: ClassVar[str]
    permission: ClassVar[str]
    # Where the permission is asked; elsewhere the grants decide.
    checked_via: ClassVar[frozenset[Via]] = frozenset({Via.ADMIN})
    refuses_api_keys: ClassVar[bool] = False

    def __init__(
        self,
        user: Any,
        *,
        grants: Grants,
        via: Via,
        api_key: object | None = None,
        cascade: MemoryCascade | None = None,
    ) -> None:
        self.user = user
        self.grants = grants
        self.via = via
        self.api_key = api_key
        self.cascade = cascade or MemoryCascade(grants=grants)

    # --- who may ---------------------------------------------------------------------------

    @classmethod
    def holds_permission(cls, user: Any) -> bool:
        """Whether ``user`` is an active person holding the action's permission (an
        active superuser holds every one)."""
        return bool(
            user is not None
            and getattr(user, "is_authenticated", False)
            and getattr(user, "is_active", False)
            and user.has_perm(cls.permission)
        )

    def may(self) -> bool:
        """Whether the caller may ask for this forgetting (for showing a button)."""
        try:
            self.check()
        except ForgetRefused:
            return False
        return True

    def check(self) -> None:
        """Raise ``ForgetRefused`` unless the caller may ask for this forgetting."""
        if self.refuses_api_keys and self.api_key is not None:
            raise ForgetRefused(
                f"Only people may ask to {self.name}: an API key acts for a program.",
                permission=self.permission,
            )
        if self.via in self.checked_via and not self.holds_permission(self.user):
            raise ForgetRefused(
                f"You need the permission {self.permission} to {self.name}.",
                permission=self.permission,
            )

    # --- running -------------------------------------------------------------------------

    def _previewed(self, call: Callable[[], CascadeReport]) -> CascadeReport:
        self.check()
        return dry_run(call)

    def _executed(self, call: Callable[[], CascadeReport]) -> CascadeReport:
        self.check()
        report = call()
        logger.info("%s (%s); %s.", self.name, self.via, counts_text(report.counts()))
        return report

    def _said(self, what: str, report: CascadeReport) -> str:
        return f"{what} ({self.via}); {counts_text(report.counts())}"


class _EntriesAction(CascadeAction):
    """Deleting or redacting entries with their replies and copies."""

    def _record(
        self, entry_ids: Sequence[str], threads: dict[str, str], what: str, report: CascadeReport
    ) -> None:
        chosen: dict[str, int] = {}
        for entry_id in entry_ids:
            if entry_id in threads:
                chosen[threads[entry_id]] = chosen.get(threads[entry_id], 0) + 1
        for thread_id, number in chosen.items():
            noun = "entry" if number == 1 else "entries"
            log_cascade(
                self.user,
                Thread,
                thread_id,
                action_flag=CHANGE,
                message=self._said(f"{what} {number} chosen {noun}", report),
            )

    def _preview_of(self, entry_ids: Sequence[str], report: CascadeReport) -> Preview:
        """The entries told apart: those chosen, their replies (in the same threads) and
        their copies in forks (in others)."""
        gone = [*report.entries.deleted, *report.entries.redacted]
        threads = _threads_of(gone)
        chosen = set(entry_ids)
        homes = {threads[entry_id] for entry_id in chosen if entry_id in threads}
        picked = sum(1 for entry_id in gone if entry_id in chosen)
        replies = sum(
            1 for entry_id in gone if entry_id not in chosen and threads.get(entry_id) in homes
        )
        return Preview(
            report.counts(),
            [
                ("chosen entries", picked),
                ("their replies", replies),
                ("copies in forks", len(gone) - picked - replies),
            ],
        )


class DeleteEntries(_EntriesAction):
    """Delete entries, the replies of the user messages among them (unless
    ``keep_replies``) and their copies in forks, with what stands on them."""

    name = "delete entries"
    permission = "cogitator_memory.delete_entry"

    def _call(self, entry_ids: Sequence[str], keep_replies: bool) -> Callable[[], CascadeReport]:
        return lambda: self.cascade.delete_entries(list(entry_ids), keep_replies=keep_replies)

    def preview(self, entry_ids: Iterable[str], *, keep_replies: bool = False) -> Preview:
        ids = list(dict.fromkeys(entry_ids))
        return self._preview_of(ids, self._previewed(self._call(ids, keep_replies)))

    def execute(self, entry_ids: Iterable[str], *, keep_replies: bool = False) -> CascadeReport:
        ids = list(dict.fromkeys(entry_ids))
        threads = _threads_of([i for i in ids if isinstance(i, str) and storable_text(i)])
        report = self._executed(self._call(ids, keep_replies))
        what = "deleted" + ("" if keep_replies else " with their replies")
        self._record(ids, threads, what, report)
        return report


class RedactEntries(_EntriesAction):
    """Redact entries, the replies of the user messages among them (unless
    ``keep_replies``) and their copies in forks; events among them are deleted."""

    name = "redact entries"
    permission = "cogitator_memory.redact_entry"

    def _call(
        self,
        entry_ids: Sequence[str],
        reason: str | None,
        at: datetime | None,
        keep_replies: bool,
    ) -> Callable[[], CascadeReport]:
        return lambda: self.cascade.redact_entries(
            list(entry_ids), reason=reason, at=at, keep_replies=keep_replies
        )

    def preview(
        self,
        entry_ids: Iterable[str],
        *,
        reason: str | None = None,
        at: datetime | None = None,
        keep_replies: bool = False,
    ) -> Preview:
        ids = list(dict.fromkeys(entry_ids))
        report = self._previewed(self._call(ids, reason, at, keep_replies))
        return self._preview_of(ids, report)

    def execute(
        self,
        entry_ids: Iterable[str],
        *,
        reason: str | None = None,
        at: datetime | None = None,
        keep_replies: bool = False,
    ) -> CascadeReport:
        ids = list(dict.fromkeys(entry_ids))
        threads = _threads_of([i for i in ids if isinstance(i, str) and storable_text(i)])
        report = self._executed(self._call(ids, reason, at, keep_replies))
        what = "redacted" + ("" if keep_replies else " with their replies")
        self._record(ids, threads, what, report)
        return report


class DeleteThread(CascadeAction):
    """Delete a thread whole, with the copies of its entries in its forks and the memory
    of its own scope."""

    name = "delete threads"
    permission = "cogitator_memory.delete_thread"

    def preview(self, thread_id: str) -> Preview:
        report = self._previewed(lambda: self.cascade.delete_thread(thread_id))
        total = len(report.entries.deleted)
        own = _entries_in([thread_id])
        return Preview(
            report.counts(),
            [("entries of the thread", own), ("copies in forks", total - own)],
        )

    def execute(self, thread_id: str) -> CascadeReport:
        report = self._executed(lambda: self.cascade.delete_thread(thread_id))
        # After the deletion: the cascade took the log rows about the thread with it.
        log_cascade(
            self.user,
            Thread,
            thread_id,
            action_flag=DELETION,
            message=self._said("deleted the thread", report),
        )
        return report


class RewindThread(CascadeAction):
    """Rewind a thread's active branch: nothing is deleted; the items that stood only on
    the entries left behind become stale."""

    name = "rewind threads"
    permission = "cogitator_memory.rewind_thread"

    def preview(self, thread_id: str, to_entry_id: str) -> Preview:
        report = self._previewed(lambda: self.cascade.rewind(thread_id, to_entry_id))
        return Preview(report.counts())

    def execute(self, thread_id: str, to_entry_id: str) -> CascadeReport:
        report = self._executed(lambda: self.cascade.rewind(thread_id, to_entry_id))
        log_cascade(
            self.user,
            Thread,
            thread_id,
            action_flag=CHANGE,
            message=self._said(f"rewound to entry {to_entry_id}", report),
        )
        return report


class ForgetUser(CascadeAction):
    """Forget a user in some agents (``MemoryCascade.delete_user``), in the background: a
    ``ForgetRun`` per request (``cascade.runs``)."""

    name = "forget a user's memory"
    permission = FORGET_PERMISSION
    checked_via = frozenset(Via)
    refuses_api_keys = True

    def preview(self, user_id: str, agent_ids: Iterable[str] | None = None) -> Preview:
        """What forgetting the user would take, counted (a dry run of the whole cascade,
        which holds its locks for as long as the cascade takes)."""
        self.check()
        agents = forget_agents(user_id, agent_ids, self.grants)
        report = dry_run(lambda: self.cascade.delete_user(user_id, agent_ids=agents))
        own = _entries_in(report.threads)
        return Preview(
            report.counts(),
            [
                ("entries of the user's threads", own),
                ("entries in threads of others", len(report.entries.deleted) - own),
            ],
        )

    def request(
        self, user_id: str, agent_ids: Iterable[str] | None = None, *, confirm: object
    ) -> tuple[ForgetRun, bool]:
        """Start forgetting the user (or join the open run of the same agents). Raises
        ``ForgetRefused``; ``InvalidInput`` for a bad user id or agents, or a ``confirm``
        that is not the user id; ``NoGrant`` and ``UserNotGranted``; ``ForgetRunOpen``."""
        self.check()
        check_user_id(user_id)
        if agent_ids is not None:
            check_agent_ids(agent_ids)
        if confirm != user_id:
            raise InvalidInput(
                {"confirm": "Type the id of the user to forget, exactly, to confirm."}
            )
        run, created = request_forget(
            user_id, agent_ids, grants=self.grants, requested_by=self.user
        )
        if created:
            agents = ", ".join(run.agent_ids) if run.agent_ids is not None else "every agent"
            logger.info("Forget run %s asked for (%s).", run.pk, self.via)
            log_cascade(
                self.user,
                ForgetRun,
                run.pk,
                action_flag=ADDITION,
                message=f"asked to forget user {user_id} in {agents} ({self.via})",
            )
        return run, created
