"""Create the demo site's admin login once and print it."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from project.demo.site import demo_url

DEMO_USERNAME = "admin"
DEMO_PASSWORD = "cogitator-demo"


class Command(BaseCommand):
    help = "Create the demo superuser (admin / cogitator-demo) if it does not exist."

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        if not user_model.objects.filter(username=DEMO_USERNAME).exists():
            user_model.objects.create_superuser(DEMO_USERNAME, "", DEMO_PASSWORD)
            self.stdout.write("Created the demo admin login.")
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo admin: {demo_url('/admin/')}  "
                f"user {DEMO_USERNAME!r}  password {DEMO_PASSWORD!r}"
            )
        )
