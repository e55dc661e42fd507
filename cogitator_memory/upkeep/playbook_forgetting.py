"""Playbook rules on lessons that go (a ``dependents.ItemDependent``).

A rule names the lessons it was folded from (``[lesson:<id>]``). When lessons are purged,
in the transaction that deletes them, every playbook and draft that names one is first
written again, by memory, without the rules that stood on such a lesson (the other rules
stay), from the newest version memory or a person wrote, its place in a track kept
without the lesson's id; then every version of it that names one (in a rule, or as the
last lesson a track took) is redacted, whoever wrote it. The history keeps the redacted
versions; none of them is read again (``read_playbook`` never reads past a redacted
version).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from cogitator_memory.dependents import Forgotten
from cogitator_memory.files.forgetting import live_versions_naming
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.paths import PLAYBOOK_DRAFT_PATH, PLAYBOOK_PATH
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.threads.models import REDACTED_TEXT
from cogitator_memory.upkeep.playbook import exact_head, memory_access, standing_version
from cogitator_memory.upkeep.playbook_text import (
    WHOLE_MOMENT,
    Cursor,
    Playbook,
    lesson_ids_in,
    parse_playbook,
    playbook_file,
)

__all__ = ["FORGOTTEN_REASON", "PlaybookRulesOnLessons"]

FORGOTTEN_REASON = "a lesson it named was forgotten"
PATHS = (PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH)


class PlaybookRulesOnLessons:
    """Takes the rules of forgotten lessons out of every playbook and draft, and redacts
    the versions that named them."""

    name = "playbook_rules"
    models = (MemoryFileVersion, MemoryFileHead)

    def __init__(self, *, clock: Callable[[], datetime] = timezone.now) -> None:
        self.clock = clock

    def items_purged(self, item_ids: Sequence[str], forgotten: Forgotten) -> None:
        ids = list(item_ids)
        agents = sorted(
            set(MemoryItem.objects.filter(pk__in=ids).values_list("agent_id", flat=True))
        )
        if not agents:
            return
        gone = set(ids)
        naming: dict[str, tuple[str, str, MemoryScope]] = {}
        versions = live_versions_naming(
            ids,
            agents=agents,
            where=Q(path__in=PATHS),
            mark=lambda item_id: item_id,
            fields=("id", "content", "scope_key", "path", *SCOPE),
        )
        for version in versions:
            # The rules' tags and the cursors are read again: the search is a candidate.
            if gone & named_lessons(version.content or ""):
                naming[version.pk] = (version.scope_key, version.path, MemoryScope.of(version))
        if not naming:
            return
        files = MemoryFiles(clock=self.clock)
        for _key, path, scope in sorted(set(naming.values()), key=lambda t: (t[0], t[1])):
            forgotten["playbook_rules"] += _write_without(scope, path, gone, files)
        redaction = {"at": self.clock().isoformat(), "reason": FORGOTTEN_REASON}
        redacted = list(naming)
        MemoryFileVersion.objects.filter(pk__in=redacted).update(
            content=REDACTED_TEXT, redaction=redaction
        )
        MemoryFileHead.objects.filter(version_id__in=redacted).update(
            size=len(REDACTED_TEXT.encode("utf-8"))
        )
        forgotten["file_versions"] += len(redacted)


def named_lessons(text: str) -> set[str]:
    """The lessons a playbook file names: in its rules, and as the last one a track took."""
    playbook = parse_playbook(text)
    return set(lesson_ids_in(text)) | {cursor.lesson_id for cursor in playbook.took.values()}


SCOPE = ("agent_id", "user_id", "project_id", "thread_id")


def _write_without(scope: MemoryScope, path: str, gone: set[str], files: MemoryFiles) -> int:
    """Write the file at ``path`` of exactly ``scope`` again from its newest version memory
    or a person wrote, without the rules naming a lesson of ``gone``; how many rules went.
    Written also when none went but a version in front names one (a model wrote it), so
    what stands in front is never a redacted version. A file deleted (a promoted or
    discarded draft) is left deleted."""
    head = exact_head(scope, path)
    if head is None or head.deleted:
        return 0
    access = memory_access(scope)
    standing = standing_version(scope, path)
    if standing is None and path == PLAYBOOK_DRAFT_PATH:
        # No draft memory or a person wrote stands: nothing to keep under review.
        files.run(access, {"command": "delete", "path": path})
        return 0
    playbook = standing.playbook if standing is not None else Playbook()
    rules = tuple(rule for rule in playbook.rules if not gone & set(rule.lesson_ids))
    seen = files.read(access, path)
    took = {
        track: Cursor(cursor.at, WHOLE_MOMENT) if cursor.lesson_id in gone else cursor
        for track, cursor in playbook.took.items()
    }
    text = playbook_file(replace(playbook, rules=rules, took=took))
    files.put(access, path, text, expected_sha256=seen.sha256 if seen else None)
    return len(playbook.rules) - len(rules)
