"""The review decisions on playbook drafts: ``PromotePlaybook`` and ``DiscardPlaybookDraft``
(``cogitator_memory.review.ReviewAction``).

Each owns its permission (``cogitator_memory.promote_playbookdraft``,
``discard_playbookdraft``), refuses API keys, calls the playbook service within the
caller's grants and writes one admin log entry per draft. A draft is named by the id of
its file head (``PlaybookDraft``); the admin and the API are adapters of them::

    PromotePlaybook(request.user, grants=grants, via=Via.ADMIN).execute([draft_id])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cogitator_memory.exceptions import PlaybookDraftNotFound, PlaybookDraftNotReviewable
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.review import ReviewAction, Via
from cogitator_memory.upkeep.models import DRAFT, PlaybookDraft
from cogitator_memory.upkeep.playbook import discard_playbook_draft, promote_playbook

__all__ = ["DiscardPlaybookDraft", "PlaybookDraftReview", "PromotePlaybook"]

# Ids are head keys (big integers): longer texts and larger numbers name no row (SQLite
# refuses an integer past the largest it stores rather than finding nothing).
MAX_ID_DIGITS = 19
LARGEST_ID = 2**63 - 1


class PlaybookDraftReview(ReviewAction[PlaybookDraft]):
    """A review decision on playbook drafts. ``files`` is the ``MemoryFiles`` that
    writes (tests pass one with their own clock)."""

    model = PlaybookDraft
    statuses = (DRAFT,)
    not_found = PlaybookDraftNotFound
    not_reviewable = PlaybookDraftNotReviewable

    def __init__(
        self,
        user: Any,
        *,
        grants: Grants,
        via: Via,
        api_key: object | None = None,
        files: MemoryFiles | None = None,
    ) -> None:
        super().__init__(user, grants=grants, via=via, api_key=api_key)
        self.files = files or MemoryFiles()

    def queryset(self) -> Any:
        # Promoted and discarded drafts too: the decision reads its rows again once made,
        # and one made already is refused as such (not as a missing draft).
        return PlaybookDraft.with_gone.get_queryset().visible_to(self.grants)

    def rows(self, ids: Iterable[str]) -> list[PlaybookDraft]:
        wanted = [str(row_id) for row_id in dict.fromkeys(ids)]
        numbers = [
            int(i) for i in wanted if i.isascii() and i.isdigit() and len(i) <= MAX_ID_DIGITS
        ]
        numbers = [number for number in numbers if number <= LARGEST_ID]
        found = {str(row.pk): row for row in self.queryset().filter(pk__in=numbers)}
        for row_id in wanted:
            if row_id not in found:
                raise PlaybookDraftNotFound(f"the draft {row_id!r}")
        return [found[row_id] for row_id in wanted]

    def decide(self, scope: MemoryScope) -> None:
        raise NotImplementedError

    def transition(self, ids: list[str], reason: str) -> list[str]:
        for row in self.rows(ids):
            self.decide(MemoryScope.of(row))
        return ids


class PromotePlaybook(PlaybookDraftReview):
    """A reviewer's approval: the draft becomes the scope's playbook, refused when the
    playbook changed since the draft was made or a model wrote the draft."""

    name = "promote"
    done = "promoted"

    def decide(self, scope: MemoryScope) -> None:
        promote_playbook(scope, user=self.user, grants=self.grants, files=self.files)


class DiscardPlaybookDraft(PlaybookDraftReview):
    """A reviewer's refusal: the draft is deleted, its versions kept in its history."""

    name = "discard"
    done = "discarded"

    def decide(self, scope: MemoryScope) -> None:
        discard_playbook_draft(scope, user=self.user, grants=self.grants, files=self.files)
