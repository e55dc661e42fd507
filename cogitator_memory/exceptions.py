"""Typed errors of the Python API.

Every error is a ``CogitatorMemoryError``, and every one the app raises is defined here.
Five families tell a caller (and the API's one exception handler) what went wrong:

- ``NotFound``: the thing named does not exist, or the caller may not see it (HTTP 404),
- ``InvalidInput``: the request itself is wrong; ``errors`` maps field names to messages
  (HTTP 400),
- ``Forbidden``: the caller may see the thing but has no grant for this change (HTTP 403),
- ``Conflict``: the request is well formed but the current state refuses it (HTTP 409),
- ``ServiceFailed``: a service the app depends on failed; try again later (HTTP 503).

Domain code raises them and knows nothing of HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


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


class EntryNotInThread(NotFound):
    """An entry named as parent, rewind target, checkout target or fork point is not an
    entry of the thread (none has its id, or it belongs to another thread). ``errors``
    names the field, as ``InvalidInput`` does; ``message`` is the sentence alone."""

    code = "entry_not_in_thread"

    def __init__(self, entry_id: str, thread_id: str, *, field: str = "entry_id") -> None:
        sentence = f"Entry {entry_id!r} is not an entry of thread {thread_id!r}."
        super().__init__(f"{field}: {sentence}")
        self.message = sentence
        self.errors: dict[str, list[str]] = {field: [sentence]}
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


class Forbidden(CogitatorMemoryError):
    """The caller may see what it names, but its grants do not allow this change."""

    code = "permission_denied"


class NoGrant(Forbidden):
    """A write (or a read by id) would reach where the caller's grants do not: an agent it
    is not granted, or, under a grant that names users, a user it is not granted (or none).

    ``user_field`` names where the request gave the user, so that the message asks for the
    field the caller used: ``metadata.userId`` for a thread (the default), ``user_id`` for
    a scope given by its fields (recall, memory files)."""

    code = "permission_denied"

    def __init__(
        self,
        agent_id: str,
        user_id: str | None,
        *,
        agent_granted: bool,
        user_field: str = "metadata.userId",
    ) -> None:
        if not agent_granted:
            message = f"You have no grant for agent {agent_id!r}."
        elif user_id is None:
            message = f"Your grant for agent {agent_id!r} names users: give {user_field}."
        else:
            message = f"You have no grant for user {user_id!r} of agent {agent_id!r}."
        super().__init__(message)
        self.agent_id = agent_id
        self.user_id = user_id
        self.user_field = user_field


class ThreadIdUnavailable(Conflict):
    """An explicit thread id is taken by a thread the caller may not see."""

    code = "thread_id_unavailable"

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"The thread id {thread_id!r} cannot be used; choose another.")
        self.thread_id = thread_id


class ServiceFailed(CogitatorMemoryError):
    """A service the app depends on (an embedding provider, a model) failed. ``message``
    names the service and what it answered (for logs); ``public_message`` is what an API
    client is told."""

    code = "service_failed"
    public_message = "A service the memory depends on failed; try again later."


class DatabaseBusy(ServiceFailed):
    """The database gave no lock in time: other writers held it (SQLite's "database is
    locked" after its busy timeout, PostgreSQL's ``lock_timeout``, a deadlock or a
    serialization failure). The statement was refused and its transaction rolled back, so
    nothing of the request was changed; ``retry_after`` says in how many seconds to try
    again (the API's ``Retry-After``). The API's exception handler recognises the
    drivers' errors (``api.exceptions.database_busy_error``)."""

    code = "database_busy"
    public_message = (
        "The memory's database is busy with other writes and nothing was changed; "
        "try again in a moment."
    )

    def __init__(self, detail: str, *, retry_after: int = 1) -> None:
        super().__init__(f"The database gave no lock in time: {detail}")
        self.retry_after = retry_after


class DatabaseUnavailable(DatabaseBusy):
    """The connection to the database broke or could not be made (the server restarted,
    an administrator ended the session, the network went). Whatever the request had begun
    was rolled back with the connection; the next request opens a new one."""

    code = "database_unavailable"
    public_message = (
        "The memory's database could not be reached and nothing was changed; try again in a moment."
    )

    def __init__(self, detail: str, *, retry_after: int = 5) -> None:
        ServiceFailed.__init__(self, f"The database connection failed: {detail}")
        self.retry_after = retry_after


# --- embeddings and search ---------------------------------------------------------------


class EmbeddingServiceError(ServiceFailed):
    """An embedding provider failed; the message names the provider and the HTTP status."""

    code = "embedding_service_failed"
    public_message = "The embedding service failed; try again later, or search by keyword."

    def __init__(self, provider: str, message: str, *, status: int | None = None) -> None:
        detail = f"{provider} embeddings failed" + (f" (HTTP {status})" if status else "")
        super().__init__(f"{detail}: {message}")
        self.provider = provider
        self.status = status


class EmbeddingsNotConfigured(Conflict):
    """A vector search was asked for, and no embedding service is configured."""

    code = "embedding_service_unavailable"

    def __init__(self) -> None:
        super().__init__(
            'No embedding service is configured (COGITATOR_MEMORY["EMBEDDINGS"]["PROVIDER"]); '
            "search by keyword instead."
        )


class MessageIndexOff(CogitatorMemoryError):
    """No embedding provider is configured, so messages cannot be embedded."""

    code = "message_index_off"

    def __init__(self) -> None:
        super().__init__(
            "The message index is off: no embedding provider is configured "
            "(set COGITATOR_MEMORY['EMBEDDINGS']['PROVIDER'])."
        )


class VectorSearchUnavailable(Conflict):
    """Vectors cannot be searched here, or not vectors of the query's size; ``reason``
    says why (no pgvector extension or column, stored vectors of another size)."""

    code = "vector_search_unavailable"

    def __init__(self, reason: str) -> None:
        end = "" if reason.endswith(".") else "."
        super().__init__(f"Vector search is unavailable: {reason}{end}")
        self.reason = reason


class KeywordSearchUnavailable(Conflict):
    """The store keeps its embeddings outside the database and cannot search words."""

    code = "keyword_search_unavailable"

    def __init__(self, store: object) -> None:
        super().__init__(f"{type(store).__name__} has no keyword search.")
        self.store = store


# --- memory items ------------------------------------------------------------------------


class ItemNotFound(NotFound):
    """No memory item has this id (or the caller may not see it)."""

    code = "item_not_found"

    def __init__(self, item_id: str) -> None:
        super().__init__(f"Memory item not found: {item_id!r}")
        self.item_id = item_id


class InvalidItem(InvalidInput):
    """The fields of a new memory item break the rules; ``errors`` names each."""

    code = "invalid_item"


class NotReviewable(Conflict):
    """A review decision the status of one or more of the chosen rows does not take;
    nothing was changed. ``refused`` maps each such row's id to its status, ``allowed``
    lists the statuses the decision applies to."""

    code = "not_reviewable"
    # What the message calls one row and several.
    noun, nouns = "row", "rows"

    def __init__(self, refused: Mapping[str, str], action: str, allowed: Sequence[str]) -> None:
        self.refused = dict(refused)
        self.action = action
        self.allowed = [str(status) for status in allowed]
        applies = f"{action} applies to {' or '.join(self.allowed)} {self.nouns} only."
        if len(self.refused) == 1:
            [(row_id, status)] = self.refused.items()
            message = f"{self.noun.capitalize()} {row_id!r} is {status}; {applies}"
        else:
            listed = ", ".join(f"{row_id!r} ({status})" for row_id, status in self.refused.items())
            message = f"{self.nouns.capitalize()} {listed} cannot take it: {applies}"
        super().__init__(message)


class ItemNotReviewable(NotReviewable):
    """A review decision the status of one or more chosen items does not allow
    (activating an active item, letting go of a stale one); nothing was changed.
    ``item_id`` and ``status`` name the first such item."""

    code = "item_not_reviewable"
    noun, nouns = "memory item", "memory items"

    def __init__(self, refused: Mapping[str, str], action: str, allowed: Sequence[str]) -> None:
        super().__init__(refused, action, allowed)
        self.item_id, self.status = next(iter(self.refused.items()))


class ReviewRefused(Forbidden):
    """The principal may see the rows but not make this review: reviews are made by
    people holding the decision's permission (``permission``), never by an API key."""

    code = "review_not_permitted"

    def __init__(self, message: str, *, permission: str | None = None) -> None:
        super().__init__(message)
        self.permission = permission


class ExportRefused(Forbidden):
    """The principal may not export a user's memory: exports are made by people holding
    ``permission``, never by an API key (trusted automation runs the ``export_user``
    command or calls ``export.services.export_user``)."""

    code = "export_not_permitted"

    def __init__(self, message: str, *, permission: str) -> None:
        super().__init__(message)
        self.permission = permission


class ForgetRefused(Forbidden):
    """The principal may not make this forgetting: forgetting a user is asked for by a
    person holding ``permission``, never by an API key; in the admin every forgetting
    (deleting or redacting entries, deleting a thread, rewinding) takes its own
    permission."""

    code = "forget_not_permitted"

    def __init__(self, message: str, *, permission: str) -> None:
        super().__init__(message)
        self.permission = permission


class ForgetRunNotFound(NotFound):
    """No forget run has this id (or the caller did not ask for it)."""

    code = "forget_run_not_found"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"Forget run not found: {run_id!r}")
        self.run_id = run_id


