"""System checks, run by ``manage.py check`` (and before ``migrate``, ``runserver``, ...).

The ``COGITATOR_MEMORY`` setting: every key has one validator, in ``SETTING_VALIDATORS``
(top-level keys) or ``SECTION_VALIDATORS`` (the keys of each section, such as ``LLM``). A new
section adds its dict of validators there; ``tests/test_checks.py`` fails while a key of
``DEFAULTS`` has none. The apps: what ``INSTALLED_APPS`` must hold for the app, and for its
REST API when the project's URLconf serves it.

Ids:

- ``E000`` the setting is not a dict;
- ``E001`` an unknown top-level key;
- ``E002`` a value of the wrong type (a section that is not a dict, a text that is a number);
- ``E003`` an unknown key inside a section;
- ``E004`` a number out of its range;
- ``E005`` two keys that contradict each other;
- ``E006`` a name that names nothing: empty, unknown, or a dotted path that does not import;
- ``E007`` a URL that is not an http(s) URL;
- ``E008`` an app the app needs is missing from ``INSTALLED_APPS``;
- ``E009`` the URLconf serves the REST API, and an app the API needs is missing;
- ``E010`` a provider or store the setting names needs a package that is not installed
  (an SDK model provider, the local embedding model, the Qdrant store): the extra to
  install is in the hint;
- ``W001`` the URLconf serves the REST API, and DRF uses another exception handler;
- ``W002`` the URLconf serves the REST API with DEBUG off, and the default cache lives in
  each process: the API's throttles (refused tokens, requests per principal) count per
  process.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks import Warning as CheckWarning
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils.module_loading import import_string

from cogitator_memory.conf import DEFAULTS, SETTINGS_NAME
from cogitator_memory.embeddings.registry import STORES
from cogitator_memory.embeddings.services import PROVIDERS
from cogitator_memory.llm.registry import PROVIDERS as LLM_PROVIDERS
from cogitator_memory.setting_validators import (
    Problem,
    Validator,
    boolean,
    http_url,
    name_or_path,
    non_empty_text,
    one_of,
    positive_number,
    text,
    time_zone_name,
    unit_interval,
    whole_number,
    wrong_type,
)

# Top-level keys that are not sections.
SETTING_VALIDATORS: dict[str, Validator] = {
    "THREAD_ID_PREFIX": text(),
    "ENTRY_ID_PREFIX": text(),
    "LIST_THREADS_DEFAULT_LIMIT": whole_number(1),
    "LIST_THREADS_MAX_LIMIT": whole_number(1),
    "CHARS_PER_TOKEN": positive_number(),
    "PATH_WALK_STEP": whole_number(1),
}

# The LLM providers that call a model over its SDK, and so need a MODEL.
SDK_LLM_PROVIDERS = ("openai", "anthropic", "google")

# The keys of each section (a dict in DEFAULTS), one dict per section.
SECTION_VALIDATORS: dict[str, dict[str, Validator]] = {
    "LLM": {
        "PROVIDER": name_or_path(LLM_PROVIDERS, "Providers", optional=True),
        "MODEL": text(optional=True),
        "API_KEY": text(optional=True),
        "BASE_URL": http_url(),
        "TIMEOUT": positive_number(),
        "MAX_RETRIES": whole_number(0),
        "MAX_TOKENS": whole_number(1),
        "SCRIPT": non_empty_text(optional=True),
    },
    "ITEMS": {
        "ACTIVATION_CONFIDENCE": unit_interval(),
    },
    "EXTRACTION": {
        "ENABLED": boolean(),
        "MODE": one_of(["shadow", "auto"]),
        "WINDOW_TOKENS": whole_number(100),
        "MAX_TOKENS": whole_number(1),
        "TIME_ZONE": time_zone_name(),
        "DEBOUNCE_SECONDS": whole_number(0, 86_400),
    },
    "COMPACTION": {
        "ENABLED": boolean(),
        "STRATEGY": one_of(["summary", "hierarchical"]),
        "THRESHOLD": whole_number(1, optional=True),
        "MESSAGE_THRESHOLD": whole_number(1, optional=True),
        "KEEP_RECENT": whole_number(0),
        "KEEP_RECENT_TOKENS": whole_number(1, optional=True),
        "SUMMARY_MODEL": non_empty_text(optional=True),
        "SUMMARY_PROMPT": non_empty_text(optional=True),
        "CHAPTER_TOKENS": whole_number(100),
        "CHAPTER_CONCURRENCY": whole_number(1),
        "CHAPTERS_PER_ARC": whole_number(2),
        "ARCS_PER_SAGA": whole_number(2),
    },
    "JOBS": {
        "MAX_ATTEMPTS": whole_number(1, 100),
        "LEASE_SECONDS": whole_number(1),
        "RETRY_DELAY_SECONDS": whole_number(0),
        "RETRY_FACTOR": positive_number(),
        "REPUBLISH_AFTER_SECONDS": whole_number(1),
    },
    "UPKEEP": {
        "ENABLED": boolean(),
        "OBSERVATIONS": boolean(),
        "CONSOLIDATION": boolean(),
        "PLAYBOOK_MODE": one_of(["shadow", "apply"]),
        "MAX_ENTITIES": whole_number(1, 100),
        "MIN_ITEMS": whole_number(1),
        "MAX_CHANGES": whole_number(1),
        "MAX_SUBJECTS": whole_number(1),
        "ITEMS_PER_BATCH": whole_number(1, 100_000),
        "SCOPES_PER_PASS": whole_number(1),
    },
    "EMBEDDINGS": {
        "PROVIDER": name_or_path(PROVIDERS, "Providers", optional=True),
        "MODEL": text(optional=True),
        # pgvector's largest vector is 16,000 dimensions.
        "DIMENSIONS": whole_number(1, 16_000, optional=True),
        "API_KEY": text(optional=True),
        "BASE_URL": http_url(),
        "TIMEOUT": positive_number(),
        "BATCH_SIZE": whole_number(1),
        "MAX_RETRIES": whole_number(0),
        "STORE": name_or_path(["auto", *STORES], "Stores", optional=False),
        "QDRANT_URL": http_url(),
        "QDRANT_PATH": text(optional=True),
        "QDRANT_API_KEY": text(optional=True),
        "QDRANT_COLLECTION": text(optional=True),
        # pgvector accepts hnsw.ef_search from 1 to 1000.
        "HNSW_EF_SEARCH": whole_number(1, 1000),
        "API_SEARCH_SHARED": boolean(),
    },
    "KEYWORDS": {
        "CACHE_POSTINGS": whole_number(0),
    },
    "RECALL": {
        "RERANKER_PATH": non_empty_text(optional=True),
    },
    "QUOTAS": {
        "MODEL_RUNS_PER_AGENT": whole_number(1, optional=True),
        "MODEL_RUNS_PER_USER": whole_number(1, optional=True),
        # A day at most: the runs are counted from their rows at every request.
        "PERIOD": whole_number(1, 86_400),
    },
}


def _section_type(value: Any) -> Problem:
    return wrong_type(value, "a dict", optional=False)


def _error(where: str, value: Any, validator: Validator | None) -> list[CheckMessage]:
    problem = validator(value) if validator is not None else None
    if problem is None:
        return []
    return [
        Error(
            f"{where} must be {problem.must_be}, not {problem.shown}.",
            hint=problem.hint,
            id=problem.id,
        )
    ]


def _check_section(name: str, given: dict[str, Any]) -> list[CheckMessage]:
    default: dict[str, Any] = DEFAULTS[name]
    validators = SECTION_VALIDATORS.get(name, {})
    errors: list[CheckMessage] = []
    for key, value in given.items():
        if key not in default:
            errors.append(
                Error(
                    f"{SETTINGS_NAME}[{name!r}] has an unknown key {key!r}.",
                    hint=f"Known keys: {', '.join(sorted(default))}.",
                    id="cogitator_memory.E003",
                )
            )
            continue
        errors += _error(f"{SETTINGS_NAME}[{name!r}][{key!r}]", value, validators.get(key))
    return errors


def _check_combinations(value: dict[str, Any]) -> list[CheckMessage]:
    """Keys valid one by one that contradict each other (E005)."""
    errors: list[CheckMessage] = []
    default_limit = value.get("LIST_THREADS_DEFAULT_LIMIT", DEFAULTS["LIST_THREADS_DEFAULT_LIMIT"])
    max_limit = value.get("LIST_THREADS_MAX_LIMIT", DEFAULTS["LIST_THREADS_MAX_LIMIT"])
    if isinstance(default_limit, int) and isinstance(max_limit, int) and default_limit > max_limit:
        errors.append(
            Error(
                f"{SETTINGS_NAME}['LIST_THREADS_DEFAULT_LIMIT'] ({default_limit}) is larger "
                f"than LIST_THREADS_MAX_LIMIT ({max_limit}).",
                id="cogitator_memory.E005",
            )
        )
    given = value.get("EMBEDDINGS")
    embeddings = {**DEFAULTS["EMBEDDINGS"], **(given if isinstance(given, dict) else {})}
    if embeddings["STORE"] == "qdrant":
        has_url, has_path = (
            embeddings["QDRANT_URL"] is not None,
            embeddings["QDRANT_PATH"] is not None,
        )
        if has_url == has_path:
            errors.append(
                Error(
                    f"{SETTINGS_NAME}['EMBEDDINGS'] with STORE 'qdrant' needs QDRANT_URL or "
                    f"QDRANT_PATH, not {'both' if has_url else 'neither'}.",
                    hint="QDRANT_URL names a Qdrant server; QDRANT_PATH a folder (or "
                    "':memory:') for Qdrant's embedded mode.",
                    id="cogitator_memory.E005",
                )
            )
    given = value.get("LLM")
    llm = {**DEFAULTS["LLM"], **(given if isinstance(given, dict) else {})}
    if llm["PROVIDER"] in SDK_LLM_PROVIDERS and not llm["MODEL"]:
        errors.append(
            Error(
                f"{SETTINGS_NAME}['LLM'] with PROVIDER {llm['PROVIDER']!r} needs a MODEL.",
                hint="Name the model to ask, e.g. 'gpt-4o-mini', or the name a server at "
                "BASE_URL gives its model.",
                id="cogitator_memory.E005",
            )
        )
    script = llm["SCRIPT"]
    if isinstance(script, str) and script.strip() and llm["PROVIDER"] != "scripted":
        errors.append(
            Error(
                f"{SETTINGS_NAME}['LLM'] has a SCRIPT, which only PROVIDER 'scripted' reads, "
                f"with PROVIDER {llm['PROVIDER']!r}.",
                hint="Set PROVIDER to 'scripted' to replay the script, or remove SCRIPT.",
                id="cogitator_memory.E005",
            )
        )
    given = value.get("COMPACTION")
    compaction = {**DEFAULTS["COMPACTION"], **(given if isinstance(given, dict) else {})}
    if compaction["THRESHOLD"] is None and compaction["MESSAGE_THRESHOLD"] is None:
        errors.append(
            Error(
                f"{SETTINGS_NAME}['COMPACTION'] needs THRESHOLD, MESSAGE_THRESHOLD or both; "
                "both are None.",
                hint="THRESHOLD counts tokens of conversation, MESSAGE_THRESHOLD entries.",
                id="cogitator_memory.E005",
            )
        )
    return errors


# The Qdrant store's client, and the extra that installs it.
QDRANT_MODULE, QDRANT_EXTRA = "qdrant_client", "qdrant"


def module_installed(name: str) -> bool:
    """Whether ``name`` (dotted for a submodule) can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        # A parent package that is missing, or a module set to None in sys.modules.
        return False


