"""The tenancy matrix: no read or write crosses from one principal to another.

Two principals with different grants each own a conversation. For every URL pattern of
``cogitator_memory.api.urls`` and every method its view allows, ``MATRIX`` lists attempts
of the actor on the victim's objects and the refusal each must get. Every attempt is then
checked four ways:

- the status and error code (404 for the victim's objects, also when the actor's own
  thread names the victim's entry, 403 for writing under the victim's grant, 409 where
  the API documents a taken id);
- not one Thread or Entry row changed;
- the answer equals the answer about an id that does not exist, apart from the id, so
  the ids of others cannot be probed;
- no text or id of the victim appears in the answer unless the request named it.

``test_the_matrix_covers_every_endpoint_and_method`` walks the URL patterns and fails for
a pattern or method without a row, so a new endpoint cannot be left out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import transaction
from django.test import override_settings
from django.urls import URLPattern, URLResolver, resolve
from pytest_django import DjangoDbBlocker
from rest_framework.test import APIClient
from rest_framework_api_key.models import APIKey

from cogitator_memory.api import urls as api_urls
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import Author, MemoryFileHead
from cogitator_memory.files.paths import PLAYBOOK_DRAFT_PATH
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.models import GraphEdge, GraphNode
from cogitator_memory.graph.services import MemoryGraph
from cogitator_memory.items.models import ExtractionRun, MemoryItem, RunStatus
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.llm.registry import get_summarizer
from cogitator_memory.llm.scripted import ScriptedAnswer, ScriptedModel
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.upkeep.models import PlaybookDraft
from cogitator_memory.upkeep.observation_files import (
    Statement,
    observation_file,
    observation_path,
)
from cogitator_memory.upkeep.passes import request_upkeep
from cogitator_memory.upkeep.playbook_text import MadeFrom, Playbook, PlaybookRule, playbook_file
from cogitator_memory.upkeep.records import UpkeepRun, UpkeepWork
from tests.api.conftest import (
    API,
    PASSWORD,
    Conversation,
    Grants,
    Principal,
    add_grants,
    api_key_client,
    snapshot_rows,
    token_client,
    write_conversation,
)
from tests.search.support import CONCEPT_PROVIDER, embeddings_settings, write_text

pytestmark = pytest.mark.django_db

VICTIM_TAG = " [victim-secret]"
# Placeholders holding ids; an answer may echo these back, the same way for a missing id.
ID_PLACEHOLDERS = (
    "victim_thread",
    "victim_entry",
    "victim_branch_entry",
    "victim_root",
    "victim_item",
    "victim_run",
    "victim_compaction_run",
    "victim_file",
    "victim_session",
    "victim_forget_run",
    "victim_upkeep_run",
    "victim_playbook_draft",
    "victim_node",
    "victim_edge",
)
MISSING = {
    "victim_thread": "no-such-thread",
    "victim_entry": "no-such-entry",
    "victim_branch_entry": "no-such-branch-entry",
    "victim_root": "no-such-root",
    "victim_item": "item_00000000000000000000000000000000",
    "victim_run": "extr_00000000000000000000000000000000",
    "victim_compaction_run": "cmpr_00000000000000000000000000000000",
    "victim_subject": "ent_00000000000000000000000000000000",
    "victim_agent": "agent-nobody",
    "victim_user": "nobody",
    "victim_topic": "no-topic",
    "victim_file": "/memories/no-such-file.md",
    "victim_session": "sess_00000000000000000000000000000000",
    "victim_forget_run": "fgt_00000000000000000000000000000000",
    "victim_upkeep_run": "upk_00000000000000000000000000000000",
    "victim_playbook_draft": "7130000000000002",
    "victim_node": "gnode_00000000000000000000000000000000",
    "victim_edge": "gedge_00000000000000000000000000000000",
}
# The head ids of the playbook drafts: big integers no answer holds by chance, so that
# the victim's can be masked and looked for.
OWN_DRAFT_ID = 7130000000000000
VICTIM_DRAFT_ID = 7130000000000001
OWN_FILE = "/memories/own.md"
VICTIM_FILE = "/memories/victim-secret.md"
VICTIM_FILE_TEXT = f"The parcel code is 4711.{VICTIM_TAG}"


# --- the two sides ---------------------------------------------------------------------


@dataclass
class World:
    """The actor, the victim, and what each owns."""

    actor: Principal
    victim: Principal
    own: Conversation
    theirs: Conversation
    victim_agent: str
    victim_user: str
    own_item: MemoryItem
    victim_item: MemoryItem
    own_run: ExtractionRun
    victim_run: ExtractionRun
    victim_compaction_run: CompactionRun | None = None
    own_session: ChannelSession | None = None
    victim_session: ChannelSession | None = None
    victim_forget_run: ForgetRun | None = None
    victim_upkeep_run: UpkeepRun | None = None
    victim_playbook_draft: PlaybookDraft | None = None
    own_node: GraphNode | None = None
    own_edge: GraphEdge | None = None
    victim_node: GraphNode | None = None
    victim_edge: GraphEdge | None = None
    scenario: str = ""
    # Every row of snapshot_rows() as built, before any test ran.
    rows: dict[str, Any] = field(default_factory=dict)

    def names(self) -> dict[str, str]:
        """The values of the placeholders of an attempt, for the victim's objects."""
        return {
            "own_thread": self.own.thread_id,
            "own_entry": self.own.reply.pk,
            "own_agent": self.own.thread.agent_id,
            "victim_thread": self.theirs.thread_id,
            "victim_entry": self.theirs.reply.pk,
            "victim_branch_entry": self.theirs.retry.pk,
            "victim_root": self.theirs.root.pk,
            "victim_agent": self.victim_agent,
            "victim_user": self.victim_user,
            "victim_topic": self.theirs.thread.metadata["topic"],
            "own_item": self.own_item.pk,
            "victim_item": self.victim_item.pk,
            "victim_subject": self.victim_item.subject_id,
            "victim_run": self.victim_run.pk,
            "victim_compaction_run": (
                self.victim_compaction_run.pk if self.victim_compaction_run else ""
            ),
            "own_user": str(self.own.thread.user_id),
            "victim_file": VICTIM_FILE,
            "victim_file_sha256": hashlib.sha256(VICTIM_FILE_TEXT.encode()).hexdigest(),
            "victim_session": self.victim_session.pk if self.victim_session else "",
            "victim_forget_run": self.victim_forget_run.pk if self.victim_forget_run else "",
            "victim_upkeep_run": self.victim_upkeep_run.pk if self.victim_upkeep_run else "",
            "victim_playbook_draft": (
                str(self.victim_playbook_draft.pk) if self.victim_playbook_draft else ""
            ),
            "own_node": self.own_node.pk if self.own_node else "",
            "victim_node": self.victim_node.pk if self.victim_node else "",
            "victim_edge": self.victim_edge.pk if self.victim_edge else "",
        }

    def missing_names(self) -> dict[str, str]:
        """The same placeholders, with ids and values no one has."""
        return {**self.names(), **MISSING}

    def secrets(self) -> list[str]:
        """What of the victim's must never come back unless the request named it."""
        return [
            self.theirs.thread_id,
            *self.theirs.entry_ids,
            VICTIM_TAG.strip(),
            self.theirs.thread.metadata["topic"],
            self.victim_item.pk,
            self.victim_item.subject_id,
            self.victim_run.pk,
            *([self.victim_compaction_run.pk] if self.victim_compaction_run else []),
            VICTIM_FILE,
            *([self.victim_session.pk] if self.victim_session else []),
            *([self.victim_forget_run.pk] if self.victim_forget_run else []),
            *([self.victim_upkeep_run.pk] if self.victim_upkeep_run else []),
            *(
                [
                    str(self.victim_playbook_draft.pk),
                    self.victim_playbook_draft.version_id,
                    self.victim_playbook_draft.version.sha256 or "",
                ]
                if self.victim_playbook_draft
                else []
            ),
            *([self.victim_node.pk] if self.victim_node else []),
            *([self.victim_edge.pk] if self.victim_edge else []),
        ]


def user_principal(
    make_user: Callable[..., User], name: str, grants: Any, *, session: bool
) -> Principal:
    user = make_user(name, grants)
    # Every review permission: what stops a review of the other side is the grant alone.
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=[*REVIEW_PERMISSIONS, EXPORT_PERMISSION, FORGET_PERMISSION]
        )
    )
    if session:
        client = APIClient()
        client.force_login(user)
        return Principal(f"user {name} (session)", client, user=user)
    return Principal(f"user {name} (token)", token_client(user), user=user)


def key_principal(
    make_api_key: Callable[..., tuple[APIKey, str]], name: str, grants: Any
) -> Principal:
    api_key, key = make_api_key(name, grants)
    return Principal(f"API key {name}", api_key_client(key), api_key=api_key, key=key)


