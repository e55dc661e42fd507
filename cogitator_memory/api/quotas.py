"""Quotas of the model-backed work the API starts (``COGITATOR_MEMORY["QUOTAS"]``).

Extraction and compaction runs each cost model calls. A principal may ask for them on
every thread of an agent; the quotas bound how many runs the API opens per agent, and per
user of an agent, within ``PERIOD`` seconds. The count is read from the run tables
(``created_at`` of the runs of the agent's, or the user's, threads), not from a cache, so
every process sees the same count. A request that joins the run already open for its
thread opens nothing and costs nothing. Requests that race past the count at the same
moment can open one run each over the quota: a quota bounds the cost, it is not a lock.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone
from rest_framework import exceptions

from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.conf import memory_settings
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.jobs import JobRun, RunStatus
from cogitator_memory.threads.models import Thread

# The runs that call a model, counted against one quota.
MODEL_RUN_MODELS: tuple[type[JobRun], ...] = (ExtractionRun, CompactionRun)


class QuotaExceeded(exceptions.Throttled):
    """429 ``quota_exceeded`` with ``Retry-After``: the scope's runs fill its quota."""

    default_code = "quota_exceeded"


def joins_open_run(thread: Thread, run_model: type[JobRun]) -> bool:
    """Whether a request for a run of ``run_model`` on ``thread`` would join the queued
    one (``jobs.request_run``: a request joins the thread's queued run; one while a run
    runs queues the next)."""
    return run_model._default_manager.filter(thread=thread, status=RunStatus.QUEUED).exists()


def check_model_run_quota(thread: Thread, run_model: type[JobRun]) -> None:
    """Raise ``QuotaExceeded`` when opening a run of ``run_model`` on ``thread`` would go
    over the agent's or the user's quota of model runs."""
    quotas = memory_settings.QUOTAS
    limits = [
        (quotas["MODEL_RUNS_PER_AGENT"], Q(thread__agent_id=thread.agent_id), "agent"),
    ]
    if thread.user_id is not None:
        limits.append(
            (
                quotas["MODEL_RUNS_PER_USER"],
                Q(thread__agent_id=thread.agent_id, thread__user_id=thread.user_id),
                "user",
            )
        )
    limits = [limit for limit in limits if limit[0] is not None]
    if not limits or joins_open_run(thread, run_model):
        return
    period = timedelta(seconds=quotas["PERIOD"])
    now = timezone.now()
    for limit, scope, label in limits:
        counted = [
            model._default_manager.filter(scope, created_at__gt=now - period)
            for model in MODEL_RUN_MODELS
        ]
        used = sum(runs.count() for runs in counted)
        if used < limit:
            continue
        # The quota frees a place when the oldest runs beyond it leave the window.
        leaving = used - limit + 1
        oldest = sorted(
            created
            for runs in counted
            for created in runs.order_by("created_at").values_list("created_at", flat=True)[
                :leaving
            ]
        )[leaving - 1]
        wait = max(1.0, (oldest + period - now).total_seconds())
        raise QuotaExceeded(
            wait=wait,
            detail=f"The {label}'s quota of model runs ({limit} per {quotas['PERIOD']} "
            "seconds) is used up.",
        )
