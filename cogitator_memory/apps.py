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
        from cogitator_memory.compaction.models import CompactionRun
        from cogitator_memory.embeddings import entry_vectors, registry, services  # noqa: F401
        from cogitator_memory.embeddings import sources as vector_sources
        from cogitator_memory.embeddings.message_index import MESSAGE_VECTORS
        from cogitator_memory.files.forgetting import FileVersionsOnEntries
        from cogitator_memory.graph.forgetting import GraphOnEntries
        from cogitator_memory.graph.subject_nodes import nodes_of_activated_items
        from cogitator_memory.items import forgetting
        from cogitator_memory.items.activation import register_activation_step
        from cogitator_memory.items.models import ExtractionRun
        from cogitator_memory.items.vectors import ITEM_VECTORS
        from cogitator_memory.jobs import RunsOnEntries
        from cogitator_memory.keywords.entries import EntryKeywords
        from cogitator_memory.tasks import triggers  # noqa: F401

        # What stands on entries comes and goes with them, in the services' own transactions
        # (every model holding entry ids or text derived from entries is named by one of
        # these: tests/test_dependents.py).
        dependents.register(entry_vectors.EntryVectors())
        dependents.register(forgetting.ItemsOnEntries())
        dependents.register(forgetting.ExtractionWindows())
        dependents.register(EntryKeywords())
        dependents.register(FileVersionsOnEntries())
        dependents.register(GraphOnEntries())
        register_activation_step("graph.subject_nodes", nodes_of_activated_items)
        dependents.register(RunsOnEntries("extraction_runs", ExtractionRun))
        dependents.register(
            RunsOnEntries("compaction_runs", CompactionRun, entry_fields=["compaction_entry_id"])
        )
        # What names memory items (playbook rules name their lessons) goes with them.
        from cogitator_memory.upkeep.playbook_forgetting import PlaybookRulesOnLessons

        dependents.register_item_dependent(PlaybookRulesOnLessons())
        entry_vectors.register_outbox_handlers()
        # What names memory items (observations) goes with them.
        from cogitator_memory.upkeep.observation_forgetting import ObservationsOfItems

        dependents.register_item_dependent(ObservationsOfItems())
        # Every kind of job of record, for the sweeper and the admin's retry action.
        from cogitator_memory.cascade.runs import register_forget_jobs
        from cogitator_memory.compaction.runs import register_compaction_jobs
        from cogitator_memory.embeddings.pending_vectors import register_pending_vector_jobs
        from cogitator_memory.items.runs import register_extraction_jobs
        from cogitator_memory.upkeep.passes import register_upkeep_jobs

        register_extraction_jobs()
        register_compaction_jobs()
        register_forget_jobs()
        register_pending_vector_jobs()
        register_upkeep_jobs()
        # Every kind of vector the app writes, for the pruner and the searches' check of
        # each hit against its source.
        vector_sources.register_source(MESSAGE_VECTORS)
        vector_sources.register_source(ITEM_VECTORS)