class ForgetRunOpen(Conflict):
    """A forget run of this user, of other agents, is queued or running: ask again once
    it is done (a request for the same agents joins it instead)."""

    code = "forget_run_open"

    def __init__(self, user_id: str, run_id: str) -> None:
        super().__init__(
            f"Forget run {run_id!r} of user {user_id!r} is still open with other agents; "
            "ask again once it is done."
        )
        self.user_id = user_id
        self.run_id = run_id


class UserNotGranted(Forbidden):
    """None of the caller's grants reaches this user's memory in any agent: each grant of
    an agent names users, and none names this one."""

    code = "permission_denied"

    def __init__(self, user_id: str) -> None:
        super().__init__(f"None of your grants reaches the memory of user {user_id!r}.")
        self.user_id = user_id


class ExtractionRunNotFound(NotFound):
    """No extraction run has this id (or the caller may not see its thread)."""

    code = "extraction_run_not_found"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"Extraction run not found: {run_id!r}")
        self.run_id = run_id


class UpkeepRunNotFound(NotFound):
    """No upkeep run has this id (or the caller's grants do not reach its scope)."""

    code = "upkeep_run_not_found"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"Upkeep run not found: {run_id!r}")
        self.run_id = run_id


class ExtractionAnswerError(ServiceFailed):
    """The extraction model answered a window without a JSON array, try after try."""

    code = "extraction_answer_error"
    public_message = "The model's answers could not be read; try again later."

    def __init__(self, tries: int) -> None:
        super().__init__(f"The model answered without a JSON array {tries} times in a row.")
        self.tries = tries


