"""Admin registrations, one module per model group."""

from cogitator_memory.admin import (  # noqa: F401
    entities,
    files,
    graph,
    items,
    jobs,
    outbox,
    playbook,
    runs,
    sessions,
    threads,
    upkeep,
)
from cogitator_memory.checks import missing_required_apps

# The grant form needs the user and API key models: without their apps it cannot be built,
# and the system check cogitator_memory.E008 names what to add instead of a traceback here.
if not missing_required_apps():
    from cogitator_memory.admin import access  # noqa: F401
