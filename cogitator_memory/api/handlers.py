"""Project-level error handlers that answer API paths in the API's error shape.

Django routes a URL that matches no pattern (e.g. an id with a ``/`` in it) to the
project's ``handler404``, and a request it refuses before any view runs (a body over
``DATA_UPLOAD_MAX_MEMORY_SIZE``, a suspicious header) to ``handler400``; both render HTML.
Set ``handler404 = "cogitator_memory.api.handlers.not_found"`` and ``handler400 =
"cogitator_memory.api.handlers.bad_request"`` in the root URLconf so clients of the API
get the same JSON body as from the API's own errors; other paths keep Django's pages.
``handler500 = "cogitator_memory.api.handlers.server_error"`` answers a database that is
locked or gone, met outside a view (a session saved by its middleware), with a 503 and
``Retry-After`` instead of a 500.
"""

from __future__ import annotations

import sys

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import bad_request as default_bad_request
from django.views.defaults import page_not_found
from django.views.defaults import server_error as default_server_error

from cogitator_memory.api.exceptions import TOO_LARGE_MESSAGE, database_busy_error, error_body
from cogitator_memory.api.middleware import API_PATH_PREFIX, unavailable_response


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PATH_PREFIX):
        return JsonResponse(
            error_body("not_found", "Not found."),
            status=404,
            json_dumps_params={"ensure_ascii": True},
        )
    return page_not_found(request, exception or Exception("Not found"))


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PATH_PREFIX):
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(error_body("request_too_large", TOO_LARGE_MESSAGE), status=413)
        return JsonResponse(error_body("bad_request", "Bad request."), status=400)
    return default_bad_request(request, exception or Exception("Bad request"))


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls the 500 handler while it handles the error: the error is the one in flight.
    busy = database_busy_error(sys.exc_info()[1] or Exception())
    if busy is not None:
        return unavailable_response(request, busy)
    if request.path.startswith(API_PATH_PREFIX):
        return JsonResponse(error_body("server_error", "Server error."), status=500)
    return default_server_error(request)
