"""The playbook drafts a person reviews: a proxy of the file heads at the draft's path.

A draft is a memory file (``/memories/playbook.next.md``); its review needs rows to name,
permissions of its own and a place in the admin, not a table: ``PlaybookDraft`` is a
proxy of ``MemoryFileHead`` whose managers read only heads at that path.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from cogitator_memory.files.models import MemoryFileHead
from cogitator_memory.files.paths import PLAYBOOK_DRAFT_PATH
from cogitator_memory.files.querysets import FileHeadQuerySet

__all__ = ["DRAFT", "GONE", "PlaybookDraft"]

# The statuses a review reads: a draft that stands, or one promoted or discarded.
DRAFT = "draft"
GONE = "gone"


class StandingDraftManager(models.Manager[Any]):
    """The drafts that stand: heads at the draft's path that are not deletions."""

    def get_queryset(self) -> FileHeadQuerySet:
        return EveryDraftManager.heads(self).filter(deleted=False)


class EveryDraftManager(models.Manager[Any]):
    """Every head at the draft's path, those promoted or discarded (deletions) too."""

    @staticmethod
    def heads(manager: models.Manager[Any]) -> FileHeadQuerySet:
        heads = FileHeadQuerySet(manager.model, using=manager._db)
        return heads.filter(path=PLAYBOOK_DRAFT_PATH)

    def get_queryset(self) -> FileHeadQuerySet:
        return self.heads(self)


class PlaybookDraft(MemoryFileHead):
    objects = StandingDraftManager()  # type: ignore[assignment,misc]
    with_gone = EveryDraftManager()

    class Meta:
        proxy = True
        verbose_name = _("playbook draft")
        verbose_name_plural = _("playbook drafts")
        default_permissions = ("view",)
        permissions = [
            ("promote_playbookdraft", _("Can promote playbook drafts to the playbook")),
            ("discard_playbookdraft", _("Can discard playbook drafts")),
        ]

    @property
    def status(self) -> str:
        return GONE if self.deleted else DRAFT
