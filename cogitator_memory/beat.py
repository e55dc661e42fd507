"""The periodic tasks of the app, as a Celery beat schedule.

Merge it into the project's schedule (it imports nothing, so settings may import it)::

    from cogitator_memory.beat import BEAT_SCHEDULE
    CELERY_BEAT_SCHEDULE = {**BEAT_SCHEDULE, ...}
"""

from __future__ import annotations

from typing import Any

# Seconds between sweeps of the jobs of record: how long after the broker comes back a
# job written while it was down waits for its worker (at least), and how often a job
# whose worker was lost is looked for.
JOBS_SWEEP_INTERVAL = 30.0
# Seconds between sweeps of the outbox: how long a deleted message's vector may stay in a
# store outside the database after an outage (searches never return it meanwhile).
SWEEP_INTERVAL = 60.0
# Seconds between sleep-time passes (upkeep of the scopes whose items changed); a pass
# does nothing while COGITATOR_MEMORY["UPKEEP"]["ENABLED"] is off.
UPKEEP_INTERVAL = 300.0
# Seconds between scans for vectors whose entry went or was redacted.
PRUNE_INTERVAL = 24 * 3600.0

BEAT_SCHEDULE: dict[str, dict[str, Any]] = {
    "cogitator-memory-sweep-jobs": {
        "task": "cogitator_memory.tasks.sweeper.sweep_jobs_task",
        "schedule": JOBS_SWEEP_INTERVAL,
    },
    "cogitator-memory-sweep-outbox": {
        "task": "cogitator_memory.tasks.sweeper.sweep_outbox_task",
        "schedule": SWEEP_INTERVAL,
    },
    "cogitator-memory-sleep-time": {
        "task": "cogitator_memory.tasks.upkeep.sleep_time_pass_task",
        "schedule": UPKEEP_INTERVAL,
    },
    "cogitator-memory-prune-vectors": {
        "task": "cogitator_memory.tasks.sweeper.prune_vectors_task",
        "schedule": PRUNE_INTERVAL,
    },
}
