"""What the views of jobs of record share: ``POST`` on a thread starts a run in the
background (202, the run to poll, its URL in Location), ``GET`` on the run tells its
status. Each kind of run names its service and its run's URL."""

from __future__ import annotations

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from cogitator_memory import policy
from cogitator_memory.api.quotas import check_model_run_quota
from cogitator_memory.api.views.base import MemoryAPIView
from cogitator_memory.jobs import JobRun

__all__ = ["RequestRunView", "RunStatusView"]


# No docstrings on these bases: drf-spectacular would take them as the description of
# every operation that inherits them.


class RequestRunView(MemoryAPIView):
    # Starts a run on the thread, or answers with the one already open.

    # The URL name of the run's status view, for the Location header.
    run_url_name: str
    # The run's model: its rows count toward the quotas of model runs (api/quotas.py).
    run_model: type[JobRun]

    def request_run(self, thread_id: str) -> JobRun:
        raise NotImplementedError

    def post(self, request: Request, thread_id: str) -> Response:
        # Who may not write to the thread hears so before a quota is counted for them.
        thread = self.visible_thread(thread_id)
        policy.require_write(self.grants, thread.agent_id, thread.user_id)
        check_model_run_quota(thread, self.run_model)
        run = self.request_run(thread_id)
        location = reverse(self.run_url_name, args=[run.pk], request=request)
        return Response(
            self.get_serializer_class()(run).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": location},
        )


class RunStatusView(MemoryAPIView):
    # A run, if the caller may see its thread.

    def get_run(self, run_id: str) -> JobRun:
        raise NotImplementedError

    def get(self, request: Request, run_id: str) -> Response:
        return Response(self.get_serializer_class()(self.get_run(run_id)).data)
