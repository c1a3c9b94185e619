"""The command line: the only place that prints or chooses exit codes.

Exit codes (all commands): 0 success / conforms / proved, 1 findings (spec errors for `check`,
violations for `replay`, refuted or unknown obligations for `prove`), 2 bad input or usage
(unreadable file, malformed spec or trace, unknown name), 3 internal error (a bug: please report).
Each subcommand lives in its own module of this package and registers itself below.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence, TextIO

from ..language.diagnostics import RegcheckError
from .common import EXIT_INPUT, EXIT_INTERNAL, Output, add_spec_limits, print_input_error

# Subcommand modules, in the order `regcheck --help` lists them; a module that is absent is skipped.
COMMAND_MODULES = ("check", "rules", "replay", "record", "shrink", "prove", "simulate", "execute", "generate", "conform", "fuzz", "itf", "diagram")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as exit 2 without printing a traceback."""

    def error(self, message: str):  # type: ignore[override]
        raise _UsageError(f"{self.prog}: error: {message}")


class _UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    from ..model.state import NATIVE

    speedups = "on" if NATIVE is not None else "off"  # off: not built, or REGCHECK_PURE_PYTHON set
    parser = _Parser(prog="regcheck", description="Executable, provable specs of host-memory registration APIs.")
    parser.add_argument("--version", action="version", version=f"regcheck {__version__} (C speedups: {speedups})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        module.register(sub)
    for command in sub.choices.values():  # every command reads a spec, named or in a trace header
        add_spec_limits(command)
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run regcheck in-process (tests call this); returns the exit code."""
    out = Output(stdout or sys.stdout, stderr or sys.stderr)
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except _UsageError as exc:
        out.err(parser.format_usage().rstrip())
        out.err(str(exc))
        return EXIT_INPUT
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    if not getattr(args, "command", None):
        out.out(parser.format_help().rstrip())
        return EXIT_INPUT
    from ..language.load import set_spec_limits
    from ..trace.events import DEFAULT_MAX_LINE_BYTES
    from ..trace.reader import set_max_line_bytes

    set_max_line_bytes(getattr(args, "max_line_bytes", None) or DEFAULT_MAX_LINE_BYTES)  # per run, also in-process
    set_spec_limits(args.max_spec_bytes, args.max_spec_nesting)
    try:
        return int(args.run(args, out))
    except RegcheckError as exc:
        print_input_error(out, exc, getattr(args, "format", "text"))
        return EXIT_INPUT
    except KeyboardInterrupt:
        out.err("regcheck: interrupted")
        return 130
    except BrokenPipeError:
        return 0
    finally:
        set_max_line_bytes(DEFAULT_MAX_LINE_BYTES)
        set_spec_limits()


def entry() -> None:
    try:
        code = main()
    except Exception:  # a bug, not bad input: keep the traceback, use the documented code
        import traceback

        traceback.print_exc()
        code = EXIT_INTERNAL
    sys.exit(code)
