"""The status line Claude Code shows under its prompt (its ``statusLine`` setting runs
``helix-statusline`` after every assistant message, JSON of the session on stdin).

One line: this session's cost and tokens (its subagents included), today's spend across
every agent, and the burn rate (the spend of the last hour)::

    helix ◆ session $1.24 · 412k tok ◆ today $18.07 ◆ $3.10/h

It must be fast (issue 14: 50 ms p95, whole process; ``bench/statusline.py``), so this module
sits outside every package that loads anything (``helixd/__init__`` holds only the version)
and imports ``os``, ``sys``, ``time`` and ``sqlite3`` — no ``pathlib``, ``typing``, ``re``,
``json`` (SQLite parses the JSON on stdin), no settings reader, no price book;
``tests/test_statusline.py`` pins the modules it loads.  What it would need them for comes
two ways:

* **settings**: with no config file and no ``HELIX_STORE__*`` / ``HELIX_PRICES__*`` /
  ``HELIX_CONFIG`` variable, the store is ``$HELIX_STORE_DB`` or the platform's data
  directory, worked out here as ``helixd.paths`` does (a test pins the two equal); otherwise
  ``helixd.readconfig`` reads the config, as every read command does;
* **prices**: each model's price, as ``helixd.prices`` resolves it, is kept in a small memo
  (``<cache dir>/statusline-prices.tsv``) keyed by everything the price depends on — the
  installed genai-prices data, today's date (prices have start dates), Helix's price code and
  bundled table, the configured table file and overrides.  A model the memo lacks, or a
  changed key, loads the price book once and rewrites the memo; the costs are the book's
  (a test pins the line's session cost to ``helixctl lookup``'s).

``helixctl statusline`` prints the same line through the CLI.  It never fails the
agent: a problem prints a short line and exits 0.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # not `typing`: its import costs more than the line's query
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, TextIO, TypeAlias

    Price: TypeAlias = tuple[float, float, float, float, float] | None
    Settings: TypeAlias = tuple[str, str | None, Mapping[str, Mapping[str, float]]]
    Rows: TypeAlias = list[tuple[Any, ...]]

PREFIX = "helix"
SEP = " ◆ "
BUCKET_MS = 900_000  # the usage rollup's 15-minute buckets
MEMO = "statusline-prices.tsv"
MEMO_FORMAT = "1"
# The counters' prices in the order of the rows' counters (``helixd.core.pricing.FIELDS``).
FIELDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
# Variables (lower-cased) that can change the store or the prices other than HELIX_STORE_DB:
# with one set, the settings reader decides.
_SETTINGS_ENV = ("helix_store", "helix_prices", "helix_config")


def tokens_text(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.0f}k"
    return str(n)


# -- where things are (as helixd.paths says, without pathlib; pinned equal by test) ----------
def _home(environ: Mapping[str, str]) -> str:
    return environ.get("HOME") or os.path.expanduser("~")


def default_store_path(environ: Mapping[str, str] = os.environ) -> str | None:
    """The default store on Linux and macOS (None elsewhere: ``helixd.paths`` decides)."""
    home = environ.get("HOME")
    if sys.platform == "darwin" and home:
        return os.path.join(home, "Library", "Application Support", "helix", "helix.db")
    if sys.platform.startswith("linux") and home:
        base = environ.get("XDG_DATA_HOME", "").strip() or os.path.join(home, ".local", "share")
        return os.path.join(base, "helix", "helix.db")
    return None


def default_config_path(environ: Mapping[str, str] = os.environ) -> str | None:
    home = environ.get("HOME")
    if sys.platform == "darwin" and home:
        return os.path.join(home, "Library", "Application Support", "helix", "config.toml")
    if sys.platform.startswith("linux") and home:
        base = environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(home, ".config")
        return os.path.join(base, "helix", "config.toml")
    return None


def cache_dir(environ: Mapping[str, str] = os.environ) -> str:
    if environ.get("HELIX_CACHE_DIR"):
        return environ["HELIX_CACHE_DIR"]
    if sys.platform == "darwin":
        return os.path.join(_home(environ), "Library", "Caches", "helix")
    base = environ.get("XDG_CACHE_HOME") or os.path.join(_home(environ), ".cache")
    return os.path.join(base, "helix")


def plain_store(environ: Mapping[str, str] = os.environ) -> str | None:
    """The store when nothing configures it (no config file, no variable the settings reader
    interprets but ``HELIX_STORE_DB``); None when the settings reader must decide."""
    if any(k.lower().startswith(_SETTINGS_ENV) and k != "HELIX_STORE_DB" for k in environ):
        return None
    config = default_config_path(environ)
    if config is None or os.path.exists(config):
        return None
    db = environ.get("HELIX_STORE_DB")
    return os.path.expanduser(db) if db else default_store_path(environ)


def settings(config: str | None) -> Settings:
    """``(store, price table file, price overrides)``."""
    db = plain_store() if config is None else None
    if db is not None:
        return db, None, {}
    from pathlib import Path

    from helixd.readconfig import read_config

    rc = read_config(None if config is None else Path(config))
    table = None if rc.prices_table is None else str(rc.prices_table)
    return str(rc.store_db), table, rc.price_overrides


# -- prices: the book's answers, memoized -----------------------------------------------------
def genai_data_key() -> str | None:
    """Where genai-prices' data module is, its size and mtime (as ``helixd.prices`` keys its
    flattened cache; pinned equal by test): the memo is stale when it changes."""
    if "genai_prices" in sys.modules and sys.modules["genai_prices"] is None:
        return None
    for entry in sys.path:
        if entry and os.path.isfile(os.path.join(entry, "genai_prices", "__init__.py")):
            data = os.path.join(entry, "genai_prices", "data.py")
            try:
                st = os.stat(data)
            except OSError:
                return None
            return f"1:{data}:{st.st_size}:{st.st_mtime_ns}"
    return None


def _stat(path: str | None) -> str:
    if path is None:
        return "-"
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:missing"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def memo_key(table: str | None, overrides: Mapping[str, Mapping[str, float]], day: str) -> str:
    """Everything a price depends on, in one line of text."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = [os.path.join(here, *p) for p in (("core", "prices.json"), ("core", "pricing.py"))]
    code.append(os.path.join(here, "prices.py"))
    parts = [MEMO_FORMAT, day, str(genai_data_key()), *map(_stat, code), _stat(table)]
    parts.append(repr(sorted((m, sorted(f.items())) for m, f in overrides.items())))
    return "\t".join(p.replace("\t", " ").replace("\n", " ") for p in parts)


