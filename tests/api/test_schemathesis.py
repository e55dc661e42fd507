"""Requests made from the served OpenAPI schema are answered as the schema documents.

The schema and the API agree: schemathesis, running every phase with every check, finds no
request the API answers otherwise than the schema says, and none that the schema calls
valid and the API refuses (or the other way round).

- ``test_schemathesis_finds_no_failure``: the schemathesis CLI, in a subprocess, against
  pytest-django's live server on the loopback interface (the project, the test database):
  ``--phases examples,coverage,fuzzing,stateful --checks all --seed 20261130`` and
  ``--max-examples 30``, configured by ``schemathesis.toml`` beside this module (stateful
  runs follow the schema's links, 100 scenarios); in the CI profile (``tests/examples.py``,
  the default) ``--max-examples 10`` and 30 scenarios, every phase and check still run,
  and ``COGITATOR_TEST_PROFILE=full`` runs the full counts. Once with a superuser's token, which
  reaches every operation's logic (stateful runs create threads, add entries, branch,
  fork, redact and delete), and once with the API key of a service granted ``agent-1``,
  which meets the grants (403 for writes of other agents, 404 for what it may not see).
  In the CI profile the key's run leaves out the coverage phase (PRINCIPAL_PHASES): its
  boundary and invalid values of every parameter meet the same validation for both
  principals, and the superuser's run sends them all; the key's grants are met by its
  examples, fuzzing and stateful phases, over every operation.
  Fixed rows (threads of both agents, with every kind of entry) are there for lists and
  search to return. The test fails on any failure or error schemathesis reports, or when
  it tests fewer than all operations, and prints the report.
- Awkward values: the same conformance checks on requests that each carry one value the
  schema refuses and generation seldom makes: NUL (PostgreSQL's text and jsonb refuse it)
  in a path id or inside a JSON field, and a ``/`` in a path id. The same requests with
  valid ids succeed, so what the API has to handle is the awkward value, not the rest.
  They run in-process, in the test's transaction.

Time: the superuser's run (about 5,500 generated cases, 4,400 of them the coverage
phase's) takes about two minutes on PostgreSQL on the 2-core machine (longer while it is
busy), the key's (about 1,100) under one. That holds while the live server sends without
Nagle's delay (``tests/conftest.py``) and keeps its database connections as the project
does (``connections_kept_as_deployed``): without them, a run took three to four times as
long.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections, transaction
from pytest_django import DjangoDbBlocker
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token
from rest_framework_api_key.models import APIKey
from schemathesis import APIOperation
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cogitator_memory.access.models import Grant
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import Author, MemoryFileHead
from cogitator_memory.files.paths import PLAYBOOK_DRAFT_PATH
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.graph.services import MemoryGraph
from cogitator_memory.items.models import Evidence, ExtractionRun, MemoryItem, RunStatus
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads import services
from cogitator_memory.threads.models import EntryType, Role
from cogitator_memory.upkeep.playbook_text import MadeFrom, Playbook, PlaybookRule, playbook_file
from cogitator_memory.upkeep.records import UpkeepRun, UpkeepWork
from project.settings import database_from_url
from project.wsgi import application
from tests.examples import PROFILE, examples
from tests.factories import EntryFactory, ThreadFactory

if TYPE_CHECKING:
    from pytest_django.fixtures import Settings as SettingsWrapper

SCHEMA_URL = "/api/schema/?format=json"
CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = 20261130
# Generated requests per operation and phase. 30 finds what 100 finds here, in a third of
# the time; the CI profile takes 10.
MAX_EXAMPLES = examples(full=30, ci=10)
# Scenarios of the stateful phase: CONFIG's 100 in the full profile; the CI profile runs
# with a copy of CONFIG that asks for fewer.
STATEFUL_SCENARIOS_SETTING = "[phases.stateful.generation]\nmax-examples = 100\n"
STATEFUL_SCENARIOS = examples(full=100, ci=30)
# Far above what one run sends: the throttle is tested elsewhere, and answering 429 to
# most of a run would leave the API's logic untested.
UNTHROTTLED_RATE = "1000000/minute"
EVERY_PHASE = "examples,coverage,fuzzing,stateful"
# The coverage phase makes about 4,400 of a run's 5,500 cases, the same set whoever
# sends them; the key's run, there for the grants, takes it only in the full profile.
PRINCIPAL_PHASES = {
    "superuser token": EVERY_PHASE,
    "api key": EVERY_PHASE if PROFILE == "full" else "examples,fuzzing,stateful",
}

GRANTED_AGENT = "agent-1"
OTHER_AGENT = "agent-2"

THREAD_ID = "st-main"
HIDDEN_THREAD_ID = "st-hidden"
ROOT_ID = "entry_st_root"
CALL_ID = "entry_st_call"
TOOL_ID = "entry_st_tool"
LABEL_ID = "entry_st_label"
BRANCH_ID = "entry_st_branch"
REDACTED_ID = "entry_st_redacted"
HIDDEN_ENTRY_ID = "entry_st_hidden"
ITEM_ID = "item_st_suggested"
RUN_ID = "extr_st_done"
SESSION_ID = "sess_st_main"
# ana's graph: two suggested nodes and the suggested edge between them.
NODE_ID = "gnode_st_ana"
OTHER_NODE_ID = "gnode_st_porto"
EDGE_ID = "gedge_st_lives_in"
# The id of the file head of ana's playbook draft.
DRAFT_ID = "424242"
SESSION_KEY = {
    "user_id": "ana",
    "channel_type": "web",
    "channel_id": "st",
    "agent_id": GRANTED_AGENT,
}

LIST_THREADS = "GET /api/memory/threads/"
CREATE_THREAD = "POST /api/memory/threads/"
UPDATE_THREAD = "PATCH /api/memory/threads/{thread_id}/"
ADD_ENTRY = "POST /api/memory/threads/{thread_id}/entries/"
# A message any thread accepts.
VALID_MESSAGE = {"type": "message", "role": "user", "content": "Hello"}

NUL_TEXT = "a\x00b"
# A request each operation with an id in its path accepts; the awkward requests send it
# with an awkward id instead, so that the id, not the body, is what the API has to handle.
VALID_PATH_IDS = {
    "thread_id": THREAD_ID,
    "entry_id": ROOT_ID,
    "item_id": ITEM_ID,
    "run_id": RUN_ID,
    "session_id": SESSION_ID,
    "draft_id": DRAFT_ID,
    "node_id": NODE_ID,
    "edge_id": EDGE_ID,
    # ana's memory: the export of every kind of row the fixed memory holds.
    "user_id": "ana",
}
VALID_BODIES: dict[str, dict[str, Any]] = {
    UPDATE_THREAD: {"metadata": {"topic": "x"}},
    ADD_ENTRY: VALID_MESSAGE,
    "POST /api/memory/threads/{thread_id}/rewind/": {"to_entry_id": ROOT_ID},
    "POST /api/memory/threads/{thread_id}/checkout/": {"entry_id": BRANCH_ID},
    "POST /api/memory/threads/{thread_id}/fork/": {"at_entry_id": ROOT_ID},
    "POST /api/memory/entries/{entry_id}/redact/": {"reason": "x"},
    "POST /api/memory/items/{item_id}/reject/": {"reason": "x"},
    "POST /api/memory/sessions/": SESSION_KEY,
    "POST /api/memory/users/{user_id}/forget/": {"confirm": "ana"},
    "PATCH /api/memory/graph/nodes/{node_id}/": {"properties": {"x": 1}},
    "POST /api/memory/graph/nodes/{node_id}/reject/": {"reason": "x"},
    "PATCH /api/memory/graph/edges/{edge_id}/": {"weight": 2},
    "POST /api/memory/graph/edges/{edge_id}/reject/": {"reason": "x"},
}
# Reviews are made by people: the valid requests of these go with a superuser's token.
REVIEWS = {
    "POST /api/memory/items/{item_id}/activate/",
    "POST /api/memory/items/{item_id}/reject/",
    "POST /api/memory/items/{item_id}/let-go/",
    "POST /api/memory/playbook/drafts/{draft_id}/promote/",
    "POST /api/memory/playbook/drafts/{draft_id}/discard/",
    "POST /api/memory/graph/nodes/{node_id}/activate/",
    "POST /api/memory/graph/nodes/{node_id}/reject/",
    "POST /api/memory/graph/edges/{edge_id}/activate/",
    "POST /api/memory/graph/edges/{edge_id}/reject/",
}
# So are exports (an API key is answered 403).
EXPORTS = {"GET /api/memory/users/{user_id}/export/"}
# And forgetting a user.
FORGETTING = {
    "POST /api/memory/users/{user_id}/forget/",
    "GET /api/memory/forgets/{run_id}/",
}
# Quoted as schemathesis quotes generated path parameters; the server decodes them.
AWKWARD_PATH_IDS = {"NUL": quote(NUL_TEXT, safe=""), "slash": quote("a/b", safe="")}
AWKWARD_BODIES: list[tuple[str, str, dict[str, Any]]] = [
    (
        CREATE_THREAD,
        "NUL in a metadata value",
        {"agent_id": GRANTED_AGENT, "metadata": {"note": NUL_TEXT}},
    ),
    (
        CREATE_THREAD,
        "NUL in a metadata key",
        {"agent_id": GRANTED_AGENT, "metadata": {NUL_TEXT: "x"}},
    ),
    (UPDATE_THREAD, "NUL in a metadata value", {"metadata": {"note": NUL_TEXT}}),
    (ADD_ENTRY, "NUL in text content", {**VALID_MESSAGE, "content": NUL_TEXT}),
    (
        ADD_ENTRY,
        "NUL in a content part",
        {**VALID_MESSAGE, "content": [{"type": "text", "text": NUL_TEXT}]},
    ),
    (ADD_ENTRY, "NUL in metadata", {**VALID_MESSAGE, "metadata": {"note": NUL_TEXT}}),
    (
        ADD_ENTRY,
        "NUL in a tool call",
        {"role": "assistant", "tool_calls": [{"id": "call-1", "name": NUL_TEXT}]},
    ),
    (
        ADD_ENTRY,
        "NUL in a tool result",
        {"type": "tool_result", "role": "tool", "tool_results": [{"output": NUL_TEXT}]},
    ),
    (ADD_ENTRY, "NUL in an event", {"type": "label", "event": {"label": NUL_TEXT}}),
]
AWKWARD_BODIES += [
    (
        "POST /api/memory/files/command/",
        "NUL in the tool input",
        {"agent_id": GRANTED_AGENT, "input": {"command": "view", "path": NUL_TEXT}},
    ),
    (
        "PUT /api/memory/files/content/",
        "NUL in the text",
        {"agent_id": GRANTED_AGENT, "path": "/memories/x.md", "text": NUL_TEXT},
    ),
]
AWKWARD_BODIES += [
    (
        "POST /api/memory/graph/nodes/",
        "NUL in a property",
        {"agent_id": GRANTED_AGENT, "name": "x", "properties": {"note": NUL_TEXT}},
    ),
    (
        "POST /api/memory/graph/edges/",
        "NUL in a quote's file range",
        {
            "source": NODE_ID,
            "target": OTHER_NODE_ID,
            "relation": "r",
            "evidence": [{"quote": "Hello", "file_range": {NUL_TEXT: 1}}],
        },
    ),
]
AWKWARD_QUERIES: list[tuple[str, str, dict[str, Any]]] = [
    (LIST_THREADS, "NUL in a metadata filter value", {"metadata": '{"userId": "a\\u0000b"}'}),
    (
        "GET /api/memory/files/content/",
        "NUL in a path",
        {"agent_id": GRANTED_AGENT, "path": "/memories/a\x00b"},
    ),
]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]

SCHEMA = schemathesis.openapi.from_wsgi(SCHEMA_URL, application)


def load_operations() -> dict[str, APIOperation]:
    """The schema's operations by label; an operation schemathesis cannot read fails here."""
    operations = {}
    for result in SCHEMA.get_all_operations():
        if isinstance(result, Err):
            raise result.err()
        operations[result.ok().label] = result.ok()
    return operations


