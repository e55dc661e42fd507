"""Health and readiness: ``report.health_check()`` and the views of ``urls.py``."""
