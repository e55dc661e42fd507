"""The thread list's date drill-down: years, months and days that hold threads, found with
index lookups, in the current time zone, within what the user may see."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from cogitator_memory.access.models import Grant
from cogitator_memory.threads.models import Thread

pytestmark = pytest.mark.django_db

LINK = re.compile(r'<a href="([^"]*)"( class="date-back")?>([^<]*)</a>')


def threads_url() -> str:
    return reverse("admin:cogitator_memory_thread_changelist")


def make_thread(thread_id: str, updated_at: datetime, agent_id: str = "agent-1") -> None:
    Thread.objects.create(id=thread_id, agent_id=agent_id)
    # save() would stamp the time of the save; the drill-down reads the stored one.
    Thread.objects.filter(pk=thread_id).update(updated_at=updated_at)


def drill_down(client: Client, **params: str) -> tuple[str | None, list[str]]:
    """The back link's text and the texts of the drill-down's choices."""
    html = client.get(threads_url(), params).content.decode()
    nav = re.search(r'<nav class="toplinks">(.*?)</nav>', html, re.S)
    assert nav is not None
    back, choices = None, []
    for _href, is_back, text in LINK.findall(nav.group(1)):
        text = unescape(text).strip()
        if is_back:
            back = text.lstrip("\N{SINGLE LEFT-POINTING ANGLE QUOTATION MARK}").strip()
        else:
            choices.append(text)
    if not choices:
        # A chosen day is shown as text, not as a link.
        plain = re.sub(r"<a [^>]*>.*?</a>", "", nav.group(1), flags=re.S)
        choices = [unescape(plain).strip()] if plain.strip() else []
    return back, choices


@pytest.fixture
def threads_of_three_years() -> None:
    make_thread("t-2023-may", datetime(2023, 5, 1, 12, tzinfo=UTC))
    make_thread("t-2025-mar-5", datetime(2025, 3, 5, 12, tzinfo=UTC))
    make_thread("t-2025-mar-9", datetime(2025, 3, 9, 12, tzinfo=UTC))
    make_thread("t-2025-jul", datetime(2025, 7, 20, 12, tzinfo=UTC))


def test_the_list_opens_on_the_years_that_hold_threads(
    admin_client: Client, threads_of_three_years: None
) -> None:
    # when
    back, years = drill_down(admin_client)
    # then 2024, which holds none, is not offered
    assert back is None
    assert years == ["2023", "2025"]


def test_a_year_offers_its_months_that_hold_threads(
    admin_client: Client, threads_of_three_years: None
) -> None:
    # when
    back, months = drill_down(admin_client, updated_at__year="2025")
    # then
    assert back == "All dates"
    assert months == ["March 2025", "July 2025"]


def test_a_month_offers_its_days_that_hold_threads(
    admin_client: Client, threads_of_three_years: None
) -> None:
    # when
    response = admin_client.get(
        threads_url(), {"updated_at__year": "2025", "updated_at__month": "3"}
    )
    back, days = drill_down(admin_client, updated_at__year="2025", updated_at__month="3")
    # then
    assert back == "2025"
    assert days == ["March 5", "March 9"]
    assert [t.pk for t in response.context["cl"].result_list] == ["t-2025-mar-9", "t-2025-mar-5"]


def test_a_day_is_named_with_a_way_back_to_its_month(
    admin_client: Client, threads_of_three_years: None
) -> None:
    # when
    back, day = drill_down(
        admin_client, updated_at__year="2025", updated_at__month="3", updated_at__day="9"
    )
    # then
    assert back == "March 2025"
    assert day == ["March 9"]


def test_threads_of_one_month_open_the_list_on_its_days(admin_client: Client) -> None:
    # given
    make_thread("t-1", datetime(2025, 3, 5, 12, tzinfo=UTC))
    make_thread("t-2", datetime(2025, 3, 31, 23, tzinfo=UTC))
    # when
    back, days = drill_down(admin_client)
    # then
    assert back == "2025"
    assert days == ["March 5", "March 31"]


def test_days_are_those_of_the_current_time_zone(admin_client: Client, settings: object) -> None:
    # given a thread updated on New Year's night in UTC, still the old year in New York
    settings.TIME_ZONE = "America/New_York"  # type: ignore[attr-defined]
    make_thread("t-eve", datetime(2024, 1, 1, 3, tzinfo=UTC))
    make_thread("t-spring", datetime(2024, 4, 1, 12, tzinfo=UTC))
    # when
    _back, years = drill_down(admin_client)
    in_2023 = admin_client.get(threads_url(), {"updated_at__year": "2023"})
    # then the link and the list it opens agree
    assert years == ["2023", "2024"]
    assert [t.pk for t in in_2023.context["cl"].result_list] == ["t-eve"]


def test_a_staff_user_is_offered_only_the_dates_of_threads_they_may_see(
    django_user_model: type, threads_of_three_years: None
) -> None:
    # given a viewer granted agent-2, whose only thread is of 2024
    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_thread"))
    Grant.objects.create(user=user, agent_id="agent-2")
    make_thread("t-2024-agent-2", datetime(2024, 2, 2, 12, tzinfo=UTC), agent_id="agent-2")
    make_thread("t-2024-dec-agent-2", datetime(2024, 12, 2, 12, tzinfo=UTC), agent_id="agent-2")
    client = Client()
    client.force_login(user)
    # when
    _back, months = drill_down(client)
    # then
    assert months == ["February 2024", "December 2024"]


def test_the_drill_down_costs_one_lookup_per_period_found_and_one_more(
    admin_client: Client, threads_of_three_years: None
) -> None:
    # given
    params = {"updated_at__year": "2025", "updated_at__month": "3"}
    # when
    with CaptureQueriesContext(connection) as queries:
        admin_client.get(threads_url(), params)
    # then: two days found, then none after the second
    lookups = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith('SELECT "cogitator_memory_thread"."updated_at" AS')
    ]
    assert len(lookups) == 3
    assert all("LIMIT 1" in sql for sql in lookups)
