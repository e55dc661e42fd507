"""Settings of the demo and deployment project.

Everything that differs between machines comes from the environment:

- ``DATABASE_URL``: any URL dj-database-url reads; a SQLite file ``db.sqlite3`` when unset.
- ``CELERY_BROKER_URL``: e.g. ``redis://127.0.0.1:6379/0``; when unset, tasks run eagerly
  in the process that sends them. ``CELERY_RESULT_BACKEND``: none unless set (the app
  reads no task result). ``CELERY_VISIBILITY_TIMEOUT``: seconds before Redis hands an
  unacknowledged task to another worker (7200).
- ``DATABASE_PREPARE_THRESHOLD``: on PostgreSQL, runs after which a hot statement is
  prepared (5); ``off`` behind a pooler in transaction mode.
- ``DJANGO_SECRET_KEY``, ``DJANGO_DEBUG``, ``DJANGO_ALLOWED_HOSTS``.
- ``CACHE_URL`` (or ``REDIS_URL``): the cache every web process shares (the API's throttles).
- ``DATABASE_BUSY_TIMEOUT``, ``DATABASE_STATEMENT_TIMEOUT``: how long a statement may wait for
  a lock or run, in seconds, before the request is answered 503 with ``Retry-After``.
- With ``DJANGO_DEBUG`` off, HTTPS only: ``DJANGO_SECURE_PROXY_SSL_HEADER``,
  ``DJANGO_HSTS_SECONDS``, ``DJANGO_HSTS_PRELOAD``, ``DJANGO_SECURE_SSL_REDIRECT``,
  ``DJANGO_SECURE_REDIRECT_EXEMPT``, ``DJANGO_TRUSTED_PROXIES``; failed admin logins:
  ``AXES_FAILURE_LIMIT``, ``AXES_COOLOFF_MINUTES``. README.md, "Deploying safely".
- ``COGITATOR_MEMORY_LLM_*``, ``_EMBEDDINGS_*``, ``_EXTRACTION_*``, ``_COMPACTION_*``,
  ``_UPKEEP_*``: keys of ``COGITATOR_MEMORY`` (below; README, "Health and readiness", lists
  them).
"""

from __future__ import annotations

import os
from datetime import timedelta
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
    # Counts failed admin logins and locks the account and the client out (AXES_* below).
    "axes",
    # The Content-Security-Policy header (CONTENT_SECURITY_POLICY below).
    "csp",
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
    "csp.middleware.CSPMiddleware",
    # A database that is locked, slow or gone answers 503 with Retry-After, not a 500 page.
    "cogitator_memory.api.middleware.DatabaseUnavailableMiddleware",
    # Last: it answers a locked-out login before the view runs.
    "axes.middleware.AxesMiddleware",
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


def env_seconds(name: str, default: float) -> float:
    """A duration in seconds from the environment; 0 turns the limit off."""
    value = os.environ.get(name, "").strip()
    return float(value) if value else default


def database_from_url(url: str) -> dict:
    config: dict[str, Any] = dict(
        dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    )
    # How long a statement waits for a lock another writer holds, and how long one may run,
    # before it is refused: the request is then answered 503 with Retry-After
    # (cogitator_memory/api/exceptions.py and api/middleware.py) while gunicorn's worker
    # (30 s) is still there to answer it.
    busy_timeout = env_seconds("DATABASE_BUSY_TIMEOUT", 5)
    statement_timeout = env_seconds("DATABASE_STATEMENT_TIMEOUT", 20)
    if config["ENGINE"] == "django.db.backends.postgresql":
        limits = " ".join(
            f"-c {name}={round(seconds * 1000)}"
            for name, seconds in (
                ("lock_timeout", busy_timeout),
                ("statement_timeout", statement_timeout),
            )
            if seconds > 0
        )
        if limits:
            config["OPTIONS"] = {**config.get("OPTIONS", {}), "options": limits}
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
            # Seconds a writer waits for the write lock before "database is locked".
            "timeout": busy_timeout,
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
        "cogitator_memory.api.authentication.TokenAuthentication",
        "cogitator_memory.api.authentication.APIKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["cogitator_memory.api.permissions.IsPrincipal"],
    # Requests per principal (user or API key) to the memory API; requests per client
    # whose token or API key was refused ("failed_auth": then 429 until the window passes).
    "DEFAULT_THROTTLE_RATES": {
        "memory": os.environ.get("MEMORY_API_RATE", "600/minute"),
        "failed_auth": os.environ.get("MEMORY_API_FAILED_AUTH_RATE", "20/minute"),
    },
    # The client of a request is the address the nearest of these proxies saw in
    # X-Forwarded-For; 0: the peer's address itself. Never None, with which DRF would take
    # the whole X-Forwarded-For a client sends as its identity, a new one per request.
    # Failed logins of the admin count by the same client (project/security.py).
    "NUM_PROXIES": int(os.environ.get("DJANGO_TRUSTED_PROXIES") or 0),
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
        "GraphStatusEnum": "cogitator_memory.graph.models.GraphStatus",
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
# No result backend: the app reads no task result (each job's row is its record), and a
# backend that defaults to the broker retries its connection for seconds when Redis is
# down. Set CELERY_RESULT_BACKEND only for tasks of your own that return results.
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_IGNORE_RESULT = CELERY_RESULT_BACKEND is None
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
# A task is acknowledged after it ran; a worker killed mid-task gives it back at once
# (prefork) or after the visibility timeout; either way the job's lease decides who runs it.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Sending a task never holds a request for long: a broker that does not answer within a
# second or two is given up on (the job stays queued; the sweeper sends it later).
CELERY_BROKER_CONNECTION_TIMEOUT = 2.0
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 0.5,
}
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Above the longest job (a job's lease is renewed by each step; a step is one model
    # call), so Redis never hands a running task to a second worker; a lost worker's job
    # is taken again through its lease by the sweeper long before this.
    "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "7200")),
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
    "max_connections": 20,
}
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
    # Between runs ("UPKEEP"): the sleep-time pass on beat, off unless turned on here.
    "UPKEEP": {
        "ENABLED": env_flag("COGITATOR_MEMORY_UPKEEP_ENABLED", False),
        **env_values(
            "COGITATOR_MEMORY_UPKEEP_",
            texts=("PLAYBOOK_MODE",),
            numbers=("MAX_ENTITIES", "MIN_ITEMS", "MAX_CHANGES", "MAX_SUBJECTS"),
        ),
    },
    # Jobs of record: attempts, lease, backoff ("JOBS"); the app's defaults unless set.
    "JOBS": {
        key: float(value) if key == "RETRY_FACTOR" else int(value)
        for key in (
            "MAX_ATTEMPTS",
            "LEASE_SECONDS",
            "RETRY_DELAY_SECONDS",
            "RETRY_FACTOR",
            "REPUBLISH_AFTER_SECONDS",
        )
        if (value := os.environ.get(f"COGITATOR_MEMORY_JOBS_{key}"))
    },
}

