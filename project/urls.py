from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

urlpatterns = [
    # The demo's front page is its admin: threads, memory items to review, grants.
    path("", RedirectView.as_view(url="/admin/", permanent=False), name="home"),
    path("admin/", admin.site.urls),
    # GET /health/live (the process answers) and /health/ready (the deployment can serve).
    path("health/", include("cogitator_memory.health.urls")),
    path("api/memory/", include("cogitator_memory.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/schema/swagger/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger"),
    path("api/schema/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
]

# API paths that match no route answer in the API's JSON error shape.
handler404 = "cogitator_memory.api.handlers.not_found"
handler400 = "cogitator_memory.api.handlers.bad_request"
