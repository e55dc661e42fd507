"""Project-level error handlers that answer API paths in the API's error shape.

Django routes a URL that matches no pattern (e.g. an id with a ``/`` in it) to the
project's ``handler404``, and a request it refuses before any view runs (a body over
``DATA_UPLOAD_MAX_MEMORY_SIZE``, a suspicious header) to ``handler400``; both render HTML.
Set ``handler404 = "cogitator_memory.api.handlers.not_found"`` and ``handler400 =
"cogitator_memory.api.handlers.bad_request"`` in the root URLconf so clients of the API
get the same JSON body as from the API's own errors; other paths keep Django's pages.
"""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import bad_request as default_bad_request
from django.views.defaults import page_not_found

from cogitator_memory.api.exceptions import TOO_LARGE_MESSAGE, error_body

API_PATH_PREFIX = "/api/"


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
