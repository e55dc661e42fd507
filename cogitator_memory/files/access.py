"""Who runs a memory file command, where, and under which limits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.files.models import Author
from cogitator_memory.files.paths import reserved_paths
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.jsondata import storable_text

Observer = Callable[[str, str | None], None]


class SeenVersions:
    """The version of each file a caller last read or wrote (path -> sha256, None for a
    file it saw missing). Given as ``FileAccess.seen``, every command records what it
    showed or wrote here, and a change of a file the caller read takes that sha256 as its
    precondition: the model edits what it saw, or is told the file changed."""

    def __init__(self) -> None:
        self._sha256: dict[str, str | None] = {}

    def record(self, path: str, sha256: str | None) -> None:
        self._sha256[path] = sha256

    def forget(self, path: str) -> None:
        self._sha256.pop(path, None)

    def knows(self, path: str) -> bool:
        return path in self._sha256

    def sha256(self, path: str) -> str | None:
        return self._sha256.get(path)


@dataclass(frozen=True)
class Place:
    """The branch a run stands on: a thread and the leaf entry it has reached."""

    thread_id: str
    leaf_id: str


@dataclass(frozen=True)
class FileAccess:
    """A caller of ``MemoryFiles``.

    ``scope``: whose files it reads (its scope's and those shared wider in its agent) and
    where it writes. ``place``: the branch it stands on; versions it writes are seen only
    on branches holding ``place.leaf_id``, and it does not see versions written on other
    branches of that thread. ``read_only`` refuses every change; ``reserved`` paths (and
    everything under them) are read-only. ``observe`` hears (path, sha256) of each
    version a command showed or wrote (sha256 None for a deletion); ``seen`` remembers
    them for preconditions (see ``SeenVersions``). ``grants`` narrows what the caller may
    see and write to the agents and users its grants reach (as ``access=`` in
    ``MemoryItems``). ``author`` is recorded on every version written.
    """

    scope: MemoryScope
    place: Place | None = None
    read_only: bool = False
    reserved: tuple[str, ...] = ()
    observe: Observer | None = None
    seen: SeenVersions | None = None
    grants: Grants | None = None
    author: str = Author.MODEL
    _reserved: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.scope, MemoryScope):
            raise InvalidInput({"scope": "A file access needs a MemoryScope."})
        if self.author not in Author.values:
            raise InvalidInput(
                {"author": f"The author is one of {', '.join(Author.values)}, not {self.author!r}."}
            )
        if self.place is not None and not (
            storable_text(self.place.thread_id) and storable_text(self.place.leaf_id)
        ):
            raise InvalidInput({"place": "A place names a thread id and an entry id."})
        object.__setattr__(self, "_reserved", reserved_paths(self.reserved))

    @property
    def reserved_canonical(self) -> tuple[str, ...]:
        return self._reserved

    def heard(self, path: str, sha256: str | None) -> None:
        """Tell ``observe`` and ``seen`` of a version shown or written."""
        if self.seen is not None:
            self.seen.record(path, sha256)
        if self.observe is not None:
            self.observe(path, sha256)

    def expected_sha256(self, path: str) -> tuple[bool, str | None]:
        """(whether the caller read ``path``, the sha256 it read)."""
        if self.seen is None or not self.seen.knows(path):
            return False, None
        return True, self.seen.sha256(path)
