"""The difference between two versions of a memory file, for the admin's file page.

Python's ``difflib`` finds the lines that changed; this module turns its opcodes into rows
a template renders, as a unified diff (one column, removed lines before added ones) or
side by side (the old version on the left, the new one on the right). Nothing here builds
markup: the template escapes every line, as a file's text is what a model wrote.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from itertools import zip_longest

__all__ = ["MAX_DIFF_LINES", "DiffLine", "FileDiff", "Hunk", "SideBySideRow", "diff_texts"]

# Lines of each version compared at most: a 1 MiB file of very short lines would make the
# page slow to build and to read; past this the page says so instead.
MAX_DIFF_LINES = 20_000
CONTEXT_LINES = 3

SAME, ADDED, REMOVED = "same", "added", "removed"


@dataclass(frozen=True)
class DiffLine:
    """One line of a diff: unchanged (``same``), ``added`` or ``removed``, with its number
    in the old and in the new version (None where it is not in that version)."""

    kind: str
    old_number: int | None
    new_number: int | None
    text: str

    @property
    def sign(self) -> str:
        return {SAME: " ", ADDED: "+", REMOVED: "-"}[self.kind]


@dataclass(frozen=True)
class SideBySideRow:
    """One row of the side-by-side view: the old line on the left and the new one on the
    right; either is None where the other version has no line to face it."""

    old: DiffLine | None
    new: DiffLine | None


@dataclass(frozen=True)
class Hunk:
    """A run of changes with ``CONTEXT_LINES`` unchanged lines around them."""

    header: str
    lines: list[DiffLine] = field(default_factory=list)
    rows: list[SideBySideRow] = field(default_factory=list)


@dataclass(frozen=True)
class FileDiff:
    hunks: list[Hunk]
    added: int
    removed: int
    too_large: bool = False

    @property
    def identical(self) -> bool:
        return not self.too_large and not self.hunks


def lines_of(text: str | None) -> list[str]:
    """The lines of a file's text; none for a deletion or an empty file. Only ``\\n``
    ends a line (``str.splitlines`` would also split at form feeds and other separators
    a text may hold)."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def _range(start: int, stop: int) -> str:
    """A hunk header's range as ``diff -u`` writes it (1-based; an empty range names the
    line before it)."""
    length = stop - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def diff_texts(
    old: str | None,
    new: str | None,
    *,
    context: int = CONTEXT_LINES,
    max_lines: int = MAX_DIFF_LINES,
) -> FileDiff:
    """The lines that differ between ``old`` and ``new`` (None for a deletion), in hunks
    with ``context`` lines around each change."""
    old_lines, new_lines = lines_of(old), lines_of(new)
    if len(old_lines) > max_lines or len(new_lines) > max_lines:
        return FileDiff(hunks=[], added=0, removed=0, too_large=True)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    hunks: list[Hunk] = []
    added = removed = 0
    for group in matcher.get_grouped_opcodes(context):
        header = f"@@ -{_range(group[0][1], group[-1][2])} +{_range(group[0][3], group[-1][4])} @@"
        hunk = Hunk(header=header)
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for offset in range(i2 - i1):
                    line = DiffLine(SAME, i1 + offset + 1, j1 + offset + 1, old_lines[i1 + offset])
                    hunk.lines.append(line)
                    hunk.rows.append(SideBySideRow(line, line))
                continue
            gone = [DiffLine(REMOVED, i + 1, None, old_lines[i]) for i in range(i1, i2)]
            came = [DiffLine(ADDED, None, j + 1, new_lines[j]) for j in range(j1, j2)]
            removed += len(gone)
            added += len(came)
            hunk.lines.extend(gone)
            hunk.lines.extend(came)
            hunk.rows.extend(SideBySideRow(left, right) for left, right in zip_longest(gone, came))
        hunks.append(hunk)
    return FileDiff(hunks=hunks, added=added, removed=removed)
