"""List pages at scale: counts bounded, pages read one row past their end, sorting only by
the columns an index serves, and no query over every row of a list."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import takewhile

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from cogitator_memory.access.models import Grant
from cogitator_memory.admin.scale import LargeTablePaginator, estimated_row_count
from cogitator_memory.admin.threads import ThreadAdmin
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.outbox.models import OutboxMessage
from cogitator_memory.sessions.services import SessionManager
from cogitator_memory.threads.models import Thread
from tests.factories import EntryFactory

pytestmark = pytest.mark.django_db

START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def threads_url() -> str:
    return reverse("admin:cogitator_memory_thread_changelist")


def make_threads(count: int, agent_id: str = "agent-1") -> list[Thread]:
    """Threads t-000, t-001 ... updated an hour apart, the last one most recently."""
    return Thread.objects.bulk_create(
        Thread(id=f"t-{n:03d}", agent_id=agent_id, updated_at=START + timedelta(hours=n))
        for n in range(count)
    )


def page_links(response: object) -> list[str]:
    """The page numbers (and ellipses) the paginator below the list offers."""
    html = response.content.decode()  # type: ignore[attr-defined]
    paginator = re.search(r'<p class="paginator">(.*?)</p>', html, re.S)
    assert paginator is not None
    words = re.sub(r"<[^>]+>", " ", paginator.group(1)).split()
    return list(takewhile(lambda word: word.isdigit() or word == "…", words))


def listed_ids(response: object) -> list[str]:
    return [thread.pk for thread in response.context["cl"].result_list]  # type: ignore[attr-defined]


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Exact counts up to 5 rows, pages of 2."""
    monkeypatch.setattr(LargeTablePaginator, "count_limit", 5)
    monkeypatch.setattr(ThreadAdmin, "list_per_page", 2)
    yield


# --- counts ----------------------------------------------------------------------------


def test_a_list_within_the_count_limit_is_counted_and_paged_as_usual(
    admin_client: Client, small_limits: None
) -> None:
    # given
    make_threads(5)
    # when
    response = admin_client.get(threads_url(), {"p": 3})
    # then
    assert response.context["cl"].result_count == 5
    assert response.context["cl"].paginator.counted_exactly
    assert listed_ids(response) == ["t-000"]
    assert "5 threads" in response.content.decode()
    assert "Select all 5 threads" in response.content.decode()


def test_a_filtered_list_past_the_count_limit_says_more_than_the_limit(
    admin_client: Client, small_limits: None
) -> None:
    # given
    make_threads(9)
    # when
    response = admin_client.get(threads_url(), {"agent_id": "agent-1"})
    # then
    html = response.content.decode()
    assert not response.context["cl"].paginator.counted_exactly
    assert "more than 5 threads" in html
    assert listed_ids(response) == ["t-008", "t-007"]
    # Pages 1 and 2 are offered, and an ellipsis for the pages after them.
    assert page_links(response) == ["1", "2", "…"]
    # The size of the whole selection is not known, so it is not offered.
    assert 'class="question' not in html


def test_pages_past_the_count_limit_are_read_until_one_comes_back_empty(
    admin_client: Client, small_limits: None
) -> None:
    # given 9 threads: page 5 holds the last one
    make_threads(9)
    # when
    last = admin_client.get(threads_url(), {"agent_id": "agent-1", "p": 5})
    past = admin_client.get(threads_url(), {"agent_id": "agent-1", "p": 6})
    # then
    assert listed_ids(last) == ["t-000"]
    assert page_links(last) == ["1", "2", "3", "4", "5"]
    assert past.status_code == 302
    assert past["Location"].endswith("?e=1")


def test_an_unfiltered_list_past_the_limit_says_about_how_many_rows_on_postgresql(
    admin_client: Client, small_limits: None, on_postgres: bool
) -> None:
    # given 9 threads, and statistics as autovacuum keeps them
    make_threads(9)
    if on_postgres:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE cogitator_memory_thread")
    # when
    html = admin_client.get(threads_url()).content.decode()
    # then PostgreSQL's estimate, or on SQLite, which keeps none, the bound
    assert ("about 9 threads" if on_postgres else "more than 5 threads") in html


