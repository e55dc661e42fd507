"""Throttling per principal (user or API key), at the rate named ``memory``."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from cogitator_memory.api.grants import principal_key


class PrincipalRateThrottle(SimpleRateThrottle):
    """Counts requests per principal; set the rate in
    ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["memory"]`` (no rate, no throttling)."""

    scope = "memory"

    def get_rate(self) -> str | None:
        # Read at request time, not import time, so override_settings reaches it.
        rates = api_settings.DEFAULT_THROTTLE_RATES or {}
        rate = rates.get(self.scope)
        return str(rate) if rate else None

    def allow_request(self, request: Request, view: Any) -> bool:
        if self.rate is None:
            return True
        return super().allow_request(request, view)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        key = principal_key(request) or f"anon:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": key}
