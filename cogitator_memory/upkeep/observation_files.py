"""An observation as a memory file: where it lives and how it reads and writes.

A file under ``/memories/observations/`` holds, for one entity, its name as a heading, a
comment carrying what code reads back (the entity's id, its other names and the
fingerprint of the facts the file was written from), its other names for a reader, and
the statements, one a line, each ending with the items it stands on as ``[item:<id>]``.
Only a version memory itself or a person wrote is read as an observation: one a model
wrote could say anything about anybody.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cogitator_memory.context.seams import Observation
from cogitator_memory.files.models import Author
from cogitator_memory.files.paths import OBSERVATIONS_DIRECTORY, is_at_or_under
from cogitator_memory.files.services import MemoryFile

__all__ = [
    "ITEM_MARK",
    "ObservationRecord",
    "Statement",
    "item_marks",
    "observation_file",
    "observation_path",
    "parse_observation",
]

# A statement's items: ``[item:<id>]``, as many as it stands on, at its end.
ITEM_MARK = re.compile(r"\[item:([A-Za-z0-9_.:-]{1,64})\]")
# The comment that makes a file an observation, on its second line.
HEADER = re.compile(r"^<!-- observation (\{.*\}) -->$")
# Characters of the name kept in a file name; the entity's id keeps it unique.
NAME_IN_PATH = 60


@dataclass(frozen=True)
class Statement:
    """One thing the model made of the facts, and the ids of the items it stands on."""

    text: str
    item_ids: tuple[str, ...]


@dataclass(frozen=True)
class ObservationRecord(Observation):
    """An observation as read from its file; an ``Observation`` the context builder takes.
    ``based_on``: the fingerprint of the facts it was written from. ``file``: the file."""

    path: str = ""
    based_on: str = ""
    file: MemoryFile | None = None
    statements: Sequence[Statement] = ()


def _safe(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")


def observation_path(entity_id: str, name: str) -> str:
    """The path of an entity's observation: a file name of plain letters, digits and
    dashes made from its name, then its id (two entities may share a name)."""
    readable = _safe(name)[:NAME_IN_PATH].strip("-") or "entity"
    identity = re.sub(r"[^A-Za-z0-9_-]+", "-", entity_id).strip("-") or "id"
    return f"{OBSERVATIONS_DIRECTORY}/{readable}-{identity}.md"


def item_marks(item_ids: Sequence[str]) -> str:
    return " ".join(f"[item:{item_id}]" for item_id in item_ids)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def observation_file(
    *,
    entity_id: str,
    name: str,
    aliases: Sequence[str],
    statements: Sequence[Statement],
    based_on: str,
) -> str:
    """The text of an entity's observation file."""
    header = {"entity_id": entity_id, "aliases": list(aliases), "based_on": based_on}
    # ensure_ascii keeps "-->" and line breaks of a name from ending the comment.
    carried = json.dumps(header, ensure_ascii=True).replace(">", "\\u003e")
    lines = [f"# {_one_line(name)}", f"<!-- observation {carried} -->"]
    if aliases:
        lines.append(f"Also called: {', '.join(_one_line(alias) for alias in aliases)}")
    lines.append("")
    lines += [f"- {_one_line(s.text)} {item_marks(s.item_ids)}" for s in statements]
    return "\n".join(lines) + "\n"


def _header(line: str) -> dict[str, Any] | None:
    match = HEADER.match(line.strip())
    if match is None:
        return None
    try:
        header = json.loads(match.group(1))
    except ValueError:
        return None
    if not isinstance(header, dict):
        return None
    entity_id, aliases, based_on = (
        header.get("entity_id"),
        header.get("aliases"),
        header.get("based_on"),
    )
    if not isinstance(entity_id, str) or not entity_id or not isinstance(based_on, str):
        return None
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        return None
    return header


def _statement(line: str) -> Statement | None:
    if not line.startswith("- "):
        return None
    body = line[2:].rstrip()
    ids: list[str] = []
    # The marks stand at the end of the line: read them from there.
    while True:
        match = re.search(r"\s*\[item:([A-Za-z0-9_.:-]{1,64})\]$", body)
        if match is None:
            break
        ids.insert(0, match.group(1))
        body = body[: match.start()].rstrip()
    if not ids or not body:
        return None
    return Statement(body, tuple(dict.fromkeys(ids)))


def parse_observation(file: MemoryFile) -> ObservationRecord | None:
    """The observation a file holds; None for a version a model wrote, a deletion, a
    redacted version, or a file that is not an observation."""
    if file.author == Author.MODEL or file.content is None:
        return None
    if not is_at_or_under(file.path, OBSERVATIONS_DIRECTORY) or file.path == OBSERVATIONS_DIRECTORY:
        return None
    lines = file.content.splitlines()
    if len(lines) < 2 or not lines[0].startswith("# "):
        return None
    header = _header(lines[1])
    if header is None:
        return None
    statements = [s for s in (_statement(line) for line in lines[2:]) if s is not None]
    if not statements:
        return None
    item_ids = tuple(dict.fromkeys(i for s in statements for i in s.item_ids))
    return ObservationRecord(
        entity_id=header["entity_id"],
        name=lines[0][2:].strip(),
        text="\n".join(s.text for s in statements),
        aliases=tuple(header["aliases"]),
        item_ids=item_ids,
        path=file.path,
        based_on=header["based_on"],
        file=file,
        statements=tuple(statements),
    )
