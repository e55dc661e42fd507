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
from cogitator_memory.upkeep.consolidation import DedupeResult, MemoryConsolidator, StaleMark
from cogitator_memory.upkeep.observation_files import (
    ObservationRecord,
    observation_file,
    observation_path,
    parse_observation,
)
from cogitator_memory.upkeep.observations import MemoryObservations, ObservationRefresh
from cogitator_memory.upkeep.playbook import (
    FoldResult,
    PlaybookFile,
    discard_playbook_draft,
    fold_lessons,
    promote_playbook,
    read_playbook,
    read_playbook_draft,
)
from cogitator_memory.upkeep.playbook_text import (
    FOLD_PROMPT,
    LESSONS_PER_FOLD,
    MAX_PLAYBOOK_EDITS,
    MAX_PLAYBOOK_RULES,
    MAX_RULE_CHARACTERS,
    Playbook,
    PlaybookEdit,
    PlaybookRule,
    apply_playbook_edits,
    parse_playbook,
    parse_playbook_edits,
    playbook_file,
)

__all__ = [
    "BRIEF_PROMPT",
    "CARD_KINDS",
    "FOLD_PROMPT",
    "LESSONS_PER_FOLD",
    "MAX_BRIEF_CARDS",
    "MAX_PLAYBOOK_EDITS",
    "MAX_PLAYBOOK_RULES",
    "MAX_RULE_CHARACTERS",
    "MEMORY_RESERVED_PATHS",
    "OBSERVATIONS_DIRECTORY",
    "PLAYBOOK_DRAFT_PATH",
    "PLAYBOOK_PATH",
    "BriefCard",
    "BriefSource",
    "DedupeResult",
    "FoldResult",
    "MemoryBriefer",
    "MemoryConsolidator",
    "MemoryObservations",
    "ObservationRecord",
    "ObservationRefresh",
    "Playbook",
    "PlaybookEdit",
    "PlaybookFile",
    "PlaybookRule",
    "StaleMark",
    "apply_playbook_edits",
    "brief_block",
    "brief_for_turn",
    "discard_playbook_draft",
    "fold_lessons",
    "observation_file",
    "observation_path",
    "parse_brief",
    "parse_observation",
    "parse_playbook",
    "parse_playbook_edits",
    "playbook_file",
    "promote_playbook",
    "read_playbook",
    "read_playbook_draft",
]
