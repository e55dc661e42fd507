"""Upkeep of a scope in the background, and the sleep-time pass that finds the scopes.

``request_upkeep(scope, work=...)`` queues an ``UpkeepRun`` for the scope (or joins the one
queued for it), published once the transaction commits; the API, the admin and the pass
ask through it. A worker claims the run (``jobs.run_job``) and does ``run_upkeep``:

- ``observations``: ``MemoryObservations.refresh`` (only the entities whose facts changed
  are asked about again: a second run of a scope costs no model call);
- ``consolidation``: ``MemoryConsolidator.dedupe`` from where the scope's last dedupe got
  to (``UpkeepScopeState.dedupe_through``), then ``fold_lessons`` in the mode of
  ``UPKEEP["PLAYBOOK_MODE"]``; a dedupe a cap stopped stores its ``through`` and queues the
  next run of the scope, which goes on from there;
- ``pass``: both, in that order.

``sleep_time_pass()`` (the beat task's work) reads the items recorded, and the items
activated, since it last read, in batches in the order of those times, and requests a
pass for each scope they are in. The cursor (``UpkeepCursor``) moves in the transaction
that queues a batch's runs: a pass stopped between two batches goes on with the next one,
and a scope whose run is still queued is joined, not asked twice. What one pass queues is
bounded by ``UPKEEP["SCOPES_PER_PASS"]``; the next beat goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from cogitator_memory import policy
from cogitator_memory.background import Work
from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import UpkeepRunNotFound
from cogitator_memory.files.models import scope_key
from cogitator_memory.grants import SCOPE_FIELDS, Grants, MemoryScope
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.jobs import (
    JobKind,
    JobRecorder,
    RunStatus,
    job_settings,
    publish_on_commit,
    register_kind,
    tasks_run_eagerly,
)
from cogitator_memory.jsondata import storable_text
from cogitator_memory.llm.protocol import Summarize
from cogitator_memory.llm.registry import get_summarizer, require_summarizer
from cogitator_memory.upkeep.consolidation import MemoryConsolidator
from cogitator_memory.upkeep.observations import MemoryObservations
from cogitator_memory.upkeep.records import (
    UpkeepCursor,
    UpkeepRun,
    UpkeepScopeState,
    UpkeepWork,
)

logger = logging.getLogger(__name__)

__all__ = [
    "UPKEEP_JOBS",
    "PassReport",
    "UpkeepRecorder",
    "UpkeepSettings",
    "get_visible_upkeep_run",
    "register_upkeep_jobs",
    "request_upkeep",
    "run_upkeep",
    "sleep_time_pass",
    "upkeep_settings",
]

# The order the pass reads items in, one cursor each: new items, and items a reviewer
# (or the rules) made active since, as lessons count only once active.
CURSORS: tuple[tuple[str, str], ...] = (("recorded", "recorded_at"), ("activated", "activated_at"))
# A scope whose dedupe a cap stopped goes on this long after.
CONTINUE_AFTER = timedelta(seconds=1)


@dataclass(frozen=True)
class UpkeepSettings:
    enabled: bool
    observations: bool
    consolidation: bool
    playbook_mode: str
    max_entities: int
    min_items: int
    max_changes: int
    max_subjects: int
    items_per_batch: int
    scopes_per_pass: int


def upkeep_settings() -> UpkeepSettings:
    config = memory_settings.UPKEEP
    return UpkeepSettings(
        enabled=bool(config["ENABLED"]),
        observations=bool(config["OBSERVATIONS"]),
        consolidation=bool(config["CONSOLIDATION"]),
        playbook_mode=str(config["PLAYBOOK_MODE"]),
        max_entities=int(config["MAX_ENTITIES"]),
        min_items=int(config["MIN_ITEMS"]),
        max_changes=int(config["MAX_CHANGES"]),
        max_subjects=int(config["MAX_SUBJECTS"]),
        items_per_batch=int(config["ITEMS_PER_BATCH"]),
        scopes_per_pass=int(config["SCOPES_PER_PASS"]),
    )


def key_of(scope: MemoryScope) -> str:
    return scope_key(scope.agent_id, scope.user_id, scope.project_id, scope.thread_id)


# --- asking for upkeep ---------------------------------------------------------------------


def request_upkeep(
    scope: MemoryScope,
    *,
    work: str = UpkeepWork.PASS,
    grants: Grants | None = None,
    requested_by: Any = None,
    delay: timedelta | None = None,
) -> tuple[UpkeepRun, bool]:
    """Queue upkeep of ``work`` on the scope, or join the run of that work queued for it.
    Published once the transaction commits. Returns ``(run, created)``. Raises
    ``NoGrant`` for a scope the caller's grants do not reach."""
    policy.require_write(grants, scope.agent_id, scope.user_id, user_field="user_id")
    key = key_of(scope)
    now = timezone.now()
    run_after = now if delay is None or tasks_run_eagerly() else now + delay
    with transaction.atomic():
        queued = _queued(key, work)
        if queued is not None:
            if _stalled(queued, now):
                publish_on_commit(UpkeepRun, [queued.pk])
            return queued, False
        try:
            with transaction.atomic():
                run = UpkeepRun.objects.create(
                    **scope.as_fields(),
                    scope_key=key,
                    work=work,
                    requested_by=requested_by,
                    run_after=run_after,
                )
        except IntegrityError:
            joined = _queued(key, work)
            if joined is None:
                raise
            return joined, False
        publish_on_commit(UpkeepRun, [run.pk])
    return run, True


