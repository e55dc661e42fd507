"""Template tags of the app's admin pages: the list pages' date drill-down, and the
count of items waiting for review that a project's admin index shows."""

from __future__ import annotations

from typing import Any

from django import template
from django.contrib.admin.views.main import ChangeList
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.date_hierarchy import date_hierarchy_links
from cogitator_memory.admin.scale import LargeTablePaginator
from cogitator_memory.items.models import ItemStatus, MemoryItem

register = template.Library()


@register.inclusion_tag("admin/date_hierarchy.html")
def indexed_date_hierarchy(cl: ChangeList) -> dict[str, Any]:
    """``{% indexed_date_hierarchy cl %}``: Django's date drill-down, its links found
    with index lookups (``admin.date_hierarchy``)."""
    return date_hierarchy_links(cl)


@register.inclusion_tag("admin/cogitator_memory/review_queue.html", takes_context=True)
def memory_review_queue(context: template.Context) -> dict[str, Any]:
    """``{% memory_review_queue %}``: how many suggested items wait for review within the
    user's grants, linking to the review list. Counted up to the list pages' limit (past
    it, "more than N"); nothing for a user who may not view memory items."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.has_perm("cogitator_memory.view_memoryitem"):
        return {"queue": None}
    try:
        url = reverse(
            "admin:cogitator_memory_memoryitem_changelist",
            current_app=getattr(request, "current_app", None),
        )
    except NoReverseMatch:
        return {"queue": None}
    limit = LargeTablePaginator.count_limit
    waiting = MemoryItem.objects.visible_to(grants_for_user(user)).filter(
        status=ItemStatus.SUGGESTED
    )
    count = waiting.order_by()[: limit + 1].count()
    return {
        "queue": {
            "count": min(count, limit),
            "more": count > limit,
            "url": f"{url}?{urlencode({'status': ItemStatus.SUGGESTED.value})}",
        }
    }
