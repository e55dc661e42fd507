"""What a load run's clients saw: every request's route, status and latency, the answers
that were not the ones expected, and the writes the API acknowledged or refused."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Failure:
    """A request whose answer was not the one expected (status 0: no answer)."""

    route: str
    method: str
    path: str
    status: int
    body: str

    def __str__(self) -> str:
        return f"{self.route} {self.method} {self.path} -> {self.status}: {self.body}"


@dataclass(frozen=True)
class CreatedThread:
    thread_id: str
    agent_id: str
    user_id: str
    label: str


@dataclass(frozen=True)
class WrittenEntry:
    """An entry the API acknowledged (201): where it was sent, the client's marker in its
    metadata (``loadId``), and the id and seq the answer gave it."""

    thread_id: str
    marker: str
    entry_id: str
    seq: int


@dataclass
class ClientLog:
    samples: list[tuple[str, int, float]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    threads: list[CreatedThread] = field(default_factory=list)
    entries: list[WrittenEntry] = field(default_factory=list)
    # Markers of entries and ids of threads whose writes had to be refused.
    refused_markers: list[str] = field(default_factory=list)
    refused_threads: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    stale_reads: list[str] = field(default_factory=list)


@dataclass
class LoadRun:
    """Everything the clients saw, merged."""

    # The tenancy's run name, the prefix of every thread id of the run.
    tag: str
    clients: int
    requests_per_client: int
    seconds: float
    shared_threads: list[CreatedThread]
    log: ClientLog

    @property
    def requests(self) -> int:
        return len(self.log.samples)

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def threads(self) -> list[CreatedThread]:
        return self.shared_threads + self.log.threads


def merge(logs: list[ClientLog]) -> ClientLog:
    merged = ClientLog()
    for log in logs:
        for name in vars(merged):
            getattr(merged, name).extend(getattr(log, name))
    return merged
