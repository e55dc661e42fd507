"""A database that is locked, slow or gone answers 503 with ``Retry-After`` on every page.

The API's views already answer these errors in their JSON shape (``api.exceptions``); the
rest of a site (the admin, the login page, plain Django views) would show Django's 500
page, or its traceback with DEBUG on, though nothing is wrong with the code and the same
request can succeed a moment later. Add ``DatabaseUnavailableMiddleware`` to
``MIDDLEWARE``: an error of a view that ``database_busy_error`` recognises becomes a 503,
in the API's JSON error shape under ``/api/`` and as plain text elsewhere. Errors raised
by other middleware, after the view, reach the project's ``handler500``
(``api.handlers.server_error`` answers them the same way).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from cogitator_memory.api.exceptions import database_busy_error, error_body
from cogitator_memory.exceptions import DatabaseBusy

logger = logging.getLogger(__name__)

# Paths answered in the API's JSON error shape (as in api.handlers).
API_PATH_PREFIX = "/api/"


def unavailable_response(request: HttpRequest, busy: DatabaseBusy) -> HttpResponse:
    """The 503 of ``busy``: JSON under ``/api/``, plain text elsewhere."""
    logger.warning("%s %s: %s", request.method, request.path, busy.message)
    response: HttpResponse
    if request.path.startswith(API_PATH_PREFIX):
        response = JsonResponse(error_body(busy.code, busy.public_message), status=503)
    else:
        response = HttpResponse(
            busy.public_message, status=503, content_type="text/plain; charset=utf-8"
        )
    response["Retry-After"] = str(busy.retry_after)
    return response


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        busy = database_busy_error(exception)
        return unavailable_response(request, busy) if busy is not None else None
