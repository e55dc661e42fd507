"""The project in a fresh interpreter, with its settings from environment variables, asked
for /health/ready and /health/live through Django's test client."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# Variables of this process that would leak into the child's settings.
PROJECT_VARIABLES = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "DJANGO_SETTINGS_MODULE",
    "COGITATOR_TEST_DATABASE",
)

# The URLconf is loaded by a first request to /health/live, so the timed request to
# /health/ready measures the checks only.
ASK_HEALTH = """
import json, time
import django
django.setup()
from django.test import Client
client = Client()
live = client.get("/health/live", HTTP_HOST="localhost")
started = time.monotonic()
ready = client.get("/health/ready", HTTP_HOST="localhost")
seconds = time.monotonic() - started
print(json.dumps({
    "live": live.status_code,
    "ready": ready.status_code,
    "report": ready.json(),
    "seconds": seconds,
}))
"""


def ask_project(**variables: str) -> dict[str, Any]:
    """Runs ASK_HEALTH under ``project.settings`` with ``variables``; its JSON answer."""
    env = {key: value for key, value in os.environ.items() if key not in PROJECT_VARIABLES}
    env.update(DJANGO_SETTINGS_MODULE="project.settings", **variables)
    completed = subprocess.run(
        [sys.executable, "-c", ASK_HEALTH],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    answer: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return answer


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["name"]: check for check in report["checks"]}


def closed_port() -> int:
    """A loopback port nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def stalled_port() -> Iterator[int]:
    """A loopback port whose connections are accepted by the kernel and never answered:
    a server that hangs."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield int(server.getsockname()[1])