OPERATIONS = load_operations()


def write_fixed_memory() -> None:
    """The rows every request sees.

    ``st-main`` (agent-1, userId ana): root -> call (a tool call) -> tool result -> label
    event, the active leaf; and a second branch off the root, ending in a redacted message.
    ``st-hidden`` belongs to agent-2, which the key is not granted.
    """
    main = ThreadFactory(id=THREAD_ID, agent_id=GRANTED_AGENT, metadata={"userId": "ana"})
    root = EntryFactory(id=ROOT_ID, thread=main, content="Hello")
    EntryFactory(
        id=CALL_ID,
        thread=main,
        role=Role.ASSISTANT.value,
        content="",
        tool_calls=[{"id": "call-1", "name": "lookup", "arguments": {"q": "x"}}],
    )
    EntryFactory(
        id=TOOL_ID,
        thread=main,
        type=EntryType.TOOL_RESULT.value,
        role=Role.TOOL.value,
        content="42",
        tool_call_id="call-1",
    )
    EntryFactory(
        id=LABEL_ID,
        thread=main,
        type=EntryType.LABEL.value,
        role=None,
        content=None,
        event={"label": "checkpoint"},
    )
    branch = EntryFactory(id=BRANCH_ID, thread=main, parent=root, activate=False)
    EntryFactory(id=REDACTED_ID, thread=main, parent=branch, activate=False)
    services.redact_entry(REDACTED_ID, reason="test data")
    hidden = ThreadFactory(id=HIDDEN_THREAD_ID, agent_id=OTHER_AGENT)
    EntryFactory(id=HIDDEN_ENTRY_ID, thread=hidden)
    written = MemoryItems().write(
        MemoryScope(GRANTED_AGENT, user_id="ana"),
        NewItem(
            kind="fact",
            subject="Ana",
            attribute="greeting",
            value="Hello",
            trust="model",
            evidence=[NewEvidence(quote="Hello", entry_id=ROOT_ID)],
        ),
    )
    # A fixed id, so that requests can name it; one transaction, as the evidence's
    # foreign key is checked at its end.
    with transaction.atomic():
        MemoryItem.objects.filter(pk=written.item.pk).update(id=ITEM_ID)
        Evidence.objects.filter(item_id=written.item.pk).update(item_id=ITEM_ID)
    ExtractionRun.objects.create(id=RUN_ID, thread=main, status=RunStatus.DONE)
    CompactionRun.objects.create(id=RUN_ID, thread=main, status=RunStatus.DONE)
    ChannelSession.objects.create(id=SESSION_ID, thread=main, **SESSION_KEY)
    # A forgetting asked for by no one left (a superuser reads every run).
    ForgetRun.objects.create(id=RUN_ID, user_id="bea", agent_ids=None, status=RunStatus.DONE)
    UpkeepRun.objects.create(
        id=RUN_ID,
        agent_id=GRANTED_AGENT,
        user_id="ana",
        scope_key="st",
        work=UpkeepWork.PASS,
        status=RunStatus.DONE,
    )
    # Memory files: ana's, one every user of agent-1 shares, and one of agent-2.
    files = MemoryFiles()
    for scope, path, text in (
        (MemoryScope(GRANTED_AGENT, user_id="ana"), "/memories/user.md", "Allergic to peanuts."),
        (MemoryScope(GRANTED_AGENT), "/memories/agent.md", "Be brief."),
        (MemoryScope(OTHER_AGENT), "/memories/user.md", "Hidden."),
    ):
        files.put(FileAccess(scope=scope), path, text)
    write_fixed_graph()
    # ana's playbook draft, as memory writes it in shadow mode, under a fixed id.
    draft = playbook_file(
        Playbook(rules=(PlaybookRule("Greet by name."),), made_from=MadeFrom(None, None))
    )
    ana = MemoryScope(GRANTED_AGENT, user_id="ana")
    files.put(FileAccess(scope=ana, author=Author.MEMORY), PLAYBOOK_DRAFT_PATH, draft)
    MemoryFileHead.objects.filter(path=PLAYBOOK_DRAFT_PATH).update(id=int(DRAFT_ID))


