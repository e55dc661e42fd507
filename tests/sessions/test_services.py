"""SessionManager: one session and one thread per key, lists with and without a user page by
page, status and last activity, grants, and compaction handed to the compaction service."""

from __future__ import annotations

import sys
import types
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cogitator_memory.exceptions import (
    CompactionUnavailable,
    InvalidInput,
    NoGrant,
    SessionNotFound,
)
from cogitator_memory.grants import Grants
from cogitator_memory.sessions import services
from cogitator_memory.sessions.models import ChannelSession, SessionStatus
from cogitator_memory.sessions.services import SessionManager
from cogitator_memory.threads.models import Thread

pytestmark = pytest.mark.django_db

KEY = ("user-1", "telegram", "chat-42", "assistant")


def test_get_or_create_makes_one_session_and_thread_then_finds_it():
    # when
    first, created = SessionManager().get_or_create(*KEY)
    again, created_again = SessionManager().get_or_create(*KEY)
    # then
    assert (created, created_again) == (True, False)
    assert again.pk == first.pk and again.thread_id == first.thread_id
    thread = Thread.objects.get(pk=first.thread_id)
    assert (thread.agent_id, thread.user_id) == ("assistant", "user-1")
    assert thread.metadata == {
        "userId": "user-1",
        "channelType": "telegram",
        "channelId": "chat-42",
    }
    assert first.status == SessionStatus.ACTIVE
    assert ChannelSession.objects.count() == 1 and Thread.objects.count() == 1


def test_each_part_of_the_key_makes_another_session():
    # when
    ids = {
        SessionManager().get_or_create(*key)[0].pk
        for key in (
            KEY,
            ("user-2", *KEY[1:]),
            (KEY[0], "slack", *KEY[2:]),
            (*KEY[:2], "chat-43", KEY[3]),
            (*KEY[:3], "other-agent"),
        )
    }
    # then
    assert len(ids) == 5
    assert Thread.objects.count() == 5


def test_a_loser_of_the_race_gets_the_winner_and_leaves_no_thread(monkeypatch):
    # given the key inserted by another caller after this one looked and found nothing
    winner, _ = SessionManager().get_or_create(*KEY)
    real_filter = ChannelSession.objects.filter
    looks = []

    class Blind:
        def first(self) -> None:
            return None

    def filter_once_blind(*args: Any, **kwargs: Any) -> Any:
        looks.append(kwargs)
        return Blind() if len(looks) == 1 else real_filter(*args, **kwargs)

    monkeypatch.setattr(ChannelSession.objects, "filter", filter_once_blind)
    # when
    session, created = SessionManager().get_or_create(*KEY)
    # then: the unique constraint refused the second insert; its thread was taken back
    assert created is False
    assert session.pk == winner.pk and session.thread_id == winner.thread_id
    monkeypatch.undo()
    assert ChannelSession.objects.count() == 1
    assert list(Thread.objects.values_list("pk", flat=True)) == [winner.thread_id]


@pytest.mark.parametrize(
    ("position", "value"),
    [(0, ""), (1, "   "), (2, "a\x00b"), (3, "x" * 256), (0, None), (2, 7)],
)
def test_a_bad_key_part_is_refused_before_anything_is_written(position: int, value: Any):
    # given
    key: list[Any] = list(KEY)
    key[position] = value
    # when
    with pytest.raises(InvalidInput) as error:
        SessionManager().get_or_create(*key)
    # then
    assert list(error.value.errors) == [services._KEY_FIELDS[position]]
    assert not ChannelSession.objects.exists() and not Thread.objects.exists()


def test_grants_decide_who_may_create_and_see_a_session():
    # given
    ana = Grants.for_agents(["assistant"], {"assistant": ["user-1"]})
    other = Grants.for_agents(["assistant"], {"assistant": ["user-2"]})
    session, _ = SessionManager().get_or_create(*KEY, grants=ana)
    # when / then: another user's grant neither creates nor sees it
    with pytest.raises(NoGrant):
        SessionManager().get_or_create(*KEY, grants=other)
    with pytest.raises(NoGrant):
        SessionManager().get_or_create(*KEY[:3], "another-agent", grants=ana)
    with pytest.raises(SessionNotFound):
        SessionManager().get(session.pk, grants=other)
    with pytest.raises(SessionNotFound):
        SessionManager().touch(session.pk, grants=other)
    with pytest.raises(SessionNotFound):
        SessionManager().compact(session.pk, {"strategy": "summary"}, grants=other)
    assert SessionManager().list(grants=other).sessions == []
    assert SessionManager().list(grants=Grants.nothing()).sessions == []
    assert [s.pk for s in SessionManager().list(grants=ana).sessions] == [session.pk]
    assert SessionManager().get(session.pk, grants=ana).pk == session.pk


