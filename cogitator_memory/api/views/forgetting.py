"""Forgetting a user, asked for through the API: ``POST`` starts it in the background (202,
the run to poll, its URL in Location), ``GET`` on the run tells its status and what went.

Who may: a logged-in person (session or token) holding
``cogitator_memory.forget_user_memory``, for a user their grants reach in every agent
named. An API key gets 403 ``forget_not_permitted`` whatever its grants: forgetting a
person reaches every thread of theirs and everything memory keeps of them, and a key acts
for a program (the same rule as the export). Trusted automation calls
``MemoryCascade.delete_user`` in the project's code. A run is seen by the person who asked
for it (and superusers).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.forgetting import (
    ForgetRequestSerializer,
    ForgetRunSerializer,
)
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, ERROR_404, MemoryAPIView
from cogitator_memory.cascade.actions import FORGET_PERMISSION, ForgetUser
from cogitator_memory.cascade.runs import get_forget_run
from cogitator_memory.review import Via

ERROR_403_FORGET = OpenApiResponse(
    ErrorSerializer,
    description="An API key, or a user without the permission "
    f"{FORGET_PERMISSION} (forget_not_permitted); or grants that do not reach the user in "
    "an agent named, or in any agent (permission_denied).",
)
ERROR_409_OPEN = OpenApiResponse(
    ErrorSerializer,
    description="A forget run of the user for other agents is still open (forget_run_open).",
)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_users_forget",
        summary="Forget everything memory keeps of a user, in the background",
        description="Starts MemoryCascade.delete_user for the user in the agents named (by "
        "default every agent your grants reach for the user): every thread of the user, "
        "the user's messages (with their replies and copies) in threads of others that "
        "list the user, the items, entities and memory files of the user's scope, the "
        "user's vectors and channel sessions. `confirm` must be the user id again. 202 "
        "with the run to poll (its id is the task id, its URL in Location); while a run of "
        "the user for the same agents is open, that run is the answer. For people holding "
        f"the permission `{FORGET_PERMISSION}`; an API key gets 403.",
        request=ForgetRequestSerializer,
        responses={
            202: ForgetRunSerializer,
            400: ERROR_400,
            404: OpenApiResponse(ErrorSerializer, description="No such route."),
            409: ERROR_409_OPEN,
            **COMMON_ERRORS,
            403: ERROR_403_FORGET,
        },
    ),
)
class UserForgetView(MemoryAPIView):
    serializer_class = ForgetRunSerializer

    def post(self, request: Request, user_id: str) -> Response:
        action = ForgetUser(request.user, grants=self.grants, via=Via.API, api_key=self.api_key)
        action.check()
        payload = ForgetRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        run, _created = action.request(user_id, data.get("agent_ids"), confirm=data["confirm"])
        location = reverse("cogitator_memory_api:forget-run", args=[run.pk], request=request)
        return Response(
            ForgetRunSerializer(run).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": location},
        )


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_forgets_retrieve",
        summary="The status of a forget run",
        description="Its status, batches done of the total, and what went so far (all of "
        "it once done), counted. For the person who asked for it (and superusers).",
        responses={
            200: ForgetRunSerializer,
            404: ERROR_404,
            **COMMON_ERRORS,
            403: ERROR_403_FORGET,
        },
    ),
)
class ForgetRunView(MemoryAPIView):
    serializer_class = ForgetRunSerializer

    def get(self, request: Request, run_id: str) -> Response:
        ForgetUser(request.user, grants=self.grants, via=Via.API, api_key=self.api_key).check()
        return Response(ForgetRunSerializer(get_forget_run(run_id, user=request.user)).data)
