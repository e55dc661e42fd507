"""Typed errors of the Python API.

Every error is a ``CogitatorMemoryError``. Three families tell a caller (and the API's
one exception handler) what went wrong:

- ``NotFound``: the thing named does not exist (HTTP 404),
- ``InvalidInput``: the request itself is wrong; ``errors`` maps field names to messages
  (HTTP 400),
- ``Conflict``: the request is well formed but the current state refuses it (HTTP 409).

Domain code raises them and knows nothing of HTTP.
"""

from __future__ import annotations


class CogitatorMemoryError(Exception):
    """Base class of every error this app raises on purpose."""

    code = "memory_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(CogitatorMemoryError):
    """The object named does not exist (or is not visible to the caller)."""

    code = "not_found"


class ThreadNotFound(NotFound):
    """No thread has this id."""

    code = "thread_not_found"

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"Thread not found: {thread_id!r}")
        self.thread_id = thread_id


class EntryNotFound(NotFound):
    """No entry has this id."""

    code = "entry_not_found"

    def __init__(self, entry_id: str) -> None:
        super().__init__(f"Entry not found: {entry_id!r}")
        self.entry_id = entry_id


class InvalidInput(CogitatorMemoryError):
    """The input is wrong; ``errors`` maps each bad field to its messages."""

    code = "invalid"

    def __init__(self, errors: dict[str, list[str]] | dict[str, str]) -> None:
        self.errors: dict[str, list[str]] = {
            field: [messages] if isinstance(messages, str) else list(messages)
            for field, messages in errors.items()
        }
        summary = "; ".join(
            f"{field}: {' '.join(messages)}" for field, messages in self.errors.items()
        )
        super().__init__(summary)


class InvalidEntry(InvalidInput):
    """The fields of a new entry break the rules of its type."""

    code = "invalid_entry"


class EntryNotInThread(InvalidInput):
    """An entry named as parent, rewind target, checkout target or fork point is not an
    entry of the thread."""

    code = "entry_not_in_thread"

    def __init__(self, entry_id: str, thread_id: str, *, field: str = "entry_id") -> None:
        super().__init__({field: f"Entry {entry_id!r} is not an entry of thread {thread_id!r}."})
        self.entry_id = entry_id
        self.thread_id = thread_id
        self.field = field


class Conflict(CogitatorMemoryError):
    """The request is valid, but the state of the store refuses it."""

    code = "conflict"


class ThreadAgentMismatch(Conflict):
    """An upsert named an existing thread of another agent."""

    code = "thread_agent_mismatch"

    def __init__(self, thread_id: str, agent_id: str, existing_agent_id: str) -> None:
        super().__init__(
            f"Thread {thread_id!r} belongs to agent {existing_agent_id!r}, not {agent_id!r}."
        )
        self.thread_id = thread_id
        self.agent_id = agent_id
        self.existing_agent_id = existing_agent_id


class ThreadAlreadyExists(Conflict):
    """A fork was asked to write into a thread id that is taken."""

    code = "thread_exists"

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"Thread {thread_id!r} already exists.")
        self.thread_id = thread_id


class NotOnActiveBranch(Conflict):
    """A rewind named an entry that is not on the thread's active branch; rewind only
    goes back along the active branch (use checkout to switch branches)."""

    code = "not_on_active_branch"

    def __init__(self, entry_id: str, thread_id: str) -> None:
        super().__init__(
            f"Entry {entry_id!r} is not on the active branch of thread {thread_id!r}; "
            "rewind goes back along the active branch, checkout switches branches."
        )
        self.entry_id = entry_id
        self.thread_id = thread_id


class RedactionRefused(Conflict):
    """Session events are deleted, not redacted."""

    code = "redaction_refused"

    def __init__(self, entry_id: str, entry_type: str) -> None:
        super().__init__(
            f"Entry {entry_id!r} is a {entry_type} event: events are deleted, not redacted."
        )
        self.entry_id = entry_id
        self.entry_type = entry_type


class PartialEntryNotSaveable(CogitatorMemoryError):
    """An entry read without its tool calls cannot be saved: saving would erase them."""

    code = "partial_entry"
