"""Health and readiness; mount with ``path("health/", include("cogitator_memory.health.urls"))``
for ``/health/live`` and ``/health/ready``."""

from django.urls import path

from cogitator_memory.health.views import live, ready

urlpatterns = [
    path("live", live, name="health-live"),
    path("ready", ready, name="health-ready"),
]
