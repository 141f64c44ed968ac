"""The fleet dashboard's pages (``helixd/web/fleet.py``): each view is a few tables built
from the fleet's answers (``FleetApi``) and drawn by one template, ``fleet.html``; the
machine and user filters are a plain form (no script)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from helixd import __version__
from helixd.web.render import compact, environment, money, pct, when

if TYPE_CHECKING:
    from helixd.web.fleet import FleetApi, FleetFilter


@dataclass(slots=True)
class Table:
    """A titled table: column names, rows of cells (text, or ``(text, href)`` for a link)."""

    title: str
    columns: Sequence[str]
    rows: list[list[Any]] = field(default_factory=list)
    id: str = ""
    note: str = ""


def _spend_rows(by: dict[str, dict[str, Any]]) -> list[list[Any]]:
    ordered = sorted(by.items(), key=lambda kv: (-kv[1]["cost"], kv[0]))
    return [[k, v["sessions"], compact(v["tokens"]), money(v["cost"])] for k, v in ordered]


def _spend(title: str, key: str, by: dict[str, dict[str, Any]], id_: str) -> Table:
    return Table(title, (key, "sessions", "tokens", "cost"), _spend_rows(by), id_)


class FleetPages:
    def __init__(self, api: FleetApi, views: Sequence[tuple[str, str, str]]) -> None:
        from helixd.web.fleet import HERE

        self.api = api
        self.views = views
        self.env = environment(HERE / "templates")

    def handler(self, name: str) -> Callable[[Request], Awaitable[Response]]:
        build = getattr(self, f"_{name}")

        async def page(request: Request) -> Response:
            from helixd.web.fleet import FleetFilter

            f = FleetFilter.of(request.query_params)
            tables = await build(f, request)
            return await self._render(name, f, tables)

        return page

    async def _render(
        self, view: str, f: FleetFilter | None, tables: list[Table], title: str = ""
    ) -> Response:
        machines = await self.api.machines()
        return HTMLResponse(
            self.env.get_template("fleet.html").render(
                view=view,
                views=self.views,
                title=title or dict((k, t) for k, _, t in self.views).get(view, view),
                f=f,
                query=f.query() if f else "",
                machine_names=sorted({m["machine"] for m in machines}),
                user_names=sorted({m["user"] for m in machines}),
                tables=tables,
                version=__version__,
                price_date=self.api.prices[0],
            )
        )

    def error(self, status: int, message: str) -> str:
        return self.env.get_template("fleet.html").render(
            view="error", views=self.views, title=f"Error {status}", f=None, query="",
            machine_names=[], user_names=[], tables=[], error=message, version=__version__,
            price_date=self.api.prices[0],
        )  # fmt: skip

    # -- the views -------------------------------------------------------------------------
    async def _overview(self, f: FleetFilter, request: Request) -> list[Table]:
        machines = await self.api.machines()
        stats = await self.api.stats(f, 10, ("sessions", "usage", "model_sessions"))
        fleet_table = Table(
            "Machines",
            ("machine", "user", "sessions stored", "last push (UTC)", "sends text", "Helix"),
            [
                [m["machine"], m["user"], m["sessions"], when(m["last_push_at"]),
                 "yes" if m["include_text"] else "no", m["version"] or "—"]
                for m in machines
                if (not f.machines or m["machine"] in f.machines)
                and (not f.users or m["user"] in f.users)
            ],
            "machines",
        )  # fmt: skip
        return [
            fleet_table,
            _spend("By machine", "machine", stats["by_machine"], "by-machine"),
            _spend("By user", "user", stats["by_user"], "by-user"),
            _spend("By agent", "agent", stats["by_agent"], "by-agent"),
            _spend("By model", "model", stats["by_model"], "by-model"),
        ]

    async def _sessions(self, f: FleetFilter, request: Request) -> list[Table]:
        from helixd.web.fleet import shown_sessions

        limit = shown_sessions(request.query_params)
        doc = await self.api.report(f, "session")
        latest = doc["sessions"][-limit:]
        rows = [
            [
                (e["sessionId"], "/sessions/" + quote(e["sessionId"], safe=":")),
                e["machine"], e["user"], e["agent"], e["projectPath"] or "—",
                e["lastActivity"] or "—", compact(e["totalTokens"]), money(e["totalCost"]),
            ]
            for e in reversed(latest)
        ]  # fmt: skip
        total = len(doc["sessions"])
        title = f"Sessions ({total})" if total <= limit else f"The latest {limit} of {total}"
        return [
            Table(
                title,
                ("session", "machine", "user", "agent", "project", "last activity", "tokens",
                 "cost"),
                rows,
                "sessions",
            )
        ]  # fmt: skip

    async def _costs(self, f: FleetFilter, request: Request) -> list[Table]:
        doc = await self.api.report(f, "daily")
        days = [
            [
                e["date"], compact(e["totalTokens"]), money(e["totalCost"]),
                ", ".join(f"{m['machine']} {money(m['cost'])}" for m in e["machineBreakdowns"]),
            ]
            for e in reversed(doc["daily"])
        ]  # fmt: skip
        split = [
            [m["machine"], m["user"], compact(m["totalTokens"]), money(m["cost"])]
            for m in doc["machines"]
        ]
        users = [[u["user"], compact(u["totalTokens"]), money(u["cost"])] for u in doc["users"]]
        return [
            Table("By machine", ("machine", "user", "tokens", "cost"), split, "cost-machines"),
            Table("By user", ("user", "tokens", "cost"), users, "cost-users"),
            Table("By day (UTC)", ("day", "tokens", "cost", "machines"), days, "cost-days"),
        ]

    async def _tools(self, f: FleetFilter, request: Request) -> list[Table]:
        stats = await self.api.stats(f, 50, ("tools",))
        hooks = await self.api.hooks(f)
        tools = [
            [t["tool"], t["calls"], t["errors"], t["rejected"], t["interrupted"],
             pct(t["success_rate"]) if t["success_rate"] is not None else "—"]
            for t in stats["tools"]
        ]  # fmt: skip
        return [
            Table("Tool calls", ("tool", "calls", "errors", "rejected", "interrupted",
                                 "success"), tools, "tools"),
            Table(
                "Hook activity",
                ("machine", "user", "what", "tool", "events"),
                [[h["machine"], h["user"], h["what"], h["tool"], h["events"]] for h in hooks],
                "hooks",
            ),
        ]  # fmt: skip

    async def _files(self, f: FleetFilter, request: Request) -> list[Table]:
        stats = await self.api.stats(f, 50, ("files",))
        acc = await self.api.acceptance(f)
        return [
            Table(
                "Edit acceptance",
                ("machine", "user", "edits", "accepted", "rejected", "no verdict", "accepted %"),
                [[a["machine"], a["user"], a["edits"], a["accepted"], a["rejected"], a["unknown"],
                  pct(a["accept_rate"]) if a["accept_rate"] is not None else "—"] for a in acc],
                "acceptance",
            ),
            Table(
                "Most edited files",
                ("path", "edits", "sessions", "+lines", "−lines"),
                [[x["path"], x["edits"], x["sessions"], x["lines_added"], x["lines_removed"]]
                 for x in stats["files"]],
                "files",
            ),
        ]  # fmt: skip

    async def _tests(self, f: FleetFilter, request: Request) -> list[Table]:
        stats = await self.api.stats(f, 50, ("tests",))
        rows = [
            [fw, v["runs"], v["passed"], v["failed"], v["tests_passed"], v["tests_failed"],
             pct(v["pass_rate"]) if v["pass_rate"] is not None else "—"]
            for fw, v in sorted(stats["tests"].items())
        ]  # fmt: skip
        return [
            Table("Test runs by framework", ("framework", "runs", "passed", "failed",
                  "tests passed", "tests failed", "pass rate"), rows, "tests")
        ]  # fmt: skip

    async def session(self, request: Request) -> Response:
        uid = request.path_params["uid"]
        held = await self.api.session(uid)
        if not held:
            return HTMLResponse(self.error(404, f"no session {uid!r} on any machine"), 404)
        tables = []
        for h in held:
            facts = Table(
                f"{h['machine']} ({h['user']})",
                ("agent", "project", "model", "started", "ended", "messages", "events"),
                [[h["agent"], h["repo"] or "—", h["model"] or "—", h["started_at"] or "—",
                  h["ended_at"] or "—", h["messages"], h["events_total"]]],
                note=h["note"] or "",
            )  # fmt: skip
            tables.append(facts)
            if h["events"] is not None:
                tables.append(
                    Table(
                        f"Conversation sent by {h['machine']}",
                        ("seq", "time", "kind", "role", "tool", "summary"),
                        [[e["seq"], e["ts"] or "—", e["kind"], e["role"] or "", e["tool"] or "",
                          e["summary"]] for e in h["events"]],
                        "transcript",
                    )
                )  # fmt: skip
        return await self._render("session", None, tables, title=uid)
