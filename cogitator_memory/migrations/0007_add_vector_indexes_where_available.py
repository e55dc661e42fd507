from django.db import migrations

import cogitator_memory.embeddings.schema


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY cannot run inside a transaction; building the index
    # this way lets writers go on on a table that already holds rows.
    atomic = False

    dependencies = [
        ('cogitator_memory', '0006_add_outbox'),
    ]

    operations = [
        cogitator_memory.embeddings.schema.AddVectorIndexesWhereAvailable(),
    ]
