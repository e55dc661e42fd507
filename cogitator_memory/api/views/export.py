"""The export of a user's memory (the right of access), streamed as one JSON document.

Who may ask: a logged-in person (session or token) holding
``cogitator_memory.export_user_memory``, for a user their grants reach (``export.access``).
An API key gets 403 ``export_not_permitted``: an export holds everything memory keeps of a
person, and a key acts for a program; trusted automation runs ``manage.py export_user``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework.request import Request

from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.export import (
    UserExportQuerySerializer,
    UserExportSerializer,
)
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, MemoryAPIView
from cogitator_memory.export.access import EXPORT_PERMISSION, require_export_permission
from cogitator_memory.export.services import export_user

# Bytes gathered into one write of the response: records are small, and a write each
# would make a long export thousands of tiny chunks on the wire.
RESPONSE_CHUNK_BYTES = 64 * 1024
# What of a user id may go into the file name as it is; anything else becomes "_".
_FILE_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

ERROR_403_EXPORT = OpenApiResponse(
    ErrorSerializer,
    description="An API key, or a user without the permission "
    f"{EXPORT_PERMISSION} (export_not_permitted); or grants that do not reach the user or "
    "an agent named (permission_denied).",
)


def in_chunks(pieces: Iterable[str], size: int = RESPONSE_CHUNK_BYTES) -> Iterator[bytes]:
    """``pieces`` as UTF-8, gathered into chunks of about ``size`` bytes."""
    gathered: list[bytes] = []
    length = 0
    for piece in pieces:
        data = piece.encode("utf-8")
        gathered.append(data)
        length += len(data)
        if length >= size:
            yield b"".join(gathered)
            gathered, length = [], 0
    if gathered:
        yield b"".join(gathered)


def export_file_name(user_id: str) -> str:
    """The name the document is saved under: the user id, with what is not a letter, digit,
    dot, dash or underscore replaced."""
    return f"memory-export-{_FILE_NAME_UNSAFE.sub('_', user_id)[:100]}.json"


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_users_export",
        summary="Export everything memory keeps of a user",
        description="One JSON document, streamed as it is read (a download: "
        "`Content-Disposition: attachment`): the user's threads with every entry of every "
        "branch, the memory items of the user's scope with their evidence, entities, every "
        "version of the user's memory files, channel sessions, and the extraction and "
        "compaction runs of the user's threads; `counts` at the end. Only the agents your "
        "grants reach for the user, or those named by `agent_id`. For people holding the "
        f"permission `{EXPORT_PERMISSION}`; an API key gets 403.",
        parameters=[
            UserExportQuerySerializer,
            OpenApiParameter(
                "Content-Disposition",
                str,
                OpenApiParameter.HEADER,
                required=True,
                response=[200],
                description='`attachment; filename="memory-export-<user id>.json"` (what '
                "is not a letter, digit, dot, dash or underscore in the user id is `_`).",
            ),
        ],
        responses={
            200: UserExportSerializer,
            400: ERROR_400,
            404: OpenApiResponse(ErrorSerializer, description="No such route."),
            **COMMON_ERRORS,
            403: ERROR_403_EXPORT,
        },
    ),
)
class UserExportView(MemoryAPIView):
    serializer_class = UserExportSerializer

    def get(self, request: Request, user_id: str) -> StreamingHttpResponse:
        require_export_permission(request.user, api_key=self.api_key)
        query = UserExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        # Checked here, before the first byte: a refusal is an error answer, not a cut
        # document.
        document = export_user(user_id, agent_ids=params.get("agent_id"), grants=self.grants)
        content: Iterable[bytes] = [] if request.method == "HEAD" else in_chunks(document)
        response = StreamingHttpResponse(content, content_type="application/json")
        response["Content-Disposition"] = content_disposition_header(
            as_attachment=True, filename=export_file_name(user_id)
        )
        return response
