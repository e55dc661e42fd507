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

__all__ = [
    "MEMORY_RESERVED_PATHS",
    "OBSERVATIONS_DIRECTORY",
    "PLAYBOOK_DRAFT_PATH",
    "PLAYBOOK_PATH",
    "DedupeResult",
    "MemoryConsolidator",
    "MemoryObservations",
    "ObservationRecord",
    "ObservationRefresh",
    "StaleMark",
    "observation_file",
    "observation_path",
    "parse_observation",
]
