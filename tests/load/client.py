"""One load client: a mix of requests to the memory API over HTTP for its principals
(``tests/load/tenancy.py``), one after another, each recorded (``tests/load/records.py``).

The mix, by weight: entries written (to the client's own threads, and to threads of the
shared agent that every client writes at once), contexts built, recalls, searches, reads
of entries and of the active branch, thread lists, thread creation, and probes of other
principals' threads (read, write, build, and creating a thread for their agent), which
must be refused. Every answer is scanned for other principals' labels, and every read of
a thread only this client writes must show the last entry it wrote there.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from tests.load.records import ClientLog, CreatedThread, Failure, WrittenEntry
from tests.load.tenancy import Principal, Tenancy

# Route -> weight in a client's mix (out of 100).
MIX: Mapping[str, int] = {
    "entries.create": 34,
    "context.build": 12,
    "recall": 10,
    "entries.list": 8,
    "path.read": 8,
    "search": 8,
    "threads.list": 6,
    "threads.create": 5,
    "probe.foreign": 9,
}
ROUTES = tuple(MIX)
# The share of entries written to the shared agent's threads, and of reads made there.
SHARED_SHARE = 0.3
PAGE = 20
CONTEXT_TOKENS = 2000

CITIES = ("Lisbon", "Rome", "Oslo", "Porto", "Kyoto", "Quito", "Dakar", "Hanoi", "Lima", "Riga")
USER_TEXT = "Where is my parcel for {city}? The order {number} was due at {hour} o'clock. ({tag})"
ASSISTANT_TEXT = "The parcel for {city} left the depot at {hour} o'clock, order {number}. ({tag})"
QUESTION = "When did the parcel for {city} leave the depot?"
# The label written into every text, thread metadata and answer a principal may read.
TAG = "tenant-{label}"
TAG_PATTERN = re.compile(r"tenant-(c\d+[ab]|shared)")
SHARED_LABEL = "shared"


@dataclass
class OwnThread:
    """A thread only its creator writes to, so each read of it must show the last entry
    written there."""

    thread_id: str
    user_id: str
    last_entry_id: str | None = None
    written: int = 0


class ThreadDirectory:
    """The threads every principal created, for other clients' probes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: list[tuple[str, str]] = []

    def add(self, label: str, thread_id: str) -> None:
        with self._lock:
            self._threads.append((label, thread_id))

    def foreign(self, label: str, rng: random.Random) -> str | None:
        """A thread of another principal than ``label``, if one was made yet."""
        with self._lock:
            others = [thread_id for owner, thread_id in self._threads if owner != label]
        return rng.choice(others) if others else None


