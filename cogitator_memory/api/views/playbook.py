"""The playbook of a scope and the review of its draft.

``GET`` reads the playbook of exactly one scope and the draft waiting for review; a scope
the caller's grants do not reach reads as one with neither. ``POST`` on a draft's promote
or discard makes the review decision through its action (``upkeep.review``): made by
people holding the decision's permission, never by an API key, on a draft the caller's
grants reach, logged in the admin's log. The answer is the scope's playbook and draft as
they stand after it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.playbook import (
    PlaybookDraftSerializer,
    PlaybookQuerySerializer,
    PlaybookStateSerializer,
    PlaybookVersionSerializer,
)
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, MemoryAPIView
from cogitator_memory.files.paths import PLAYBOOK_DRAFT_PATH
from cogitator_memory.grants import MemoryScope
from cogitator_memory.review import Via
from cogitator_memory.upkeep.playbook import exact_head, read_playbook, read_playbook_draft
from cogitator_memory.upkeep.review import (
    DiscardPlaybookDraft,
    PlaybookDraftReview,
    PromotePlaybook,
)

NO_PLAYBOOK: dict[str, Any] = {"playbook": None, "draft": None}

ERROR_403_DECISION = OpenApiResponse(
    ErrorSerializer,
    description="An API key, or a user without the decision's permission (review_not_permitted).",
)
ERROR_404_DRAFT = OpenApiResponse(
    ErrorSerializer,
    description="No draft has this id, or your grants do not reach its scope "
    "(playbook_draft_not_found).",
)


def playbook_state(scope: MemoryScope) -> dict[str, Any]:
    """The playbook of exactly ``scope`` and its draft, as the API answers them."""
    playbook = read_playbook(scope)
    draft = read_playbook_draft(scope)
    head = exact_head(scope, PLAYBOOK_DRAFT_PATH) if draft is not None else None
    return {
        "playbook": PlaybookVersionSerializer(playbook).data if playbook is not None else None,
        "draft": (
            PlaybookDraftSerializer(draft, context={"draft_id": str(head.pk)}).data
            if draft is not None and head is not None
            else None
        ),
    }


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_playbook_retrieve",
        summary="Read the playbook of a scope and its draft",
        description="The playbook of exactly the scope (`agent_id`, and optionally "
        "`user_id`, `project_id`, `thread_id`; not one shared wider): its newest version "
        "memory or a person wrote, its rules with the lessons each names, and the draft "
        "waiting for review (shadow mode), with its id for promotion or discard and the "
        "playbook version it was made from. Null where there is none; a scope your grants "
        "do not reach reads as one with neither.",
        parameters=[PlaybookQuerySerializer],
        responses={200: PlaybookStateSerializer, 400: ERROR_400, **COMMON_ERRORS},
    ),
)
class PlaybookView(MemoryAPIView):
    serializer_class = PlaybookStateSerializer

    def get(self, request: Request) -> Response:
        query = PlaybookQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        scope = query.memory_scope()
        if not self.reaches(scope):
            return Response(NO_PLAYBOOK)
        return Response(playbook_state(scope))


class PlaybookDecisionView(MemoryAPIView):
    """One review decision on one draft, an adapter of its action."""

    # Not "action", which drf-spectacular reads as a viewset's action name.
    decision: type[PlaybookDraftReview]
    serializer_class = PlaybookStateSerializer

    def post(self, request: Request, draft_id: str) -> Response:
        review = self.decision(request.user, grants=self.grants, via=Via.API, api_key=self.api_key)
        [draft] = review.execute([draft_id])
        return Response(playbook_state(MemoryScope.of(draft)))


def decision_schema(
    decision: type[PlaybookDraftReview],
    operation: str,
    summary: str,
    description: str,
    refused: str,
) -> Any:
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation,
            summary=summary,
            description=f"{description} Made by a person holding the permission "
            f"`{decision.permission}`, never with an "
            "API key; logged in the admin's log. Answers the scope's playbook and draft as "
            "they stand after it.",
            request=None,
            responses={
                200: PlaybookStateSerializer,
                404: ERROR_404_DRAFT,
                409: OpenApiResponse(ErrorSerializer, description=refused),
                **COMMON_ERRORS,
                403: ERROR_403_DECISION,
            },
        )
    )


@decision_schema(
    PromotePlaybook,
    "memory_playbook_drafts_promote",
    "Promote a playbook draft to the playbook",
    "The draft becomes the scope's playbook (a new version of its file, written by you) "
    "and is deleted; both stay in the files' history.",
    "Refused, nothing changed: the playbook changed since the draft was made from it, or a "
    "model wrote the draft (playbook_draft_refused); the draft was promoted or discarded "
    "already (playbook_draft_not_reviewable).",
)
class PlaybookPromoteView(PlaybookDecisionView):
    decision = PromotePlaybook


@decision_schema(
    DiscardPlaybookDraft,
    "memory_playbook_drafts_discard",
    "Discard a playbook draft",
    "The draft is deleted, whoever wrote it; its versions stay in its file's history.",
    "The draft was promoted or discarded already (playbook_draft_not_reviewable).",
)
class PlaybookDiscardView(PlaybookDecisionView):
    decision = DiscardPlaybookDraft