def index_for_search(conversation: Conversation) -> None:
    """The conversation's messages as embeddings, with its thread's agent, thread and user,
    as the message index stores them: a search that crossed principals would show them."""
    thread = conversation.thread
    for entry in (
        conversation.root,
        conversation.reply,
        conversation.follow_up,
        conversation.retry,
    ):
        write_text(
            entry.pk,
            str(entry.content),
            agent=thread.agent_id,
            thread=thread.pk,
            user=thread.metadata.get("userId"),
            source_type="message",
            index="messages",
        )


REVIEW_PERMISSIONS = [
    "activate_memoryitem",
    "reject_memoryitem",
    "let_go_memoryitem",
    "promote_playbookdraft",
    "discard_playbookdraft",
    "activate_graphnode",
    "reject_graphnode",
    "activate_graphedge",
    "reject_graphedge",
]
EXPORT_PERMISSION = "export_user_memory"
FORGET_PERMISSION = "forget_user_memory"


def remember(conversation: Conversation, tag: str = "") -> tuple[MemoryItem, ExtractionRun]:
    """A suggested item of the conversation's scope quoting its reply, and a finished
    extraction run of its thread."""
    thread = conversation.thread
    item = (
        MemoryItems()
        .write(
            MemoryScope(thread.agent_id, user_id=thread.user_id),
            NewItem(
                kind="fact",
                subject=f"Parcel{tag}",
                attribute="whereabouts",
                value=f"left the depot{tag}",
                trust="model",
                evidence=[NewEvidence(quote="left the depot", entry_id=conversation.reply.pk)],
            ),
        )
        .item
    )
    run = ExtractionRun.objects.create(thread=thread, status=RunStatus.DONE)
    return item, run


def keep_file(conversation: Conversation, path: str, text: str) -> None:
    """A memory file of the conversation's scope (its agent and user)."""
    thread = conversation.thread
    access = FileAccess(scope=MemoryScope(thread.agent_id, user_id=thread.user_id))
    MemoryFiles().put(access, path, text)


def keep_observation(conversation: Conversation, item: MemoryItem) -> None:
    """An observation of the item's subject in the conversation's scope, as memory writes
    it (the API only reads them)."""
    thread = conversation.thread
    access = FileAccess(
        scope=MemoryScope(thread.agent_id, user_id=thread.user_id), author=Author.MEMORY
    )
    statement = Statement(f"Seen about {item.subject.name}.", (item.pk,))
    text = observation_file(
        entity_id=item.subject_id,
        name=item.subject.name,
        aliases=[],
        statements=[statement],
        based_on="fingerprint",
    )
    MemoryFiles().put(access, observation_path(item.subject_id, item.subject.name), text)


def keep_playbook_draft(conversation: Conversation, rule: str, draft_id: int) -> PlaybookDraft:
    """A playbook draft of the conversation's scope as memory writes it in shadow mode,
    under the head id ``draft_id``."""
    thread = conversation.thread
    scope = MemoryScope(thread.agent_id, user_id=thread.user_id)
    text = playbook_file(Playbook(rules=(PlaybookRule(rule),), made_from=MadeFrom(None, None)))
    MemoryFiles().put(FileAccess(scope=scope, author=Author.MEMORY), PLAYBOOK_DRAFT_PATH, text)
    head = PlaybookDraft.objects.get(agent_id=thread.agent_id, user_id=thread.user_id)
    MemoryFileHead.objects.filter(pk=head.pk).update(id=draft_id)
    return PlaybookDraft.objects.select_related("version").get(pk=draft_id)


def keep_graph(conversation: Conversation, tag: str = "") -> tuple[GraphNode, GraphEdge]:
    """Two suggested nodes of the conversation's scope (what a model said), joined by a
    suggested edge that quotes its reply; the first node and the edge."""
    thread = conversation.thread
    scope = MemoryScope(thread.agent_id, user_id=thread.user_id)
    graph = MemoryGraph()
    parcel = graph.add_node(scope, name=f"Parcel{tag}", type="thing")
    depot = graph.add_node(scope, name=f"Depot{tag}", type="place")
    quote = NewEvidence(quote="left the depot", entry_id=conversation.reply.pk)
    edge = graph.add_edge(scope, source=parcel, target=depot, relation="left", evidence=[quote])
    return parcel, edge


def channel_session(conversation: Conversation, channel_id: str) -> ChannelSession:
    """A channel session of the conversation's thread (its agent and user)."""
    thread = conversation.thread
    return ChannelSession.objects.create(
        thread=thread,
        agent_id=thread.agent_id,
        user_id=str(thread.user_id),
        channel_type="telegram",
        channel_id=channel_id,
    )


SCENARIOS = ["user-acts-on-api-key", "api-key-acts-on-user", "same-agent-other-user"]


# An embedding service, so that searches run every channel; a model, so that an
# extraction request reaches the thread it names.
MEMORY_SETTINGS = {**embeddings_settings(CONCEPT_PROVIDER), "LLM": {"PROVIDER": "scripted"}}


def new_user(username: str, grants: Grants | None = None) -> User:
    user = User.objects.create_user(username, password=PASSWORD)
    add_grants(grants, user=user)
    return user


def new_api_key(name: str, grants: Grants | None = None) -> tuple[APIKey, str]:
    api_key, key = APIKey.objects.create_key(name=name)
    add_grants(grants, api_key=api_key)
    return api_key, key


@pytest.fixture(scope="module", params=SCENARIOS)
def built_world(
    request: pytest.FixtureRequest, django_db_setup: None, django_db_blocker: DjangoDbBlocker
) -> Iterator[World]:
    """The scenario's world, built once for all the module's tests of the scenario (some
    two hundred), as Django's TestCase builds ``setUpTestData``: in a transaction left
    open while they run, each test in a savepoint of its own that the ``db`` fixture rolls
    back, and rolled back itself after the last of them."""
    with override_settings(COGITATOR_MEMORY=MEMORY_SETTINGS):
        with django_db_blocker.unblock():
            outer = transaction.atomic()
            outer.__enter__()
        try:
            with django_db_blocker.unblock():
                world = build_world(request.param)
                world.rows = snapshot_rows()
            yield world
        finally:
            with django_db_blocker.unblock():
                transaction.set_rollback(True)
                outer.__exit__(None, None, None)


@pytest.fixture
def world(built_world: World, db: None) -> World:
    return built_world


def build_world(scenario: str) -> World:
    if scenario == "same-agent-other-user":
        # One agent, two users: the boundary is metadata.userId alone.
        actor = user_principal(new_user, "desk-u1", {"agent-s": ["u1"]}, session=True)
        victim = key_principal(new_api_key, "desk-u2", {"agent-s": ["u2"]})
        own = write_conversation("agent-s", {"userId": "u1", "topic": "mine"})
        theirs = write_conversation(
            "agent-s", {"userId": "u2", "topic": "theirs-topic"}, tag=VICTIM_TAG
        )
        victim_agent, victim_user = "agent-s", "u2"
    else:
        user = user_principal(new_user, "ana", {"agent-a": None}, session=False)
        key = key_principal(new_api_key, "service-b", {"agent-b": None})
        if scenario == "user-acts-on-api-key":
            actor, victim = user, key
            own_agent, victim_agent, victim_user = "agent-a", "agent-b", "ub"
        else:
            actor, victim = key, user
            own_agent, victim_agent, victim_user = "agent-b", "agent-a", "ua"
        own = write_conversation(own_agent, {"userId": "uo", "topic": "mine"})
        theirs = write_conversation(
            victim_agent, {"userId": victim_user, "topic": "theirs-topic"}, tag=VICTIM_TAG
        )
    index_for_search(own)
    index_for_search(theirs)
    own_item, own_run = remember(own)
    victim_item, victim_run = remember(theirs, VICTIM_TAG)
    victim_compaction_run = CompactionRun.objects.create(
        thread=theirs.thread, status=RunStatus.DONE
    )
    # A model that answers every brief with cards naming the victim's item and turn: a
    # brief keeps only cards of the sources recall gave it, so none of them comes back.
    model = get_summarizer()
    assert isinstance(model, ScriptedModel)
    poisoned = [
        {
            "kind": "knowledge",
            "text": f"{VICTIM_TAG.strip()} {victim_item.pk}",
            "quote": "left the depot.",
            "source": f"turn:{theirs.reply.pk}",
        },
        {
            "kind": "knowledge",
            "text": f"{VICTIM_TAG.strip()} {theirs.thread_id}",
            "quote": victim_item.content or f"{victim_item.value}",
            "source": f"item:{victim_item.pk}",
        },
    ]
    model.add(ScriptedAnswer(json.dumps(poisoned), match='"max_cards"', repeat=True))
    keep_file(own, OWN_FILE, "Mine.")
    keep_file(theirs, VICTIM_FILE, VICTIM_FILE_TEXT)
    keep_observation(own, own_item)
    keep_observation(theirs, victim_item)
    keep_playbook_draft(own, "Greet by name.", OWN_DRAFT_ID)
    victim_draft = keep_playbook_draft(theirs, f"Never tell.{VICTIM_TAG}", VICTIM_DRAFT_ID)
    world = World(
        actor,
        victim,
        own,
        theirs,
        victim_agent,
        victim_user,
        own_item,
        victim_item,
        own_run,
        victim_run,
        victim_compaction_run=victim_compaction_run,
        victim_playbook_draft=victim_draft,
        scenario=scenario,
    )
    world.own_node, world.own_edge = keep_graph(own)
    world.victim_node, world.victim_edge = keep_graph(theirs, VICTIM_TAG)
    world.own_session = channel_session(own, "chat-own")
    world.victim_session = channel_session(theirs, "chat-theirs")
    # A forgetting the victim's side asked for (a person: an API key cannot ask for one).
    asker = victim.user or new_user("victim-person")
    world.victim_forget_run = ForgetRun.objects.create(
        user_id=victim_user, agent_ids=[victim_agent], requested_by=asker, status=RunStatus.DONE
    )
    world.victim_upkeep_run, _ = request_upkeep(
        MemoryScope(victim_agent, user_id=victim_user), work=UpkeepWork.CONSOLIDATION
    )
    return world


