"""A project-level 404 handler that answers API paths in the API's error shape.

Django routes a URL that matches no pattern (e.g. an id with a ``/`` in it) to the
project's ``handler404``, which renders HTML. Set ``handler404 =
"cogitator_memory.api.handlers.not_found"`` in the root URLconf so clients of the API get
the same JSON body as for a missing object; other paths keep Django's page.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found

from cogitator_memory.api.exceptions import error_body

API_PATH_PREFIX = "/api/"


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PATH_PREFIX):
        return JsonResponse(
            error_body("not_found", "Not found."),
            status=404,
            json_dumps_params={"ensure_ascii": True},
        )
    return page_not_found(request, exception or Exception("Not found"))
