"""Who a request comes from, one rule for the admin's login lockouts and the API's throttles."""

from __future__ import annotations

from django.http import HttpRequest
from rest_framework.throttling import BaseThrottle


def client_address(request: HttpRequest) -> str:
    """The client's address as DRF's throttles see it: the peer's address, or the one the
    nearest of ``REST_FRAMEWORK["NUM_PROXIES"]`` trusted proxies put in X-Forwarded-For,
    so a client cannot pick its own address with a header of its own."""
    return str(BaseThrottle().get_ident(request))  # type: ignore[arg-type]
