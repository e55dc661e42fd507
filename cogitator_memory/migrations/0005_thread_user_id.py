from django.db import migrations, models

USER_ID_KEY = "userId"
BATCH_SIZE = 1000


def copy_user_ids(apps, schema_editor):
    """Fill ``Thread.user_id`` from ``metadata.userId`` where it is a non-empty text of
    at most 255 characters; other values (numbers, lists) leave the thread without a user,
    so grants that name users do not see it (as before, when they were compared by type)."""
    Thread = apps.get_model("cogitator_memory", "Thread")
    changed = []
    for thread in Thread.objects.only("id", "metadata").iterator(chunk_size=BATCH_SIZE):
        metadata = thread.metadata if isinstance(thread.metadata, dict) else {}
        value = metadata.get(USER_ID_KEY)
        if isinstance(value, str) and 0 < len(value) <= 255:
            thread.user_id = value
            changed.append(thread)
        if len(changed) >= BATCH_SIZE:
            Thread.objects.bulk_update(changed, ["user_id"])
            changed = []
    if changed:
        Thread.objects.bulk_update(changed, ["user_id"])


class Migration(migrations.Migration):

    dependencies = [
        ("cogitator_memory", "0004_add_embeddings"),
    ]

    operations = [
        migrations.AddField(
            model_name="thread",
            name="user_id",
            field=models.CharField(
                blank=True,
                editable=False,
                help_text="The user the thread belongs to: a copy of metadata.userId, kept equal to it on every save. Grants that name users are checked against it.",
                max_length=255,
                null=True,
                verbose_name="user id",
            ),
        ),
        migrations.AddIndex(
            model_name="thread",
            index=models.Index(fields=["agent_id", "user_id"], name="cm_thread_owner"),
        ),
        migrations.RunPython(copy_user_ids, migrations.RunPython.noop, elidable=True),
    ]