def write_fixed_graph() -> None:
    """ana's graph, under fixed ids: what a model said, waiting for review."""
    graph = MemoryGraph()
    ana = MemoryScope(GRANTED_AGENT, user_id="ana")
    quote = NewEvidence(quote="Hello", entry_id=ROOT_ID)
    first = graph.add_node(ana, name="Ana", type="person", evidence=[quote])
    second = graph.add_node(ana, name="Porto", type="place")
    edge = graph.add_edge(ana, source=first, target=second, relation="lives_in")
    with transaction.atomic():
        for row, fixed in ((first, NODE_ID), (second, OTHER_NODE_ID)):
            GraphNode.objects.filter(pk=row.pk).update(id=fixed)
            GraphEdge.objects.filter(source_id=row.pk).update(source_id=fixed)
            GraphEdge.objects.filter(target_id=row.pk).update(target_id=fixed)
            GraphEvidence.objects.filter(node_id=row.pk).update(node_id=fixed)
        GraphEdge.objects.filter(pk=edge.pk).update(id=EDGE_ID)


# --- schemathesis, every phase, every check --------------------------------------------


def superuser_authorization() -> str:
    user = User.objects.create_superuser("schemathesis", password="not used")
    return f"Token {Token.objects.create(user=user).key}"


def api_key_authorization() -> str:
    api_key, key = APIKey.objects.create_key(name="schemathesis")
    assert isinstance(api_key, APIKey)
    Grant.objects.create(api_key=api_key, agent_id=GRANTED_AGENT)
    return f"Api-Key {key}"


