"""Settings of the demo and deployment project.

Everything that differs between machines comes from the environment:

- ``DATABASE_URL``: any URL dj-database-url reads; a SQLite file ``db.sqlite3`` when unset.
- ``CELERY_BROKER_URL``: e.g. ``redis://127.0.0.1:6379/0``; when unset, tasks run eagerly
  in the process that sends them.
- ``DATABASE_PREPARE_THRESHOLD``: on PostgreSQL, runs after which a hot statement is
  prepared (5); ``off`` behind a pooler in transaction mode.
- ``DJANGO_SECRET_KEY``, ``DJANGO_DEBUG``, ``DJANGO_ALLOWED_HOSTS``.
- ``COGITATOR_MEMORY_LLM_*``, ``_EMBEDDINGS_*``, ``_EXTRACTION_*``, ``_COMPACTION_*``: keys of
  ``COGITATOR_MEMORY`` (below; README, "Health and readiness", lists them).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url

from cogitator_memory.beat import BEAT_SCHEDULE

BASE_DIR = Path(__file__).resolve().parent.parent


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_values(
    prefix: str, *, texts: tuple[str, ...] = (), numbers: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The keys of a ``COGITATOR_MEMORY`` section that variables ``<prefix><KEY>`` give: unset
    or empty ones are left out (the app's defaults stand). ``numbers`` are read as whole
    numbers; a value that is not one stays text, so ``manage.py check`` (and migrate) names
    the key instead of settings failing to import."""
    values: dict[str, Any] = {}
    for key in (*texts, *numbers):
        value = os.environ.get(f"{prefix}{key}", "").strip()
        if value:
            values[key] = int(value) if key in numbers and value.isdigit() else value
    return values