def test_each_side_reaches_its_own_conversation(world: World):
    # when
    answers = [
        principal.client.get(f"{API}/entries/{conversation.reply.pk}/").status_code
        for principal, conversation in ((world.actor, world.own), (world.victim, world.theirs))
    ]
    # then: the refusals of the matrix are the boundary, not a setup nobody can use
    assert answers == [200, 200]


# --- the matrix ------------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """One request of the actor and the answer it must get.

    ``path`` (relative to the API root) and ``body`` hold ``{placeholders}`` of
    ``World.names``. ``code`` None: no error body (HEAD, OPTIONS, lists). ``lists_own``:
    a list that must hold the actor's own thread; ``lists_nothing``: an empty list.
    ``compare_with_missing`` False where the API documents a different answer for a free
    id (a taken id is a conflict) or where the attempt names no object (lists).
    ``finds_own``: a search whose hits must hold the actor's own reply.
    ``answers``: the status and code in scenarios (``SCENARIOS``) whose actor is answered
    otherwise, where the actor's kind or grants decide it (an export). ``exports_own``: an
    export that must hold the actor's own thread.
    """

    label: str
    path: str
    status: int
    code: str | None = None
    fields: tuple[str, ...] = ()
    body: dict[str, Any] | None = None
    lists_own: bool = False
    lists_nothing: bool = False
    compare_with_missing: bool = True
    finds_own: bool = False
    answers: Mapping[str, tuple[int, str | None]] = field(default_factory=dict)
    exports_own: bool = False

    def answer_in(self, scenario: str) -> tuple[int, str | None]:
        """The status and error code the attempt must get in ``scenario``."""
        return self.answers.get(scenario, (self.status, self.code))


NEW_ENTRY = {"role": "user", "content": "Intruding."}


def refused(label: str, path: str, code: str, **extra: Any) -> Attempt:
    return Attempt(label, path, 404, code, **extra)


def listing(
    label: str, path: str, *, lists_own: bool = False, lists_nothing: bool = False
) -> Attempt:
    # A list answers the same for anyone's filter values, so it is checked for leaks, not
    # compared with the answer about a missing object.
    return Attempt(
        label,
        path,
        200,
        lists_own=lists_own,
        lists_nothing=lists_nothing,
        compare_with_missing=False,
    )


def search(
    label: str, path: str, *, finds_own: bool = True, lists_nothing: bool = False
) -> Attempt:
    # Like a list: checked for leaks, and that the actor's own messages are found.
    return Attempt(
        label,
        path,
        200,
        finds_own=finds_own,
        lists_nothing=lists_nothing,
        compare_with_missing=False,
    )


def options(path: str) -> list[Attempt]:
    return [Attempt("options on the victim's object", path, 200)]


# Memory files. A scope the grants do not reach reads as one without files; a change there
# is refused (403) before anything is looked up, as a thread put under another's grant.
VICTIM_SCOPE = "agent_id={victim_agent}&user_id={victim_user}"
OWN_SCOPE = "agent_id={own_agent}&user_id={own_user}"
VICTIM_SCOPE_BODY = {"agent_id": "{victim_agent}", "user_id": "{victim_user}"}
OWN_SCOPE_BODY = {"agent_id": "{own_agent}", "user_id": "{own_user}"}
VIEW_VICTIM_FILE = {"command": "view", "path": "{victim_file}"}


def file_reads(route: str, label: str) -> list[Attempt]:
    """The refusals of a read of one file (its content or its history)."""
    code = "memory_file_not_found"
    return [
        refused(
            f"{label} in the victim's scope", f"{route}?{VICTIM_SCOPE}&path={{victim_file}}", code
        ),
        refused(
            f"{label} in the victim's agent, no user",
            f"{route}?agent_id={{victim_agent}}&path={{victim_file}}",
            code,
        ),
        refused(
            f"{label} at the victim's path in the actor's scope",
            f"{route}?{OWN_SCOPE}&path={{victim_file}}",
            code,
        ),
        refused(
            f"{label} in the actor's scope on the victim's branch",
            f"{route}?{OWN_SCOPE}&path={{victim_file}}&place={{victim_entry}}",
            "entry_not_found",
        ),
    ]


def forbidden_write(label: str, path: str, body: dict[str, Any]) -> Attempt:
    # The refusal names the agent or user asked for; a missing one would be named instead.
    return Attempt(label, path, 403, "permission_denied", body=body, compare_with_missing=False)


# Observations: read only, of exactly one scope; one the grants do not reach lists none.
OBSERVATION_ROWS: dict[tuple[str, str], list[Attempt]] = {
    ("observations/", "GET"): [
        listing("the actor's own scope", f"observations/?{OWN_SCOPE}", lists_own=True),
        listing("the victim's scope", f"observations/?{VICTIM_SCOPE}", lists_nothing=True),
        listing(
            "the victim's agent, no user",
            "observations/?agent_id={victim_agent}",
            lists_nothing=True,
        ),
        listing(
            "the victim's scope and thread",
            f"observations/?{VICTIM_SCOPE}&thread_id={{victim_thread}}",
            lists_nothing=True,
        ),
    ],
    ("observations/", "HEAD"): [
        Attempt("head of the victim's observations", f"observations/?{VICTIM_SCOPE}", 200)
    ],
    ("observations/", "OPTIONS"): [Attempt("options of the observations", "observations/", 200)],
}


# The playbook: read of exactly one scope, one the grants do not reach reads as one with
# neither playbook nor draft; a decision on a draft out of the grants is 404 before the
# principal's kind or permissions are looked at, so an API key is answered alike.
PLAYBOOK_DRAFT = "playbook/drafts/{victim_playbook_draft}"
PLAYBOOK_ROWS: dict[tuple[str, str], list[Attempt]] = {
    ("playbook/", "GET"): [
        listing("the actor's own scope", f"playbook/?{OWN_SCOPE}", lists_own=True),
        listing("the victim's scope", f"playbook/?{VICTIM_SCOPE}", lists_nothing=True),
        listing(
            "the victim's agent, no user", "playbook/?agent_id={victim_agent}", lists_nothing=True
        ),
        listing(
            "the victim's scope and thread",
            f"playbook/?{VICTIM_SCOPE}&thread_id={{victim_thread}}",
            lists_nothing=True,
        ),
    ],
    ("playbook/", "HEAD"): [
        Attempt("head of the victim's playbook", f"playbook/?{VICTIM_SCOPE}", 200)
    ],
    ("playbook/", "OPTIONS"): [Attempt("options of the playbook", "playbook/", 200)],
    **{
        (f"playbook/drafts/<str:draft_id>/{decision}/", "POST"): [
            refused(
                f"{decision} the victim's playbook draft",
                f"{PLAYBOOK_DRAFT}/{decision}/",
                "playbook_draft_not_found",
            )
        ]
        for decision in ("promote", "discard")
    },
    **{
        (f"playbook/drafts/<str:draft_id>/{decision}/", "OPTIONS"): options(
            f"{PLAYBOOK_DRAFT}/{decision}/"
        )
        for decision in ("promote", "discard")
    },
}


# The knowledge graph: a node or an edge out of the grants answers 404 as a missing one; a
# node named in a body or a query that the actor cannot see is bad input on that field,
# the same answer as for a node that does not exist.
VICTIM_NODE = "graph/nodes/{victim_node}"
VICTIM_EDGE = "graph/edges/{victim_edge}"


def graph_row_rows(kind: str, route: str, path: str, code: str) -> dict[tuple[str, str], Any]:
    """The rows of one node's or edge's routes (``route``: its pattern, ``path``: the
    victim's)."""
    return {
        (f"{route}/", "GET"): [refused(f"read the victim's {kind}", f"{path}/", code)],
        (f"{route}/", "HEAD"): [Attempt(f"head of the victim's {kind}", f"{path}/", 404)],
        (f"{route}/", "OPTIONS"): options(f"{path}/"),
        (f"{route}/", "PATCH"): [
            refused(f"rename the victim's {kind}", f"{path}/", code, body={"properties": {}}),
        ],
        (f"{route}/", "DELETE"): [refused(f"delete the victim's {kind}", f"{path}/", code)],
        (f"{route}/activate/", "POST"): [
            refused(f"activate the victim's {kind}", f"{path}/activate/", code)
        ],
        (f"{route}/activate/", "OPTIONS"): options(f"{path}/activate/"),
        (f"{route}/reject/", "POST"): [
            refused(f"reject the victim's {kind}", f"{path}/reject/", code, body={"reason": "no"})
        ],
        (f"{route}/reject/", "OPTIONS"): options(f"{path}/reject/"),
    }


def unseen_node(label: str, path: str, field: str, **extra: Any) -> Attempt:
    return Attempt(label, path, 400, "invalid_graph_input", (field,), **extra)


GRAPH_ROWS: dict[tuple[str, str], list[Attempt]] = {
    ("graph/nodes/", "GET"): [
        listing("no filters", "graph/nodes/", lists_own=True),
        listing("every status", "graph/nodes/?status=suggested,active,rejected", lists_own=True),
        listing(
            "the victim's agent and user",
            "graph/nodes/?agent_id={victim_agent}&user_id={victim_user}",
            lists_nothing=True,
        ),
        listing("the victim's words", "graph/nodes/?search=victim-secret", lists_nothing=True),
    ],
    ("graph/nodes/", "HEAD"): [Attempt("head of the node list", "graph/nodes/", 200)],
    ("graph/nodes/", "OPTIONS"): [Attempt("options of the node list", "graph/nodes/", 200)],
    ("graph/nodes/", "POST"): [
        forbidden_write(
            "a node in the victim's scope", "graph/nodes/", {**VICTIM_SCOPE_BODY, "name": "Mine"}
        ),
    ],
    ("graph/nodes/merge/", "POST"): [
        unseen_node(
            "merge the victim's node into the actor's",
            "graph/nodes/merge/",
            "merge",
            body={"keep": "{own_node}", "merge": ["{victim_node}"]},
        ),
        unseen_node(
            "merge the actor's node into the victim's",
            "graph/nodes/merge/",
            "keep",
            body={"keep": "{victim_node}", "merge": ["{own_node}"]},
        ),
    ],
    ("graph/nodes/merge/", "OPTIONS"): options("graph/nodes/merge/"),
    **graph_row_rows("node", "graph/nodes/<str:node_id>", VICTIM_NODE, "graph_node_not_found"),
    ("graph/nodes/<str:node_id>/neighbourhood/", "GET"): [
        refused(
            "the victim's node's neighbourhood",
            f"{VICTIM_NODE}/neighbourhood/?depth=6&status=suggested,active,rejected",
            "graph_node_not_found",
        ),
    ],
    ("graph/nodes/<str:node_id>/neighbourhood/", "HEAD"): [
        Attempt("head of the victim's neighbourhood", f"{VICTIM_NODE}/neighbourhood/", 404)
    ],
    ("graph/nodes/<str:node_id>/neighbourhood/", "OPTIONS"): options(
        f"{VICTIM_NODE}/neighbourhood/"
    ),
    ("graph/edges/", "GET"): [
        listing("no filters", "graph/edges/", lists_own=True),
        listing(
            "edges of the victim's node",
            "graph/edges/?node={victim_node}&status=suggested,active,rejected",
            lists_nothing=True,
        ),
    ],
    ("graph/edges/", "HEAD"): [Attempt("head of the edge list", "graph/edges/", 200)],
    ("graph/edges/", "OPTIONS"): [Attempt("options of the edge list", "graph/edges/", 200)],
    ("graph/edges/", "POST"): [
        unseen_node(
            "an edge from the actor's node to the victim's",
            "graph/edges/",
            "target",
            body={"source": "{own_node}", "target": "{victim_node}", "relation": "knows"},
        ),
        unseen_node(
            "an edge from the victim's node",
            "graph/edges/",
            "source",
            body={"source": "{victim_node}", "target": "{own_node}", "relation": "knows"},
        ),
    ],
    **graph_row_rows("edge", "graph/edges/<str:edge_id>", VICTIM_EDGE, "graph_edge_not_found"),
    ("graph/path/", "GET"): [
        unseen_node(
            "a path to the victim's node",
            "graph/path/?source={own_node}&target={victim_node}",
            "target",
        ),
        unseen_node(
            "a path from the victim's node",
            "graph/path/?source={victim_node}&target={own_node}&status=suggested",
            "source",
        ),
    ],
    ("graph/path/", "HEAD"): [
        Attempt(
            "head of a path to the victim's node",
            "graph/path/?source={own_node}&target={victim_node}",
            400,
        )
    ],
    ("graph/path/", "OPTIONS"): [Attempt("options of the path", "graph/path/", 200)],
}


FILE_ROWS: dict[tuple[str, str], list[Attempt]] = {
    ("files/", "GET"): [
        listing("the actor's own scope", f"files/?{OWN_SCOPE}", lists_own=True),
        listing("the victim's scope", f"files/?{VICTIM_SCOPE}", lists_nothing=True),
        listing(
            "the victim's agent, no user", "files/?agent_id={victim_agent}", lists_nothing=True
        ),
        listing(
            "the victim's scope in the victim's thread",
            f"files/?{VICTIM_SCOPE}&thread_id={{victim_thread}}",
            lists_nothing=True,
        ),
        refused(
            "the actor's scope on the victim's branch",
            f"files/?{OWN_SCOPE}&place={{victim_entry}}",
            "entry_not_found",
        ),
        refused(
            "the actor's scope in the victim's thread on its branch",
            f"files/?{OWN_SCOPE}&thread_id={{victim_thread}}&place={{victim_entry}}",
            "entry_not_found",
        ),
    ],
    ("files/", "HEAD"): [Attempt("head of the victim's files", f"files/?{VICTIM_SCOPE}", 200)],
    ("files/", "OPTIONS"): [Attempt("options of the file list", "files/", 200)],
    ("files/content/", "GET"): file_reads("files/content/", "read the victim's file"),
    ("files/content/", "HEAD"): [
        Attempt(
            "head of the victim's file",
            f"files/content/?{VICTIM_SCOPE}&path={{victim_file}}",
            404,
        ),
    ],
    ("files/content/", "OPTIONS"): options("files/content/"),
    ("files/content/", "PUT"): [
        forbidden_write(
            "write over the victim's file",
            "files/content/",
            {**VICTIM_SCOPE_BODY, "path": "{victim_file}", "text": "Mine now."},
        ),
        forbidden_write(
            "write the victim's file on its sha256",
            "files/content/",
            {
                **VICTIM_SCOPE_BODY,
                "path": "{victim_file}",
                "text": "Mine now.",
                "expected_sha256": "{victim_file_sha256}",
            },
        ),
        Attempt(
            "write at the victim's path in the actor's scope, on the victim's sha256",
            "files/content/",
            409,
            "memory_file_conflict",
            body={
                **OWN_SCOPE_BODY,
                "path": "{victim_file}",
                "text": "Mine now.",
                "expected_sha256": "{victim_file_sha256}",
            },
        ),
        refused(
            "write in the actor's scope after the victim's entry",
            "files/content/",
            "entry_not_found",
            body={
                **OWN_SCOPE_BODY,
                "path": "/memories/x.md",
                "text": "x",
                "place": "{victim_entry}",
            },
        ),
    ],
    ("files/history/", "GET"): file_reads("files/history/", "read the victim's file's history"),
    ("files/history/", "HEAD"): [
        Attempt(
            "head of the victim's file's history",
            f"files/history/?{VICTIM_SCOPE}&path={{victim_file}}",
            404,
        ),
    ],
    ("files/history/", "OPTIONS"): options("files/history/"),
    ("files/command/", "POST"): [
        forbidden_write(
            "view the victim's file in the victim's scope",
            "files/command/",
            {**VICTIM_SCOPE_BODY, "input": VIEW_VICTIM_FILE},
        ),
        forbidden_write(
            "view the victim's directory from the victim's agent, no user",
            "files/command/",
            {"agent_id": "{victim_agent}", "input": {"command": "view", "path": "/memories"}},
        ),
        forbidden_write(
            "change the victim's file in the victim's scope",
            "files/command/",
            {
                **VICTIM_SCOPE_BODY,
                "input": {
                    "command": "str_replace",
                    "path": "{victim_file}",
                    "old_str": "4711",
                    "new_str": "0000",
                },
            },
        ),
        # In the actor's own scope the victim's path is a path like any other: missing.
        Attempt(
            "view the victim's path in the actor's scope",
            "files/command/",
            200,
            body={**OWN_SCOPE_BODY, "input": VIEW_VICTIM_FILE},
        ),
        Attempt(
            "delete the victim's path in the actor's scope",
            "files/command/",
            200,
            body={**OWN_SCOPE_BODY, "input": {"command": "delete", "path": "{victim_file}"}},
        ),
        refused(
            "view in the actor's scope on the victim's branch",
            "files/command/",
            "entry_not_found",
            body={**OWN_SCOPE_BODY, "place": "{victim_entry}", "input": VIEW_VICTIM_FILE},
        ),
    ],
    ("files/command/", "OPTIONS"): options("files/command/"),
}


# Channel sessions: within the grants of the session's agent and user, as its thread.
VICTIM_KEY = {
    "user_id": "{victim_user}",
    "channel_type": "telegram",
    "channel_id": "chat-theirs",
    "agent_id": "{victim_agent}",
}
SESSION_ROWS: dict[tuple[str, str], list[Attempt]] = {
    ("sessions/", "GET"): [
        listing("no filters", "sessions/", lists_own=True),
        listing("largest page", "sessions/?limit=500&status=active", lists_own=True),
        listing("filtered by the victim's agent", "sessions/?agent_id={victim_agent}"),
        listing(
            "filtered by the victim's user", "sessions/?user_id={victim_user}", lists_nothing=True
        ),
        listing(
            "filtered by the victim's agent and user",
            "sessions/?agent_id={victim_agent}&user_id={victim_user}",
            lists_nothing=True,
        ),
    ],
    ("sessions/", "HEAD"): [Attempt("head of the session list", "sessions/", 200)],
    ("sessions/", "OPTIONS"): [Attempt("options of the session list", "sessions/", 200)],
    ("sessions/", "POST"): [
        forbidden_write("get the victim's session by its key", "sessions/", VICTIM_KEY),
        forbidden_write(
            "open a session of the victim's user and agent on another channel",
            "sessions/",
            {**VICTIM_KEY, "channel_id": "chat-new"},
        ),
    ],
    ("sessions/<str:session_id>/", "GET"): [
        refused("read the victim's session", "sessions/{victim_session}/", "session_not_found"),
    ],
    ("sessions/<str:session_id>/", "HEAD"): [
        Attempt("head of the victim's session", "sessions/{victim_session}/", 404),
    ],
    ("sessions/<str:session_id>/", "OPTIONS"): options("sessions/{victim_session}/"),
}


# The export of a user's memory: for people holding the permission (an API key is refused
# whatever it asks), of the users their grants reach. A grant of every user of an agent
# reaches any user id in that agent, so the actor may export the victim's user id there:
# the document must then hold nothing of the victim's.
EXPORT = "users/{victim_user}/export/"
KEY_REFUSED = {"api-key-acts-on-user": (403, "export_not_permitted")}
EXPORT_ROWS: dict[tuple[str, str], list[Attempt]] = {
    ("users/<path:user_id>/export/", "GET"): [
        Attempt(
            "export the victim's user under the victim's agent",
            EXPORT + "?agent_id={victim_agent}",
            403,
            "permission_denied",
            answers=KEY_REFUSED,
            compare_with_missing=False,
        ),
        Attempt(
            "export the victim's user under the actor's agent and the victim's",
            EXPORT + "?agent_id={own_agent}&agent_id={victim_agent}",
            403,
            "permission_denied",
            answers=KEY_REFUSED,
            compare_with_missing=False,
        ),
        Attempt(
            "export the victim's user in every agent the actor's grants reach",
            EXPORT,
            200,
            answers={
                **KEY_REFUSED,
                # The actor's grant names its own user only.
                "same-agent-other-user": (403, "permission_denied"),
            },
            compare_with_missing=False,
        ),
        Attempt(
            "export the actor's own user",
            "users/{own_user}/export/",
            200,
            answers=KEY_REFUSED,
            exports_own=True,
            compare_with_missing=False,
        ),
    ],
    ("users/<path:user_id>/export/", "HEAD"): [
        Attempt("head of the victim's export", EXPORT + "?agent_id={victim_agent}", 403),
    ],
    ("users/<path:user_id>/export/", "OPTIONS"): options(EXPORT),
}


# Forgetting a user: like the export, for people holding the permission (an API key is
# refused whatever it asks), in agents their grants reach for the user. A grant of every
# user of an agent reaches any user id there: forgetting the victim's user id there starts
# a run that finds nothing of the victim's (the run is not carried out in this test, whose
# transaction never commits; tests/api/test_forgetting.py runs them). A forget run is seen
# by the person who asked for it.
FORGET = "users/{victim_user}/forget/"
KEY_REFUSED_FORGET = {"api-key-acts-on-user": (403, "forget_not_permitted")}
FORGET_ROWS: dict[tuple[str, str], list[Attempt]] = {
    ("users/<path:user_id>/forget/", "POST"): [
        Attempt(
            "forget the victim's user under the victim's agent",
            FORGET,
            403,
            "permission_denied",
            body={"confirm": "{victim_user}", "agent_ids": ["{victim_agent}"]},
            answers=KEY_REFUSED_FORGET,
            compare_with_missing=False,
        ),
        Attempt(
            "forget the victim's user under the actor's agent and the victim's",
            FORGET,
            403,
            "permission_denied",
            body={"confirm": "{victim_user}", "agent_ids": ["{own_agent}", "{victim_agent}"]},
            answers=KEY_REFUSED_FORGET,
            compare_with_missing=False,
        ),
        Attempt(
            "forget the victim's user in every agent the actor's grants reach",
            FORGET,
            202,
            body={"confirm": "{victim_user}"},
            answers={
                **KEY_REFUSED_FORGET,
                # The actor's grant names its own user only.
                "same-agent-other-user": (403, "permission_denied"),
            },
            compare_with_missing=False,
        ),
        Attempt(
            "forget the actor's own user",
            "users/{own_user}/forget/",
            202,
            body={"confirm": "{own_user}"},
            answers=KEY_REFUSED_FORGET,
            compare_with_missing=False,
        ),
    ],
    ("users/<path:user_id>/forget/", "OPTIONS"): options(FORGET),
    ("forgets/<str:run_id>/", "GET"): [
        Attempt(
            "read the victim's forget run",
            "forgets/{victim_forget_run}/",
            404,
            "forget_run_not_found",
            answers=KEY_REFUSED_FORGET,
        ),
    ],
    ("forgets/<str:run_id>/", "HEAD"): [
        Attempt(
            "head of the victim's forget run",
            "forgets/{victim_forget_run}/",
            404,
            answers={"api-key-acts-on-user": (403, None)},
        ),
    ],
    ("forgets/<str:run_id>/", "OPTIONS"): options("forgets/{victim_forget_run}/"),
}


# Upkeep of a scope: asking for it in a scope the grants do not reach is refused (403)
# before anything is written; a run of such a scope reads as one that does not exist.
UPKEEP_ROWS: dict[tuple[str, str], list[Attempt]] = {
    **{
        (route, "POST"): [
            forbidden_write(f"{label} of the victim's scope", route, VICTIM_SCOPE_BODY),
            forbidden_write(
                f"{label} of the victim's agent, no user", route, {"agent_id": "{victim_agent}"}
            ),
        ]
        for route, label in (
            ("observations/refresh/", "refresh the observations"),
            ("consolidation/", "consolidate"),
        )
    },
    ("observations/refresh/", "OPTIONS"): options("observations/refresh/"),
    ("consolidation/", "OPTIONS"): options("consolidation/"),
    ("upkeep-runs/<str:run_id>/", "GET"): [
        refused(
            "read the victim's upkeep run",
            "upkeep-runs/{victim_upkeep_run}/",
            "upkeep_run_not_found",
        ),
    ],
    ("upkeep-runs/<str:run_id>/", "HEAD"): [
        Attempt("head of the victim's upkeep run", "upkeep-runs/{victim_upkeep_run}/", 404),
    ],
    ("upkeep-runs/<str:run_id>/", "OPTIONS"): options("upkeep-runs/{victim_upkeep_run}/"),
}


MATRIX: dict[tuple[str, str], list[Attempt]] = {
    ("threads/", "GET"): [
        listing("no filters", "threads/", lists_own=True),
        listing("largest page", "threads/?limit=500", lists_own=True),
        listing("since long ago", "threads/?updated_after=2000-01-01T00:00:00Z", lists_own=True),
        listing("filtered by the victim's agent", "threads/?agent_id={victim_agent}"),
        listing("filtered by the victim's user", 'threads/?metadata={{"userId": "{victim_user}"}}'),
        listing(
            "filtered by the victim's topic", 'threads/?metadata={{"topic": "{victim_topic}"}}'
        ),
        listing(
            "filtered by agent and user, nothing else",
            'threads/?agent_id={victim_agent}&metadata={{"userId": "{victim_user}"}}',
            lists_nothing=True,
        ),
    ],
    ("threads/", "HEAD"): [Attempt("head of the list", "threads/", 200)],
    ("threads/", "OPTIONS"): [Attempt("options of the list", "threads/", 200)],
    ("threads/", "POST"): [
        Attempt(
            "create under the victim's grant",
            "threads/",
            403,
            "permission_denied",
            body={"agent_id": "{victim_agent}", "metadata": {"userId": "{victim_user}"}},
            compare_with_missing=False,
        ),
        Attempt(
            "upsert the victim's thread by id, as the actor's agent",
            "threads/",
            409,
            "thread_id_unavailable",
            body={"id": "{victim_thread}", "agent_id": "{own_agent}", "metadata": {"x": 1}},
            compare_with_missing=False,
        ),
        # The grant is checked before the id is looked up: the same refusal whether or not
        # the id is taken (tests/test_reported_defects.py compares the two; the missing-row
        # comparison here would name another agent in the message).
        Attempt(
            "upsert the victim's thread by id, as the victim's agent",
            "threads/",
            403,
            "permission_denied",
            body={
                "id": "{victim_thread}",
                "agent_id": "{victim_agent}",
                "metadata": {"userId": "{victim_user}"},
            },
            compare_with_missing=False,
        ),
    ],
    ("threads/<str:thread_id>/", "GET"): [
        refused("read the victim's thread", "threads/{victim_thread}/", "thread_not_found"),
    ],
    ("threads/<str:thread_id>/", "HEAD"): [
        Attempt("head of the victim's thread", "threads/{victim_thread}/", 404),
    ],
    ("threads/<str:thread_id>/", "OPTIONS"): options("threads/{victim_thread}/"),
    ("threads/<str:thread_id>/", "PATCH"): [
        refused(
            "merge into the victim's metadata",
            "threads/{victim_thread}/",
            "thread_not_found",
            body={"metadata": {"userId": "{victim_user}", "owned": True}},
        ),
        refused(
            "replace the victim's metadata",
            "threads/{victim_thread}/",
            "thread_not_found",
            body={"metadata": {}, "replace": True},
        ),
    ],
    ("threads/<str:thread_id>/", "DELETE"): [
        refused("delete the victim's thread", "threads/{victim_thread}/", "thread_not_found"),
    ],
    ("threads/<str:thread_id>/entries/", "GET"): [
        refused(
            "list the victim's entries",
            "threads/{victim_thread}/entries/?types=all",
            "thread_not_found",
        ),
        Attempt(
            "list the actor's own entries of every type",
            "threads/{own_thread}/entries/?types=all&include_tool_calls=true&limit=500",
            200,
            compare_with_missing=False,
        ),
    ],
    ("threads/<str:thread_id>/entries/", "HEAD"): [
        Attempt("head of the victim's entries", "threads/{victim_thread}/entries/", 404),
    ],
    ("threads/<str:thread_id>/entries/", "OPTIONS"): options("threads/{victim_thread}/entries/"),
    ("threads/<str:thread_id>/entries/", "POST"): [
        refused(
            "add to the victim's thread",
            "threads/{victim_thread}/entries/",
            "thread_not_found",
            body=NEW_ENTRY,
        ),
        refused(
            "add to the victim's thread under the victim's entry",
            "threads/{victim_thread}/entries/",
            "thread_not_found",
            body={**NEW_ENTRY, "parent_id": "{victim_entry}"},
        ),
        Attempt(
            "add to the actor's thread under the victim's entry",
            "threads/{own_thread}/entries/",
            404,
            "entry_not_in_thread",
            ("parent_id",),
            body={**NEW_ENTRY, "parent_id": "{victim_entry}"},
        ),
    ],
    ("threads/<str:thread_id>/path/", "GET"): [
        refused(
            "read the victim's branch",
            "threads/{victim_thread}/path/?types=all",
            "thread_not_found",
        ),
        refused(
            "read the victim's branch from the victim's leaf",
            "threads/{victim_thread}/path/?leaf_id={victim_entry}",
            "thread_not_found",
        ),
        Attempt(
            "read the actor's thread up to the victim's entry",
            "threads/{own_thread}/path/?leaf_id={victim_entry}",
            404,
            "entry_not_in_thread",
            ("leaf_id",),
        ),
        Attempt(
            "read the actor's thread before the victim's entry",
            "threads/{own_thread}/path/?before={victim_entry}",
            404,
            "entry_not_in_thread",
            ("before",),
        ),
        Attempt(
            "read the actor's own branch",
            "threads/{own_thread}/path/?types=all&include_tool_calls=true",
            200,
            compare_with_missing=False,
        ),
    ],
    ("threads/<str:thread_id>/path/", "HEAD"): [
        Attempt("head of the victim's branch", "threads/{victim_thread}/path/", 404),
    ],
    ("threads/<str:thread_id>/path/", "OPTIONS"): options("threads/{victim_thread}/path/"),
    ("threads/<str:thread_id>/rewind/", "POST"): [
        refused(
            "rewind the victim's thread",
            "threads/{victim_thread}/rewind/",
            "thread_not_found",
            body={"to_entry_id": "{victim_entry}"},
        ),
        Attempt(
            "rewind the actor's thread to the victim's entry",
            "threads/{own_thread}/rewind/",
            404,
            "entry_not_in_thread",
            ("to_entry_id",),
            body={"to_entry_id": "{victim_entry}"},
        ),
    ],
    ("threads/<str:thread_id>/rewind/", "OPTIONS"): options("threads/{victim_thread}/rewind/"),
    ("threads/<str:thread_id>/checkout/", "POST"): [
        refused(
            "check out a branch of the victim's thread",
            "threads/{victim_thread}/checkout/",
            "thread_not_found",
            body={"entry_id": "{victim_branch_entry}"},
        ),
        Attempt(
            "check out the victim's entry in the actor's thread",
            "threads/{own_thread}/checkout/",
            404,
            "entry_not_in_thread",
            ("entry_id",),
            body={"entry_id": "{victim_branch_entry}"},
        ),
    ],
    ("threads/<str:thread_id>/checkout/", "OPTIONS"): options("threads/{victim_thread}/checkout/"),
    ("threads/<str:thread_id>/fork/", "POST"): [
        refused(
            "fork the victim's thread",
            "threads/{victim_thread}/fork/",
            "thread_not_found",
            body={"at_entry_id": "{victim_entry}"},
        ),
        refused(
            "fork the victim's thread into a new id",
            "threads/{victim_thread}/fork/",
            "thread_not_found",
            body={"at_entry_id": "{victim_entry}", "new_thread_id": "stolen-copy"},
        ),
        Attempt(
            "fork the actor's thread at the victim's entry",
            "threads/{own_thread}/fork/",
            404,
            "entry_not_in_thread",
            ("at_entry_id",),
            body={"at_entry_id": "{victim_entry}"},
        ),
        Attempt(
            "fork the actor's thread over the victim's thread",
            "threads/{own_thread}/fork/",
            409,
            "thread_exists",
            body={"at_entry_id": "{own_entry}", "new_thread_id": "{victim_thread}"},
            compare_with_missing=False,
        ),
    ],
    ("threads/<str:thread_id>/fork/", "OPTIONS"): options("threads/{victim_thread}/fork/"),
    ("entries/<str:entry_id>/", "GET"): [
        refused("read the victim's entry", "entries/{victim_entry}/", "entry_not_found"),
        refused("read the victim's event", "entries/{victim_branch_entry}/", "entry_not_found"),
    ],
    ("entries/<str:entry_id>/", "HEAD"): [
        Attempt("head of the victim's entry", "entries/{victim_entry}/", 404),
    ],
    ("entries/<str:entry_id>/", "OPTIONS"): options("entries/{victim_entry}/"),
    ("entries/<str:entry_id>/", "DELETE"): [
        refused("delete the victim's entry", "entries/{victim_entry}/", "entry_not_found"),
        refused(
            "delete the victim's entry alone",
            "entries/{victim_entry}/?keep_replies=true",
            "entry_not_found",
        ),
        refused(
            "delete the victim's first message with its replies",
            "entries/{victim_root}/",
            "entry_not_found",
        ),
    ],
    ("entries/<str:entry_id>/redact/", "POST"): [
        refused(
            "redact the victim's entry",
            "entries/{victim_entry}/redact/",
            "entry_not_found",
            body={"reason": "mine now"},
        ),
        refused(
            "redact the victim's first message with its replies",
            "entries/{victim_root}/redact/",
            "entry_not_found",
            body={"keep_replies": False},
        ),
    ],
    ("entries/<str:entry_id>/redact/", "OPTIONS"): options("entries/{victim_entry}/redact/"),
    ("threads/<str:thread_id>/extract/", "POST"): [
        refused(
            "extract the victim's thread",
            "threads/{victim_thread}/extract/",
            "thread_not_found",
        ),
    ],
    ("threads/<str:thread_id>/extract/", "OPTIONS"): options("threads/{victim_thread}/extract/"),
    ("extractions/<str:run_id>/", "GET"): [
        refused(
            "read the run of the victim's thread",
            "extractions/{victim_run}/",
            "extraction_run_not_found",
        ),
    ],
    ("extractions/<str:run_id>/", "HEAD"): [
        Attempt("head of the victim's run", "extractions/{victim_run}/", 404),
    ],
    ("extractions/<str:run_id>/", "OPTIONS"): options("extractions/{victim_run}/"),
    ("threads/<str:thread_id>/compact/", "POST"): [
        refused(
            "compact the victim's thread",
            "threads/{victim_thread}/compact/",
            "thread_not_found",
        ),
    ],
    ("threads/<str:thread_id>/compact/", "OPTIONS"): options("threads/{victim_thread}/compact/"),
    ("threads/<str:thread_id>/compacted-history/", "GET"): [
        refused(
            "read the victim's compacted history",
            "threads/{victim_thread}/compacted-history/",
            "thread_not_found",
        ),
        refused(
            "read the victim's compacted history from the victim's leaf",
            "threads/{victim_thread}/compacted-history/?leaf_id={victim_entry}",
            "thread_not_found",
        ),
        Attempt(
            "read the actor's compacted history up to the victim's entry",
            "threads/{own_thread}/compacted-history/?leaf_id={victim_entry}",
            404,
            "entry_not_in_thread",
            ("leaf_id",),
        ),
        Attempt(
            "read the actor's own compacted history",
            "threads/{own_thread}/compacted-history/",
            200,
            compare_with_missing=False,
        ),
    ],
    ("threads/<str:thread_id>/compacted-history/", "HEAD"): [
        Attempt(
            "head of the victim's compacted history",
            "threads/{victim_thread}/compacted-history/",
            404,
        ),
    ],
    ("threads/<str:thread_id>/compacted-history/", "OPTIONS"): options(
        "threads/{victim_thread}/compacted-history/"
    ),
    ("compactions/<str:run_id>/", "GET"): [
        refused(
            "read the compaction run of the victim's thread",
            "compactions/{victim_compaction_run}/",
            "compaction_run_not_found",
        ),
    ],
    ("compactions/<str:run_id>/", "HEAD"): [
        Attempt("head of the victim's compaction run", "compactions/{victim_compaction_run}/", 404),
    ],
    ("compactions/<str:run_id>/", "OPTIONS"): options("compactions/{victim_compaction_run}/"),
    ("items/", "GET"): [
        listing("no filters", "items/", lists_own=True),
        listing(
            "every status, the largest page",
            "items/?status=suggested,active,superseded,stale,let_go&limit=500",
            lists_own=True,
        ),
        listing("filtered by the victim's agent", "items/?agent_id={victim_agent}"),
        listing(
            "filtered by the victim's agent and user",
            "items/?agent_id={victim_agent}&user_id={victim_user}",
            lists_nothing=True,
        ),
        listing(
            "filtered by the victim's slot",
            "items/?subject_id={victim_subject}&attribute=whereabouts",
            lists_nothing=True,
        ),
        listing(
            "as memory knew them, suggested ones too",
            "items/?known_at=2999-01-01T00:00:00Z&status=suggested",
            lists_own=True,
        ),
    ],
    ("items/", "HEAD"): [Attempt("head of the item list", "items/", 200)],
    ("items/", "OPTIONS"): [Attempt("options of the item list", "items/", 200)],
    ("items/<str:item_id>/", "GET"): [
        refused("read the victim's item", "items/{victim_item}/", "item_not_found"),
    ],
    ("items/<str:item_id>/", "HEAD"): [
        Attempt("head of the victim's item", "items/{victim_item}/", 404),
    ],
    ("items/<str:item_id>/", "OPTIONS"): options("items/{victim_item}/"),
    ("items/<str:item_id>/history/", "GET"): [
        refused(
            "read the history of the victim's slot",
            "items/{victim_item}/history/",
            "item_not_found",
        ),
    ],
    ("items/<str:item_id>/history/", "HEAD"): [
        Attempt("head of the victim's history", "items/{victim_item}/history/", 404),
    ],
    ("items/<str:item_id>/history/", "OPTIONS"): options("items/{victim_item}/history/"),
    ("items/<str:item_id>/activate/", "POST"): [
        refused("activate the victim's item", "items/{victim_item}/activate/", "item_not_found"),
    ],
    ("items/<str:item_id>/activate/", "OPTIONS"): options("items/{victim_item}/activate/"),
    ("items/<str:item_id>/reject/", "POST"): [
        refused(
            "reject the victim's item",
            "items/{victim_item}/reject/",
            "item_not_found",
            body={"reason": "not theirs"},
        ),
    ],
    ("items/<str:item_id>/reject/", "OPTIONS"): options("items/{victim_item}/reject/"),
    ("items/<str:item_id>/let-go/", "POST"): [
        refused("let the victim's item go", "items/{victim_item}/let-go/", "item_not_found"),
    ],
    ("items/<str:item_id>/let-go/", "OPTIONS"): options("items/{victim_item}/let-go/"),
    ("search/", "GET"): [
        search("keyword search of words both sides wrote", "search/?q=depot&mode=keyword"),
        search("vector search", "search/?q=depot&mode=vector&limit=100"),
        search("hybrid search, the largest page", "search/?q=parcel depot&limit=100"),
        search(
            "filtered by the victim's agent",
            "search/?q=parcel&limit=100&agent_id={victim_agent}",
            finds_own=False,
        ),
        search(
            "filtered by the victim's user",
            "search/?q=parcel&limit=100&user_id={victim_user}",
            finds_own=False,
            lists_nothing=True,
        ),
        search(
            "filtered by the victim's thread",
            "search/?q=parcel&limit=100&thread_id={victim_thread}",
            finds_own=False,
            lists_nothing=True,
        ),
        search(
            "the victim's own words",
            "search/?q=victim secret&mode=keyword",
            finds_own=False,
            lists_nothing=True,
        ),
    ],
    ("search/", "HEAD"): [Attempt("head of a search", "search/?q=parcel", 200)],
    ("search/", "OPTIONS"): [Attempt("options of the search", "search/", 200)],
    ("context/", "POST"): [
        refused(
            "build the victim's thread",
            "context/",
            "thread_not_found",
            body={"thread_id": "{victim_thread}", "max_tokens": 1000},
        ),
        refused(
            "build the victim's thread with a brief",
            "context/",
            "thread_not_found",
            body={"thread_id": "{victim_thread}", "max_tokens": 1000, "brief_cards": 2},
        ),
        Attempt(
            "build the actor's thread up to the victim's entry",
            "context/",
            404,
            "entry_not_in_thread",
            ("leaf_id",),
            body={"thread_id": "{own_thread}", "max_tokens": 1000, "leaf_id": "{victim_entry}"},
        ),
    ],
    ("context/", "OPTIONS"): [Attempt("options of the context", "context/", 200)],
    ("recall/", "POST"): [
        refused(
            "recall in the victim's thread",
            "recall/",
            "thread_not_found",
            body={**OWN_SCOPE_BODY, "thread_id": "{victim_thread}", "input": "parcel"},
        ),
        Attempt(
            "recall the victim's items",
            "recall/",
            403,
            "permission_denied",
            body={**VICTIM_SCOPE_BODY, "input": "parcel depot"},
            compare_with_missing=False,
        ),
        Attempt(
            "recall in the actor's own thread, with the victim's words",
            "recall/",
            200,
            body={**OWN_SCOPE_BODY, "thread_id": "{own_thread}", "input": "parcel victim secret"},
            compare_with_missing=False,
        ),
        Attempt(
            "recall the victim's thread under the victim's agent",
            "recall/",
            403,
            "permission_denied",
            body={**VICTIM_SCOPE_BODY, "thread_id": "{victim_thread}", "input": "parcel"},
            compare_with_missing=False,
        ),
    ],
    ("recall/", "OPTIONS"): [Attempt("options of the recall", "recall/", 200)],
    ("brief/", "POST"): [
        refused(
            "brief in the victim's thread",
            "brief/",
            "thread_not_found",
            body={**OWN_SCOPE_BODY, "thread_id": "{victim_thread}", "input": "parcel"},
        ),
        Attempt(
            "brief from the victim's items",
            "brief/",
            403,
            "permission_denied",
            body={**VICTIM_SCOPE_BODY, "input": "parcel depot"},
            compare_with_missing=False,
        ),
        Attempt(
            "brief the victim's thread under the victim's agent",
            "brief/",
            403,
            "permission_denied",
            body={**VICTIM_SCOPE_BODY, "thread_id": "{victim_thread}", "input": "parcel"},
            compare_with_missing=False,
        ),
        Attempt(
            "brief in the actor's own thread, with the victim's words",
            "brief/",
            200,
            body={**OWN_SCOPE_BODY, "thread_id": "{own_thread}", "input": "parcel victim secret"},
            compare_with_missing=False,
        ),
    ],
    ("brief/", "OPTIONS"): [Attempt("options of the brief", "brief/", 200)],
    **FILE_ROWS,
    **OBSERVATION_ROWS,
    **SESSION_ROWS,
    **EXPORT_ROWS,
    **FORGET_ROWS,
    **UPKEEP_ROWS,
    **PLAYBOOK_ROWS,
    **GRAPH_ROWS,
}


# --- walking the URL patterns ----------------------------------------------------------


def walk_patterns(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from walk_patterns(entry.url_patterns, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


def view_methods(pattern: URLPattern) -> set[str]:
    """The HTTP methods the view of a pattern answers, HEAD included where GET is."""
    callback = pattern.callback
    actions = getattr(callback, "actions", None)  # a ViewSet routed by a router
    view_class = getattr(callback, "cls", None) or callback.view_class  # type: ignore[attr-defined]
    names = actions.keys() if actions else view_class.http_method_names
    methods = {name.upper() for name in names if actions or hasattr(view_class, name)}
    if "GET" in methods:
        # Django answers HEAD with the GET handler of any view that has one.
        methods.add("HEAD")
    return methods


def declared_endpoints() -> set[tuple[str, str]]:
    return {
        (route, method)
        for route, pattern in walk_patterns(api_urls.urlpatterns)
        for method in view_methods(pattern)
    }


def test_the_matrix_covers_every_endpoint_and_method():
    # given
    declared = declared_endpoints()
    # then: every pattern and method has a row, and no row names one that is gone
    uncovered = sorted(declared - set(MATRIX))
    assert not uncovered, f"endpoints without a tenancy row: {uncovered}"
    stale = sorted(set(MATRIX) - declared)
    assert not stale, f"tenancy rows for endpoints that do not exist: {stale}"
    assert all(MATRIX.values())


def test_the_walk_finds_the_endpoints_of_the_api():
    # given the endpoints the issue asks for
    expected_routes = {
        "threads/",
        "threads/<str:thread_id>/",
        "threads/<str:thread_id>/entries/",
        "threads/<str:thread_id>/path/",
        "threads/<str:thread_id>/rewind/",
        "threads/<str:thread_id>/checkout/",
        "threads/<str:thread_id>/fork/",
        "entries/<str:entry_id>/",
        "entries/<str:entry_id>/redact/",
        "threads/<str:thread_id>/extract/",
        "extractions/<str:run_id>/",
        "threads/<str:thread_id>/compact/",
        "threads/<str:thread_id>/compacted-history/",
        "compactions/<str:run_id>/",
        "items/",
        "items/<str:item_id>/",
        "items/<str:item_id>/history/",
        "items/<str:item_id>/activate/",
        "items/<str:item_id>/reject/",
        "items/<str:item_id>/let-go/",
        "search/",
        "context/",
        "recall/",
        "brief/",
        "files/",
        "files/content/",
        "files/history/",
        "files/command/",
        "observations/",
        "sessions/",
        "sessions/<str:session_id>/",
        "users/<path:user_id>/export/",
        "users/<path:user_id>/forget/",
        "forgets/<str:run_id>/",
        "observations/refresh/",
        "consolidation/",
        "upkeep-runs/<str:run_id>/",
        "playbook/",
        "playbook/drafts/<str:draft_id>/promote/",
        "playbook/drafts/<str:draft_id>/discard/",
        "graph/nodes/",
        "graph/nodes/merge/",
        "graph/nodes/<str:node_id>/",
        "graph/nodes/<str:node_id>/neighbourhood/",
        "graph/nodes/<str:node_id>/activate/",
        "graph/nodes/<str:node_id>/reject/",
        "graph/edges/",
        "graph/edges/<str:edge_id>/",
        "graph/edges/<str:edge_id>/activate/",
        "graph/edges/<str:edge_id>/reject/",
        "graph/path/",
    }
    # when
    declared = declared_endpoints()
    # then: the walk sees them all, so the coverage test above cannot pass on an empty walk
    assert {route for route, _method in declared} == expected_routes
    assert ("threads/<str:thread_id>/", "DELETE") in declared
    assert ("threads/<str:thread_id>/", "PUT") not in declared


# --- running the matrix ----------------------------------------------------------------

CASES = [
    pytest.param(route, method, attempt, id=f"{method} {route} | {attempt.label}")
    for (route, method), attempts in MATRIX.items()
    for attempt in attempts
]


def fill(template: Any, names: dict[str, str]) -> Any:
    if isinstance(template, str):
        return template.format(**names)
    if isinstance(template, dict):
        return {key: fill(value, names) for key, value in template.items()}
    return template


@dataclass
class Sent:
    url: str
    body: dict[str, Any] | None
    status: int
    content: bytes
    data: Any = field(default=None)


def send(client: APIClient, method: str, attempt: Attempt, names: dict[str, str]) -> Sent:
    url = f"{API}/{fill(attempt.path, names)}"
    body = fill(attempt.body, names)
    call = getattr(client, method.lower())
    response = call(url, body, format="json") if body is not None else call(url)
    # An export is streamed: its content is read from the stream.
    content = b"".join(response.streaming_content) if response.streaming else response.content
    data = json.loads(content) if content else None
    return Sent(url, body, response.status_code, content, data)


def assert_named_route(url: str, route: str) -> None:
    """The attempt reaches the endpoint it claims to cover."""
    match = resolve(url.split("?")[0])
    assert match.route == API.lstrip("/") + "/" + route, (url, match.route)


@pytest.mark.parametrize(("route", "method", "attempt"), CASES)
def test_no_read_or_write_crosses_to_the_other_principal(
    world: World, route: str, method: str, attempt: Attempt
):
    # given
    names = world.names()
    before = snapshot_rows()
    # each case starts from the world as built: what an earlier case wrote was rolled back
    assert before == world.rows
    # when
    sent = send(world.actor.client, method, attempt, names)
    # then: the refusal
    assert_named_route(sent.url, route)
    status, code = attempt.answer_in(world.scenario)
    assert sent.status == status, (world.actor.label, sent.data)
    if code is not None:
        assert set(sent.data) == {"code", "message", "errors"}
        assert sent.data["code"] == code, sent.data
        assert sorted(sent.data["errors"]) == sorted(attempt.fields), sent.data
    # then: nothing of anyone's changed
    assert snapshot_rows() == before
    # then: nothing of the victim's came back that the request did not name itself
    named = sent.url + json.dumps(sent.body)
    answer = sent.content.decode()
    leaked = [secret for secret in world.secrets() if secret not in named and secret in answer]
    assert not leaked, (leaked, answer[:500])
    # then: a list holds the actor's own thread (an empty answer would prove nothing)
    if attempt.lists_own:
        if route == "files/":
            assert OWN_FILE in [row["path"] for row in sent.data["results"]]
        elif route == "observations/":
            assert [world.own_item.pk] in [row["item_ids"] for row in sent.data["results"]]
        elif route == "playbook/":
            assert sent.data["draft"]["id"] == str(OWN_DRAFT_ID)
        else:
            own = {
                "items/": world.own_item.pk,
                "sessions/": world.own_session.pk,
                "graph/nodes/": world.own_node.pk,
                "graph/edges/": world.own_edge.pk,
            }.get(route, world.own.thread_id)
            assert own in [row["id"] for row in sent.data["results"]]
    if attempt.lists_nothing:
        if route == "playbook/":
            assert sent.data == {"playbook": None, "draft": None}
        else:
            assert sent.data["results"] == []
    if attempt.finds_own:
        assert world.own.reply.pk in [hit["source_id"] for hit in sent.data["results"]]
    if attempt.exports_own and sent.status == 200:
        assert world.own.thread_id in [thread["id"] for thread in sent.data["threads"]]
        assert world.own_item.pk in [item["id"] for item in sent.data["items"]]
    # then: the same answer as for objects that do not exist
    if attempt.compare_with_missing:
        missing_names = world.missing_names()
        missing = send(world.actor.client, method, attempt, missing_names)
        assert snapshot_rows() == before
        assert missing.status == sent.status
        assert _masked(sent.content, names) == _masked(missing.content, missing_names)


def _masked(content: bytes, names: dict[str, str]) -> str:
    text = content.decode()
    # Longest first, so an id that contains another is masked whole.
    for key, value in sorted(names.items(), key=lambda item: -len(item[1])):
        if key in ID_PLACEHOLDERS:
            text = text.replace(value, f"<{key}>")
    return text


# --- lists, page by page ---------------------------------------------------------------


def test_paging_through_every_thread_never_reaches_the_other_principal(world: World):
    # given the world as built, and more threads on both sides than fit one page
    assert snapshot_rows() == world.rows
    own_ids = {world.own.thread_id}
    for n in range(3):
        own_ids.add(
            write_conversation(world.own.thread.agent_id, dict(world.own.thread.metadata)).thread_id
        )
        write_conversation(world.victim_agent, dict(world.theirs.thread.metadata), tag=f"{n}")
    visible: set[str] = set()
    url: str | None = f"{API}/threads/?limit=2"
    # when
    while url:
        page = world.actor.client.get(url).json()
        visible |= {thread["id"] for thread in page["results"]}
        url = page["next"]
    # then: the actor's four threads, none of the victim's
    assert visible == own_ids


def test_the_victim_still_sees_all_of_its_conversation_afterwards(world: World):
    # given the world as built, and every refused write of the matrix tried once
    assert snapshot_rows() == world.rows
    names = world.names()
    for (_route, method), attempts in MATRIX.items():
        if method in ("POST", "PATCH", "DELETE"):
            for attempt in attempts:
                send(world.actor.client, method, attempt, names)
    # when
    response = world.victim.client.get(f"{API}/threads/{world.theirs.thread_id}/entries/?types=all")
    thread = world.victim.client.get(f"{API}/threads/{world.theirs.thread_id}/").json()
    # then
    assert [e["id"] for e in response.json()["results"]] == world.theirs.entry_ids
    assert thread["metadata"] == world.theirs.thread.metadata
    assert thread["active_leaf_id"] == world.theirs.follow_up.pk
