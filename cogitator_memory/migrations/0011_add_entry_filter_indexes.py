from django.db import migrations, models

import cogitator_memory.index_operations


class Migration(migrations.Migration):
    # The entry table is the largest of the app: on PostgreSQL its indexes are built
    # concurrently, outside a transaction, so writers go on meanwhile.
    atomic = False

    dependencies = [
        ('cogitator_memory', '0010_add_extraction_windows'),
    ]

    operations = [
        cogitator_memory.index_operations.AddIndexWithoutBlocking(
            model_name='entry',
            index=models.Index(fields=['type', 'thread', 'seq'], name='cm_entry_type'),
        ),
        cogitator_memory.index_operations.AddIndexWithoutBlocking(
            model_name='entry',
            index=models.Index(fields=['role', 'thread', 'seq'], name='cm_entry_role'),
        ),
        cogitator_memory.index_operations.AddIndexWithoutBlocking(
            model_name='entry',
            index=models.Index(fields=['created_at'], name='cm_entry_created'),
        ),
    ]
