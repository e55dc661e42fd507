"""What a compaction does and when: ``CompactionConfig``.

A thread is compacted once its conversation (as read through the last compaction: the
summary, the kept entries and everything after them) holds ``threshold`` tokens or
``message_threshold`` entries, whichever comes first; at least one must be set.
``keep_recent`` newest conversation entries stay verbatim, or, with ``keep_recent_tokens``,
the newest whole turns (each opening with a user message) within that many tokens.
The hierarchical knobs (``chapter_tokens`` ... ``arcs_per_saga``) are read by
``compaction/hierarchical.py``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import InvalidCompactionConfig
from cogitator_memory.limits import is_whole_number

__all__ = ["STRATEGIES", "CompactionConfig", "config_from_settings"]

STRATEGIES = ("summary", "hierarchical")

# Keys of COGITATOR_MEMORY["COMPACTION"] and the field each fills.
SETTING_FIELDS = {
    "STRATEGY": "strategy",
    "THRESHOLD": "threshold",
    "MESSAGE_THRESHOLD": "message_threshold",
    "KEEP_RECENT": "keep_recent",
    "KEEP_RECENT_TOKENS": "keep_recent_tokens",
    "SUMMARY_MODEL": "summary_model",
    "SUMMARY_PROMPT": "summary_prompt",
    "CHAPTER_TOKENS": "chapter_tokens",
    "CHAPTER_CONCURRENCY": "chapter_concurrency",
    "CHAPTERS_PER_ARC": "chapters_per_arc",
    "ARCS_PER_SAGA": "arcs_per_saga",
}


def _whole(value: Any, minimum: int, *, optional: bool) -> str | None:
    if value is None and optional:
        return None
    if not is_whole_number(value, minimum=minimum):
        return f"Must be a whole number of {minimum} or more, not {value!r}."
    return None


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and value):
        return None
    return f"Must be a non-empty text or None, not {value!r}."


@dataclass(frozen=True)
class CompactionConfig:
    """How to compact a thread. Raises ``InvalidCompactionConfig`` (every bad field) when
    made with values that cannot work, such as no threshold at all."""

    strategy: Literal["summary", "hierarchical"] = "summary"
    threshold: int | None = None
    message_threshold: int | None = None
    keep_recent: int = 10
    keep_recent_tokens: int | None = None
    summary_model: str | None = None
    summary_prompt: str | None = None
    chapter_tokens: int = 4000
    chapter_concurrency: int = 1
    chapters_per_arc: int = 4
    arcs_per_saga: int = 4

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        if self.strategy not in STRATEGIES:
            errors["strategy"] = f"Must be one of {', '.join(STRATEGIES)}, not {self.strategy!r}."
        checks = {
            "threshold": _whole(self.threshold, 1, optional=True),
            "message_threshold": _whole(self.message_threshold, 1, optional=True),
            "keep_recent": _whole(self.keep_recent, 0, optional=False),
            "keep_recent_tokens": _whole(self.keep_recent_tokens, 1, optional=True),
            "summary_model": _text(self.summary_model),
            "summary_prompt": _text(self.summary_prompt),
            "chapter_tokens": _whole(self.chapter_tokens, 100, optional=False),
            "chapter_concurrency": _whole(self.chapter_concurrency, 1, optional=False),
            "chapters_per_arc": _whole(self.chapters_per_arc, 2, optional=False),
            "arcs_per_saga": _whole(self.arcs_per_saga, 2, optional=False),
        }
        errors.update({name: problem for name, problem in checks.items() if problem})
        if self.threshold is None and self.message_threshold is None:
            errors["threshold"] = "Set threshold (tokens), message_threshold (entries) or both."
        if errors:
            raise InvalidCompactionConfig(errors)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompactionConfig:
        """A config from a dict of its field names; unknown names are refused."""
        if not isinstance(data, dict):
            raise InvalidCompactionConfig({"config": "Must be a dict of config fields."})
        known = {field.name for field in fields(cls)}
        unknown = sorted(str(key) for key in data if key not in known)
        if unknown:
            raise InvalidCompactionConfig({key: "Unknown compaction setting." for key in unknown})
        return cls(**data)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def config_from_settings() -> CompactionConfig:
    """The config ``COGITATOR_MEMORY["COMPACTION"]`` describes."""
    section = memory_settings.COMPACTION
    return CompactionConfig(
        **{name: section[key] for key, name in SETTING_FIELDS.items() if key in section}
    )
