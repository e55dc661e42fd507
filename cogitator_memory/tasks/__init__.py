"""Celery tasks of the app. Importing each module here lets a project's
``app.autodiscover_tasks()`` (which imports ``cogitator_memory.tasks``) register them."""

from cogitator_memory.tasks import (  # noqa: F401
    brief,
    compaction,
    context,
    embeddings,
    extraction,
    forgetting,
    maintenance,
    sweeper,
    upkeep,
)