# --- the model (llm) ---------------------------------------------------------------------


class LLMError(ServiceFailed):
    """A model provider failed: an error status, no answer in time, or an answer that cannot
    be read. The message names the provider and the HTTP status, when there was one."""

    code = "llm_failed"
    public_message = "The model service failed; try again later."

    def __init__(self, provider: str, message: str, *, status: int | None = None) -> None:
        detail = f"{provider} model call failed" + (f" (HTTP {status})" if status else "")
        super().__init__(f"{detail}: {message}")
        self.provider = provider
        self.status = status


class ScriptExhausted(LLMError):
    """The scripted model was called with no scripted answer left for the call."""

    code = "llm_script_exhausted"

    def __init__(self, call_number: int, excerpt: str) -> None:
        super().__init__(
            "scripted",
            f"no scripted answer left for call {call_number} (its last message: {excerpt!r})",
        )
        self.call_number = call_number


class LLMUnavailable(Conflict):
    """Model-backed work was asked for, and no model is configured: that work is off."""

    code = "llm_unavailable"

    def __init__(self, work: str = "Model-backed work") -> None:
        super().__init__(
            f"{work} is off: no model is configured "
            "(set COGITATOR_MEMORY['LLM']['PROVIDER'] and MODEL)."
        )
        self.work = work


# --- memory files ------------------------------------------------------------------------


class MemoryFileError(Conflict):
    """A memory-tool command (or a file service call) was refused; ``message`` is the text
    the model reads, in the words of Anthropic's memory tool where it has them. Nothing
    was changed."""

    code = "memory_file_refused"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class InvalidMemoryPath(MemoryFileError):
    """A path that is not a path under ``/memories`` (or holds what no path may hold);
    ``errors`` names the field, as ``InvalidInput`` does, for an API to answer 400."""

    code = "memory_file_path"

    def __init__(self, message: str, *, field: str = "path") -> None:
        super().__init__(message)
        self.errors: dict[str, list[str]] = {field: [message]}


