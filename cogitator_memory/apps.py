from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CogitatorMemoryConfig(AppConfig):
    name = "cogitator_memory"
    label = "cogitator_memory"
    verbose_name = _("Cogitator memory")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing registers the system checks and the settings-cache receivers.
        from cogitator_memory import checks, conf  # noqa: F401
        from cogitator_memory.embeddings import receivers, registry, services  # noqa: F401
