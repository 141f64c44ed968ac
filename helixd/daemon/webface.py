"""The web face the daemon hosts: started once the worker and the status run, with the
daemon's actions (import, renormalize) and status; stopped before the drain."""

from __future__ import annotations

import asyncio
from typing import Any

from helixd.daemon import webhost
from helixd.daemon.jobs import Jobs
from helixd.daemon.workqueue import RECONCILE


class WebFace(Jobs):
    async def _serve_web(self) -> None:
        """The web face, once the worker and the status are running.  (Its modules are
        imported here, on the loop: imported in a worker thread, the background
        re-normalization at start failed — tests/test_renormalize.py.)"""
        if not self.settings.web.enabled:
            return
        await asyncio.sleep(0)  # the other tasks take their first step
        webhost.preload()
        if self.stop_event.is_set():
            return
        self.web = self._start_web()
        if self.web is not None:
            await self.web.serve()

    def _start_web(self) -> Any:
        """The HTTP API and dashboard (``[web]``), or None (disabled, or the port is taken:
        the daemon goes on without it)."""
        w = self.settings.web

        async def import_now() -> dict[str, Any]:
            self.queue.put(RECONCILE)
            return {"queued": ["reconcile"]}

        async def renormalize_now() -> dict[str, Any]:
            task = asyncio.create_task(self.scheduler.run_now("renormalize", self._job_renormalize))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return {"queued": ["renormalize"]}

        return webhost.start(
            enabled=w.enabled,
            host=w.host,
            port=w.port,
            allowed_hosts=w.allowed_hosts,
            store_db=self.settings.store.db,
            prices=self.prices,
            hub=self.hub,
            actions={"import": import_now, "renormalize": renormalize_now},
            status=self.snapshot,
        )
