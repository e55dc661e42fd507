"""GET /health/live and /health/ready, and ``health_check()`` behind them, on the suite's
database (SQLite or PostgreSQL) with tasks run eagerly, as the demo runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import resolve

from cogitator_memory.health import checks, report
from cogitator_memory.health.checks import Outcome
from cogitator_memory.health.report import health_check

NAMES = ["database", "pgvector", "broker", "worker", "model"]


@pytest.fixture
def client() -> Client:
    return Client()


def by_name(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["name"]: check for check in body["checks"]}


# /health/live


def test_live_answers_200_without_touching_the_database(client: Client) -> None:
    # given: no django_db mark, so any query would raise
    # when
    response = client.get("/health/live")
    # then
    assert response.status_code == 200
    assert response.json() == {"status": "pass"}
    assert "no-cache" in response["Cache-Control"]


def test_live_answers_head_and_refuses_a_post(client: Client) -> None:
    # then
    assert client.head("/health/live").status_code == 200
    assert client.post("/health/live").status_code == 405


def test_the_project_mounts_both_paths() -> None:
    # then
    assert resolve("/health/live").url_name == "health-live"
    assert resolve("/health/ready").url_name == "health-ready"


# /health/ready on this suite's database, tasks run eagerly


@pytest.mark.django_db
def test_ready_answers_200_listing_every_check_with_a_status_and_a_reason(
    client: Client, on_postgres: bool
) -> None:
    # when
    response = client.get("/health/ready")
    # then
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "pass"
    assert [check["name"] for check in body["checks"]] == NAMES
    checks_ = by_name(body)
    assert all(check["reason"] for check in body["checks"])
    assert checks_["database"]["status"] == "pass"
    assert "answered SELECT 1" in checks_["database"]["reason"]
    if on_postgres:
        # the embedded server has pgvector 0.8
        assert checks_["pgvector"]["status"] == "pass", checks_["pgvector"]
        assert checks_["pgvector"]["reason"].startswith("pgvector 0.")
    else:
        assert checks_["pgvector"] == {
            **checks_["pgvector"],
            "status": "skip",
            "reason": "not applicable: sqlite has no pgvector",
        }
    for name in ("broker", "worker"):
        assert checks_[name]["status"] == "skip"
        assert checks_[name]["reason"].startswith("not needed: tasks run eagerly")
    assert checks_["model"]["status"] == "skip"
    assert checks_["model"]["reason"].startswith("not configured")
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_extraction_enabled_without_a_model_provider_is_not_ready(
    client: Client, settings: Any
) -> None:
    # given
    settings.COGITATOR_MEMORY = {"EXTRACTION": {"ENABLED": True}}
    # when
    response = client.get("/health/ready")
    # then
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    model = by_name(body)["model"]
    assert model["status"] == "fail"
    assert "no model provider" in model["reason"]
    assert "extraction is enabled" in model["reason"]
    assert by_name(body)["database"]["status"] == "pass"


@pytest.mark.django_db
def test_a_configured_provider_is_reported_with_the_work_that_uses_it(settings: Any) -> None:
    # given
    settings.COGITATOR_MEMORY = {
        "LLM": {"PROVIDER": "scripted", "MODEL": "recorded"},
        "EXTRACTION": {"ENABLED": True},
        "COMPACTION": {"ENABLED": True},
    }
    # when
    result = health_check()
    # then
    assert result.ready
    assert result.check("model").status == "pass"
    assert result.check("model").reason == (
        "provider 'scripted', model 'recorded'; used by extraction and compaction"
    )


@pytest.mark.django_db
def test_a_provider_that_cannot_be_built_fails_only_when_enabled_work_needs_it(
    settings: Any,
) -> None:
    # given: the SDK provider needs a model (and the test settings pass no system checks)
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "tests.health.nowhere.Model"}}
    # when
    unused = health_check()
    settings.COGITATOR_MEMORY = {
        "LLM": {"PROVIDER": "tests.health.nowhere.Model"},
        "COMPACTION": {"ENABLED": True},
    }
    used = health_check()
    # then
    assert unused.ready
    assert unused.check("model").status == "warn"
    assert unused.status == "warn"
    assert "cannot be built" in unused.check("model").reason
    assert not used.ready
    assert used.check("model").status == "fail"


# health_check(): bounded, never raises, one check in flight per target


@pytest.fixture
def stuck_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The model check blocks until released; ``calls`` counts its runs."""
    release = threading.Event()
    state: dict[str, Any] = {"calls": 0, "release": release}

    def blocked(deadline: float) -> Outcome:
        state["calls"] += 1
        release.wait(10)
        return Outcome(checks.PASS, "released")

    monkeypatch.setattr(checks, "check_model", blocked)
    try:
        yield state
    finally:
        release.set()


@pytest.mark.django_db
def test_a_check_still_running_at_the_bound_fails_and_the_report_comes_in_time(
    stuck_model: dict[str, Any],
) -> None:
    # when
    started = time.monotonic()
    result = health_check(timeout=0.5)
    elapsed = time.monotonic() - started
    # then
    assert elapsed < 1.5
    assert not result.ready
    assert result.check("model").status == "fail"
    assert result.check("model").reason == "no answer within 0.5 s"
    assert result.check("database").status == "pass"


@pytest.mark.django_db
def test_reports_share_a_check_in_flight_instead_of_starting_it_again(
    stuck_model: dict[str, Any],
) -> None:
    # given: a report that left the model check running
    health_check(timeout=0.2)
    # when: two more, one of them from another thread
    other = threading.Thread(target=health_check, kwargs={"timeout": 0.2})
    other.start()
    health_check(timeout=0.2)
    other.join()
    # then
    assert stuck_model["calls"] == 1
    # and once it is done, the next report runs it again
    stuck_model["release"].set()
    deadline = time.monotonic() + 5
    while report.runner.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert health_check().check("model").reason == "released"
    assert stuck_model["calls"] == 2


@pytest.mark.django_db
def test_a_check_stuck_past_the_stale_age_is_started_again(
    stuck_model: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given: checks are shared for no time at all
    monkeypatch.setattr(report, "STALE_SECONDS", 0.0)
    health_check(timeout=0.2)
    # when
    health_check(timeout=0.2)
    # then
    assert stuck_model["calls"] == 2


@pytest.mark.django_db
def test_a_check_that_raises_is_reported_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    # given
    def broken(deadline: float) -> Outcome:
        raise RuntimeError("the model registry is broken")

    monkeypatch.setattr(checks, "check_model", broken)
    # when
    result = health_check()
    # then
    assert result.check("model").status == "fail"
    assert result.check("model").reason == "RuntimeError: the model registry is broken"


def test_a_report_that_cannot_be_planned_is_a_failed_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given
    def unplannable(app: Any) -> list[report.Check]:
        raise ValueError("no settings")

    monkeypatch.setattr(report, "planned_checks", unplannable)
    # when
    result = health_check()
    # then
    assert not result.ready
    assert result.as_dict() == {
        "status": "fail",
        "checks": [
            {
                "name": "checks",
                "status": "fail",
                "reason": "not planned: ValueError: no settings",
                "seconds": 0.0,
            }
        ],
    }
