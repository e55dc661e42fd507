"""The playbook: lessons folded into rules every run of a scope reads, and its review.

``fold_lessons`` hands a model the playbook's rules and the lessons it has not taken yet
and keeps only the edits that pass ``apply_playbook_edits``; the result is a new version
of ``/memories/playbook.md`` (author memory), so its diff and the way back stay in the
file's history. What may be folded is decided here, by code, never by the model:

- active lessons the scope sees (items of kind lesson), never those a tool or a page
  said, even when active; a model's lesson only once a reviewer activated it;
- ordered by when they were activated, else recorded, oldest first, at most
  ``LESSONS_PER_FOLD`` a fold, starting after the last one the playbook took (the file
  says which, per track: see ``playbook_text``);
- a playbook every user of the agent shares (a scope of no user, project or thread)
  takes only the system's lessons in apply mode: one user's lesson would reach every
  other user, so those are drafted for review instead;
- a fold builds on the newest version memory or a person wrote, never on one a model
  wrote; an unfinished answer folds nothing.

In shadow mode the folded playbook goes to ``/memories/playbook.next.md`` (the draft),
which records the version of the playbook it was made from. ``promote_playbook`` makes a
draft the playbook only when the playbook still stands at that version and a model did not
write the draft; ``discard_playbook_draft`` deletes it.

The playbook of a scope is the file of exactly that scope: a user's playbook folds the
lessons the user sees (theirs and the agent-wide ones) and is written in the user's
scope, not over the agent-wide playbook.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import transaction
from django.db.models import DateTimeField, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from cogitator_memory import policy
from cogitator_memory.exceptions import (
    InvalidInput,
    PlaybookDraftNotFound,
    PlaybookDraftRefused,
)
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import Author, MemoryFileHead, MemoryFileVersion, scope_key
from cogitator_memory.files.paths import PLAYBOOK_DRAFT_PATH, PLAYBOOK_PATH
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import ItemKind, ItemStatus, MemoryItem, Trust
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.llm.protocol import Summarize
from cogitator_memory.upkeep.playbook_text import (
    FOLD_PROMPT,
    LESSONS_PER_FOLD,
    MAX_PLAYBOOK_RULES,
    OTHERS_TRACK,
    SYSTEM_TRACK,
    TRACKS,
    WHOLE_MOMENT,
    Cursor,
    MadeFrom,
    Playbook,
    PlaybookEdit,
    PlaybookRule,
    apply_playbook_edits,
    parse_playbook,
    parse_playbook_edits,
    playbook_file,
)

__all__ = [
    "FOLD_MAX_TOKENS",
    "FoldResult",
    "PlaybookFile",
    "discard_playbook_draft",
    "fold_lessons",
    "is_shared",
    "promote_playbook",
    "read_playbook",
    "read_playbook_draft",
]

MODES = ("apply", "shadow")
# Three edits of one line each, with room for a model that explains itself first.
FOLD_MAX_TOKENS = 2000
# The trust of the lessons each track folds: tool and web lessons are in none.
TRACK_TRUST = {SYSTEM_TRACK: (Trust.SYSTEM,), OTHERS_TRACK: (Trust.USER, Trust.MODEL)}


@dataclass(frozen=True)
class FoldResult:
    """What one fold did: the file it wrote, the edits kept, the lessons it took (all
    those shown, whether or not an edit names them) and the model calls it made."""

    path: str
    edits: list[PlaybookEdit]
    lesson_ids: list[str]
    model_calls: int


@dataclass(frozen=True)
class PlaybookFile:
    """A version of the playbook or its draft that memory or a person wrote."""

    path: str
    scope: MemoryScope
    text: str
    playbook: Playbook
    version_id: str
    sha256: str
    author: str
    created_at: datetime

    @property
    def rules(self) -> tuple[PlaybookRule, ...]:
        return self.playbook.rules


def is_shared(scope: MemoryScope) -> bool:
    """Whether every user of the agent reads this scope's playbook."""
    return scope.user_id is None and scope.project_id is None and scope.thread_id is None


