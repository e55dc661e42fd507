"""Between runs: the pre-turn brief, observations of entities, consolidation into a
playbook. Each asks a model through the ``llm`` seam and checks what it answers before
anything is kept."""

from cogitator_memory.files.paths import (
    MEMORY_RESERVED_PATHS,
    OBSERVATIONS_DIRECTORY,
    PLAYBOOK_DRAFT_PATH,
    PLAYBOOK_PATH,
)
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
    "FOLD_PROMPT",
    "LESSONS_PER_FOLD",
    "MAX_PLAYBOOK_EDITS",
    "MAX_PLAYBOOK_RULES",
    "MAX_RULE_CHARACTERS",
    "MEMORY_RESERVED_PATHS",
    "OBSERVATIONS_DIRECTORY",
    "PLAYBOOK_DRAFT_PATH",
    "PLAYBOOK_PATH",
    "DedupeResult",
    "FoldResult",
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
    "discard_playbook_draft",
    "fold_lessons",
    "observation_file",
    "observation_path",
    "parse_observation",
    "parse_playbook",
    "parse_playbook_edits",
    "playbook_file",
    "promote_playbook",
    "read_playbook",
    "read_playbook_draft",
]
