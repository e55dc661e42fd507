"""A PostgreSQL index that serves the prefix of a directory (``path LIKE 'dir/%'``).

A btree of the database's collation serves ``LIKE 'prefix%'`` only when the collation is
``C``; under any other (``en_US.UTF-8``, ``C.UTF-8`` of libc) the prefix was a filter over
every head of the agent, so a directory view cost O(files). ``varchar_pattern_ops`` orders
by bytes and makes the prefix an index condition whatever the collation. SQLite needs no
index of its own: ``under_q`` asks it for the same paths as a range of
``cm_file_head_agent_path``. The index is not in the model's state (it exists on
PostgreSQL only), so nothing else of the schema changes.
"""

from django.db import migrations

INDEX = "cm_file_head_path_prefix"


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON cogitator_memory_memoryfilehead "
        "(agent_id varchar_pattern_ops, path varchar_pattern_ops)"
    )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [
        ("cogitator_memory", "0015_memory_file_redact_permission"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]