AUTHORIZATIONS = {"superuser token": superuser_authorization, "api key": api_key_authorization}


def config_file(workdir: Path) -> Path:
    """CONFIG, or in the CI profile a copy of it in ``workdir`` with its stateful phase's
    scenario count set to STATEFUL_SCENARIOS."""
    text = CONFIG.read_text()
    assert text.count(STATEFUL_SCENARIOS_SETTING) == 1, "CONFIG no longer sets 100 scenarios"
    if STATEFUL_SCENARIOS == 100:
        return CONFIG
    copy = workdir / CONFIG.name
    copy.write_text(
        text.replace(
            STATEFUL_SCENARIOS_SETTING,
            STATEFUL_SCENARIOS_SETTING.replace("100", str(STATEFUL_SCENARIOS)),
        )
    )
    return copy


def run_schemathesis(
    schema_url: str, authorization: str, phases: str, workdir: Path
) -> tuple[int, str]:
    """Run the schemathesis CLI's ``phases`` on ``schema_url``; its exit code and report."""
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config_file(workdir)),
        "run",
        schema_url,
        "--phases",
        phases,
        "--checks",
        "all",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--generation-database",
        "none",
        "--header",
        f"Authorization: {authorization}",
        "--no-color",
    ]
    finished = subprocess.run(
        command, cwd=workdir, capture_output=True, text=True, timeout=900, check=False
    )
    return finished.returncode, finished.stdout + finished.stderr