# --- Caches -----------------------------------------------------------------------------
# The API's throttles count in the cache, so every web process must share one: Redis at
# CACHE_URL (or REDIS_URL). Without it each process counts for itself (check W002 says so
# when DEBUG is off). Keep it off the broker's database: clearing the cache empties it.
CACHE_URL = os.environ.get("CACHE_URL") or os.environ.get("REDIS_URL") or None
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# --- HTTPS and cookies (with DEBUG off) -----------------------------------------------------
# Served behind a proxy that ends TLS: it tells Django the request came over HTTPS in this
# header ("X-Forwarded-Proto: https"); a client cannot forge it through that proxy.
_proxy_ssl_header = os.environ.get("DJANGO_SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto")
if not DEBUG:
    if _proxy_ssl_header.strip():
        SECURE_PROXY_SSL_HEADER = (
            "HTTP_" + _proxy_ssl_header.strip().upper().replace("-", "_"),
            "https",
        )
    SECURE_SSL_REDIRECT = env_flag("DJANGO_SECURE_SSL_REDIRECT", True)
    # Paths (regular expressions, comma separated, without the leading slash) answered over
    # plain HTTP too: by default the health endpoints, which an orchestrator probes from
    # inside the network without TLS.
    SECURE_REDIRECT_EXEMPT = [
        pattern.strip()
        for pattern in os.environ.get("DJANGO_SECURE_REDIRECT_EXEMPT", r"^health/").split(",")
        if pattern.strip()
    ]
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_flag("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
    # Lets the domain be submitted to the browsers' list of HTTPS-only sites (hstspreload);
    # leaving that list takes months, so a domain that may serve plain HTTP again sets 0.
    SECURE_HSTS_PRELOAD = env_flag("DJANGO_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# --- Content-Security-Policy (django-csp) -------------------------------------------------
# Only this site's own scripts, styles and images: the admin and the review screens load
# everything from static files (tests/deploy/test_csp_browser.py checks it in Chromium).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}
# The directives the API's documentation pages replace (project/urls.py): Swagger UI and
# Redoc come from drf-spectacular's CDN (SWAGGER_UI_DIST, REDOC_DIST) and style themselves
# inline, and Redoc loads Google's fonts and runs its search in a worker made from a blob.
API_DOCS_CDN = "https://cdn.jsdelivr.net"
API_DOCS_CONTENT_SECURITY_POLICY = {
    "script-src": ["'self'", API_DOCS_CDN],
    "style-src": ["'self'", API_DOCS_CDN, "https://fonts.googleapis.com", "'unsafe-inline'"],
    "font-src": ["'self'", "https://fonts.gstatic.com"],
    "img-src": ["'self'", "data:", API_DOCS_CDN],
    "worker-src": ["'self'", "blob:"],
}

# --- Failed admin logins (django-axes) ----------------------------------------------------
AUTHENTICATION_BACKENDS = [
    # First: it refuses a locked-out client or account before a password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Failures in a row after which the account is locked for every client, and the client
# (its address) for every account; a login that succeeds starts the count again.
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT") or 5)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
# Minutes a lockout lasts; failures older than that no longer count.
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("AXES_COOLOFF_MINUTES") or 15))
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "axes/lockout.html"
# The client is found as the API finds it (NUM_PROXIES above).
AXES_CLIENT_IP_CALLABLE = "project.security.client_address"
# Successful logins are not recorded row by row; failures and lockouts are.
AXES_DISABLE_ACCESS_LOG = True

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