class LoadClient:
    """One client: ``requests`` requests for its principals, one after another."""

    def __init__(
        self,
        number: int,
        tenancy: Tenancy,
        shared_threads: list[CreatedThread],
        directory: ThreadDirectory,
        http: httpx.Client,
        requests: int,
        seed: int,
    ) -> None:
        self.number = number
        self.tenancy = tenancy
        self.principals = tenancy.clients[number]
        self.shared = shared_threads
        self.directory = directory
        self.http = http
        self.requests = requests
        self.rng = random.Random(f"{seed}-{number}")
        self.own: dict[str, list[OwnThread]] = {p.label: [] for p in self.principals}
        self.log = ClientLog()
        self.made = 0
        self.counter = 0

    # --- the loop ------------------------------------------------------------------------

    def run(self) -> ClientLog:
        handlers = {
            "entries.create": self.write_entry,
            "context.build": self.build_context,
            "recall": self.recall,
            "entries.list": self.read_entries,
            "path.read": self.read_path,
            "search": self.search,
            "threads.list": self.list_threads,
            "threads.create": self.create_thread,
            "probe.foreign": self.probe_foreign,
        }
        for principal in self.principals:
            if self.made < self.requests:
                self.create_thread(principal)
        weights = [MIX[route] for route in ROUTES]
        while self.made < self.requests:
            principal = self.rng.choice(self.principals)
            route = self.rng.choices(ROUTES, weights)[0]
            if not self.own[principal.label]:
                route = "threads.create"
            handlers[route](principal)
        return self.log

    def next_number(self) -> int:
        self.counter += 1
        return self.counter

    def call(
        self,
        route: str,
        principal: Principal,
        method: str,
        path: str,
        *,
        expect: int,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """One request; its answer's JSON when the status is ``expect``, else None (and a
        failure recorded). Every answer is scanned for other principals' labels."""
        self.made += 1
        started = time.perf_counter()
        try:
            response = self.http.request(
                method,
                path,
                json=json,
                params=params,
                headers={"Authorization": principal.authorization},
            )
        except httpx.HTTPError as error:
            self.log.samples.append((route, 0, (time.perf_counter() - started) * 1000))
            detail = f"{type(error).__name__}: {error}"
            self.log.failures.append(Failure(route, method, path, 0, detail))
            return None
        self.log.samples.append(
            (route, response.status_code, (time.perf_counter() - started) * 1000)
        )
        text = response.text
        self.scan_for_leaks(route, principal, path, text)
        if response.status_code != expect:
            self.log.failures.append(Failure(route, method, path, response.status_code, text[:500]))
            return None
        return response.json()

    def scan_for_leaks(self, route: str, principal: Principal, path: str, text: str) -> None:
        for seen in set(TAG_PATTERN.findall(text)) - {principal.label, SHARED_LABEL}:
            self.log.leaks.append(f"{principal.label} saw tenant-{seen} in {route} {path}")

    # --- what to work on -----------------------------------------------------------------

    def own_thread(self, principal: Principal) -> OwnThread:
        return self.rng.choice(self.own[principal.label])

    def shared_thread(self) -> CreatedThread:
        return self.rng.choice(self.shared)

    def question(self) -> str:
        return QUESTION.format(city=self.rng.choice(CITIES))

    def text(self, role: str, tag: str) -> str:
        template = USER_TEXT if role == "user" else ASSISTANT_TEXT
        return template.format(
            city=self.rng.choice(CITIES),
            number=self.rng.randrange(10_000),
            hour=self.rng.randrange(24),
            tag=tag,
        )

    # --- the requests --------------------------------------------------------------------

    def create_thread(self, principal: Principal) -> None:
        thread_id = f"{self.tenancy.run}-{principal.label}-t{self.next_number()}"
        user_id = self.rng.choice(principal.user_ids)
        body = {
            "id": thread_id,
            "agent_id": principal.agent_id,
            "metadata": {"userId": user_id, "owner": TAG.format(label=principal.label)},
        }
        data = self.call("threads.create", principal, "POST", "threads/", expect=201, json=body)
        if data is None:
            return
        self.own[principal.label].append(OwnThread(thread_id, user_id))
        self.directory.add(principal.label, thread_id)
        self.log.threads.append(
            CreatedThread(thread_id, principal.agent_id, user_id, principal.label)
        )

    def write_entry(self, principal: Principal) -> None:
        own: OwnThread | None = None
        if self.rng.random() < SHARED_SHARE:
            thread_id, tag = self.shared_thread().thread_id, TAG.format(label=SHARED_LABEL)
            role = self.rng.choice(("user", "assistant"))
        else:
            own = self.own_thread(principal)
            thread_id, tag = own.thread_id, TAG.format(label=principal.label)
            role = "user" if own.written % 2 == 0 else "assistant"
        marker = f"{self.tenancy.run}-{principal.label}-e{self.next_number()}"
        body = {"role": role, "content": self.text(role, tag), "metadata": {"loadId": marker}}
        data = self.call(
            "entries.create",
            principal,
            "POST",
            f"threads/{thread_id}/entries/",
            expect=201,
            json=body,
        )
        if data is None:
            return
        self.log.entries.append(WrittenEntry(thread_id, marker, str(data["id"]), int(data["seq"])))
        if own is not None:
            own.last_entry_id = str(data["id"])
            own.written += 1

    def read_entries(self, principal: Principal) -> None:
        self.read("entries.list", principal, "entries")

    def read_path(self, principal: Principal) -> None:
        self.read("path.read", principal, "path")

    def read(self, route: str, principal: Principal, what: str) -> None:
        """A page of a thread's entries or of its active branch, newest last; on a thread of
        its own, the client checks that the last entry it wrote is the newest one."""
        own: OwnThread | None = None
        if self.rng.random() < SHARED_SHARE:
            thread_id = self.shared_thread().thread_id
        else:
            own = self.own_thread(principal)
            thread_id = own.thread_id
        path = f"threads/{thread_id}/{what}/"
        data = self.call(route, principal, "GET", path, expect=200, params={"limit": PAGE})
        if data is None or own is None or own.last_entry_id is None:
            return
        newest = data["results"][-1]["id"] if data["results"] else None
        if newest != own.last_entry_id:
            self.log.stale_reads.append(
                f"{route} {path}: newest {newest}, last written {own.last_entry_id}"
            )

    def build_context(self, principal: Principal) -> None:
        if self.rng.random() < SHARED_SHARE:
            thread_id = self.shared_thread().thread_id
        else:
            thread_id = self.own_thread(principal).thread_id
        body = {
            "thread_id": thread_id,
            "max_tokens": CONTEXT_TOKENS,
            "current_input": self.question(),
        }
        self.call("context.build", principal, "POST", "context/", expect=200, json=body)

    def recall(self, principal: Principal) -> None:
        own = self.own_thread(principal)
        body: dict[str, Any] = {
            "input": self.question(),
            "agent_id": principal.agent_id,
            "user_id": own.user_id,
        }
        if self.rng.random() < 0.7:
            body["thread_id"] = own.thread_id
        self.call("recall", principal, "POST", "recall/", expect=200, json=body)

    def search(self, principal: Principal) -> None:
        agent_id = (
            self.tenancy.shared_agent if self.rng.random() < SHARED_SHARE else principal.agent_id
        )
        params = {"q": self.question(), "agent_id": agent_id, "limit": 10}
        self.call("search", principal, "GET", "search/", expect=200, params=params)

    def list_threads(self, principal: Principal) -> None:
        agent_id = (
            self.tenancy.shared_agent if self.rng.random() < SHARED_SHARE else principal.agent_id
        )
        params = {"agent_id": agent_id, "limit": PAGE}
        data = self.call("threads.list", principal, "GET", "threads/", expect=200, params=params)
        for thread in data["results"] if data else []:
            if thread["agent_id"] != agent_id:
                self.log.leaks.append(
                    f"{principal.label} listed {thread['id']} of {thread['agent_id']}"
                )

    def probe_foreign(self, principal: Principal) -> None:
        """Another principal's thread, read, written, built from, or a thread made for its
        agent: each refused as the API documents (404 for what the caller may not see,
        403 for a write under another's grant)."""
        route = "probe.foreign"
        thread_id = self.directory.foreign(principal.label, self.rng) or "no-such-thread"
        kind = self.rng.randrange(5)
        if kind == 0:
            self.call(route, principal, "GET", f"threads/{thread_id}/", expect=404)
        elif kind == 1:
            path = f"threads/{thread_id}/path/"
            self.call(route, principal, "GET", path, expect=404, params={"limit": PAGE})
        elif kind == 2:
            body = {"thread_id": thread_id, "max_tokens": CONTEXT_TOKENS}
            self.call(route, principal, "POST", "context/", expect=404, json=body)
        elif kind == 3:
            marker = f"{self.tenancy.run}-{principal.label}-e{self.next_number()}"
            body = {
                "role": "user",
                "content": self.text("user", TAG.format(label=principal.label)),
                "metadata": {"loadId": marker},
            }
            path = f"threads/{thread_id}/entries/"
            self.call(route, principal, "POST", path, expect=404, json=body)
            self.log.refused_markers.append(marker)
        else:
            others = [p for p in self.tenancy.principals if p.label != principal.label]
            victim = self.rng.choice(others)
            new_id = f"{self.tenancy.run}-{principal.label}-t{self.next_number()}"
            body = {
                "id": new_id,
                "agent_id": victim.agent_id,
                "metadata": {"userId": victim.user_ids[0]},
            }
            self.call(route, principal, "POST", "threads/", expect=403, json=body)
            self.log.refused_threads.append(new_id)
