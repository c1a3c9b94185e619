"""Files: inputs are read only from regular files; one writer is behind every file a command writes.

`open_input` refuses what is not a regular file (a FIFO would block every command, /dev/zero never
ends), except standard input named as "-" where the caller allows it. `open_decompressed` reads a
gzip, xz or zstd file (or standard input) as its decompressed bytes, told apart by their first bytes,
not by the file name; a stream cut short or damaged reads as `CorruptInput` (an OSError). Outputs (traces, ITF, suites, reports) go through `OutputFile` / `write_output`:

A regular file (or a path that does not exist yet) is written atomically: into a temporary file in
the same directory, renamed over the target only when every byte is written, so an error part-way
leaves the old file (or nothing) there. Anything else that a path may name (a character device such
as /dev/null or /dev/stdout, a FIFO, a socket, or a symlink to one of them) is never renamed over:
it is opened and written in place. A directory is refused. Every failure (a missing directory, no
permission, a full device) is a `RegcheckError` with code E0603 (or the caller's code) naming the
path, never a bare `OSError`.
"""

from __future__ import annotations

import gzip
import io
import lzma
import os
import stat
import tempfile
import zlib
from pathlib import Path
from typing import BinaryIO

import zstandard

from .diagnostics import RegcheckError, error
from .source import Span

CODE_CANNOT_WRITE = "E0603"
STDIN = "-"  # the path that stands for standard input, where a caller allows it


def private_cache_dir() -> str | None:
    """This user's cache folder: REGCHECK_CACHE_DIR, else $XDG_CACHE_HOME/regcheck, else
    ~/.cache/regcheck (made 0700); None when it cannot be made or another user could write to it
    (what is cached there is read with pickle, so nobody else may plant a file in it)."""
    folder = os.environ.get("REGCHECK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "regcheck")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        return None
    return folder


def open_input(path: str, code: str, what: str, verb: str = "open", stdin: bool = False,
               shown: str | None = None) -> BinaryIO:
    """Open a file for reading, refusing what is not a regular file (a FIFO would block, a device
    such as /dev/zero never ends): RegcheckError `code` ("cannot VERB WHAT: why") otherwise, its
    span naming the file `shown` (default: `path`; a worker opens an absolute path the user named
    otherwise).

    With `stdin`, the path "-" is standard input, whatever it is (a pipe, a terminal, a file): the
    user asked for it by name. Closing what is returned leaves the process's own standard input open."""
    named = path if shown is None else shown
    if stdin and path == STDIN:
        try:
            return os.fdopen(os.dup(0), "rb")
        except OSError as exc:
            raise RegcheckError([error(code, f"cannot {verb} {what} from standard input: {exc.strerror or exc}",
                                       Span(named, 0, 0))]) from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise RegcheckError([error(code, f"cannot {verb} {what}: {exc.strerror or exc}", Span(named, 0, 0))]) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise RegcheckError([error(code, f"cannot read {what}: it is {kind}; give a regular file",
                                       Span(named, 0, 0))])
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


# ---------------------------------------------------------------- compressed inputs

# The first bytes of each format (RFC 1952, the xz file format, RFC 8878): what a file is, whatever its name.
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))
MAGIC_BYTES = max(len(m) for m, _ in _MAGIC)
_CHUNK = 1 << 16


class CorruptInput(OSError):
    """A compressed input that cannot be decompressed: cut short, or damaged. An OSError, so that
    every loop that passes read failures on passes this one on too."""


