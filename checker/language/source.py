"""Source text and positions: the first stage, imported by everything that reports a place."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file; 1-based line and column of its start (and end)."""

    path: str
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


NO_SPAN = Span("<none>", 0, 0)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """The text of one spec or trace file, with fast line lookup for diagnostics."""

    path: str
    text: str
    _line_starts: tuple[int, ...] = field(default=(), compare=False, repr=False)

    @staticmethod
    def of(path: str, text: str) -> "SourceFile":
        starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                starts.append(i + 1)
        return SourceFile(path, text, tuple(starts))

    def line_text(self, line: int) -> str:
        if line < 1 or line > len(self._line_starts):
            return ""
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]
