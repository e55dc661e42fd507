"""Throttling per principal (user or API key), at the rate named ``memory``, and of the
clients whose credentials were refused, at the rate named ``failed_auth``."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
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


class FailedAuthenticationThrottle(SimpleRateThrottle):
    """Counts the requests of a client (its address, ``NUM_PROXIES`` deciding which)
    whose token or API key was refused; past the rate named ``failed_auth`` in
    ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``, every request of that client that sends
    one is answered 429 with ``Retry-After``, before its credentials are even looked at, so
    guessing keys costs the guesser time. A request whose credentials are good adds
    nothing to the count. The counts live in Django's cache: the project shares one
    (Redis) between its web processes."""

    scope = "failed_auth"
    # Set by SimpleRateThrottle.__init__ from the rate (the stubs do not declare them).
    num_requests: int
    duration: int

    def get_rate(self) -> str | None:
        rates = api_settings.DEFAULT_THROTTLE_RATES or {}
        rate = rates.get(self.scope)
        return str(rate) if rate else None

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def _load(self, request: Request) -> None:
        self.key = self.get_cache_key(request, None)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()

    def refuse_if_blocked(self, request: Request) -> None:
        """Raise ``Throttled`` when the client's failures fill the window."""
        if self.rate is None:
            return
        self._load(request)
        if len(self.history) >= self.num_requests:
            raise exceptions.Throttled(
                wait=self.wait(),
                detail="Too many requests with a token or API key that was refused; "
                "try again later.",
            )

    def record_failure(self, request: Request) -> None:
        if self.rate is None:
            return
        self._load(request)
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)
