"""Racing get_or_create calls on PostgreSQL: each Python thread has its own connection, and
the unique constraint leaves one session and one thread for a key."""

from __future__ import annotations

import pytest

from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.sessions.services import SessionManager
from cogitator_memory.threads.models import Thread
from tests.threads.test_concurrency import race

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

CALLERS = 8


def test_racing_get_or_create_calls_give_one_session_and_one_thread():
    # given
    answers: list[tuple[str, str, bool]] = []

    def call(_number: int) -> None:
        session, created = SessionManager().get_or_create(
            "user-1", "telegram", "chat-42", "assistant"
        )
        answers.append((session.pk, session.thread_id, created))

    # when
    race(call, CALLERS)
    # then
    assert len(answers) == CALLERS
    assert len({(pk, thread) for pk, thread, _ in answers}) == 1
    assert sum(created for _, _, created in answers) == 1
    assert ChannelSession.objects.count() == 1
    assert list(Thread.objects.values_list("pk", flat=True)) == [answers[0][1]]
