"""``MemoryConsolidator``: between runs, it looks over one scope's memory.

``dedupe`` shows a model the active items of exactly one scope, one subject (entity) at a
time, and marks stale, never deletes, the items the model finds to repeat or contradict
another one, once code has checked every group (``upkeep.dedupe_checks``). The playbook
(folding lessons into ``/memories/playbook.md``) is ``upkeep.playbook``'s.

Subjects are visited oldest first by the newest active item each has, so a pass that a
cap or an unfinished answer stops returns ``through``: every subject whose newest item
was recorded up to then has been looked at, and a later pass goes on ``since`` it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from cogitator_memory.exceptions import InvalidConsolidation
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.limits import is_whole_number
from cogitator_memory.llm.protocol import Summarize
from cogitator_memory.upkeep.dedupe_checks import Drop, Reason, checked_drops
from cogitator_memory.upkeep.dedupe_prompt import (
    DEDUPE_MAX_TOKENS,
    DEDUPE_PROMPT,
    dedupe_message,
    read_dedupe_answer,
)
from cogitator_memory.upkeep.playbook import (
    FoldResult,
    PlaybookFile,
    fold_lessons,
    promote_playbook,
    read_playbook,
    read_playbook_draft,
)

__all__ = ["MAX_SUBJECT_ITEMS", "DedupeResult", "MemoryConsolidator", "StaleMark"]

# The items of one subject shown in one call, newest first: a subject with more is seen
# by its newest, where a repeat of an older statement shows up, and the prompt stays
# within a model's context.
MAX_SUBJECT_ITEMS = 100


@dataclass(frozen=True)
class StaleMark:
    """An item marked stale, the item kept in its place, and why."""

    item_id: str
    kept_id: str
    reason: Reason


@dataclass(frozen=True)
class DedupeResult:
    """What a dedupe did: the items it marked stale; whether it looked at every subject
    (False when a cap or an unfinished answer stopped it); ``through``: every subject
    whose newest active item was recorded up to it has been looked at (None when none
    was and no ``since`` was given); and how many times it asked the model."""

    stale: list[StaleMark]
    complete: bool
    through: datetime | None
    model_calls: int


@dataclass(frozen=True)
class _Subject:
    subject_id: str
    newest: datetime


def _check_arguments(
    scope: Any, since: Any, max_changes: Any, max_subjects: Any, summarize: Any
) -> None:
    errors: dict[str, str] = {}
    if not isinstance(scope, MemoryScope):
        errors["scope"] = "Give a MemoryScope."
    if since is not None and (not isinstance(since, datetime) or timezone.is_naive(since)):
        errors["since"] = "Must be a datetime with a time zone, or None."
    for name, value in (("max_changes", max_changes), ("max_subjects", max_subjects)):
        if not is_whole_number(value, minimum=1):
            errors[name] = f"Must be a whole number of 1 or more, not {value!r}."
    if not callable(summarize):
        errors["summarize"] = "Give a model client (a Summarize callable)."
    if errors:
        raise InvalidConsolidation(errors)


class MemoryConsolidator:
    """Consolidation of one scope's memory between runs (see the module docstring).
    ``items`` and ``files`` are the services it writes through; ``clock`` gives "now"."""

    def __init__(
        self,
        items: MemoryItems | None = None,
        files: MemoryFiles | None = None,
        clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.clock = clock
        self.items = items if items is not None else MemoryItems(clock=clock)
        self.files = files if files is not None else MemoryFiles(clock=clock)

    # --- dedupe ----------------------------------------------------------------------------

    def dedupe(
        self,
        scope: MemoryScope,
        *,
        summarize: Summarize,
        since: datetime | None = None,
        max_changes: int = 10,
        max_subjects: int = 10,
    ) -> DedupeResult:
        """Ask the model, subject by subject, which active items of exactly ``scope``
        repeat or contradict another one, and mark those that pass the checks stale
        (``MemoryItems.mark_stale``, only from active, with ``reason``, ``kept`` and the
        model's ``note`` in ``stale_because``). With ``since``, only subjects with an item
        recorded after it. At most ``max_subjects`` subjects asked and ``max_changes``
        items marked; an unfinished answer stops the pass before its subject.

        Raises ``InvalidConsolidation`` for bad arguments and ``LLMError`` when the model
        fails (what earlier subjects marked stays marked). Returns a ``DedupeResult``."""
        _check_arguments(scope, since, max_changes, max_subjects, summarize)
        subjects = self._subjects(scope, since, limit=max_subjects + 1)
        marks: list[StaleMark] = []
        calls = 0
        done: list[_Subject] = []
        stopped_at: _Subject | None = None
        for subject in subjects:
            if len(done) == max_subjects or len(marks) == max_changes:
                stopped_at = subject
                break
            shown = self._shown_items(scope, subject.subject_id)
            if len(shown) < 2:
                done.append(subject)
                continue
            calls += 1
            completion = summarize(
                [{"role": "user", "content": dedupe_message(shown[0].subject, shown)}],
                prompt=DEDUPE_PROMPT,
                max_tokens=DEDUPE_MAX_TOKENS,
            )
            answer = read_dedupe_answer(completion.text, truncated=completion.truncated)
            if not answer.finished:
                stopped_at = subject
                break
            drops = checked_drops(answer.groups, shown)
            room = max_changes - len(marks)
            marks += self._mark(scope, drops[:room])
            if len(drops) > room:
                # Marked only in part: the rest of this subject is for the next pass.
                stopped_at = subject
                break
            done.append(subject)
        return DedupeResult(
            stale=marks,
            complete=stopped_at is None,
            through=self._through(since, done, stopped_at),
            model_calls=calls,
        )

    # --- the playbook (``upkeep/playbook.py``) -----------------------------------------

    def fold_lessons(
        self, scope: MemoryScope, *, summarize: Summarize, mode: str = "apply"
    ) -> FoldResult | None:
        """Fold the scope's new active lessons into its playbook (``mode="shadow"``: into
        its draft); None when nothing was folded. See ``playbook.fold_lessons``."""
        return fold_lessons(
            scope,
            summarize=summarize,
            mode=mode,
            items=self.items,
            files=self.files,
            clock=self.clock,
        )

    def read_playbook(self, scope: MemoryScope) -> PlaybookFile | None:
        """The file at ``PLAYBOOK_PATH`` of exactly the scope (never a model's version)."""
        return read_playbook(scope)

    def read_playbook_draft(self, scope: MemoryScope) -> PlaybookFile | None:
        """The draft at ``PLAYBOOK_DRAFT_PATH``, if one stands."""
        return read_playbook_draft(scope)

    def promote_playbook(self, scope: MemoryScope, *, user: object | None = None) -> PlaybookFile:
        """Make the draft the playbook, refused when the playbook changed since the draft
        was made or a model wrote it. Reviews by people go through ``PromotePlaybook``."""
        return promote_playbook(scope, user=user, files=self.files)

    def _subjects(
        self, scope: MemoryScope, since: datetime | None, *, limit: int
    ) -> list[_Subject]:
        """The subjects with at least two active items in exactly ``scope`` (one alone
        repeats nothing), by the newest of those, oldest first; with ``since``, only those
        whose newest came after it. One query on the scope's indexed columns."""
        rows = (
            MemoryItem.objects.of_exact_scope(scope)
            .filter(status=ItemStatus.ACTIVE)
            .values("subject_id")
            .annotate(newest=Max("recorded_at"), held=Count("id"))
            .filter(held__gte=2)
        )
        if since is not None:
            rows = rows.filter(newest__gt=since)
        ordered = rows.order_by("newest", "subject_id")[:limit]
        return [_Subject(row["subject_id"], row["newest"]) for row in ordered]

    @staticmethod
    def _shown_items(scope: MemoryScope, subject_id: str) -> list[MemoryItem]:
        """The active items of one subject in exactly ``scope``, newest first, with their
        subject, in one query. Sorted here, not in SQL: an ORDER BY on when items were
        recorded tempts a planner without statistics (SQLite) into an index by status
        and time, read across every agent, instead of the subject's or the scope's."""
        rows = (
            MemoryItem.objects.of_exact_scope(scope)
            .filter(status=ItemStatus.ACTIVE, subject_id=subject_id)
            .select_related("subject")
        )
        newest_first = sorted(rows, key=lambda item: (item.recorded_at, item.pk), reverse=True)
        return newest_first[:MAX_SUBJECT_ITEMS]

    def _mark(self, scope: MemoryScope, drops: Sequence[Drop]) -> list[StaleMark]:
        """Mark ``drops`` stale, in one transaction, when the item each keeps is still
        active in ``scope`` (a kept item that went meanwhile keeps its duplicates).
        Returns the marks ``mark_stale`` made."""
        if not drops:
            return []
        marks: list[StaleMark] = []
        with transaction.atomic():
            self.items.lock_agents([scope.agent_id])
            kept_ids = {drop.kept_id for drop in drops}
            standing = set(
                MemoryItem.objects.of_exact_scope(scope)
                .filter(status=ItemStatus.ACTIVE, pk__in=kept_ids)
                .values_list("pk", flat=True)
            )
            # One call per group of the answer: its drops share one reason.
            groups: dict[tuple[str, Reason, str], list[str]] = {}
            for drop in drops:
                if drop.kept_id in standing:
                    key = (drop.kept_id, drop.reason, drop.note)
                    groups.setdefault(key, []).append(drop.item_id)
            for (kept_id, reason, note), item_ids in groups.items():
                because: dict[str, Any] = {"reason": reason, "kept": kept_id}
                if note:
                    because["note"] = note
                marked = self.items.mark_stale(item_ids, because, only_from=[ItemStatus.ACTIVE])
                marks += [StaleMark(item_id, kept_id, reason) for item_id in marked]
        return marks

    @staticmethod
    def _through(
        since: datetime | None, done: Sequence[_Subject], stopped_at: _Subject | None
    ) -> datetime | None:
        """The newest moment up to which every subject has been looked at: the newest of
        the subjects done, below that of the subject the pass stopped at (subjects are
        visited in that order, so none up to it is left), else ``since``."""
        looked = [
            subject.newest
            for subject in done
            if stopped_at is None or subject.newest < stopped_at.newest
        ]
        if looked:
            return max(looked) if since is None else max(since, *looked)
        return since