def _check_packages(value: dict[str, Any]) -> list[CheckMessage]:
    """A provider or store named in the setting whose package is not installed (E010),
    found here rather than at the first extraction, compaction or embedding."""
    errors: list[CheckMessage] = []
    given = value.get("LLM")
    llm = {**DEFAULTS["LLM"], **(given if isinstance(given, dict) else {})}
    if llm["PROVIDER"] in SDK_LLM_PROVIDERS:
        client = import_string(LLM_PROVIDERS[llm["PROVIDER"]])
        if not module_installed(client.sdk_module):
            errors.append(
                Error(
                    f"{SETTINGS_NAME}['LLM'] names PROVIDER {llm['PROVIDER']!r}, whose SDK "
                    f"{client.sdk_package!r} is not installed.",
                    hint=f"pip install 'cogitator-memory[{client.extra}]'",
                    id="cogitator_memory.E010",
                )
            )
    given = value.get("EMBEDDINGS")
    embeddings = {**DEFAULTS["EMBEDDINGS"], **(given if isinstance(given, dict) else {})}
    if embeddings["PROVIDER"] == "local" and not module_installed("sentence_transformers"):
        errors.append(
            Error(
                f"{SETTINGS_NAME}['EMBEDDINGS'] names PROVIDER 'local', whose package "
                "'sentence-transformers' is not installed.",
                hint="pip install 'cogitator-memory[local]'",
                id="cogitator_memory.E010",
            )
        )
    if embeddings["STORE"] == "qdrant" and not module_installed(QDRANT_MODULE):
        errors.append(
            Error(
                f"{SETTINGS_NAME}['EMBEDDINGS'] names STORE 'qdrant', whose client "
                "'qdrant-client' is not installed.",
                hint=f"pip install 'cogitator-memory[{QDRANT_EXTRA}]'",
                id="cogitator_memory.E010",
            )
        )
    return errors


