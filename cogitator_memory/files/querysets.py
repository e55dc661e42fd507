"""Named filters of memory file versions and heads."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from django.db import connections, models, router

from cogitator_memory.grants import ScopedQuerySet

if TYPE_CHECKING:
    from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion  # noqa: F401


def on_branch_q(thread_id: str, entry_ids: Collection[str], *, prefix: str = "") -> models.Q:
    """Versions a run standing on a branch of ``thread_id`` sees: those written outside
    that thread, and those written in it after an entry of the branch (``entry_ids``)."""
    return (
        models.Q(**{f"{prefix}place_thread_id__isnull": True})
        | ~models.Q(**{f"{prefix}place_thread_id": thread_id})
        | models.Q(**{f"{prefix}place_id__in": list(entry_ids)})
    )


def under_q(directory: str) -> models.Q:
    """Paths strictly under ``directory`` (an exact prefix match, so ``%`` and ``_`` in a
    path are not wildcards).

    The prefix is an index range, not a filter over every path of the agent: on
    PostgreSQL ``LIKE 'prefix%'`` is an index condition of ``cm_file_head_path_prefix``
    (``varchar_pattern_ops``, whatever the database's collation); on SQLite, whose
    ``LIKE`` ignores case and so reads no index, the same paths are asked as the range
    ``prefix/ <= path < prefix0`` (``0`` follows ``/``; SQLite compares text byte by byte,
    so the range holds exactly the paths that start with the prefix) and the ``LIKE``
    stays as a second check.
    """
    prefix = directory.rstrip("/") + "/"
    condition = models.Q(path__startswith=prefix)
    if _vendor() == "sqlite":
        condition &= models.Q(path__gte=prefix, path__lt=prefix[:-1] + "0")
    return condition


def _vendor() -> str:
    from cogitator_memory.files.models import MemoryFileHead

    return connections[router.db_for_read(MemoryFileHead)].vendor


class FileVersionQuerySet(ScopedQuerySet["MemoryFileVersion"]):
    def of_scope_key(self, key: str) -> FileVersionQuerySet:
        """Versions of one exact scope (its ``scope_key``)."""
        return self.filter(scope_key=key)


class FileHeadQuerySet(ScopedQuerySet["MemoryFileHead"]):
    def of_scope_key(self, key: str) -> FileHeadQuerySet:
        """Heads of one exact scope (its ``scope_key``)."""
        return self.filter(scope_key=key)

    def at_or_under(self, path: str) -> FileHeadQuerySet:
        """Heads of ``path`` itself and of every path under it."""
        if path == "/memories":
            return self.filter(under_q(path))
        return self.filter(models.Q(path=path) | under_q(path))
