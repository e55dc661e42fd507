from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CogitatorMemoryConfig(AppConfig):
    name = "cogitator_memory"
    label = "cogitator_memory"
    verbose_name = _("Cogitator memory")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing registers the system checks, the settings-cache receivers and the
        # receivers that enqueue tasks.
        from cogitator_memory import (  # noqa: F401
            checks,
            conf,
            dependents,
            tasks,
        )
        from cogitator_memory.embeddings import entry_vectors, registry, services  # noqa: F401
        from cogitator_memory.items import forgetting
        from cogitator_memory.keywords.entries import EntryKeywords
        from cogitator_memory.tasks import triggers  # noqa: F401

        # What stands on entries comes and goes with them, in the services' own transactions.
        dependents.register(entry_vectors.EntryVectors())
        dependents.register(forgetting.ItemsOnEntries())
        dependents.register(EntryKeywords())
        entry_vectors.register_outbox_handlers()
