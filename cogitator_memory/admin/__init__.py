"""Admin registrations, one module per model group."""

from cogitator_memory.admin import threads  # noqa: F401
