"""Admin registrations, one module per model group."""

from cogitator_memory.admin import access, threads  # noqa: F401