class MemoryFileReadOnly(MemoryFileError):
    """The access is read-only: every change is refused."""

    code = "memory_file_read_only"

    def __init__(self) -> None:
        super().__init__("Memory files are read-only here: nothing was changed.")


class MemoryFileReserved(MemoryFileError):
    """The change touches a path memory keeps itself (the playbook, observations)."""

    code = "memory_file_reserved"

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} is kept by memory itself and is read-only here.", path=path)


class FileVersionConflict(MemoryFileError):
    """The file stands otherwise than the caller last read it (``expected_sha256``):
    another writer changed it since. ``current_sha256`` is what stands (None: no file)."""

    code = "memory_file_conflict"

    def __init__(
        self,
        path: str,
        *,
        expected_sha256: str | None,
        current_sha256: str | None,
        message: str | None = None,
    ) -> None:
        super().__init__(
            message
            or f"The file {path} has changed since you last read it. View it again and try again.",
            path=path,
        )
        self.expected_sha256 = expected_sha256
        self.current_sha256 = current_sha256


class ConcurrentFileChange(FileVersionConflict):
    """Other writers kept adding versions where this change wrote, try after try."""

    code = "memory_file_conflict"

    def __init__(self, path: str) -> None:
        super().__init__(
            path,
            expected_sha256=None,
            current_sha256=None,
            message=(
                f"Another writer changed the memory around {path} at the same time. "
                "View it again and try again."
            ),
        )


class MemoryFileTooLarge(InvalidInput, MemoryFileError):
    """A change past a limit of memory files (``files/limits.py``): a file over 1 MiB, a
    change over 8 MiB, a text parameter longer than a file may be. An invalid input whose
    ``errors`` name the parameter (HTTP 400), and a refusal of the memory tool whose
    ``message`` the model reads. ``size`` and ``limit`` are in bytes. Nothing was changed."""

    code = "memory_file_too_large"

    def __init__(
        self, message: str, *, field: str, size: int, limit: int, path: str | None = None
    ) -> None:
        MemoryFileError.__init__(self, message, path=path)
        self.errors: dict[str, list[str]] = {field: [message]}
        self.field = field
        self.size = size
        self.limit = limit


class MemoryFileNotFound(NotFound):
    """No file stands at this path for the scope asked about (or the caller's grants do
    not reach that scope: the same answer)."""

    code = "memory_file_not_found"

    def __init__(self, path: str) -> None:
        super().__init__(f"Memory file not found: {path!r}")
        self.path = path


class SessionNotFound(NotFound):
    """No channel session has this id (or the caller may not see it)."""

    code = "session_not_found"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"Session not found: {session_id!r}")
        self.session_id = session_id


class CompactionUnavailable(Conflict):
    """``SessionManager.compact`` was asked to compact, but this installation has no
    compaction service (``cogitator_memory.compaction``)."""

    code = "compaction_unavailable"

    def __init__(self) -> None:
        super().__init__(
            "Compaction is not available: cogitator_memory.compaction is not installed."
        )


# --- compaction ----------------------------------------------------------------------------


class InvalidCompactionConfig(InvalidInput):
    """A compaction config that cannot work: no threshold, an unknown strategy, a number out
    of its range."""

    code = "invalid_compaction_config"


class CompactionStale(Conflict):
    """A compaction was not written: what it covers changed while the summary was made (an
    entry deleted or redacted, the branch moved away, another compaction written first)."""

    code = "compaction_stale"

    def __init__(self, thread_id: str, reason: str) -> None:
        super().__init__(f"Compaction of thread {thread_id!r} not written: {reason}")
        self.thread_id = thread_id
        self.reason = reason


class CompactionRunNotFound(NotFound):
    """No compaction run has this id (or the caller may not see its thread)."""

    code = "compaction_run_not_found"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"Compaction run not found: {run_id!r}")
        self.run_id = run_id


class CompactionDropsOpenItems(Conflict):
    """A hierarchical compaction would leave out items the one before still held open
    (tasks, constraints, decisions, errors, questions): it is not written."""

    code = "compaction_drops_open_items"

    def __init__(self, dropped: list[str]) -> None:
        shown = "; ".join(dropped[:5]) + (" …" if len(dropped) > 5 else "")
        super().__init__(
            f"The compaction would drop {len(dropped)} open item(s) of the one before: {shown}"
        )
        self.dropped = dropped