@register(Tags.compatibility)
def check_memory_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Report unknown names, wrong types and bad values in ``COGITATOR_MEMORY``."""
    value = getattr(settings, SETTINGS_NAME, None)
    if value is None:
        return []
    if not isinstance(value, dict):
        return [
            Error(
                f"{SETTINGS_NAME} must be a dict, not {type(value).__name__}.",
                hint="Set COGITATOR_MEMORY = {...} in your settings, or remove it.",
                id="cogitator_memory.E000",
            )
        ]
    errors: list[CheckMessage] = []
    for name, given in value.items():
        if name not in DEFAULTS:
            errors.append(
                Error(
                    f"{SETTINGS_NAME} has an unknown key {name!r}.",
                    hint=f"Known keys: {', '.join(sorted(DEFAULTS))}.",
                    id="cogitator_memory.E001",
                )
            )
        elif isinstance(DEFAULTS[name], dict):
            if isinstance(given, dict):
                errors += _check_section(name, given)
            else:
                errors += _error(f"{SETTINGS_NAME}[{name!r}]", given, _section_type)
        else:
            errors += _error(f"{SETTINGS_NAME}[{name!r}]", given, SETTING_VALIDATORS.get(name))
    return errors + _check_combinations(value) + _check_packages(value)


# Apps the models need: a grant names a Django user or an API key of a service.
REQUIRED_APPS = {
    "django.contrib.contenttypes": "django.contrib.auth stores its permissions with it",
    "django.contrib.auth": "a grant may name a Django user",
    "rest_framework_api_key": "a grant may name an API key of a service",
}

# Apps the REST API needs, once the URLconf serves it.
API_APPS = {
    "rest_framework": "the API is built with DRF, whose pages need its templates",
    "rest_framework.authtoken": "the API accepts DRF tokens (Authorization: Token ...)",
    "django_filters": "the thread list's filters render with its templates",
}

MEMORY_EXCEPTION_HANDLER = "cogitator_memory.api.exceptions.memory_exception_handler"


def missing_required_apps() -> list[str]:
    """The apps of ``REQUIRED_APPS`` missing from ``INSTALLED_APPS``."""
    return [app for app in REQUIRED_APPS if not apps.is_installed(app)]


@register(Tags.compatibility)
def check_required_apps(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Report each app of ``REQUIRED_APPS`` missing from ``INSTALLED_APPS`` (E008)."""
    return [
        Error(
            f"cogitator_memory needs {app!r} in INSTALLED_APPS: {REQUIRED_APPS[app]}.",
            hint=f'Add "{app}" to INSTALLED_APPS (README, "Using it in a Django project"), '
            "then run manage.py migrate.",
            id="cogitator_memory.E008",
        )
        for app in missing_required_apps()
    ]