def operations_tested(report: str) -> tuple[int, int, int]:
    """(selected, total, tested) from the summary of a schemathesis report."""
    selected = re.search(r"Selected: (\d+)/(\d+)", report)
    tested = re.search(r"Tested: (\d+)", report)
    assert selected and tested, report
    return int(selected[1]), int(selected[2]), int(tested[1])


@pytest.fixture
def unthrottled(settings: SettingsWrapper) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"memory": UNTHROTTLED_RATE},
    }


@pytest.fixture
def connections_kept_as_deployed(transactional_db: None) -> Iterator[None]:
    """The live server's requests keep their database connection as the project's settings
    keep it (on PostgreSQL for 60 s, checked before reuse; on SQLite not at all), where the
    test settings open one for each request: a new PostgreSQL backend for each of the
    run's 2,000 requests took a third of its time. The server's thread for a client
    connection closes its database connection when the client's connection ends."""
    database = connections.settings[DEFAULT_DB_ALIAS]
    deployed = database_from_url(f"{connections[DEFAULT_DB_ALIAS].vendor}://host/name")
    keys = ("CONN_MAX_AGE", "CONN_HEALTH_CHECKS")
    before = {key: database[key] for key in keys}
    # The live server's threads make their connections from these settings.
    database.update({key: deployed[key] for key in keys})
    try:
        yield
    finally:
        database.update(before)


@pytest.mark.parametrize("principal", sorted(AUTHORIZATIONS))
def test_schemathesis_finds_no_failure(
    principal: str,
    live_server: LiveServer,
    transactional_db: None,
    unthrottled: None,
    connections_kept_as_deployed: None,
    tmp_path: Path,
) -> None:
    # given
    write_fixed_memory()
    authorization = AUTHORIZATIONS[principal]()
    # when
    code, report = run_schemathesis(
        live_server.url + SCHEMA_URL, authorization, PRINCIPAL_PHASES[principal], tmp_path
    )
    print(report)  # shown with -s or -rP
    # then
    if code != 0:
        pytest.fail(f"schemathesis exited with {code}:\n{report}", pytrace=False)
    selected, total, tested = operations_tested(report)
    assert selected == total == tested == len(OPERATIONS), report
    assert re.search(r"\d+ generated, \d+ passed", report), report
    for phase in PRINCIPAL_PHASES[principal].split(","):
        assert f"{phase.capitalize()} (in " in report, (phase, report)


# --- awkward values, in-process ---------------------------------------------------------


def call_and_validate_in_savepoint(
    case: schemathesis.Case, headers: dict[str, str]
) -> schemathesis.Response:
    """Send ``case`` and run the checks; whatever the request wrote is rolled back."""
    savepoint = transaction.savepoint()
    # Throttling stays on; every request starts with none counted.
    cache.clear()
    try:
        return case.call_and_validate(headers=headers, checks=CHECKS)
    finally:
        transaction.savepoint_rollback(savepoint)


