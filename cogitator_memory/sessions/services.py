"""Channel sessions: a user's conversation with an agent on a channel, mapped onto a thread.

``SessionManager.get_or_create`` gives the one session (and its one thread) of a key
(user, channel type, channel id, agent). A unique constraint decides between racing
callers, not a read: each tries to insert its session and thread in a savepoint, a loser
rolls its savepoint back (its thread goes with it) and reads the winner's row.

A session's status and last activity are kept current cheaply: using a session
(``get_or_create`` of an existing one, ``compact``) writes one UPDATE only when the
session was closed or last touched more than ``TOUCH_INTERVAL`` ago; ``touch`` writes it
always. Reads (``get``, ``list``) write nothing.

Each method takes an optional ``scope`` (the rule of ``scope.py`` on the session's agent
and user, which are its thread's): a session the caller may not see answers as a missing
one (``SessionNotFound``), and creating one where the caller's grants do not reach raises
``NoGrant``. Trusted code passes none.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from cogitator_memory import policy
from cogitator_memory.exceptions import CompactionUnavailable, InvalidInput, SessionNotFound
from cogitator_memory.grants import USER_ID_KEY, Grants
from cogitator_memory.jsondata import storable_text, text_problem
from cogitator_memory.limits import page_limit
from cogitator_memory.sessions.models import (
    KEY_MAX_LENGTH,
    ChannelSession,
    SessionStatus,
)
from cogitator_memory.sessions.querysets import ChannelSessionQuerySet
from cogitator_memory.threads import services as thread_services
from cogitator_memory.threads.selectors import MOMENT_PART, decode_keyset, encode_keyset

__all__ = [
    "CHANNEL_ID_KEY",
    "CHANNEL_TYPE_KEY",
    "SESSION_CURSOR_PATTERN",
    "TOUCH_INTERVAL",
    "SessionManager",
    "SessionPage",
]

# Keys of the session thread's metadata, camelCase as the thread's userId.
CHANNEL_TYPE_KEY = "channelType"
CHANNEL_ID_KEY = "channelId"
# A session used again within this time keeps its stored last activity (no write).
TOUCH_INTERVAL = timedelta(minutes=1)
SESSION_ID_PART = r"[A-Za-z0-9_.:-]{1,64}"
# "<microseconds since the epoch>~<session id>": last_active_at and id of the last seen.
SESSION_CURSOR_PATTERN = re.compile(rf"^{MOMENT_PART}~({SESSION_ID_PART})\Z")
COMPACTION_MODULE = "cogitator_memory.compaction.services"
_KEY_FIELDS = ("user_id", "channel_type", "channel_id", "agent_id")


@dataclass
class SessionPage:
    """One page of sessions; pass ``next_cursor`` back for the next page."""

    sessions: list[ChannelSession] = field(default_factory=list)
    next_cursor: str | None = None


def _check_key_part(value: Any, name: str) -> str:
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > KEY_MAX_LENGTH
        or text_problem(value)
    ):
        raise InvalidInput(
            {name: f"A text of 1 to {KEY_MAX_LENGTH} characters, not only spaces (no NUL)."}
        )
    return value


class SessionManager:
    """Maps channel conversations (user + channel + agent) onto memory threads."""

    def _sessions(self, grants: Grants | None) -> ChannelSessionQuerySet:
        sessions = ChannelSession.objects.all()
        return sessions if grants is None else sessions.visible_to(grants)

    def get_or_create(
        self,
        user_id: str,
        channel_type: str,
        channel_id: str,
        agent_id: str,
        *,
        grants: Grants | None = None,
    ) -> tuple[ChannelSession, bool]:
        """The session of this key, created with its thread when there is none. Returns
        ``(session, created)``. Using an existing session marks it active and, at most
        once per ``TOUCH_INTERVAL``, records the activity. Raises ``InvalidInput`` for a
        bad key part and, with ``grants``, ``NoGrant`` for an agent or user the caller is
        not granted (checked before anything is looked up)."""
        key = dict(
            zip(
                _KEY_FIELDS,
                (
                    _check_key_part(value, name)
                    for value, name in zip(
                        (user_id, channel_type, channel_id, agent_id), _KEY_FIELDS, strict=True
                    )
                ),
                strict=True,
            )
        )
        policy.require_write(grants, agent_id, user_id)
        existing = ChannelSession.objects.filter(**key).first()
        if existing is not None:
            return self._used(existing), False
        try:
            with transaction.atomic():
                thread = thread_services.create_thread(
                    agent_id,
                    {
                        USER_ID_KEY: user_id,
                        CHANNEL_TYPE_KEY: channel_type,
                        CHANNEL_ID_KEY: channel_id,
                    },
                    grants=grants,
                )
                session = ChannelSession.objects.create(thread=thread, **key)
        except IntegrityError:
            # Another caller inserted the key first; the savepoint took our thread back.
            winner = ChannelSession.objects.filter(**key).first()
            if winner is None:
                raise
            return self._used(winner), False
        return session, True

    def get(self, session_id: str, *, grants: Grants | None = None) -> ChannelSession:
        """The session; ``SessionNotFound`` when there is none the caller may see."""
        session = (
            self._sessions(grants).filter(pk=session_id).first()
            if storable_text(session_id) and len(session_id) <= 64
            else None
        )
        if session is None:
            raise SessionNotFound(str(session_id))
        return session

    def list(
        self,
        user_id: str | None = None,
        status: str | None = None,
        *,
        agent_id: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        grants: Grants | None = None,
    ) -> SessionPage:
        """The sessions the caller may see, of one user or of all, the most recently
        active first, one page after ``cursor`` (keyset on last activity and id: a page
        never repeats or skips a session). Raises ``InvalidInput`` for a bad filter,
        limit or cursor."""
        size = page_limit(limit)
        sessions = self._sessions(grants)
        if user_id is not None:
            sessions = sessions.filter(user_id=_check_key_part(user_id, "user_id"))
        if agent_id is not None:
            sessions = sessions.filter(agent_id=_check_key_part(agent_id, "agent_id"))
        if status is not None:
            if status not in SessionStatus.values:
                raise InvalidInput(
                    {"status": f"One of: {', '.join(SessionStatus.values)}, not {status!r:.40}."}
                )
            sessions = sessions.filter(status=status)
        sessions = sessions.most_recently_active_first()
        if cursor:
            last_active_at, last_id = decode_keyset(
                cursor, pattern=SESSION_CURSOR_PATTERN, made_by="the session list"
            )
            sessions = sessions.filter(
                Q(last_active_at__lt=last_active_at)
                | Q(last_active_at=last_active_at, id__lt=last_id)
            )
        rows = list(sessions[: size + 1])
        if len(rows) > size:
            last = rows[size - 1]
            return SessionPage(rows[:size], encode_keyset(last.last_active_at, last.pk))
        return SessionPage(rows)

    def touch(
        self, session_id: str, *, at: datetime | None = None, grants: Grants | None = None
    ) -> ChannelSession:
        """Mark the session active as of ``at`` (default now): one UPDATE. Raises
        ``SessionNotFound``."""
        moment = at or timezone.now()
        updated = (
            self._sessions(grants)
            .filter(pk=session_id)
            .update(status=SessionStatus.ACTIVE, last_active_at=moment)
            if storable_text(session_id)
            else 0
        )
        if not updated:
            raise SessionNotFound(str(session_id))
        return self.get(session_id, grants=grants)

    def close(self, session_id: str, *, grants: Grants | None = None) -> ChannelSession:
        """Mark the session closed (one UPDATE); using it again reopens it. Raises
        ``SessionNotFound``."""
        session = self.get(session_id, grants=grants)
        ChannelSession.objects.filter(pk=session.pk).update(status=SessionStatus.CLOSED)
        session.status = SessionStatus.CLOSED
        return session

    def compact(self, session_id: str, config: Any, *, grants: Grants | None = None) -> Any:
        """Compact the session's thread with ``config`` through
        ``cogitator_memory.compaction.services.CompactionService`` and return what it
        returns. Raises ``SessionNotFound``, ``NoGrant`` and, where the compaction
        service is not installed, ``CompactionUnavailable``."""
        session = self.get(session_id, grants=grants)
        policy.require_write(grants, session.agent_id, session.user_id)
        try:
            # Imported here: compaction stands on threads, not on sessions.
            module = importlib.import_module(COMPACTION_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name not in ("cogitator_memory.compaction", COMPACTION_MODULE):
                raise
            raise CompactionUnavailable() from exc
        compaction_service = module.CompactionService
        result = compaction_service().compact(session.thread_id, config)
        self._used(session)
        return result

    def _used(self, session: ChannelSession) -> ChannelSession:
        """Record a use of ``session``: one UPDATE when it was closed or its last activity
        is older than ``TOUCH_INTERVAL``, nothing otherwise."""
        now = timezone.now()
        if session.status == SessionStatus.ACTIVE and session.last_active_at > now - TOUCH_INTERVAL:
            return session
        ChannelSession.objects.filter(pk=session.pk).update(
            status=SessionStatus.ACTIVE, last_active_at=now
        )
        session.status = SessionStatus.ACTIVE
        session.last_active_at = now
        return session