def _queued(key: str, work: str) -> UpkeepRun | None:
    return UpkeepRun.objects.filter(scope_key=key, work=work, status=RunStatus.QUEUED).first()


def _stalled(run: UpkeepRun, now: datetime) -> bool:
    if run.run_after > now:
        return False
    republish = job_settings().republish_after
    return run.published_at is None or run.published_at <= now - republish


def get_visible_upkeep_run(run_id: str, *, grants: Grants | None) -> UpkeepRun:
    """The run if the caller's grants reach its scope; ``UpkeepRunNotFound`` otherwise."""
    runs = UpkeepRun.objects.all() if grants is None else UpkeepRun.objects.visible_to(grants)
    run = runs.filter(pk=run_id).first() if storable_text(run_id) else None
    if run is None:
        raise UpkeepRunNotFound(str(run_id))
    return run


# --- doing it ------------------------------------------------------------------------------


class UpkeepRecorder(JobRecorder[UpkeepRun]):
    """Writes what an upkeep task does onto its run."""

    model = UpkeepRun

    def progress(self, report: dict[str, Any]) -> None:
        self._update(report=report)


def run_upkeep(
    run: UpkeepRun,
    recorder: UpkeepRecorder,
    *,
    summarize: Summarize | None = None,
    clock: Callable[[], datetime] = timezone.now,
) -> dict[str, Any]:
    """Do the run's work on its scope and close it as done with its report. Raises
    ``LLMUnavailable`` when no model is configured (the run fails saying so)."""
    model = summarize if summarize is not None else require_summarizer("Upkeep")
    config = upkeep_settings()
    scope = MemoryScope.of(run)
    started = clock()
    report: dict[str, Any] = {"model_calls": 0}
    if run.work in (UpkeepWork.PASS, UpkeepWork.OBSERVATIONS) and config.observations:
        refreshed = MemoryObservations(clock=clock).refresh(
            scope,
            summarize=model,
            max_entities=config.max_entities,
            min_items=config.min_items,
        )
        report["observations"] = {
            "written": len(refreshed.written),
            "deleted": len(refreshed.deleted),
        }
        report["model_calls"] += refreshed.model_calls
        recorder.progress(report)
    go_on = False
    if run.work in (UpkeepWork.PASS, UpkeepWork.CONSOLIDATION) and config.consolidation:
        state = _state(scope)
        consolidator = MemoryConsolidator(clock=clock)
        deduped = consolidator.dedupe(
            scope,
            summarize=model,
            since=state.dedupe_through,
            max_changes=config.max_changes,
            max_subjects=config.max_subjects,
        )
        report["dedupe"] = {"stale": len(deduped.stale), "complete": deduped.complete}
        report["model_calls"] += deduped.model_calls
        if deduped.complete:
            # Everything recorded before the pass began was looked at.
            _save_state(state, dedupe_through=started)
        else:
            go_on = True
            if deduped.through is not None:
                _save_state(state, dedupe_through=deduped.through)
        recorder.progress(report)
        folded = consolidator.fold_lessons(scope, summarize=model, mode=config.playbook_mode)
        report["playbook"] = {
            "edits": len(folded.edits) if folded else 0,
            "lessons": len(folded.lesson_ids) if folded else 0,
            "path": folded.path if folded else None,
        }
        report["model_calls"] += folded.model_calls if folded else 0
    with transaction.atomic():
        state = _state(scope)
        UpkeepScopeState.objects.filter(pk=state.pk).update(
            last_pass_at=clock(), last_run_id=run.pk, passes=state.passes + 1
        )
        recorder.finished(report=report)
        if go_on:
            request_upkeep(scope, work=UpkeepWork.CONSOLIDATION, delay=CONTINUE_AFTER)
    return report


