"""The production settings: ``manage.py check --deploy`` passes with the environment
docker-compose.yml gives the web process, and the demo (DEBUG on, plain HTTP) keeps working.

Settings are read at import time, so each environment is tried in a fresh interpreter.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from typing import Any

import pytest

from tests.test_project import (
    BASE_DIR,
    compose_config,  # noqa: F401 (a fixture)
    project_environment,
    run_in_project,
)

# Variables a developer's shell may hold that would change what the settings read.
SETTINGS_VARIABLES = (
    "CACHE_URL",
    "REDIS_URL",
    "DJANGO_SECURE_SSL_REDIRECT",
    "DJANGO_SECURE_PROXY_SSL_HEADER",
    "DJANGO_HSTS_SECONDS",
    "DJANGO_HSTS_PRELOAD",
    "DATABASE_BUSY_TIMEOUT",
    "DATABASE_STATEMENT_TIMEOUT",
)

PRINT_SECURITY = """
import json
from django.conf import settings
print(json.dumps({
    name: getattr(settings, name, None)
    for name in (
        "DEBUG", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_PRELOAD",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_PROXY_SSL_HEADER", "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
    )
} | {
    "cache": settings.CACHES["default"]["BACKEND"],
    "options": settings.DATABASES["default"].get("OPTIONS", {}),
}))
"""


def web_environment(config: dict[str, Any], **changes: str | None) -> dict[str, str]:
    """The web service's environment from ``docker-compose config``, with a secret key as
    an operator makes one (the README's command) and ``changes`` (a None drops the
    variable)."""
    environment = {
        key: str(value) for key, value in config["services"]["web"]["environment"].items()
    }
    environment["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)
    for key, value in changes.items():
        if value is None:
            environment.pop(key, None)
        else:
            environment[key] = value
    return environment


def check_deploy(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = project_environment(**environment)
    for name in SETTINGS_VARIABLES:
        if name not in environment:
            env.pop(name, None)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_passes_with_the_docker_compose_environment(
    compose_config: dict[str, Any],  # noqa: F811
) -> None:
    # when
    completed = check_deploy(web_environment(compose_config))
    # then
    assert completed.returncode == 0, completed.stderr + completed.stdout
    assert "no issues" in completed.stdout


def test_without_a_shared_cache_check_deploy_warns_of_per_process_throttles(
    compose_config: dict[str, Any],  # noqa: F811
) -> None:
    # when the web processes would each count in a cache of their own
    completed = check_deploy(web_environment(compose_config, CACHE_URL=None))
    # then
    assert completed.returncode != 0
    assert "cogitator_memory.W002" in completed.stderr


def test_with_debug_off_the_site_is_https_only_behind_the_proxy_header() -> None:
    # when
    values = run_in_project(
        PRINT_SECURITY, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="s" * 50, CACHE_URL="redis://r:6379/1"
    )
    # then
    assert values["SECURE_SSL_REDIRECT"] is True
    assert values["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert values["SESSION_COOKIE_SECURE"] is True
    assert values["CSRF_COOKIE_SECURE"] is True
    assert values["cache"] == "django.core.cache.backends.redis.RedisCache"


def test_the_https_settings_follow_the_environment() -> None:
    # when
    values = run_in_project(
        PRINT_SECURITY,
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="s" * 50,
        DJANGO_HSTS_SECONDS="600",
        DJANGO_HSTS_PRELOAD="0",
        DJANGO_SECURE_PROXY_SSL_HEADER="X-Scheme",
    )
    # then
    assert values["SECURE_HSTS_SECONDS"] == 600
    assert values["SECURE_HSTS_PRELOAD"] is False
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_SCHEME", "https"]


def test_the_demo_with_debug_on_serves_plain_http() -> None:
    # when: make run's environment
    values = run_in_project(PRINT_SECURITY)
    # then
    assert values["DEBUG"] is True
    assert values["SECURE_SSL_REDIRECT"] is False
    assert values["SECURE_HSTS_SECONDS"] == 0
    assert values["SESSION_COOKIE_SECURE"] is False
    assert values["cache"] == "django.core.cache.backends.locmem.LocMemCache"


@pytest.mark.parametrize(
    ("url", "options"),
    [
        (
            "postgres://u:p@db:5432/memory",
            {"options": "-c lock_timeout=5000 -c statement_timeout=20000"},
        ),
        ("sqlite:////tmp/x.db", {"timeout": 5.0}),
    ],
)
def test_statements_wait_and_run_for_a_bounded_time(url: str, options: dict[str, Any]) -> None:
    # when
    values = run_in_project(PRINT_SECURITY, DATABASE_URL=url)
    # then
    assert options.items() <= values["options"].items()


def test_the_time_limits_of_statements_come_from_the_environment() -> None:
    # when
    values = run_in_project(
        PRINT_SECURITY,
        DATABASE_URL="postgres://u:p@db:5432/memory",
        DATABASE_BUSY_TIMEOUT="0.5",
        DATABASE_STATEMENT_TIMEOUT="0",
    )
    # then: 0 turns a limit off
    assert values["options"]["options"] == "-c lock_timeout=500"
