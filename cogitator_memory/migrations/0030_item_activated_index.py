from django.db import migrations, models

import cogitator_memory.index_operations


class Migration(migrations.Migration):
    """The items activated since a moment, in order (the sleep-time pass reads them). The
    items table may be large: on PostgreSQL the index is built concurrently, outside a
    transaction."""

    atomic = False

    dependencies = [
        ("cogitator_memory", "0029_upkeep_runs"),
    ]

    operations = [
        cogitator_memory.index_operations.AddIndexWithoutBlocking(
            model_name="memoryitem",
            index=models.Index(
                condition=models.Q(("activated_at__isnull", False)),
                fields=["activated_at", "id"],
                name="cm_item_activated",
            ),
        ),
    ]