def read_memo(path: str, key: str) -> dict[str, Price]:
    """``{model: price}`` of the memo at ``path`` when its key is ``key``; else empty."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.readline().rstrip("\n") != key:
                return {}
            out: dict[str, Price] = {}
            for row in f:
                model, *fields = row.rstrip("\n").split("\t")
                out[model] = None if fields == ["-"] else _five(float(x) for x in fields)
            return out
    except (OSError, ValueError):
        return {}


def _five(xs: Any) -> tuple[float, float, float, float, float]:
    a, b, c, d, e = xs
    return a, b, c, d, e


def write_memo(path: str, key: str, prices: Mapping[str, Price]) -> None:
    """Replace the memo (a reader sees the old or the new file, never half of one); a memo
    that cannot be written only makes the next line slower."""
    lines = [key]
    for model, p in prices.items():
        if "\t" in model or "\n" in model or "\r" in model:
            continue  # never memoized: priced by the book on every line
        lines.append(model + "\t" + ("-" if p is None else "\t".join(map(repr, p))))
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def prices_for(
    models: set[str], table: str | None, overrides: Mapping[str, Mapping[str, float]]
) -> dict[str, Price]:
    """Each model's price as ``helixd.prices.effective`` gives it (``FIELDS`` order, None:
    unpriced), from the memo; the book is loaded only for what the memo lacks.
    PriceTableError for a configured table that cannot be read."""
    day = time.strftime("%Y-%m-%d", time.gmtime())
    key = memo_key(table, overrides, day)
    path = os.path.join(cache_dir(), MEMO)
    known = read_memo(path, key)
    missing = models - known.keys()
    if missing:
        from pathlib import Path

        from helixd.core.pricing import price_for
        from helixd.prices import effective

        _, book = effective(None if table is None else Path(table), overrides, today=day)
        for model in missing:
            p = price_for(book, model)
            known[model] = None if p is None else _five(p[f] for f in FIELDS)
        write_memo(path, key, known)
    return known


def cost(price: Price, c: Sequence[int]) -> float:
    """USD of one model's counters, as ``helixd.core.pricing.cost`` adds them (pinned by
    test: the same floats in the same order give the same sum)."""
    if price is None:
        return 0.0
    return (
        c[0] * price[0] + c[1] * price[1] + c[2] * price[2] + c[3] * price[3] + c[4] * price[4]
    ) / 1e6


# -- the figures --------------------------------------------------------------------------------
def local_midnight_ms(now_ms: int) -> int:
    """The epoch ms of the local midnight that starts ``now_ms``'s day (the machine's zone),
    as ``helixd.query.now.local_midnight_ms`` (pinned by test)."""
    t = time.localtime(now_ms / 1000)
    return int(time.mktime((t.tm_year, t.tm_mon, t.tm_mday, 0, 0, 0, 0, 0, -1)) * 1000)


def spend(rows: Rows, prices: Mapping[str, Price]) -> tuple[float, int]:
    """``(usd, tokens)`` of ``(model, *counters, recorded usd, costed)`` rows, priced as the
    reports' default ``--cost auto`` prices them (``helixd.core.usage_report.priced``, pinned
    by test): the dollars the agent recorded, and the table's price for the share of the
    tokens of the responses that carry none."""
    usd, tokens = 0.0, 0
    for model, *c in rows:
        n = c[6]
        recorded = float(c[7] or 0) if len(c) > 7 else 0.0
        costed = int(c[8] or 0) if len(c) > 8 else 0
        if not costed:
            usd += cost(prices[model], c)
        elif costed >= n:
            usd += recorded
        else:
            rest = n - costed
            usd += recorded + cost(prices[model], [v * rest / n for v in c[:5]])
        tokens += sum(c[:5])
    return usd, tokens


def _stdin_text(stdin: TextIO) -> str:
    """What Claude Code pipes in ('' when run by hand at a terminal)."""
    if stdin.isatty():
        return ""
    try:
        return stdin.buffer.read().decode("utf-8", errors="replace")
    except AttributeError:  # a text stream without bytes under it
        return stdin.read()


def line(config: str | None = None, stdin: TextIO = sys.stdin) -> str:
    """The status line, or a short reason when there is nothing to show."""
    from helixd.store import now_queries
    from helixd.store.readonly import NoStore, open_reader

    doc = _stdin_text(stdin)
    try:
        store_db, table, overrides = settings(config)
        con = open_reader(store_db)
    except (NoStore, ValueError) as exc:  # ConfigError is a ValueError
        return f"{PREFIX}: {str(exc).splitlines()[0][:120]}"
    try:
        sid = now_queries.json_text(con, doc, "$.session_id") if doc.strip() else None
        sid = sid or None
        now_ms = int(time.time() * 1000)
        session = None
        if sid and now_queries.known_session(con, sid):
            session = now_queries.session_usage(con, sid)
        today = now_queries.usage_since(con, local_midnight_ms(now_ms) // BUCKET_MS)
        last_hour = now_queries.usage_since(con, now_ms // BUCKET_MS - 3)
    finally:
        con.close()
    models = {r[0] for rows in (session or [], today, last_hour) for r in rows}
    try:
        prices = prices_for(models, table, overrides)
    except ValueError as exc:  # PriceTableError
        return f"{PREFIX}: {str(exc).splitlines()[0][:120]}"
    parts = [PREFIX]
    if session is not None:
        usd, tokens = spend(session, prices)
        parts.append(f"session ${usd:,.2f} · {tokens_text(tokens)} tok")
    elif sid:
        parts.append("session not ingested yet")
    parts.append(f"today ${spend(today, prices)[0]:,.2f}")
    parts.append(f"${spend(last_hour, prices)[0]:,.2f}/h")
    return SEP.join(parts)


def main(argv: list[str]) -> int:
    """``helix-statusline [--config PATH]``: print the line; always exit 0."""
    config = None
    if "-h" in argv or "--help" in argv:
        print((__doc__ or "").split("\n\n")[0].replace("``", "`"))
        return 0
    if "--config" in argv:
        i = argv.index("--config")
        config = argv[i + 1] if i + 1 < len(argv) else None
    try:
        text = line(config)
    except Exception as exc:  # never fail the agent's prompt line
        text = f"{PREFIX}: {type(exc).__name__}: {str(exc)[:100]}"
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


def run() -> None:
    """The ``helix-statusline`` console script."""
    sys.exit(main(sys.argv[1:]))
