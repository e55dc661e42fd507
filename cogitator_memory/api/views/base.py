"""What every memory endpoint shares: who may call, how fast, and what they may see."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework.authentication import SessionAuthentication
from rest_framework.generics import GenericAPIView
from rest_framework_api_key.models import APIKey

from cogitator_memory import policy
from cogitator_memory.api.authentication import APIKeyAuthentication, TokenAuthentication
from cogitator_memory.api.grants import request_grants
from cogitator_memory.api.parsers import SafeJSONParser
from cogitator_memory.api.permissions import IsPrincipal
from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.throttling import PrincipalRateThrottle
from cogitator_memory.exceptions import EntryNotFound
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.jsondata import text_problem
from cogitator_memory.threads.models import Entry, Thread
from cogitator_memory.threads.selectors import visible_thread

ENTRY_ID_MAX_LENGTH = 64

ERROR_400 = OpenApiResponse(ErrorSerializer, description="Invalid input; errors per field.")
ERROR_401 = OpenApiResponse(ErrorSerializer, description="Not authenticated.")
ERROR_403 = OpenApiResponse(ErrorSerializer, description="The principal has no grant for this.")
ERROR_404 = OpenApiResponse(ErrorSerializer, description="Missing, or not visible to you.")
ERROR_409 = OpenApiResponse(ErrorSerializer, description="Refused by the current state.")
ERROR_429 = OpenApiResponse(ErrorSerializer, description="Too many requests.")

COMMON_ERRORS = {401: ERROR_401, 403: ERROR_403, 429: ERROR_429}


class MemoryAPIView(GenericAPIView):
    # Token first: its header makes an unauthenticated request a 401 with WWW-Authenticate.
    authentication_classes = [TokenAuthentication, APIKeyAuthentication, SessionAuthentication]
    permission_classes = [IsPrincipal]
    throttle_classes = [PrincipalRateThrottle]
    # JSON only: form bodies cannot carry the JSON objects (metadata, content parts) the
    # endpoints take, and would silently drop them.
    parser_classes = [SafeJSONParser]

    @property
    def grants(self) -> Grants:
        return request_grants(self.request)

    @property
    def api_key(self) -> APIKey | None:
        """The API key the request authenticated with, if it did (None for a user)."""
        auth = self.request.auth
        return auth if isinstance(auth, APIKey) else None

    def reaches(self, scope: MemoryScope) -> bool:
        """Whether the principal's grants reach the scope's agent and user; a read of a
        scope they do not reach answers as for a scope holding nothing."""
        return policy.can_see(self.grants, scope.agent_id, scope.user_id)

    def visible_thread(self, thread_id: str) -> Thread:
        """The thread if the caller may see it; ``ThreadNotFound`` (404) otherwise, the
        same answer as for a thread that does not exist."""
        return visible_thread(thread_id, self.grants)

    def visible_entry(self, entry_id: str) -> Entry:
        """The entry if the caller may see its thread; ``EntryNotFound`` (404) otherwise."""
        entry = (
            Entry.objects.visible_to(self.grants).filter(pk=entry_id).first()
            if len(entry_id) <= ENTRY_ID_MAX_LENGTH and not text_problem(entry_id)
            else None
        )
        if entry is None:
            raise EntryNotFound(entry_id)
        return entry