def compression_of(head: bytes) -> str | None:
    """The compression ("gzip", "xz", "zstd") that a file starting with `head` uses; None for none."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return None


def open_decompressed(path: str, code: str, what: str, stdin: bool = False,
                      shown: str | None = None) -> tuple[BinaryIO, str | None]:
    """`open_input`, then (file, compression): a gzip, xz or zstd input reads as its decompressed
    bytes (`readline`, `read`, `close`); failures to decompress raise `CorruptInput` when read."""
    f = open_input(path, code, what, stdin=stdin, shown=shown)
    try:
        head = _read_head(f)
        kind = compression_of(head)
        f = _rewound(f, head)
        return (f if kind is None else _Decompressed(kind, f)), kind  # type: ignore[return-value]
    except OSError as exc:
        f.close()
        raise RegcheckError([error(code, f"cannot read {what}: {exc.strerror or exc}",
                                   Span(path if shown is None else shown, 0, 0))]) from None
    except BaseException:
        f.close()
        raise


def _read_head(f: BinaryIO) -> bytes:
    """Up to MAGIC_BYTES first bytes (a pipe may hand them over a few at a time)."""
    head = b""
    while len(head) < MAGIC_BYTES:
        got = f.read(MAGIC_BYTES - len(head))
        if not got:
            break
        head += got
    return head


def _rewound(f: BinaryIO, head: bytes) -> BinaryIO:
    """`f` from where it was before `head` was read: a file seeks back (standard input redirected from
    a file may start part-way into it), a pipe gets its first bytes put in front."""
    if f.seekable():
        f.seek(-len(head), os.SEEK_CUR)
        return f
    return io.BufferedReader(_Prefixed(head, f), _CHUNK)  # type: ignore[arg-type]


class _Prefixed(io.RawIOBase):
    """`prefix`, then the rest of `rest`."""

    def __init__(self, prefix: bytes, rest: BinaryIO):
        self._prefix = prefix
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._prefix:
            n = min(len(buffer), len(self._prefix))
            buffer[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        data = self._rest.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._rest.close()
        super().close()


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a zstd stream of one or more frames. Unlike the library's own
    stream reader, an input that ends inside a frame is an error, not a quiet end."""

    def __init__(self, source: BinaryIO):
        self._source = source
        self._dctx = zstandard.ZstdDecompressor()
        self._frame = self._dctx.decompressobj()
        self._in_frame = False  # bytes of the current frame have been fed to it
        self._out = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._out:
            data = self._source.read(_CHUNK)
            if not data:
                if self._in_frame:
                    raise EOFError("the stream ends inside a zstd frame")
                return 0
            self._feed(data)
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def _feed(self, data: bytes) -> None:
        while data:
            self._in_frame = True
            self._out += self._frame.decompress(data)
            if not self._frame.eof:
                return
            data = self._frame.unused_data  # the next frame starts here
            self._frame = self._dctx.decompressobj()
            self._in_frame = False

    def close(self) -> None:
        self._source.close()
        super().close()


class _Decompressed:
    """A compressed input read as its decompressed bytes; every way decompressing fails is a CorruptInput."""

    def __init__(self, kind: str, raw: BinaryIO):
        self.kind = kind
        self._raw = raw
        if kind == "gzip":
            self._inner: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        elif kind == "xz":
            self._inner = lzma.LZMAFile(raw)  # type: ignore[assignment]
        else:
            self._inner = io.BufferedReader(_ZstdFrames(raw), _CHUNK)  # type: ignore[arg-type]

    def readline(self, size: int = -1) -> bytes:
        return self._guarded(self._inner.readline, size)

    def read(self, size: int = -1) -> bytes:
        return self._guarded(self._inner.read, size)

    def _guarded(self, read, size: int) -> bytes:
        try:
            return read(size)
        except EOFError:
            raise CorruptInput(f"the {self.kind} stream is cut short: it ends before its end marker") from None
        except (gzip.BadGzipFile, zlib.error, lzma.LZMAError, zstandard.ZstdError) as exc:
            raise CorruptInput(f"the {self.kind} stream is corrupt: {exc}") from None

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()

    def __enter__(self) -> "_Decompressed":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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


def require_writable(path: str | os.PathLike[str], code: str = CODE_CANNOT_WRITE) -> None:
    """E0603 now for an output that could not be written later (a directory, or in a directory that
    does not exist): a command with two outputs checks the second before it writes the first."""
    p = Path(path)
    if p.is_dir():
        raise cannot_write(os.fspath(path), "it is a directory")
    if not p.parent.is_dir():
        raise cannot_write(os.fspath(path), "no such directory")


def require_directory_possible(path: str | os.PathLike[str], code: str = CODE_CANNOT_WRITE) -> None:
    """E0603 now for an output directory that `make_directory` could not make later, because a part
    of its path is a file: a command that computes for a while before it writes (generate) says so
    before the work, not after it. Nothing is created; permissions are left to the writing itself."""
    p = Path(path)
    for part in (p, *p.parents):
        if part.exists():
            if not part.is_dir():
                raise cannot_write(os.fspath(path), f"{os.fspath(part)} is not a directory", code)
            return


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
