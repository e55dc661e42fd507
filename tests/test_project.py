"""The demo and deployment project: docker-compose.yml, migrations, settings from the
environment, and the Celery app (eager without a broker, on Redis with one).

Settings are read at import time, so each environment is tried in a fresh interpreter.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from celery import Celery
from django.core.management import call_command
from django.urls import resolve

from cogitator_memory.conf import DEFAULTS

BASE_DIR = Path(__file__).resolve().parent.parent
SERVICES = {"postgres", "redis", "web", "worker", "beat"}
DJANGO_PROCESSES = ("web", "worker", "beat")
# Each run uses its own queue on database 15, so runs side by side never take each other's task.
ROUNDTRIP_BROKER_URL = "redis://127.0.0.1:6379/15"
ROUNDTRIP_TIMEOUT_SECONDS = 20
# One process, and none of the cluster chatter (mingle waits a second for peers at start-up).
WORKER_COMMAND = [
    sys.executable,
    "-m",
    *shlex.split(
        "celery -A project worker --pool=solo --without-heartbeat --without-gossip "
        "--without-mingle --include=tests.celery_roundtrip_tasks --loglevel=INFO"
    ),
]

# The keys of COGITATOR_MEMORY that docker-compose.yml passes to web, worker and beat.
MEMORY_VARIABLES = tuple(
    f"COGITATOR_MEMORY_{section}_{key}"
    for section, keys in {
        "LLM": ("PROVIDER", "MODEL", "API_KEY", "BASE_URL", "SCRIPT"),
        "EMBEDDINGS": ("PROVIDER", "MODEL", "DIMENSIONS", "API_KEY", "BASE_URL", "STORE"),
        "EXTRACTION": (
            "ENABLED",
            "MODE",
            "DEBOUNCE_SECONDS",
            "WINDOW_TOKENS",
            "MAX_TOKENS",
            "TIME_ZONE",
        ),
        "COMPACTION": ("ENABLED", "THRESHOLD", "MESSAGE_THRESHOLD", "KEEP_RECENT"),
    }.items()
    for key in keys
)

# Variables of the parent process that would leak into the child's settings.
PROJECT_VARIABLES = (
    *MEMORY_VARIABLES,
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "DJANGO_SECRET_KEY",
    "DJANGO_DEBUG",
    "DJANGO_ALLOWED_HOSTS",
    "DJANGO_SETTINGS_MODULE",
    "COGITATOR_TEST_DATABASE",
)

PRINT_CELERY_CONFIG = """
import json
from project.celery import app
print(json.dumps({
    "broker_url": app.conf.broker_url,
    "result_backend": app.conf.result_backend,
    "task_always_eager": app.conf.task_always_eager,
    "task_serializer": app.conf.task_serializer,
}))
"""

PRINT_DATABASE = """
import json
from django.conf import settings
db = settings.DATABASES["default"]
print(json.dumps({key: str(db.get(key)) for key in ("ENGINE", "NAME", "HOST", "PORT", "USER")}))
"""

PRINT_MEMORY_SECTIONS = """
import json
import django
django.setup()
from cogitator_memory.conf import memory_settings
print(json.dumps({name: getattr(memory_settings, name) for name in ("EXTRACTION", "COMPACTION")}))
"""

# The sections as project/settings.py writes them, without the app's defaults.
PRINT_WRITTEN_SECTIONS = """
import json
from django.conf import settings
print(json.dumps({
    section: settings.COGITATOR_MEMORY[section]
    for section in ("LLM", "EMBEDDINGS", "EXTRACTION", "COMPACTION")
}))
"""


def project_environment(**variables: str) -> dict[str, str]:
    """The current environment without the project's variables, plus ``variables``."""
    env = {key: value for key, value in os.environ.items() if key not in PROJECT_VARIABLES}
    env["DJANGO_SETTINGS_MODULE"] = "project.settings"
    env.update(variables)
    return env