DEBUG = env_flag("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("Set DJANGO_SECRET_KEY when DJANGO_DEBUG is off.")
    SECRET_KEY = "insecure-demo-key-for-local-development-only"
ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")
    if host.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "rest_framework_api_key",
    "django_filters",
    "drf_spectacular",
    "cogitator_memory",
    "project.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

if not DEBUG:
    # Serves the admin's and the schema pages' static files under gunicorn; with DEBUG,
    # runserver serves them from the apps.
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

ROOT_URLCONF = "project.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "project.wsgi.application"
ASGI_APPLICATION = "project.asgi.application"


def database_from_url(url: str) -> dict:
    config: dict[str, Any] = dict(
        dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    )
    if config["ENGINE"] == "django.db.backends.postgresql":
        # Statements the app sends on every write (an item's read and insert, a keyword
        # posting's insert) are prepared after this many runs on a connection, so they are
        # parsed and planned once. Behind a pooler in transaction mode (PgBouncer before
        # 1.21) set DATABASE_PREPARE_THRESHOLD=off: nothing is prepared then.
        threshold = os.environ.get("DATABASE_PREPARE_THRESHOLD", "5").strip().lower()
        if threshold not in {"off", "none", ""}:
            config["OPTIONS"] = {**config.get("OPTIONS", {}), "prepare_threshold": int(threshold)}
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config["CONN_MAX_AGE"] = 0
        config["OPTIONS"] = {
            # Writers take the lock when their transaction begins, so two writers queue
            # instead of one failing with "database is locked" on upgrade.
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    return config


DATABASES = {
    "default": database_from_url(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
    )
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "cogitator_memory.api.exceptions.memory_exception_handler",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "cogitator_memory.api.authentication.APIKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["cogitator_memory.api.permissions.IsPrincipal"],
    # Requests per principal (user or API key) to the memory API.
    "DEFAULT_THROTTLE_RATES": {"memory": os.environ.get("MEMORY_API_RATE", "600/minute")},
}

SPECTACULAR_SETTINGS = {
    "TITLE": "cogitator-memory API",
    "DESCRIPTION": "Long-term memory for AI agents: threads as trees and what they established.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # PATCH bodies are documented with their required fields: the memory API's PATCH
    # takes a whole metadata object, not a partial one.
    "COMPONENT_SPLIT_PATCH": False,
    "ENUM_NAME_OVERRIDES": {
        "EntryTypeEnum": "cogitator_memory.threads.models.EntryType",
        "RoleEnum": "cogitator_memory.threads.models.Role",
        "ItemKindEnum": "cogitator_memory.items.models.ItemKind",
        "ItemStatusEnum": "cogitator_memory.items.models.ItemStatus",
        "TrustEnum": "cogitator_memory.items.models.Trust",
        "RunStatusEnum": "cogitator_memory.items.models.RunStatus",
    },
    # 3.1: its schemas are JSON Schema, which can describe object keys (propertyNames).
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        # Links, JSON-object query parameters, the 413 and 415 of bodies.
        "cogitator_memory.api.schema.postprocess_schema",
    ],
}

# Celery: a Redis broker when CELERY_BROKER_URL is set, eager execution otherwise.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or None
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or CELERY_BROKER_URL
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
# The app's periodic tasks: the outbox sweeper and the pruning of orphaned vectors.
CELERY_BEAT_SCHEDULE: dict = {**BEAT_SCHEDULE}

# The embedding service and vector store of cogitator_memory ("EMBEDDINGS" in
# cogitator_memory/conf.py). Without a provider, vector search and the message index are off.
# The model of extraction, compaction and upkeep ("LLM"): without a provider that work is off;
# PROVIDER "scripted" with SCRIPT (a JSON file of recorded answers) replays answers.
COGITATOR_MEMORY: dict = {
    "LLM": {
        "PROVIDER": os.environ.get("COGITATOR_MEMORY_LLM_PROVIDER") or None,
        "MODEL": os.environ.get("COGITATOR_MEMORY_LLM_MODEL") or None,
        "API_KEY": os.environ.get("COGITATOR_MEMORY_LLM_API_KEY") or None,
        "BASE_URL": os.environ.get("COGITATOR_MEMORY_LLM_BASE_URL") or None,
        "SCRIPT": os.environ.get("COGITATOR_MEMORY_LLM_SCRIPT") or None,
    },
    "EMBEDDINGS": {
        "PROVIDER": os.environ.get("COGITATOR_MEMORY_EMBEDDINGS_PROVIDER") or None,
        "MODEL": os.environ.get("COGITATOR_MEMORY_EMBEDDINGS_MODEL") or None,
        "DIMENSIONS": int(os.environ.get("COGITATOR_MEMORY_EMBEDDINGS_DIMENSIONS") or 0) or None,
        "API_KEY": os.environ.get("COGITATOR_MEMORY_EMBEDDINGS_API_KEY") or None,
        "BASE_URL": os.environ.get("COGITATOR_MEMORY_EMBEDDINGS_BASE_URL") or None,
        "STORE": os.environ.get("COGITATOR_MEMORY_EMBEDDINGS_STORE") or "auto",
    },
    # Extraction of memory items in Celery ("EXTRACTION"), off unless turned on here.
    "EXTRACTION": {
        "ENABLED": env_flag("COGITATOR_MEMORY_EXTRACTION_ENABLED", False),
        **env_values(
            "COGITATOR_MEMORY_EXTRACTION_",
            texts=("MODE", "TIME_ZONE"),
            numbers=("DEBOUNCE_SECONDS", "WINDOW_TOKENS", "MAX_TOKENS"),
        ),
    },
    # Compaction of long threads in Celery ("COMPACTION"), off unless turned on here.
    "COMPACTION": {
        "ENABLED": env_flag("COGITATOR_MEMORY_COMPACTION_ENABLED", False),
        **{
            key: int(value) if value.strip().lower() != "none" else None
            for key in ("THRESHOLD", "MESSAGE_THRESHOLD", "KEEP_RECENT")
            if (value := os.environ.get(f"COGITATOR_MEMORY_COMPACTION_{key}"))
        },
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "cogitator_memory": {
            "handlers": ["console"],
            "level": os.environ.get("COGITATOR_MEMORY_LOG_LEVEL", "INFO"),
        }
    },
}
