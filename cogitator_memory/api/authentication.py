"""DRF tokens and API keys of services as DRF authentication, with refused ones throttled.

Keys are made, hashed and checked by djangorestframework-api-key; ``APIKeyAuthentication``
only turns a valid ``Authorization: Api-Key <key>`` header into a request whose ``auth``
is the key, so the key is the principal that grants and throttles are counted against.

Both classes count the refusals of a client (``FailedAuthenticationThrottle``): a client
that sent too many bad tokens or keys is answered 429 with ``Retry-After`` for a while,
whatever it sends, so keys cannot be guessed at the speed of the server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from django.contrib.auth.models import AnonymousUser
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from cogitator_memory.api.throttling import FailedAuthenticationThrottle

if TYPE_CHECKING:
    from rest_framework_api_key.models import AbstractAPIKey

T = TypeVar("T")


def counting_refusals(request: Request, check: Callable[[], T]) -> T:
    """``check()`` the credentials the request sent, unless its client is throttled for
    the refusals before; a refusal (``AuthenticationFailed``) is counted."""
    throttle = FailedAuthenticationThrottle()
    throttle.refuse_if_blocked(request)
    try:
        return check()
    except exceptions.AuthenticationFailed:
        throttle.record_failure(request)
        raise


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's ``Authorization: Token <key>``, with refused tokens counted per client."""

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        words = authentication.get_authorization_header(request).split()
        if not words or words[0].lower() != self.keyword.lower().encode():
            # No token sent: nothing to count, and another class may authenticate.
            return None
        return counting_refusals(
            request, lambda: super(TokenAuthentication, self).authenticate(request)
        )


class APIKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Api-Key <key>``. djangorestframework-api-key is imported when a
    request is read, not with this module (``cogitator_memory.api.grants`` says why)."""

    # djangorestframework-api-key's KeyParser.keyword.
    keyword = "Api-Key"

    def authenticate(self, request: Request) -> tuple[Any, AbstractAPIKey] | None:
        from rest_framework_api_key.permissions import KeyParser

        key = KeyParser().get(request._request)
        if not key:
            return None
        return counting_refusals(request, lambda: self._check(key))

    def _check(self, key: str) -> tuple[Any, AbstractAPIKey]:
        from rest_framework_api_key.models import APIKey

        try:
            api_key = APIKey.objects.get_from_key(key)
        except APIKey.DoesNotExist as exc:
            raise exceptions.AuthenticationFailed("Invalid API key.") from exc
        if api_key.revoked or api_key.has_expired:
            raise exceptions.AuthenticationFailed("This API key is revoked or expired.")
        return AnonymousUser(), api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