def run_in_project(code: str, **variables: str) -> dict[str, Any]:
    """Runs ``code`` in a fresh interpreter under ``project.settings``; returns its JSON output."""
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=project_environment(**variables),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def docker_compose(*arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """Runs the docker-compose binary on docker-compose.yml, without a .env file or the
    caller's environment deciding the result."""
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.fail(
            "docker-compose is not installed, so docker-compose.yml cannot be validated. "
            "Install Debian's package: apt-get install -y --no-install-recommends "
            "docker-compose (make test does it when run as root)."
        )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    env.update(variables)
    with tempfile.TemporaryDirectory() as empty:
        env_file = Path(empty) / "empty.env"
        env_file.touch()
        return subprocess.run(
            [
                binary,
                "--env-file",
                str(env_file),
                "-f",
                str(BASE_DIR / "docker-compose.yml"),
                *arguments,
            ],
            cwd=BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.fixture(scope="module")
def compose_config() -> dict[str, Any]:
    completed = docker_compose("config", DJANGO_SECRET_KEY="a-secret-for-the-test")
    assert completed.returncode == 0, completed.stderr
    config: dict[str, Any] = yaml.safe_load(completed.stdout)
    return config


# docker-compose.yml


def test_docker_compose_config_validates_the_file_and_its_five_services() -> None:
    # when
    completed = docker_compose("config", DJANGO_SECRET_KEY="a-secret-for-the-test")
    # then: docker-compose parsed, interpolated and validated it
    assert completed.returncode == 0, completed.stderr
    assert set(yaml.safe_load(completed.stdout)["services"]) == SERVICES


def test_docker_compose_refuses_to_run_without_a_secret_key() -> None:
    # when
    completed = docker_compose("config")
    # then
    assert completed.returncode != 0
    assert "set DJANGO_SECRET_KEY" in completed.stderr


def test_postgres_runs_the_pgvector_image_with_a_volume_and_pg_isready(
    compose_config: dict[str, Any],
) -> None:
    # given
    postgres = compose_config["services"]["postgres"]
    # then
    assert postgres["image"] == "pgvector/pgvector:pg17"
    assert any(volume.endswith(":/var/lib/postgresql/data:rw") for volume in postgres["volumes"])
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])


def test_redis_is_checked_with_redis_cli_ping(compose_config: dict[str, Any]) -> None:
    # given
    redis = compose_config["services"]["redis"]
    # then
    assert redis["image"] == "redis:7"
    assert redis["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_web_migrates_then_serves_project_wsgi_with_gunicorn(
    compose_config: dict[str, Any],
) -> None:
    # given
    command = " ".join(compose_config["services"]["web"]["command"])
    # then
    assert command.index("manage.py migrate") < command.index("gunicorn project.wsgi")
    assert "--bind 0.0.0.0:8000" in command


def test_web_is_built_from_the_dockerfile_and_checked_on_health_live(
    compose_config: dict[str, Any],
) -> None:
    # given
    web = compose_config["services"]["web"]
    # then: liveness (worker and beat wait for web to be healthy, and readiness waits for a
    # worker), on the path the project serves
    assert web["build"]["dockerfile"] == "Dockerfile"
    assert (BASE_DIR / web["build"]["dockerfile"]).is_file()
    assert web["healthcheck"]["test"] == [
        "CMD",
        "python",
        "scripts/healthcheck.py",
        "http://127.0.0.1:8000/health/live",
    ]
    assert (BASE_DIR / "scripts" / "healthcheck.py").is_file()
    assert resolve("/health/live").url_name == "health-live"


def test_the_worker_is_checked_with_a_ping_of_its_own_name(compose_config: dict[str, Any]) -> None:
    # given
    test = compose_config["services"]["worker"]["healthcheck"]["test"]
    # then: the same ping /health/ready sends, to this container's worker only
    assert test[0] == "CMD-SHELL"
    assert "celery -A project inspect ping" in test[1]
    assert '--destination "celery@$${HOSTNAME}"' in test[1]


@pytest.mark.parametrize("service", DJANGO_PROCESSES)
def test_every_memory_variable_is_passed_through_empty_by_default(
    compose_config: dict[str, Any], service: str
) -> None:
    # given
    environment = compose_config["services"][service]["environment"]
    # then: empty, which project/settings.py reads as unset
    assert {name: environment.get(name) for name in MEMORY_VARIABLES} == dict.fromkeys(
        MEMORY_VARIABLES, ""
    )


def test_memory_variables_of_the_caller_reach_web_worker_and_beat() -> None:
    # given
    given = {name: f"value-of-{name.lower()}" for name in MEMORY_VARIABLES}
    # when
    completed = docker_compose("config", DJANGO_SECRET_KEY="s", **given)
    # then
    assert completed.returncode == 0, completed.stderr
    services = yaml.safe_load(completed.stdout)["services"]
    for service in DJANGO_PROCESSES:
        environment = services[service]["environment"]
        assert {name: environment[name] for name in MEMORY_VARIABLES} == given