def _serves_memory_api(patterns: Iterable[URLPattern | URLResolver]) -> bool:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if _serves_memory_api(pattern.url_patterns):
                return True
        elif pattern.lookup_str.startswith("cogitator_memory.api."):
            return True
    return False


@register(Tags.urls)
def check_api_apps(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """When the URLconf serves the REST API: each app of ``API_APPS`` missing from
    ``INSTALLED_APPS`` (E009), and DRF's exception handler if it is not the API's (W001)."""
    if not getattr(settings, "ROOT_URLCONF", None) or missing_required_apps():
        # Without the required apps, E008 says what to add first.
        return []
    if not _serves_memory_api(get_resolver().url_patterns):
        return []
    messages: list[CheckMessage] = [
        Error(
            f"The URLconf serves cogitator_memory's REST API, which needs {app!r} in "
            f"INSTALLED_APPS: {API_APPS[app]}.",
            hint=f'Add "{app}" to INSTALLED_APPS (README, "Using it in a Django project").',
            id="cogitator_memory.E009",
        )
        for app in API_APPS
        if not apps.is_installed(app)
    ]
    from rest_framework.settings import api_settings

    handler = api_settings.EXCEPTION_HANDLER
    handler_path = f"{getattr(handler, '__module__', '')}.{getattr(handler, '__qualname__', '')}"
    if handler_path != MEMORY_EXCEPTION_HANDLER:
        messages.append(
            CheckWarning(
                "The URLconf serves cogitator_memory's REST API, but "
                "REST_FRAMEWORK['EXCEPTION_HANDLER'] is not the API's: its errors (not found, "
                "conflicts, invalid input) would answer 500 or in another shape.",
                hint=f'Set REST_FRAMEWORK["EXCEPTION_HANDLER"] = "{MEMORY_EXCEPTION_HANDLER}"; '
                "a handler of your own that calls it can silence this with "
                'SILENCED_SYSTEM_CHECKS = ["cogitator_memory.W001"].',
                id="cogitator_memory.W001",
            )
        )
    return messages


# Caches that each process keeps for itself: a count kept in one is not seen by the others.
PER_PROCESS_CACHES = {
    "django.core.cache.backends.locmem.LocMemCache": "keeps its entries in each process",
    "django.core.cache.backends.dummy.DummyCache": "keeps nothing",
}


@register(Tags.caches)
def check_shared_cache(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """When the URLconf serves the REST API with DEBUG off (a deployment, where several
    processes serve it): a default cache of ``PER_PROCESS_CACHES`` (W002), in which the
    API's throttles would count per process, so a client gets the limit once per process."""
    if settings.DEBUG or not getattr(settings, "ROOT_URLCONF", None) or missing_required_apps():
        return []
    backend = str(settings.CACHES.get("default", {}).get("BACKEND", ""))
    if backend not in PER_PROCESS_CACHES or not _serves_memory_api(get_resolver().url_patterns):
        return []
    return [
        CheckWarning(
            f"The default cache ({backend}) {PER_PROCESS_CACHES[backend]}: the REST API's "
            "throttles (of refused tokens and API keys, and of requests per principal) would "
            "count in each web process alone, so a client gets each limit once per process.",
            hint="Use a cache every process shares, e.g. Redis: CACHES = {'default': "
            "{'BACKEND': 'django.core.cache.backends.redis.RedisCache', 'LOCATION': "
            "'redis://...'}} (the demo project reads CACHE_URL). A single process can "
            'silence this with SILENCED_SYSTEM_CHECKS = ["cogitator_memory.W002"].',
            id="cogitator_memory.W002",
        )
    ]