def _state(scope: MemoryScope) -> UpkeepScopeState:
    key = key_of(scope)
    state = UpkeepScopeState.objects.filter(scope_key=key).first()
    if state is not None:
        return state
    try:
        with transaction.atomic():
            return UpkeepScopeState.objects.create(scope_key=key, **scope.as_fields())
    except IntegrityError:
        return UpkeepScopeState.objects.get(scope_key=key)


def _save_state(state: UpkeepScopeState, **fields: Any) -> None:
    UpkeepScopeState.objects.filter(pk=state.pk).update(**fields)


# --- the sleep-time pass -------------------------------------------------------------------


@dataclass
class PassReport:
    """What one sleep-time pass did: runs queued (``created``) or joined, per cursor the
    items read, and why it did nothing when it did nothing."""

    created: int = 0
    joined: int = 0
    items_read: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "joined": self.joined,
            "items_read": dict(self.items_read),
            "skipped": self.skipped,
        }


def sleep_time_pass(*, max_scopes: int | None = None, force: bool = False) -> PassReport:
    """Queue a pass for every scope with items recorded or activated since the last pass
    read, up to ``max_scopes`` (``UPKEEP["SCOPES_PER_PASS"]``) scopes. Does nothing while
    ``UPKEEP["ENABLED"]`` is off (unless ``force``) or no model is configured."""
    config = upkeep_settings()
    report = PassReport()
    if not (config.enabled or force):
        report.skipped = "Upkeep is off (COGITATOR_MEMORY['UPKEEP']['ENABLED'])."
        return report
    if get_summarizer() is None:
        report.skipped = "No model is configured (COGITATOR_MEMORY['LLM'])."
        return report
    budget = max_scopes if max_scopes is not None else config.scopes_per_pass
    for name, time_field in CURSORS:
        read = 0
        while report.created + report.joined < budget:
            batch = _queue_batch(name, time_field, config.items_per_batch, report, budget)
            if batch == 0:
                break
            read += batch
        report.items_read[name] = read
    return report


def _queue_batch(name: str, time_field: str, limit: int, report: PassReport, budget: int) -> int:
    """Read the next batch of items after the cursor, queue a pass for each scope in it,
    and move the cursor past the batch, in one transaction. Returns the items read. The
    batch ends early at the budget of scopes; the cursor then stands after the last item
    of the last scope queued."""
    with transaction.atomic():
        cursor = _cursor(name)
        items = MemoryItem.objects.filter(**{f"{time_field}__isnull": False})
        if time_field == "activated_at":
            # An item active from its write was read by its recording already.
            items = items.exclude(activated_at=F("recorded_at"))
        if cursor.at is not None:
            items = items.filter(
                Q(**{f"{time_field}__gt": cursor.at})
                | Q(**{time_field: cursor.at, "id__gt": cursor.item_id})
            )
        rows = list(
            items.order_by(time_field, "id").values_list(time_field, "id", *SCOPE_FIELDS)[:limit]
        )
        if not rows:
            return 0
        seen: set[tuple[Any, ...]] = set()
        last: tuple[datetime, str] | None = None
        taken = 0
        for at, item_id, *fields in rows:
            key = tuple(fields)
            if key not in seen:
                if report.created + report.joined >= budget:
                    break
                seen.add(key)
                _, created = request_upkeep(MemoryScope(*fields), work=UpkeepWork.PASS)
                if created:
                    report.created += 1
                else:
                    report.joined += 1
            last = (at, item_id)
            taken += 1
        if last is not None:
            UpkeepCursor.objects.filter(pk=cursor.pk).update(
                at=last[0], item_id=last[1], updated_at=timezone.now()
            )
        return taken


def _cursor(name: str) -> UpkeepCursor:
    cursor = UpkeepCursor.objects.select_for_update().filter(pk=name).first()
    if cursor is not None:
        return cursor
    try:
        with transaction.atomic():
            return UpkeepCursor.objects.create(name=name)
    except IntegrityError:
        return UpkeepCursor.objects.select_for_update().get(pk=name)


UPKEEP_JOBS = JobKind(UpkeepRun, Work.UPKEEP_SCOPE)


def register_upkeep_jobs() -> None:
    register_kind(UPKEEP_JOBS)