def test_the_image_has_the_local_embedding_provider_unless_built_without(
    compose_config: dict[str, Any],
) -> None:
    # given
    dockerfile = (BASE_DIR / "Dockerfile").read_text()
    ignored = (BASE_DIR / ".dockerignore").read_text().split()
    # when: the variable is set
    completed = docker_compose("config", DJANGO_SECRET_KEY="s", LOCAL_EMBEDDINGS="0")
    # then
    assert compose_config["services"]["web"]["build"]["args"] == {"LOCAL_EMBEDDINGS": "1"}
    assert completed.returncode == 0, completed.stderr
    built = yaml.safe_load(completed.stdout)["services"]["web"]["build"]
    assert built["args"] == {"LOCAL_EMBEDDINGS": "0"}
    assert "ARG LOCAL_EMBEDDINGS=1\n" in dockerfile
    assert "COPY requirements.txt requirements-deploy.txt requirements-local.txt ./" in dockerfile
    assert "RUN pip install -r requirements-deploy.txt\n" in dockerfile
    assert 'if [ "$LOCAL_EMBEDDINGS" = "1" ]' in dockerfile
    assert "-r requirements-local.txt" in dockerfile
    assert "requirements-local.txt" not in ignored
    assert "sentence-transformers" in (BASE_DIR / "requirements-local.txt").read_text()


def test_no_image_healthcheck_since_worker_and_beat_share_the_image() -> None:
    # then
    assert not any(
        line.strip().startswith("HEALTHCHECK")
        for line in (BASE_DIR / "Dockerfile").read_text().splitlines()
    )


