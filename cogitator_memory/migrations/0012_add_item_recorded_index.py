from django.db import migrations, models

import cogitator_memory.index_operations


class Migration(migrations.Migration):
    # Items are many: on PostgreSQL the index is built concurrently, outside a transaction.
    atomic = False

    dependencies = [
        ("cogitator_memory", "0011_add_entry_filter_indexes"),
    ]

    operations = [
        cogitator_memory.index_operations.AddIndexWithoutBlocking(
            model_name="memoryitem",
            index=models.Index(fields=["-recorded_at", "-id"], name="cm_item_recorded"),
        ),
    ]
