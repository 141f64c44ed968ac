"""What comes in from outside the watcher: control-socket requests (ping, status, rescan,
flush, hook), an agent's hook ping (its transcript through the gate, its activity kept, its
session end queued), and the spool of hook messages written while the daemon was down."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import structlog

from helixd import __version__, paths
from helixd.adapters.hooktargets import hook_agent
from helixd.adapters.toolkinds import hook_activity
from helixd.core import protocol
from helixd.daemon.hookactivity import masked_row
from helixd.daemon.statusloop import StatusLoop
from helixd.daemon.worker import SESSION_END
from helixd.daemon.workqueue import RECONCILE
from helixd.sources.gate import NOT_CLAIMED, Refused, open_regular
from helixd.store.database import now_ms

log = structlog.get_logger("helixd")


class Dispatch(StatusLoop):
    async def _request(self, req: protocol.Request) -> dict[str, Any]:
        """One control-socket request (see ``docs/socket-protocol.md``)."""
        if req.op == "ping":
            return {"pong": True, "pid": os.getpid(), "version": __version__}
        if req.op == "status":
            return {"status": self.snapshot()}
        if req.op == "rescan":
            self.queue.put(RECONCILE)
            self.worker.wake.set()
            return {"queued": ["reconcile"]}
        if req.op == "flush":
            try:
                await asyncio.wait_for(self.queue.wait_idle(), req.timeout or 30)
            except TimeoutError:
                fault = self.health.fault
                why = f": {fault}" if fault else ""
                raise protocol.ProtocolError(
                    f"flush timed out; the queue is still busy{why}"
                ) from None
            return {"idle": True}
        return await self._hook(hook_agent(req.agent, req.payload, req.env), req.payload)

    async def _keep_hook_activity(
        self, agent: str | None, sid: str | None, activity: tuple[str, str | None, str, str]
    ) -> None:
        """A hook's shell command or edit, redacted, into ``hook_events`` (Tier 2: Hegel's
        hook activity per phase); the time is when it arrived.  Never fails the hook, never
        waits for a store recovery: activity met by a store fault is held and written once
        the store takes writes again (``helixd/daemon/hookactivity.py``)."""
        if agent is None or agent not in {a.name for a, _ in self.index.configured}:
            return  # an agent not read here (unknown, or disabled): nothing of it is kept
        await self.hook_activity.keep(self.guard.store, masked_row(now_ms(), agent, sid, activity))

    async def _hook(self, agent: str | None, payload: dict[str, Any]) -> dict[str, Any]:
        """An agent's hook ping: read its transcript now; a session end closes the session.
        A payload sent without naming its agent is attributed by its transcript's root.
        The path passes the gate (in a thread): one outside the roots, not a file the
        agent writes, or in another agent's root is refused (said in the reply) and a
        reconcile scan is queued instead."""
        path = protocol.transcript_path(payload)
        queued: list[str] = []
        reply: dict[str, Any] = {}
        src = None
        if path:
            try:
                src = await asyncio.to_thread(self.index.admit, path)
                if agent and src.adapter.name != agent:
                    raise Refused(path, NOT_CLAIMED, f"in {src.adapter.name}'s root, not {agent}'s")
            except Refused as exc:
                src = None
                reply["refused"] = str(exc)
                log.warning("hook_path_refused", agent=agent, path=path[:500], reason=exc.reason)
        if src is not None:
            agent = agent or src.adapter.name
            self.queue.put(src.path)
            queued.append(src.path)
        else:  # no usable path (Codex notify, Grok, Gemini): a stat scan finds what changed
            self.queue.put(RECONCILE)
            queued.append("reconcile")
        sid = protocol.session_id(payload)
        activity = hook_activity(payload)
        if activity is not None:
            await self._keep_hook_activity(agent, sid, activity)
        ended = bool(sid and agent) and protocol.session_ended(payload)
        if ended:  # applied by the worker after the transcript queued above was read
            self.queue.put(f"{SESSION_END}{agent}:{sid}")
        return {"queued": queued, "session_end": ended, **reply}

    async def _drain_spool(self) -> None:
        """Hook messages written while the daemon was down are served now, then dropped
        (read in a thread, opened like a source: a FIFO there cannot stall the start).  A
        drain that failed midway (an unreadable state folder) is taken up again by the
        next reconcile job, its file first."""
        spool = paths.spool_path()
        taken = spool.with_name(spool.name + ".draining")
        if not taken.exists():
            try:
                os.replace(spool, taken)
            except FileNotFoundError:
                return
        try:
            data = await asyncio.to_thread(_read_all, taken)
        except Refused as exc:
            log.error("spool_unreadable", path=str(taken), error=str(exc))
            data = b""
        served = 0
        for line in data.splitlines():
            with contextlib.suppress(protocol.ProtocolError):
                req = protocol.decode(line)
                if req.op == "hook":
                    await self._hook(hook_agent(req.agent, req.payload, req.env), req.payload)
                    served += 1
        taken.unlink()
        log.info("spool_drained", messages=served)


def _read_all(path: Path) -> bytes:
    with open_regular(path) as f:
        return f.read()
