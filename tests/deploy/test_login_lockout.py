"""Failed logins of the admin: django-axes locks the account (for every client) and the
client (for every account) after ``AXES_FAILURE_LIMIT`` wrong passwords in a row.

The test settings turn axes off (Django's test client logs in without a request); these
tests turn it on and log in through the admin's own form, as a browser does.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from project.demo.management.commands.ensure_demo_admin import DEMO_PASSWORD, DEMO_USERNAME

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"
PASSWORD = "correct-horse-battery-staple"
LIMIT = 3


@pytest.fixture(autouse=True)
def axes_on(settings: Any) -> Iterator[None]:
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = LIMIT
    yield


@pytest.fixture
def accounts() -> None:
    for name in ("ana", "ben"):
        User.objects.create_superuser(name, f"{name}@example.com", PASSWORD)


def browser(address: str) -> Client:
    return Client(REMOTE_ADDR=address)


def log_in(client: Client, username: str, password: str) -> int:
    """The status of the admin's answer to the login form: 302 on to the admin when the
    login succeeded, 200 (the form again) when the password was wrong, 429 when locked."""
    return client.post(LOGIN, {"username": username, "password": password}).status_code


def test_after_the_limit_the_right_password_is_refused_for_that_account_and_client(
    accounts: None,
) -> None:
    # given wrong passwords in a row from one client for one account
    attacker = browser("203.0.113.7")
    answers = [log_in(attacker, "ana", f"guess-{n}") for n in range(LIMIT)]
    # when the right one comes
    response = attacker.post(LOGIN, {"username": "ana", "password": PASSWORD})
    # then it is refused, with a page that says why
    assert answers[:-1] == [200] * (LIMIT - 1)
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed logins" in page
    assert "locked for this account and from this address" in page
    assert "_auth_user_id" not in attacker.session


def test_the_locked_account_is_refused_from_another_client_and_the_client_for_another_account(
    accounts: None,
) -> None:
    # given a lockout of ana from one client
    attacker = browser("203.0.113.7")
    for n in range(LIMIT):
        log_in(attacker, "ana", f"guess-{n}")
    # then
    assert log_in(browser("198.51.100.20"), "ana", PASSWORD) == 429
    assert log_in(attacker, "ben", PASSWORD) == 429


def test_another_account_from_another_client_logs_in(accounts: None) -> None:
    # given a lockout of ana from one client
    attacker = browser("203.0.113.7")
    for n in range(LIMIT):
        log_in(attacker, "ana", f"guess-{n}")
    # when
    other = browser("198.51.100.20")
    status = log_in(other, "ben", PASSWORD)
    # then
    assert status == 302
    assert other.get("/admin/").status_code == 200


def test_failures_below_the_limit_then_the_right_password_log_in(accounts: None) -> None:
    # given
    user = browser("203.0.113.7")
    for n in range(LIMIT - 1):
        log_in(user, "ana", f"typo-{n}")
    # when
    status = log_in(user, "ana", PASSWORD)
    # then
    assert status == 302


def test_the_demo_admin_of_make_run_logs_in() -> None:
    # given make run's step
    call_command("ensure_demo_admin", stdout=io.StringIO())
    client = browser("127.0.0.1")
    # when
    status = log_in(client, DEMO_USERNAME, DEMO_PASSWORD)
    # then
    assert status == 302
    assert client.get("/admin/").status_code == 200
