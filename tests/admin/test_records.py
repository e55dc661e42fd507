"""What every model admin of the app shares: a page with nothing to edit has no save
buttons, because the admin says it cannot be changed."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import AbstractBaseUser
from django.test import RequestFactory

pytestmark = pytest.mark.django_db


def app_admins() -> list[admin.ModelAdmin]:
    return [
        model_admin
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label == "cogitator_memory"
    ]


def test_an_admin_that_lets_a_superuser_change_a_record_has_something_to_edit(
    admin_user: AbstractBaseUser,
) -> None:
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    changeable = []
    for model_admin in app_admins():
        if not model_admin.has_change_permission(request):
            continue
        form = model_admin.get_form(request, change=True)
        readonly = set(model_admin.get_readonly_fields(request))
        editable = [name for name in form.base_fields if name not in readonly]
        assert editable, f"{type(model_admin).__name__} offers Save with nothing to edit"
        changeable.append(type(model_admin).__name__)
    # the two that do: a thread's metadata, and grants
    assert sorted(changeable) == ["GrantAdmin", "ThreadAdmin"]
