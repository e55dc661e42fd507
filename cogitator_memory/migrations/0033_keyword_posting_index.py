"""The keyword postings' term index as a CoveringIndex: the same index in every database.

0020 made it with Django's ``include=``, which PostgreSQL built with ``INCLUDE
(document_id)`` and SQLite without; a CoveringIndex builds it just so, and leaves SQLite's
``check`` and ``migrate`` without models.W040. Only the migration state changes: no index
is dropped or rebuilt.
"""

from django.db import migrations

import cogitator_memory.index_operations


class Migration(migrations.Migration):
    dependencies = [
        ("cogitator_memory", "0032_knowledge_graph"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(
                    model_name="keywordposting",
                    name="cm_kwposting_term",
                ),
                migrations.AddIndex(
                    model_name="keywordposting",
                    index=cogitator_memory.index_operations.CoveringIndex(
                        fields=["corpus", "term", "-count", "length", "-id"],
                        covering=("document_id",),
                        name="cm_kwposting_term",
                    ),
                ),
            ],
        ),
    ]