def make_sessions(count: int, *, user: str = "user-1", start: Any = None) -> list[ChannelSession]:
    start = start or timezone.now() - timedelta(days=1)
    made = []
    for number in range(count):
        session, _ = SessionManager().get_or_create(user, "web", f"chat-{number}", "assistant")
        # Some share a moment: the id breaks the tie.
        SessionManager().touch(session.pk, at=start + timedelta(seconds=number // 2))
        made.append(ChannelSession.objects.get(pk=session.pk))
    return made


def test_list_with_and_without_a_user_and_by_status():
    # given
    mine = make_sessions(3)
    theirs = make_sessions(2, user="user-2")
    SessionManager().close(mine[0].pk)
    manager = SessionManager()
    # when
    everyone = manager.list().sessions
    only_mine = manager.list(user_id="user-1").sessions
    active_mine = manager.list(user_id="user-1", status="active").sessions
    closed = manager.list(status="closed").sessions
    # then: the most recently active first
    assert len(everyone) == 5
    assert [s.last_active_at for s in everyone] == sorted(
        (s.last_active_at for s in everyone), reverse=True
    )
    assert {s.pk for s in only_mine} == {s.pk for s in mine}
    assert {s.pk for s in active_mine} == {mine[1].pk, mine[2].pk}
    assert [s.pk for s in closed] == [mine[0].pk]
    assert {s.pk for s in manager.list(user_id="user-2").sessions} == {s.pk for s in theirs}
    assert manager.list(agent_id="nobody").sessions == []


def test_paging_gives_every_session_once():
    # given
    made = make_sessions(7)
    seen: list[str] = []
    cursor = None
    pages = 0
    # when
    while True:
        page = SessionManager().list(limit=2, cursor=cursor)
        seen += [s.pk for s in page.sessions]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    # then
    assert pages == 4
    assert sorted(seen) == sorted(s.pk for s in made) and len(seen) == 7


@pytest.mark.parametrize(
    "kwargs",
    [{"limit": 0}, {"limit": 501}, {"cursor": "nope"}, {"status": "gone"}, {"user_id": ""}],
)
def test_a_bad_list_request_is_refused(kwargs: dict[str, Any]):
    with pytest.raises(InvalidInput):
        SessionManager().list(**kwargs)


def test_using_a_session_reopens_it_and_writes_at_most_once_a_minute():
    # given
    session, _ = SessionManager().get_or_create(*KEY)
    # when used again at once: no write
    with CaptureQueriesContext(connection) as fresh:
        SessionManager().get_or_create(*KEY)
    # then
    assert not [q for q in fresh.captured_queries if q["sql"].startswith("UPDATE")]
    # when closed, then used: one UPDATE reopens it
    SessionManager().close(session.pk)
    with CaptureQueriesContext(connection) as reopened:
        again, _ = SessionManager().get_or_create(*KEY)
    updates = [q for q in reopened.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(updates) == 1
    assert again.status == SessionStatus.ACTIVE
    assert ChannelSession.objects.get(pk=session.pk).status == SessionStatus.ACTIVE
    # when last used long ago: the use is recorded
    long_ago = timezone.now() - timedelta(hours=1)
    ChannelSession.objects.filter(pk=session.pk).update(last_active_at=long_ago)
    SessionManager().get_or_create(*KEY)
    assert ChannelSession.objects.get(pk=session.pk).last_active_at > long_ago


def test_touch_is_one_update_and_reads_write_nothing():
    # given
    session, _ = SessionManager().get_or_create(*KEY)
    moment = timezone.now() + timedelta(minutes=5)
    # when
    with CaptureQueriesContext(connection) as touched:
        SessionManager().touch(session.pk, at=moment)
    with CaptureQueriesContext(connection) as read:
        SessionManager().get(session.pk)
        SessionManager().list(user_id="user-1")
    # then
    assert sum(q["sql"].startswith("UPDATE") for q in touched.captured_queries) == 1
    assert ChannelSession.objects.get(pk=session.pk).last_active_at == moment
    assert all(q["sql"].startswith("SELECT") for q in read.captured_queries)
    with pytest.raises(SessionNotFound):
        SessionManager().touch("sess_missing")


def test_deleting_the_thread_deletes_its_session():
    # given
    from cogitator_memory.threads import services as thread_services

    session, _ = SessionManager().get_or_create(*KEY)
    # when
    thread_services.delete_thread(session.thread_id)
    # then
    assert not ChannelSession.objects.exists()


def test_compact_hands_the_thread_and_config_to_the_compaction_service(monkeypatch):
    # given a stand-in compaction service
    calls: list[tuple[str, Any]] = []

    class StubCompactionService:
        def compact(self, thread_id: str, config: Any) -> str:
            calls.append((thread_id, config))
            return "compacted"

    module = types.ModuleType("cogitator_memory.compaction.services")
    module.CompactionService = StubCompactionService  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cogitator_memory.compaction.services", module)
    session, _ = SessionManager().get_or_create(*KEY)
    config = {"strategy": "summary", "threshold": 8000, "keep_recent": 10}
    # when
    result = SessionManager().compact(session.pk, config)
    # then
    assert result == "compacted"
    assert calls == [(session.thread_id, config)]


def test_compact_without_a_compaction_service_says_so(monkeypatch):
    # given no compaction module importable
    monkeypatch.setitem(sys.modules, "cogitator_memory.compaction.services", None)
    session, _ = SessionManager().get_or_create(*KEY)
    # when / then
    with pytest.raises(CompactionUnavailable) as error:
        SessionManager().compact(session.pk, {"strategy": "summary"})
    assert error.value.code == "compaction_unavailable"
    with pytest.raises(SessionNotFound):
        SessionManager().compact("sess_missing", {})
