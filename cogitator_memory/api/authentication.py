"""API keys of services as DRF authentication.

Keys are made, hashed and checked by djangorestframework-api-key; this class only turns a
valid ``Authorization: Api-Key <key>`` header into a request whose ``auth`` is the key,
so the key is the principal that grants and throttles are counted against.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from rest_framework import authentication, exceptions
from rest_framework.request import Request
from rest_framework_api_key.models import AbstractAPIKey, APIKey
from rest_framework_api_key.permissions import KeyParser


class APIKeyAuthentication(authentication.BaseAuthentication):
    keyword = KeyParser.keyword

    def authenticate(self, request: Request) -> tuple[Any, AbstractAPIKey] | None:
        key = KeyParser().get(request._request)
        if not key:
            return None
        try:
            api_key = APIKey.objects.get_from_key(key)
        except APIKey.DoesNotExist as exc:
            raise exceptions.AuthenticationFailed("Invalid API key.") from exc
        if api_key.revoked or api_key.has_expired:
            raise exceptions.AuthenticationFailed("This API key is revoked or expired.")
        return AnonymousUser(), api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