def test_only_an_unfiltered_queryset_gets_an_estimate() -> None:
    # then
    assert estimated_row_count(Thread.objects.filter(agent_id="agent-1")) is None
    assert estimated_row_count(Thread.objects.all()[:10]) is None


# --- no query over every row -----------------------------------------------------------


@pytest.mark.parametrize(
    "url_name",
    [
        "admin:cogitator_memory_thread_changelist",
        "admin:cogitator_memory_entry_changelist",
        "admin:cogitator_memory_grant_changelist",
        "admin:cogitator_memory_outboxmessage_changelist",
        "admin:cogitator_memory_extractionrun_changelist",
        "admin:cogitator_memory_compactionrun_changelist",
        "admin:cogitator_memory_memoryitem_changelist",
        "admin:cogitator_memory_memoryfilehead_changelist",
        "admin:cogitator_memory_channelsession_changelist",
    ],
)
def test_a_list_page_reads_no_column_over_every_row(
    admin_client: Client, admin_user: AbstractBaseUser, url_name: str
) -> None:
    # given rows in every list, over two years (the drill-down lists years)
    thread = make_threads(3)[0]
    Thread.objects.filter(pk="t-002").update(updated_at=START + timedelta(days=400))
    EntryFactory(thread=thread)
    Grant.objects.create(user=admin_user, agent_id="agent-1")
    OutboxMessage.objects.create(topic="tests.scale", payload={})
    ExtractionRun.objects.create(thread=thread, status="done")
    MemoryFiles().put(FileAccess(scope=MemoryScope("agent-1")), "/memories/notes.md", "x")
    SessionManager().get_or_create("ana", "web", "w1", "agent-1")
    # when
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(reverse(url_name), {"_facets": "True"})
    # then no DISTINCT (filter choices, drill-down), no COUNT without a bound, no facets
    assert response.status_code == 200
    statements = [query["sql"] for query in queries.captured_queries]
    assert not [sql for sql in statements if "DISTINCT" in sql.upper()]
    counts = [sql for sql in statements if "COUNT(" in sql.upper()]
    assert counts
    assert all("LIMIT" in sql.upper() for sql in counts)


def test_the_entry_list_reads_each_entrys_thread_with_the_entries(admin_client: Client) -> None:
    # given
    url = reverse("admin:cogitator_memory_entry_changelist")
    EntryFactory.create_batch(2)
    with CaptureQueriesContext(connection) as few:
        admin_client.get(url)
    EntryFactory.create_batch(6)
    # when
    with CaptureQueriesContext(connection) as more:
        response = admin_client.get(url)
    # then
    assert len(response.context["cl"].result_list) == 8
    assert len(more.captured_queries) == len(few.captured_queries)


# --- sorting ---------------------------------------------------------------------------


def test_a_list_sorts_by_an_indexed_column_and_ignores_a_sort_by_another(
    admin_client: Client,
) -> None:
    # given threads created in the opposite order of their updates
    for thread in make_threads(3):
        Thread.objects.filter(pk=thread.pk).update(
            created_at=START - timedelta(hours=int(thread.pk[2:]))
        )
    columns = list(ThreadAdmin.list_display)
    # The first column holds the action checkboxes.
    by_update = f"{columns.index('updated_at') + 1}"
    by_creation = f"{columns.index('created_at') + 1}"
    # when
    unsorted = admin_client.get(threads_url())
    sorted_by_update = admin_client.get(threads_url(), {"o": by_update})
    sorted_by_creation = admin_client.get(threads_url(), {"o": by_creation})
    # then the created_at column, which no index sorts, offers no sort and is not used
    assert 'class="sortable column-updated_at' in unsorted.content.decode()
    assert 'class="sortable column-created_at' not in unsorted.content.decode()
    assert listed_ids(sorted_by_update) == ["t-000", "t-001", "t-002"]
    assert listed_ids(sorted_by_creation) == ["t-002", "t-001", "t-000"]