class CompactionAnswerError(ServiceFailed):
    """The compaction model answered a chapter without a JSON array, try after try."""

    code = "compaction_answer_error"
    public_message = "The model's answers could not be read; try again later."

    def __init__(self, tries: int) -> None:
        super().__init__(f"The model answered a chapter without a JSON array {tries} times.")
        self.tries = tries


# --- context builder -----------------------------------------------------------------------


class InvalidContextConfig(InvalidInput):
    """A context builder config or build that cannot work: partition shares over 1, an
    unknown strategy or time zone, a negative budget, no budget from either side."""

    code = "invalid_context_config"


# --- between runs --------------------------------------------------------------------------


class InvalidConsolidation(InvalidInput):
    """A consolidation asked with arguments that cannot work: a cap below 1, a ``since``
    without a time zone."""

    code = "invalid_consolidation"


class PlaybookDraftNotFound(NotFound):
    """No playbook draft stands for the scope (or for the id given): nothing to promote
    or discard."""

    code = "playbook_draft_not_found"

    def __init__(self, what: str) -> None:
        super().__init__(f"No playbook draft to review for {what}.")
        self.what = what


class PlaybookDraftRefused(Conflict):
    """A draft that cannot become the playbook: a model wrote it, or the playbook changed
    since it was made (it would undo that change). Nothing was changed."""

    code = "playbook_draft_refused"


class PlaybookDraftNotReviewable(NotReviewable):
    """A review of a draft already promoted or discarded; nothing was changed."""

    code = "playbook_draft_not_reviewable"
    noun, nouns = "playbook draft", "playbook drafts"


class InvalidBriefInput(InvalidInput):
    """A brief that cannot be asked for: ``max_cards`` outside 1 to 4, ``max_tokens`` not a
    whole number, an input that is not text, a source that is not a ``BriefSource``."""

    code = "invalid_brief"


# --- the knowledge graph -----------------------------------------------------------------


class GraphNodeNotFound(NotFound):
    """No graph node has this id (or the caller may not see it)."""

    code = "graph_node_not_found"

    def __init__(self, node_id: str) -> None:
        super().__init__(f"Graph node not found: {node_id!r}")
        self.node_id = node_id


class GraphEdgeNotFound(NotFound):
    """No graph edge has this id (or the caller may not see it)."""

    code = "graph_edge_not_found"

    def __init__(self, edge_id: str) -> None:
        super().__init__(f"Graph edge not found: {edge_id!r}")
        self.edge_id = edge_id


class InvalidGraphInput(InvalidInput):
    """The fields of a graph node, an edge, a change or a traversal break the rules;
    ``errors`` names each."""

    code = "invalid_graph_input"


class GraphScopeMismatch(InvalidGraphInput):
    """An edge or a merge would join nodes of different scopes: the graph of one scope
    never reaches into another. ``node_ids`` names the nodes."""

    code = "graph_scope_mismatch"

    def __init__(self, field: str, node_ids: Sequence[str]) -> None:
        self.node_ids = list(node_ids)
        super().__init__(
            {
                field: f"The nodes {', '.join(repr(i) for i in self.node_ids)} are of "
                "different scopes; an edge or a merge joins nodes of one scope."
            }
        )


class GraphNameTaken(Conflict):
    """A node was renamed (or retyped) to the name of another node of its scope and type;
    merge the two instead. ``node_id`` is the node that holds the name."""

    code = "graph_name_taken"

    def __init__(self, node_id: str, name: str) -> None:
        super().__init__(
            f"Graph node {node_id!r} of the same scope and type is named {name!r}; "
            "merge the nodes instead."
        )
        self.node_id = node_id


class GraphEdgeTaken(Conflict):
    """An edge was changed to the source, target and relation of another edge; merge
    them instead. ``edge_id`` is the edge that holds them."""

    code = "graph_edge_taken"

    def __init__(self, edge_id: str) -> None:
        super().__init__(f"Graph edge {edge_id!r} already joins these nodes by this relation.")
        self.edge_id = edge_id


class GraphNodeNotReviewable(NotReviewable):
    """A review decision the status of one or more chosen graph nodes does not allow;
    nothing was changed."""

    code = "graph_node_not_reviewable"
    noun, nouns = "graph node", "graph nodes"


class GraphEdgeNotReviewable(NotReviewable):
    """A review decision the status of one or more chosen graph edges does not allow;
    nothing was changed."""

    code = "graph_edge_not_reviewable"
    noun, nouns = "graph edge", "graph edges"
