from csp.decorators import csp_replace
from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

# The documentation pages' scripts and styles (settings.API_DOCS_CONTENT_SECURITY_POLICY);
# Swagger UI's start script is served as a script of its own (?script), not inline.
docs_policy = csp_replace(settings.API_DOCS_CONTENT_SECURITY_POLICY)

urlpatterns = [
    # The demo's front page is its admin: threads, memory items to review, grants.
    path("", RedirectView.as_view(url="/admin/", permanent=False), name="home"),
    path("admin/", admin.site.urls),
    # GET /health/live (the process answers) and /health/ready (the deployment can serve).
    path("health/", include("cogitator_memory.health.urls")),
    path("api/memory/", include("cogitator_memory.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path(
        "api/schema/swagger/",
        docs_policy(SpectacularSwaggerSplitView.as_view(url_name="schema")),
        name="swagger",
    ),
    path(
        "api/schema/redoc/",
        docs_policy(SpectacularRedocView.as_view(url_name="schema")),
        name="redoc",
    ),
]

# API paths that match no route answer in the API's JSON error shape.
handler404 = "cogitator_memory.api.handlers.not_found"
handler400 = "cogitator_memory.api.handlers.bad_request"
# A database that is locked or gone, met outside a view: 503 with Retry-After, not a 500.
handler500 = "cogitator_memory.api.handlers.server_error"
