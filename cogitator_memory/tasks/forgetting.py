"""Forgetting a user in the background: the task of a ``ForgetRun``.

``forget_user_task`` takes the run's id, claims the run (``jobs.run_job``: one worker at a
time, under a lease) and does ``cascade.runs.run_forget``: ``MemoryCascade.delete_user``
with the grants of the person who asked, keeping the run's progress (batches done of the
total) and counts current on its row. Safe to run again: ``delete_user`` goes on where it
stopped and finds nothing once done, and a closed run is left as it is; a database busy
for a while puts the run back in the queue after a backoff.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.cascade.runs import ForgetRecorder, run_forget
from cogitator_memory.jobs import JobRecorder, run_job
from cogitator_memory.tasks.retries import retry_errors

logger = logging.getLogger(__name__)

__all__ = ["forget_user_task"]

# What a later try may get past: a database busy for a moment.
RETRIED = retry_errors()


def _forget(run: ForgetRun, recorder: JobRecorder[ForgetRun]) -> dict[str, Any] | None:
    return run_forget(run.pk, attempt=run.attempts)


# Acknowledged late: a worker lost mid-run leaves the message to another (and the run's
# lease to the sweeper). No Celery retries: the run's row holds the tries.
@shared_task(acks_late=True, ignore_result=True)
def forget_user_task(run_id: str) -> dict[str, Any] | None:
    """Forget the user of the run; returns the report's counts (None when there was
    nothing to do: another worker has the run, or it is closed)."""
    try:
        return run_job(ForgetRecorder, run_id, _forget, retry_on=RETRIED)
    except Exception as exc:
        logger.warning("Forget run %s failed: %s", run_id, type(exc).__name__)
        raise


background.offer(Work.FORGET_USER, forget_user_task)