def memory_access(scope: MemoryScope, *, author: str = Author.MEMORY) -> FileAccess:
    # Memory's own writes: the reserved paths are memory's to write.
    return FileAccess(scope=scope, author=author)


def _key(scope: MemoryScope) -> str:
    return scope_key(scope.agent_id, scope.user_id, scope.project_id, scope.thread_id)


def exact_head(scope: MemoryScope, path: str) -> MemoryFileHead | None:
    """The head of ``path`` in exactly ``scope``."""
    return (
        MemoryFileHead.objects.of_scope_key(_key(scope))
        .filter(path=path)
        .select_related("version")
        .defer("version__content")
        .first()
    )


def _stands_at(scope: MemoryScope) -> MadeFrom:
    """The version the playbook of exactly ``scope`` stands at, as a draft records it."""
    head = exact_head(scope, PLAYBOOK_PATH)
    if head is None or head.deleted:
        return MadeFrom(None, None)
    return MadeFrom(head.version_id, head.version.sha256)


def standing_version(scope: MemoryScope, path: str) -> PlaybookFile | None:
    """The newest version of ``path`` in exactly ``scope`` that memory or a person wrote;
    None when there is none, or when it is a deletion or was redacted (what stands on a
    forgotten lesson is not read back from further down the history)."""
    versions = (
        MemoryFileVersion.objects.of_scope_key(_key(scope))
        .filter(path=path)
        .exclude(author=Author.MODEL)
        .order_by("-sequence")
    )
    version = versions.first()
    if version is None or version.content is None or version.is_redacted:
        return None
    return PlaybookFile(
        path=path,
        scope=scope,
        text=version.content,
        playbook=parse_playbook(version.content),
        version_id=version.pk,
        sha256=version.sha256 or "",
        author=version.author,
        created_at=version.created_at,
    )


def read_playbook(scope: MemoryScope) -> PlaybookFile | None:
    """The scope's playbook: its newest version memory or a person wrote (never one a
    model wrote)."""
    return standing_version(scope, PLAYBOOK_PATH)


def read_playbook_draft(scope: MemoryScope) -> PlaybookFile | None:
    """The scope's playbook draft, read as ``read_playbook`` reads the playbook; None when
    there is none (a promoted or discarded draft is deleted)."""
    head = exact_head(scope, PLAYBOOK_DRAFT_PATH)
    if head is None or head.deleted:
        return None
    return standing_version(scope, PLAYBOOK_DRAFT_PATH)


# --- folding ---------------------------------------------------------------------------


def _lessons(
    scope: MemoryScope, took: dict[str, Cursor], tracks: Sequence[str]
) -> list[MemoryItem]:
    """The next lessons to fold: active lessons the scope sees of the trusts of
    ``tracks``, after each track's cursor, oldest first."""
    condition = Q(pk__in=[])
    for track in tracks:
        part = Q(trust__in=TRACK_TRUST[track])
        cursor = took.get(track)
        if cursor is not None and cursor.lesson_id == WHOLE_MOMENT:
            part &= Q(fold_at__gt=cursor.at)
        elif cursor is not None:
            part &= Q(fold_at__gt=cursor.at) | Q(fold_at=cursor.at, pk__gt=cursor.lesson_id)
        condition |= part
    lessons = (
        MemoryItem.objects.seen_from(scope)
        .filter(kind=ItemKind.LESSON, status=ItemStatus.ACTIVE)
        .annotate(fold_at=Coalesce("activated_at", "recorded_at", output_field=DateTimeField()))
        .filter(condition)
        .order_by("fold_at", "pk")
    )
    return list(lessons[:LESSONS_PER_FOLD])


def _track_of(lesson: MemoryItem) -> str:
    return SYSTEM_TRACK if lesson.trust == Trust.SYSTEM else OTHERS_TRACK


