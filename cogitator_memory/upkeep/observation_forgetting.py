"""Observations name the items they stand on (an ``dependents.ItemDependent``).

When items are purged, in the transaction that deletes them, every version of an
observation naming one of them is redacted as ``files/forgetting.py`` redacts (the
content becomes the redaction marker, ``redaction`` says when and why), whoever wrote it.
A file whose version in front was redacted is deleted, so its path leaves the listing and
its history keeps the redacted versions; the next refresh writes it again from the facts
that are left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from django.utils import timezone

from cogitator_memory.dependents import Forgotten
from cogitator_memory.files.forgetting import delete_redacted_front, live_versions_naming
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.paths import OBSERVATIONS_DIRECTORY
from cogitator_memory.files.querysets import under_q
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.threads.models import REDACTED_TEXT
from cogitator_memory.upkeep.observation_files import ITEM_MARK

__all__ = ["FORGOTTEN_REASON", "ObservationsOfItems"]

FORGOTTEN_REASON = "an item it names was forgotten"


class ObservationsOfItems:
    """Redacts the observation versions naming items that go, and deletes the files whose
    version in front was one of them."""

    name = "observations"
    models = (MemoryFileVersion, MemoryFileHead)

    def __init__(self, *, clock: Callable[[], datetime] = timezone.now) -> None:
        self.clock = clock

    def items_purged(self, item_ids: Sequence[str], forgotten: Forgotten) -> None:
        ids = list(dict.fromkeys(item_ids))
        # The items still stand (they go after this step): their agents bound the search.
        agents = sorted(
            set(MemoryItem.objects.filter(pk__in=ids).values_list("agent_id", flat=True))
        )
        if not agents:
            return
        wanted = set(ids)
        versions = live_versions_naming(
            ids,
            agents=agents,
            where=under_q(OBSERVATIONS_DIRECTORY),
            mark=lambda item_id: f"[item:{item_id}]",
        )
        found = [
            version.pk
            for version in versions
            if wanted & set(ITEM_MARK.findall(version.content or ""))
        ]
        if not found:
            return
        now = self.clock()
        MemoryFileVersion.objects.filter(pk__in=found).update(
            content=REDACTED_TEXT, redaction={"at": now.isoformat(), "reason": FORGOTTEN_REASON}
        )
        deleted = 0
        fronts = MemoryFileHead.objects.filter(version_id__in=found).order_by("pk")
        for head_pk in fronts.values_list("pk", flat=True):
            deleted += delete_redacted_front(head_pk, set(found), now)
        forgotten["file_versions"] += len(found)
        forgotten["files"] += deleted
