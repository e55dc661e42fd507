"""Forgetting a user in the background: the task of a ``ForgetRun``.

``forget_user_task`` takes the run's id (also its task id) and does ``cascade.runs.run_forget``:
``MemoryCascade.delete_user`` with the grants of the person who asked, keeping the run's
progress (batches done of the total, task state ``PROGRESS`` with ``done`` and ``total``)
and counts current. Safe to run again: ``delete_user`` goes on where it stopped and finds
nothing once done, and a closed run is left as it is; so it is acknowledged late and
retried with the app's policy when the database is busy for a while.
"""

from __future__ import annotations

import logging
from typing import Any

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.cascade.runs import ForgetRecorder, run_forget
from cogitator_memory.jobs import public_error
from cogitator_memory.tasks.retries import retried_task, retry_errors

logger = logging.getLogger(__name__)

__all__ = ["forget_user_task"]

# What a later try may get past: a database busy for a moment.
RETRIED = retry_errors()


@retried_task(bind=True)
def forget_user_task(self, run_id: str) -> dict[str, Any] | None:  # type: ignore[no-untyped-def]
    """Forget the user of the run; returns the report's counts (None when there was
    nothing to do)."""

    def progress(done: int, total: int) -> None:
        self.update_state(state="PROGRESS", meta={"done": done, "total": total})

    try:
        return run_forget(run_id, attempt=self.request.retries + 1, progress=progress)
    except RETRIED as exc:
        if self.request.retries >= self.max_retries:
            ForgetRecorder(run_id).failed(public_error(exc))
        else:
            ForgetRecorder(run_id).retrying(exc)
        raise
    except Exception as exc:
        logger.warning("Forget run %s failed: %s", run_id, type(exc).__name__)
        ForgetRecorder(run_id).failed(public_error(exc))
        raise


background.offer(Work.FORGET_USER, forget_user_task)