def _moved_on(took: dict[str, Cursor], lessons: Sequence[MemoryItem]) -> dict[str, Cursor]:
    """The cursors once these lessons (oldest first) were taken."""
    moved = dict(took)
    for lesson in lessons:
        at = lesson.activated_at or lesson.recorded_at
        moved[_track_of(lesson)] = Cursor(at, lesson.pk)
    return moved


def _lesson_text(lesson: MemoryItem) -> str:
    if lesson.content:
        return lesson.content
    if lesson.attribute in ("", lesson.value):
        return lesson.value
    return f"{lesson.attribute}: {lesson.value}"


def fold_request(playbook: Playbook, lessons: Sequence[MemoryItem]) -> str:
    """What the model is shown: the rules and the lessons, as JSON data."""
    data = {
        "playbook_rules": [rule.text for rule in playbook.rules],
        "rules_left": max(0, MAX_PLAYBOOK_RULES - len(playbook.rules)),
        "lessons": [{"id": lesson.pk, "text": _lesson_text(lesson)} for lesson in lessons],
    }
    return (
        "The playbook and the new lessons, as data:\n"
        + json.dumps(data, ensure_ascii=False, indent=1)
        + "\n\nAnswer with the JSON array of at most 3 edits."
    )


def _fold_into(
    scope: MemoryScope,
    path: str,
    tracks: Sequence[str],
    *,
    summarize: Summarize,
    files: MemoryFiles,
) -> tuple[bool, FoldResult | None]:
    """Fold the next lessons of ``tracks`` into the file at ``path``: whether any lesson
    waited, and the result (None when none waited or the answer was unfinished)."""
    access = memory_access(scope)
    # What the file stands at before the model is asked: the write is refused when
    # another writer (a fold running beside this one) changed it meanwhile.
    seen = files.read(access, path)
    basis = read_playbook(scope)
    base = basis.playbook if basis is not None else Playbook()
    if path == PLAYBOOK_DRAFT_PATH:
        made_from = _stands_at(scope)
        draft = read_playbook_draft(scope)
        if draft is not None and draft.playbook.made_from == made_from:
            base = draft.playbook
        else:
            base = replace(base, made_from=made_from)
    else:
        base = replace(base, made_from=None)
    lessons = _lessons(scope, dict(base.took), tracks)
    if not lessons:
        return False, None
    completion = summarize(
        [{"role": "user", "content": fold_request(base, lessons)}],
        prompt=FOLD_PROMPT,
        max_tokens=FOLD_MAX_TOKENS,
    )
    edits = parse_playbook_edits(completion.text, truncated=completion.truncated)
    if edits is None:
        return True, None
    ids = [lesson.pk for lesson in lessons]
    edited, kept = apply_playbook_edits(base, edits, lessons=ids)
    edited = replace(edited, took=_moved_on(dict(base.took), lessons))
    files.put(access, path, playbook_file(edited), expected_sha256=seen.sha256 if seen else None)
    return True, FoldResult(path=path, edits=kept, lesson_ids=ids, model_calls=1)


def fold_lessons(
    scope: MemoryScope,
    *,
    summarize: Summarize,
    mode: str = "apply",
    items: MemoryItems | None = None,
    files: MemoryFiles | None = None,
    clock: Callable[[], datetime] | None = None,
) -> FoldResult | None:
    """Fold the next lessons of ``scope`` into its playbook (``mode="apply"``) or its
    draft (``"shadow"``); None when there was nothing to fold or the model's answer was
    unfinished (the lessons then wait for the next fold).

    In apply mode an agent-wide playbook takes the system's lessons; when none wait, the
    other lessons are folded into the draft for review. One fold writes one file: a
    caller that wants both calls again. ``items`` is accepted for symmetry with the other
    upkeep passes (the lessons are read here); ``files`` and ``clock`` let tests write
    with their own time. Raises ``FileVersionConflict`` when another writer changed the
    file while the model answered: nothing is written, and the next fold folds again."""
    if mode not in MODES:
        raise InvalidInput({"mode": f"The mode is one of {', '.join(MODES)}, not {mode!r}."})
    files = files or MemoryFiles(clock=clock or timezone.now)
    if mode == "shadow":
        return _fold_into(scope, PLAYBOOK_DRAFT_PATH, TRACKS, summarize=summarize, files=files)[1]
    if not is_shared(scope):
        return _fold_into(scope, PLAYBOOK_PATH, TRACKS, summarize=summarize, files=files)[1]
    waited, folded = _fold_into(
        scope, PLAYBOOK_PATH, (SYSTEM_TRACK,), summarize=summarize, files=files
    )
    if waited:
        # Folded, or left for the next fold: a draft made now would be made from a
        # playbook about to change.
        return folded
    return _fold_into(
        scope, PLAYBOOK_DRAFT_PATH, (OTHERS_TRACK,), summarize=summarize, files=files
    )[1]