def test_web_starts_after_postgres_and_redis_are_healthy(compose_config: dict[str, Any]) -> None:
    # then
    assert compose_config["services"]["web"]["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }


@pytest.mark.parametrize("service", ["worker", "beat"])
def test_celery_processes_start_after_web_has_migrated(
    compose_config: dict[str, Any], service: str
) -> None:
    # then: web turns healthy only once migrate has finished
    assert compose_config["services"][service]["depends_on"]["web"] == {
        "condition": "service_healthy"
    }


@pytest.mark.parametrize(("service", "subcommand"), [("worker", ["worker"]), ("beat", ["beat"])])
def test_worker_and_beat_run_the_project_celery_app(
    compose_config: dict[str, Any], service: str, subcommand: list[str]
) -> None:
    # given
    command = compose_config["services"][service]["command"]
    # then
    assert command[:4] == ["celery", "-A", "project", *subcommand]


@pytest.mark.parametrize("service", DJANGO_PROCESSES)
def test_django_processes_get_their_settings_from_the_environment(
    compose_config: dict[str, Any], service: str
) -> None:
    # given
    environment = compose_config["services"][service]["environment"]
    # then
    assert environment["DATABASE_URL"] == "postgres://cogitator:cogitator@postgres:5432/cogitator"
    assert environment["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert environment["DJANGO_SECRET_KEY"] == "a-secret-for-the-test"
    assert environment["DJANGO_DEBUG"] == "0"
    assert environment["DJANGO_ALLOWED_HOSTS"] == "localhost,127.0.0.1"


def test_the_database_settings_follow_the_postgres_variables() -> None:
    # when
    completed = docker_compose(
        "config",
        DJANGO_SECRET_KEY="s",
        POSTGRES_USER="memory",
        POSTGRES_PASSWORD="p4ss",
        POSTGRES_DB="agents",
    )
    # then
    assert completed.returncode == 0, completed.stderr
    config = yaml.safe_load(completed.stdout)
    assert config["services"]["postgres"]["environment"] == {
        "POSTGRES_USER": "memory",
        "POSTGRES_PASSWORD": "p4ss",
        "POSTGRES_DB": "agents",
    }
    assert (
        config["services"]["web"]["environment"]["DATABASE_URL"]
        == "postgres://memory:p4ss@postgres:5432/agents"
    )


# Migrations


@pytest.mark.django_db
def test_models_and_migrations_do_not_drift() -> None:
    # given
    out = io.StringIO()
    # when
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit:
        pytest.fail(f"Models changed without a migration; run makemigrations:\n{out.getvalue()}")
    # then
    assert "No changes detected" in out.getvalue()


# Settings from the environment


def test_without_database_url_the_project_uses_the_sqlite_file_beside_manage_py() -> None:
    # when
    database = run_in_project(PRINT_DATABASE)
    # then
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert database["NAME"] == str(BASE_DIR / "db.sqlite3")


def test_a_sqlite_database_url_selects_sqlite_at_that_path() -> None:
    # when
    database = run_in_project(PRINT_DATABASE, DATABASE_URL="sqlite:////tmp/x.db")
    # then
    assert (database["ENGINE"], database["NAME"]) == ("django.db.backends.sqlite3", "/tmp/x.db")


def test_a_postgres_database_url_selects_postgresql_with_its_parts() -> None:
    # when
    database = run_in_project(
        PRINT_DATABASE, DATABASE_URL="postgres://memory:secret@db.internal:6543/agents"
    )
    # then
    assert database == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "agents",
        "HOST": "db.internal",
        "PORT": "6543",
        "USER": "memory",
    }


def test_the_extraction_variables_set_the_extraction_settings() -> None:
    # when
    sections = run_in_project(
        PRINT_MEMORY_SECTIONS,
        COGITATOR_MEMORY_EXTRACTION_ENABLED="true",
        COGITATOR_MEMORY_EXTRACTION_MODE="auto",
        COGITATOR_MEMORY_EXTRACTION_DEBOUNCE_SECONDS="5",
        COGITATOR_MEMORY_EXTRACTION_WINDOW_TOKENS="2000",
        COGITATOR_MEMORY_EXTRACTION_MAX_TOKENS="3000",
        COGITATOR_MEMORY_EXTRACTION_TIME_ZONE="Europe/Lisbon",
    )
    # then
    assert sections["EXTRACTION"] == {
        "ENABLED": True,
        "MODE": "auto",
        "DEBOUNCE_SECONDS": 5,
        "WINDOW_TOKENS": 2000,
        "MAX_TOKENS": 3000,
        "TIME_ZONE": "Europe/Lisbon",
    }


def test_every_variable_docker_compose_passes_sets_its_key() -> None:
    # given: a value for each
    given = {
        "LLM": {
            "PROVIDER": "scripted",
            "MODEL": "recorded",
            "API_KEY": "llm-key",
            "BASE_URL": "http://llm.internal:8080/v1",
            "SCRIPT": "/srv/answers.json",
        },
        "EMBEDDINGS": {
            "PROVIDER": "local",
            "MODEL": "all-MiniLM-L6-v2",
            "DIMENSIONS": 384,
            "API_KEY": "embeddings-key",
            "BASE_URL": "http://embeddings.internal/v1",
            "STORE": "exact",
        },
        "EXTRACTION": {
            "ENABLED": True,
            "MODE": "auto",
            "DEBOUNCE_SECONDS": 5,
            "WINDOW_TOKENS": 2000,
            "MAX_TOKENS": 3000,
            "TIME_ZONE": "Asia/Tokyo",
        },
        "COMPACTION": {
            "ENABLED": True,
            "THRESHOLD": 9000,
            "MESSAGE_THRESHOLD": 50,
            "KEEP_RECENT": 6,
        },
    }
    variables = {
        f"COGITATOR_MEMORY_{section}_{key}": "1" if value is True else str(value)
        for section, keys in given.items()
        for key, value in keys.items()
    }
    assert set(variables) == set(MEMORY_VARIABLES)
    # when
    written = run_in_project(PRINT_WRITTEN_SECTIONS, **variables)
    # then
    assert written == given


def test_the_empty_variables_of_docker_compose_keep_the_defaults_and_pass_the_checks() -> None:
    # given: what docker-compose passes when none is set
    empty = dict.fromkeys(MEMORY_VARIABLES, "")
    # when
    sections = run_in_project(PRINT_MEMORY_SECTIONS, **empty)
    checked = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=BASE_DIR,
        env=project_environment(**empty),
        capture_output=True,
        text=True,
        timeout=60,
    )
    # then
    assert sections["EXTRACTION"] == DEFAULTS["EXTRACTION"]
    assert sections["COMPACTION"] == DEFAULTS["COMPACTION"]
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_an_extraction_number_that_is_not_one_is_named_by_the_checks() -> None:
    # when
    checked = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=BASE_DIR,
        env=project_environment(COGITATOR_MEMORY_EXTRACTION_WINDOW_TOKENS="lots"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    # then
    assert checked.returncode != 0
    assert "COGITATOR_MEMORY['EXTRACTION']['WINDOW_TOKENS'] must be an int" in checked.stderr


# The Celery app


def test_without_a_broker_the_celery_app_runs_tasks_eagerly() -> None:
    # when
    config = run_in_project(PRINT_CELERY_CONFIG)
    # then
    assert config["task_always_eager"] is True
    assert config["broker_url"] is None


def test_with_a_broker_url_the_celery_app_uses_redis_for_tasks_and_keeps_no_results() -> None:
    # when
    config = run_in_project(PRINT_CELERY_CONFIG, CELERY_BROKER_URL="redis://cache.internal:6379/2")
    # then: no result backend (the app reads no result; each job's row is its record)
    assert config == {
        "broker_url": "redis://cache.internal:6379/2",
        "result_backend": None,
        "task_always_eager": False,
        "task_serializer": "json",
    }


def test_a_result_backend_is_used_only_when_one_is_set() -> None:
    config = run_in_project(
        PRINT_CELERY_CONFIG,
        CELERY_BROKER_URL="redis://cache.internal:6379/2",
        CELERY_RESULT_BACKEND="redis://cache.internal:6379/3",
    )
    assert config["result_backend"] == "redis://cache.internal:6379/3"


def test_a_worker_of_the_project_runs_a_task_sent_through_redis(tmp_path: Path) -> None:
    # given: Redis, and a worker of the project's app on a queue of this run's own
    broker = redis.Redis.from_url(ROUNDTRIP_BROKER_URL, socket_timeout=2)
    try:
        broker.ping()
    except redis.RedisError as error:
        pytest.fail(
            f"Redis does not answer on 127.0.0.1:6379 ({error}); start it with "
            "scripts/ensure-redis.sh (as root) or: redis-server --daemonize yes --port 6379"
        )
    queue = f"roundtrip-{uuid.uuid4().hex}"
    log_path = tmp_path / "worker.log"
    with log_path.open("w") as log:
        worker = subprocess.Popen(
            [*WORKER_COMMAND, "--queues", queue, "--hostname", f"{queue}@%h"],
            cwd=BASE_DIR,
            env=project_environment(
                CELERY_BROKER_URL=ROUNDTRIP_BROKER_URL,
                # Results only where a project asks for them (this test reads one).
                CELERY_RESULT_BACKEND=ROUNDTRIP_BROKER_URL,
                DATABASE_URL=f"sqlite:///{tmp_path / 'worker.sqlite3'}",
            ),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    sender = Celery("roundtrip-sender", broker=ROUNDTRIP_BROKER_URL, backend=ROUNDTRIP_BROKER_URL)
    try:
        # when
        result = sender.send_task("tests.celery_roundtrip_tasks.add_task", args=(2, 3), queue=queue)
        try:
            value = result.get(timeout=ROUNDTRIP_TIMEOUT_SECONDS)
        except Exception as error:
            pytest.fail(f"No result from the worker ({error!r}); its log:\n{log_path.read_text()}")
        result.forget()
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        sender.close()
        # Kombu's routing keys of this run's queue would otherwise stay in Redis for good.
        leftovers = list(broker.scan_iter(match=f"*{queue}*"))
        if leftovers:
            broker.delete(*leftovers)
        broker.close()
    # then
    assert value == 5


PRINT_REDIRECTS = """
import json
import django
django.setup()
from django.conf import settings
from django.test import Client
live = Client(HTTP_HOST="localhost").get("/health/live")
admin = Client(HTTP_HOST="localhost").get("/admin/login/")
print(json.dumps({
    "exempt": settings.SECURE_REDIRECT_EXEMPT,
    "live": live.status_code,
    "admin": admin.status_code,
}))
"""


def test_in_production_every_page_redirects_to_https_but_the_health_endpoints() -> None:
    # when
    found = run_in_project(
        PRINT_REDIRECTS,
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="a-secret-for-the-test-" + "x" * 40,
        DJANGO_ALLOWED_HOSTS="localhost",
    )
    # then an orchestrator's plain-HTTP probe is answered, and the rest goes to HTTPS
    assert found == {"exempt": ["^health/"], "live": 200, "admin": 301}
