"""The project's settings as ``bench/load.py`` runs them in gunicorn and the Celery worker:
the same, with the tasks sent to the queue named by ``BENCH_LOAD_QUEUE``, which only the
bench's own worker reads (on the Redis database of ``CELERY_BROKER_URL``)."""

import os

from project.settings import *  # noqa: F403

CELERY_TASK_DEFAULT_QUEUE = os.environ["BENCH_LOAD_QUEUE"]
