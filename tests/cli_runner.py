"""``helixctl`` in process: ``main(argv)`` with its own stdout, stderr and environment, for the
tests that drive many commands quickly (the CLI as a subprocess is ``conftest.helixctl``).

``CliRunner().invoke(main, argv, env=…)`` returns the exit code and what was written; an env
value of None removes that variable for the run.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = None

    @property
    def output(self) -> str:
        """stdout, then stderr."""
        return self.stdout + self.stderr


@contextlib.contextmanager
def _environment(env: Mapping[str, str | None]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in env}
    try:
        for key, value in env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)


class CliRunner:
    def invoke(
        self,
        main: Callable[[list[str]], int],
        args: Sequence[str],
        env: Mapping[str, str | None] | None = None,
        catch_exceptions: bool = True,
    ) -> Result:
        out, err = _stream(), _stream()
        saved = sys.stdin, sys.stdout, sys.stderr
        exception: BaseException | None = None
        sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
        sys.stdout, sys.stderr = out, err
        try:
            with _environment(env or {}):
                code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int | None):
                err.write(f"{exc.code}\n")
        except Exception as exc:
            if not catch_exceptions:
                raise
            code, exception = 1, exc
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved

        def text(stream: io.TextIOWrapper) -> str:
            stream.flush()
            raw = stream.buffer
            assert isinstance(raw, io.BytesIO)
            return raw.getvalue().decode("utf-8", "replace")

        return Result(code, text(out), text(err), exception)
