"""A task only the Celery round-trip test uses; its worker loads this module with --include."""

from celery import shared_task


@shared_task(name="tests.celery_roundtrip_tasks.add_task")
def add_task(a: int, b: int) -> int:
    return a + b
