"""``GET /health/live`` and ``GET /health/ready``: JSON, never cached.

``live`` answers 200 as soon as the process serves requests, with no I/O: a liveness probe
(restart when it fails). ``ready`` runs ``report.health_check()``: 200 when ready, 503 when
a check failed, with each check's status and reason. Neither opens a transaction, so
``ATOMIC_REQUESTS`` does not connect to the database before the checks do.
"""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from cogitator_memory.health.report import health_check


@transaction.non_atomic_requests
@never_cache
@require_safe
def live(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "pass"})


@transaction.non_atomic_requests
@never_cache
@require_safe
def ready(request: HttpRequest) -> JsonResponse:
    report = health_check()
    return JsonResponse(report.as_dict(), status=200 if report.ready else 503)
