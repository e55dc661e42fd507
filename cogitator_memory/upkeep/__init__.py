"""Between runs: the pre-turn brief, observations of entities, consolidation into a
playbook. Each asks a model through the ``llm`` seam and checks what it answers before
anything is kept."""

from cogitator_memory.files.paths import (
    MEMORY_RESERVED_PATHS,
    OBSERVATIONS_DIRECTORY,
    PLAYBOOK_DRAFT_PATH,
    PLAYBOOK_PATH,
)
from cogitator_memory.upkeep.brief import (
    BRIEF_PROMPT,
    CARD_KINDS,
    MAX_BRIEF_CARDS,
    BriefCard,
    BriefSource,
    MemoryBriefer,
    brief_block,
    parse_brief,
)
from cogitator_memory.upkeep.brief_turn import brief_for_turn

__all__ = [
    "BRIEF_PROMPT",
    "CARD_KINDS",
    "MAX_BRIEF_CARDS",
    "MEMORY_RESERVED_PATHS",
    "OBSERVATIONS_DIRECTORY",
    "PLAYBOOK_DRAFT_PATH",
    "PLAYBOOK_PATH",
    "BriefCard",
    "BriefSource",
    "MemoryBriefer",
    "brief_block",
    "brief_for_turn",
    "parse_brief",
]