def make_case(
    label: str,
    path_parameters: dict[str, str],
    query: dict[str, str] | None,
    body: dict[str, Any] | None,
) -> schemathesis.Case:
    operation = OPERATIONS[label]
    if body is None:
        return operation.Case(path_parameters=path_parameters, query=query)
    return operation.Case(
        path_parameters=path_parameters, query=query, body=body, media_type="application/json"
    )


def operations_with_path_ids() -> list[tuple[str, list[str]]]:
    """(label, names of its path parameters) of each operation that has some."""
    return [
        (label, [parameter.name for parameter in operation.path_parameters])
        for label, operation in sorted(OPERATIONS.items())
        if list(operation.path_parameters)
    ]


def awkward_requests() -> Iterator[Any]:
    """(operation label, path parameters, query, body) with one awkward value each."""
    for label, path_names in operations_with_path_ids():
        for name in path_names:
            for what, value in AWKWARD_PATH_IDS.items():
                path = {**{n: VALID_PATH_IDS[n] for n in path_names}, name: value}
                yield pytest.param(
                    label, path, None, VALID_BODIES.get(label), id=f"{label} {what} in {name}"
                )
    for label, what, body in AWKWARD_BODIES:
        path = {"thread_id": THREAD_ID} if "{thread_id}" in label else {}
        yield pytest.param(label, path, None, body, id=f"{label} {what}")
    for label, what, query in AWKWARD_QUERIES:
        yield pytest.param(label, {}, query, None, id=f"{label} {what}")


@pytest.fixture(scope="class")
def fixed_rows(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> Iterator[str]:
    """The fixed memory and an API key granted agent-1 (its Authorization header), written
    once for the tests of a class, as Django's TestCase writes ``setUpTestData``: in a
    transaction left open while they run, each test in a savepoint of its own that the
    ``db`` fixture rolls back, and rolled back itself after the last of them."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
    try:
        with django_db_blocker.unblock():
            write_fixed_memory()
            api_key, key = APIKey.objects.create_key(name="schemathesis")
            assert isinstance(api_key, APIKey)
            Grant.objects.create(api_key=api_key, agent_id=GRANTED_AGENT)
        yield f"Api-Key {key}"
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def api_key_headers(fixed_rows: str, db: None) -> dict[str, str]:
    return {"Authorization": fixed_rows}


@pytest.fixture
def fixed_memory(fixed_rows: str, db: None) -> None:
    """The fixed memory, as ``fixed_rows`` wrote it."""


@pytest.fixture
def connection_kept_across_requests() -> Iterator[None]:
    # Django closes the connection when a request starts and finishes (CONN_MAX_AGE is 0),
    # which would end the test's transaction; its test client disconnects the same receiver.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.mark.django_db
class TestAwkwardValues:
    """The in-process requests, on the fixed memory written once for all of them."""

    @pytest.mark.parametrize(
        ("label", "path_parameters", "query", "body"), list(awkward_requests())
    )
    def test_awkward_values_are_answered_as_the_schema_documents(
        self,
        label: str,
        path_parameters: dict[str, str],
        query: dict[str, str] | None,
        body: dict[str, Any] | None,
        api_key_headers: dict[str, str],
        fixed_memory: None,
        connection_kept_across_requests: None,
    ) -> None:
        # given
        case = make_case(label, path_parameters, query, body)
        # when / then
        call_and_validate_in_savepoint(case, api_key_headers)

    @pytest.mark.parametrize(("label", "path_names"), operations_with_path_ids())
    def test_the_request_behind_the_awkward_ids_succeeds_with_valid_ids(
        self,
        label: str,
        path_names: list[str],
        api_key_headers: dict[str, str],
        fixed_memory: None,
        connection_kept_across_requests: None,
        settings: SettingsWrapper,
    ) -> None:
        # given (a model, so that an extraction can be asked for)
        settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "scripted"}}
        path_parameters = {name: VALID_PATH_IDS[name] for name in path_names}
        case = make_case(label, path_parameters, None, VALID_BODIES.get(label))
        people_only = label in REVIEWS | EXPORTS | FORGETTING
        headers = {"Authorization": superuser_authorization()} if people_only else api_key_headers
        # when
        response = call_and_validate_in_savepoint(case, headers)
        # then
        assert 200 <= response.status_code < 300, response.text
