"""Files: inputs are read only from regular files; one writer is behind every file a command writes.

`open_input` refuses what is not a regular file (a FIFO would block every command, /dev/zero never
ends). Outputs (traces, ITF, suites, reports) go through `OutputFile` / `write_output`:

A regular file (or a path that does not exist yet) is written atomically: into a temporary file in
the same directory, renamed over the target only when every byte is written, so an error part-way
leaves the old file (or nothing) there. Anything else that a path may name (a character device such
as /dev/null or /dev/stdout, a FIFO, a socket, or a symlink to one of them) is never renamed over:
it is opened and written in place. A directory is refused. Every failure (a missing directory, no
permission, a full device) is a `RegcheckError` with code E0603 (or the caller's code) naming the
path, never a bare `OSError`.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from .diagnostics import RegcheckError, error
from .source import Span

CODE_CANNOT_WRITE = "E0603"


def open_input(path: str, code: str, what: str, verb: str = "open") -> BinaryIO:
    """Open a file for reading, refusing what is not a regular file (a FIFO would block, a device
    such as /dev/zero never ends): RegcheckError `code` ("cannot VERB WHAT: why") otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise RegcheckError([error(code, f"cannot {verb} {what}: {exc.strerror or exc}", Span(path, 0, 0))]) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise RegcheckError([error(code, f"cannot read {what}: it is {kind}; give a regular file",
                                       Span(path, 0, 0))])
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def cannot_write(path: str, exc: OSError | str, code: str = CODE_CANNOT_WRITE) -> RegcheckError:
    """The error for an output that cannot be written."""
    why = exc if isinstance(exc, str) else (exc.strerror or str(exc))
    return RegcheckError([error(code, f"cannot write {path}: {why}")])


class OutputFile:
    """One output being written: `file` takes the bytes, `commit()` puts them in place, `abort()`
    drops them (the target is then left as it was, when it is a regular file).

    Usable as a context manager: commits on a normal exit, aborts on an exception."""

    def __init__(self, path: str | os.PathLike[str], code: str = CODE_CANNOT_WRITE):
        self.path = os.fspath(path)
        self.code = code
        self._partial: str | None = None
        self._target = self.path
        self._done = False
        self.special = False  # a device, FIFO or socket, written in place
        try:
            self.file: BinaryIO = self._open()
        except OSError as exc:
            raise cannot_write(self.path, exc, code) from None

    def _open(self) -> BinaryIO:
        try:
            st = os.stat(self.path)  # follows symlinks: what a write would reach
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "is a directory")
        if st is not None and not stat.S_ISREG(st.st_mode):
            # A device, FIFO or socket: written in place, never replaced by a regular file.
            self.special = True
            return open(self.path, "wb")  # noqa: SIM115 - closed by commit/abort
        # A regular file, a new one, or a symlink to either: a temporary file beside the real target.
        self._target = os.path.realpath(self.path) if os.path.islink(self.path) else self.path
        directory = os.path.dirname(self._target) or "."
        try:
            fd, self._partial = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(self._target)}.",
                                                 suffix=".partial")
        except PermissionError:
            if st is None:
                raise
            # The directory is not writable but the file is: write it in place (not atomic).
            return open(self._target, "wb")  # noqa: SIM115
        umask = os.umask(0)
        os.umask(umask)
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~umask
        try:
            os.fchmod(fd, mode)
        except OSError:
            pass
        return os.fdopen(fd, "wb")

    def commit(self) -> None:
        """Flush, close and (for a regular file) rename into place; E0603 on any failure."""
        if self._done:
            return
        self._done = True
        try:
            self.file.close()
            if self._partial is not None:
                os.replace(self._partial, self._target)
                self._partial = None
        except OSError as exc:
            self._drop()
            raise cannot_write(self.path, exc, self.code) from None

    def abort(self) -> None:
        """Drop what was written (a regular target keeps its old content)."""
        if self._done:
            return
        self._done = True
        try:
            self.file.close()
        except OSError:
            pass
        self._drop()

    def _drop(self) -> None:
        if self._partial is not None:
            try:
                os.unlink(self._partial)
            except OSError:
                pass
            self._partial = None

    def write(self, data: bytes) -> None:
        try:
            self.file.write(data)
        except OSError as exc:
            self.abort()
            raise cannot_write(self.path, exc, self.code) from None

    def __enter__(self) -> "OutputFile":
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()


def write_output(path: str | os.PathLike[str], data: bytes | str, code: str = CODE_CANNOT_WRITE) -> str:
    """Write a whole output file (text is written as UTF-8); returns the path."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    with OutputFile(path, code) as f:
        f.write(data)
    return os.fspath(path)


def make_directory(path: str | os.PathLike[str], code: str = CODE_CANNOT_WRITE) -> Path:
    """Create an output directory (and its parents) if needed; E0603 when it cannot be."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(os.fspath(path), exc, code) from None
    if not p.is_dir():
        raise cannot_write(os.fspath(path), "not a directory", code)
    return p
