"""Progress bars for long runs: drawn with rich on a terminal, nothing at all otherwise.

    with progress_bar(stream, total=len(paths), description="replaying") as bar:
        for p in paths:
            ...
            bar.advance()

`bar.update(completed, total, description)` sets the position instead (a run whose phases have
their own totals: `regcheck prove`). A description is drawn as written (file names may hold `[`,
which rich would read as markup) with control characters and bidirectional overrides escaped, as
the CLI's text output has them. The CLI passes its standard error; when that is not a terminal (a
pipe, a file, CI logs, a test's StringIO) the bar is a no-op, so output meant for machines never
carries escape codes. The bar is transient: it disappears when the run ends, leaving only the report.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, TextIO

from ..language.diagnostics import escape_controls


class QuietBar:
    """The bar when the stream is not a terminal: does nothing."""

    def advance(self, n: int = 1) -> None:
        pass

    def describe(self, text: str) -> None:
        pass

    def update(self, completed: int, total: int | None = None, description: str | None = None) -> None:
        pass


class RichBar:
    def __init__(self, progress, task):
        self._progress = progress
        self._task = task

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)

    def describe(self, text: str) -> None:
        self._progress.update(self._task, description=escape_controls(text))

    def update(self, completed: int, total: int | None = None, description: str | None = None) -> None:
        """Move to `completed` of `total` steps (None: the total stays), with a new description."""
        self._progress.update(self._task, completed=completed, total=total,
                              description=None if description is None else escape_controls(description))


def is_terminal(stream: TextIO | None) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


@contextmanager
def progress_bar(stream: TextIO | None, total: int | None, description: str) -> Iterator[QuietBar | RichBar]:
    """A bar of `total` steps (None: unknown) drawn on `stream` if it is a terminal."""
    if not is_terminal(stream):
        yield QuietBar()
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    console = Console(file=stream)
    # A description holds file names and spec text: shown as written, never read as rich markup
    # (`a[bold]b.jsonl` lost its brackets, `dir[/b]x.spec` raised MarkupError), controls escaped.
    columns = (TextColumn("{task.description}", style="progress.description", markup=False), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as p:
        yield RichBar(p, p.add_task(escape_controls(description), total=total))
