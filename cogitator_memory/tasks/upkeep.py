"""Upkeep between runs in the background: the task of an ``UpkeepRun`` and the beat task of
the sleep-time pass.

``upkeep_scope_task`` takes the run's id, claims the run (``jobs.run_job``: one worker at a
time, under a lease) and does ``upkeep.passes.run_upkeep``. Safe to run again: a refresh
asks only about entities whose facts changed, and a dedupe goes on from the scope's
stored ``dedupe_through``. A model that failed, or a database busy for a while, puts the
run back in the queue after a backoff.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.exceptions import LLMError
from cogitator_memory.jobs import JobRecorder, run_job
from cogitator_memory.tasks.retries import retry_errors
from cogitator_memory.upkeep.passes import UpkeepRecorder, run_upkeep, sleep_time_pass
from cogitator_memory.upkeep.records import UpkeepRun

logger = logging.getLogger(__name__)

__all__ = ["sleep_time_pass_task", "upkeep_scope_task"]

RETRIED = retry_errors(LLMError)


def _upkeep(run: UpkeepRun, recorder: JobRecorder[UpkeepRun]) -> dict[str, Any]:
    assert isinstance(recorder, UpkeepRecorder)
    return run_upkeep(run, recorder)


@shared_task(acks_late=True, ignore_result=True)
def upkeep_scope_task(run_id: str) -> dict[str, Any] | None:
    """Do the run's upkeep on its scope; returns its report (None when there was nothing
    to run: another worker has it, or it is closed)."""
    return run_job(UpkeepRecorder, run_id, _upkeep, retry_on=RETRIED)


@shared_task(ignore_result=True)
def sleep_time_pass_task() -> dict[str, Any]:
    """Queue upkeep of the scopes whose items were recorded or activated since the last
    pass (``upkeep.passes.sleep_time_pass``)."""
    report = sleep_time_pass()
    if report.created or report.joined:
        logger.info("Sleep-time pass queued %d scopes (%d joined).", report.created, report.joined)
    return report.as_dict()


background.offer(Work.UPKEEP_SCOPE, upkeep_scope_task)