# --- review ----------------------------------------------------------------------------


def _described(scope: MemoryScope) -> str:
    return ", ".join(f"{name} {value!r}" for name, value in scope.as_fields().items() if value)


def _check_grants(scope: MemoryScope, grants: Grants | None) -> None:
    policy.require_write(grants, scope.agent_id, scope.user_id, user_field="user_id")


def _draft_head(scope: MemoryScope) -> MemoryFileHead:
    head = exact_head(scope, PLAYBOOK_DRAFT_PATH)
    if head is None or head.deleted:
        raise PlaybookDraftNotFound(_described(scope))
    return head


def promote_playbook(
    scope: MemoryScope,
    *,
    user: object | None = None,
    grants: Grants | None = None,
    files: MemoryFiles | None = None,
) -> PlaybookFile:
    """Make the scope's draft its playbook (a new version, by the person ``user`` when
    given, else by memory) and delete the draft. Raises ``PlaybookDraftNotFound`` when no
    draft stands, ``PlaybookDraftRefused`` when a model wrote it or when the playbook
    changed since it was made, ``NoGrant`` for a scope ``grants`` do not reach."""
    _check_grants(scope, grants)
    files = files or MemoryFiles()
    with transaction.atomic():
        head = _draft_head(scope)
        if head.version.author == Author.MODEL:
            raise PlaybookDraftRefused(
                "A model wrote this playbook draft: only a draft that memory or a person "
                "wrote can become the playbook. Discard it."
            )
        draft = standing_version(scope, PLAYBOOK_DRAFT_PATH)
        if draft is None:
            raise PlaybookDraftNotFound(_described(scope))
        if draft.playbook.made_from != _stands_at(scope):
            raise PlaybookDraftRefused(
                "The playbook changed since this draft was made from it: promoting the "
                "draft would undo that change. Discard the draft; the next fold drafts "
                "again from the playbook as it stands."
            )
        author = Author.USER if user is not None else Author.MEMORY
        access = memory_access(scope, author=author)
        seen = files.read(access, PLAYBOOK_PATH)
        text = playbook_file(replace(draft.playbook, made_from=None))
        files.put(access, PLAYBOOK_PATH, text, expected_sha256=seen.sha256 if seen else None)
        files.run(access, {"command": "delete", "path": PLAYBOOK_DRAFT_PATH})
        promoted = read_playbook(scope)
    assert promoted is not None  # written just above, by memory or a person
    return promoted


def discard_playbook_draft(
    scope: MemoryScope,
    *,
    user: object | None = None,
    grants: Grants | None = None,
    files: MemoryFiles | None = None,
) -> None:
    """Delete the scope's draft (whoever wrote it); its versions stay in the file's
    history. Raises ``PlaybookDraftNotFound`` when none stands."""
    _check_grants(scope, grants)
    files = files or MemoryFiles()
    with transaction.atomic():
        _draft_head(scope)
        author = Author.USER if user is not None else Author.MEMORY
        files.run(
            memory_access(scope, author=author), {"command": "delete", "path": PLAYBOOK_DRAFT_PATH}
        )
