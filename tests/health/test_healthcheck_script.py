"""scripts/healthcheck.py, the web container's health check: exit 0 only on a 200; the request
names a host Django serves and says it came over HTTPS; redirects are not followed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent.parent
SCRIPT = BASE_DIR / "scripts" / "healthcheck.py"


@contextmanager
def answering(status: int, body: bytes = b"{}", **headers: str) -> Iterator[dict[str, Any]]:
    """A loopback server answering every GET with ``status``; yields its URL and the headers
    of the requests it got."""
    seen: dict[str, Any] = {"requests": []}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen["requests"].append({name.lower(): value for name, value in self.headers.items()})
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    seen["url"] = f"http://127.0.0.1:{server.server_address[1]}/health/live"
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def run_script(
    *arguments: str, allowed_hosts: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_ALLOWED_HOSTS"}
    if allowed_hosts is not None:
        env["DJANGO_ALLOWED_HOSTS"] = allowed_hosts
    return subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_200_is_healthy_and_the_answer_is_printed() -> None:
    # given
    with answering(200, b'{"status": "pass"}') as server:
        # when
        completed = run_script(server["url"])
    # then
    assert completed.returncode == 0
    assert completed.stdout.strip() == f'{server["url"]}: 200 {{"status": "pass"}}'


def test_a_503_is_unhealthy_and_its_report_is_printed() -> None:
    # given
    with answering(503, b'{"status": "fail"}') as server:
        # when
        completed = run_script(server["url"])
    # then
    assert completed.returncode == 1
    assert '503 {"status": "fail"}' in completed.stdout


def test_a_redirect_is_not_followed() -> None:
    # given: an answer as SECURE_SSL_REDIRECT gives
    with answering(301, Location="https://memory.example.com/health/live") as server:
        # when
        completed = run_script(server["url"])
    # then
    assert completed.returncode == 1
    assert "301 (redirected to https://memory.example.com/health/live)" in completed.stdout
    assert len(server["requests"]) == 1


def test_nothing_listening_is_unhealthy() -> None:
    # given
    with answering(200) as server:
        url = server["url"]
    # when
    completed = run_script(url)
    # then
    assert completed.returncode == 1
    assert "no answer" in completed.stdout


@pytest.mark.parametrize(
    ("allowed_hosts", "host"),
    [
        ("memory.example.com,localhost", "memory.example.com"),
        (".example.com", "example.com"),
        ("*", None),
        (None, None),
    ],
)
def test_the_request_names_a_served_host_and_https(
    allowed_hosts: str | None, host: str | None
) -> None:
    # given
    with answering(200) as server:
        port = server["url"].split(":")[2].split("/")[0]
        # when
        run_script(server["url"], allowed_hosts=allowed_hosts)
    # then
    [request] = server["requests"]
    assert request["host"] == f"{host or '127.0.0.1'}:{port}"
    assert request["x-forwarded-proto"] == "https"


def test_a_wrong_usage_is_refused() -> None:
    # when
    completed = run_script("http://a", "http://b")
    # then
    assert completed.returncode == 2
    assert "usage" in completed.stderr


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/health/live", "/health/ready"])
def test_the_project_served_answers_the_script(live_server: Any, path: str) -> None:
    # when: served by the project, on this suite's database, tasks run eagerly
    completed = run_script(f"{live_server.url}{path}", allowed_hosts="localhost")
    # then
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert '"status": "pass"' in completed.stdout
