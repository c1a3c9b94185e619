"""The command line: the only place that prints or chooses exit codes.

Exit codes (all commands): 0 success / conforms / proved, 1 findings (spec errors for `check`,
violations for `replay`, refuted or unknown obligations for `prove`), 2 bad input or usage
(unreadable file, malformed spec or trace, unknown name), 3 internal error (a bug: please report).
Each subcommand lives in its own module of this package and registers itself below.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from typing import Sequence, TextIO

from ..language.diagnostics import RegcheckError
from .common import EXIT_INPUT, EXIT_INTERNAL, Output, add_spec_limits, print_input_error, use_colour
from .config import (SPEC_PATH_VARIABLE, ProjectConfig, env_items, export_spec_path, load_project_config, resolve_spec,
                     restore_spec_path)

# Subcommand modules, in the order `regcheck --help` lists them; a module that is absent is skipped.
COMMAND_MODULES = ("check", "rules", "replay", "record", "shrink", "prove", "simulate", "execute", "generate",
                   "conform", "fuzz", "itf", "diagram", "completion")
WHOLE_PARSER_COMMANDS = frozenset({"completion"})  # they read every subcommand's parser


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as exit 2 without printing a traceback; the error keeps
    the parser it came from, so that a subcommand's mistake shows that subcommand's usage. It also
    keeps its arguments in `arguments` and its subcommands in `commands` (argparse keeps both private)
    for the help test and `regcheck completion`."""

    def __init__(self, *args, **kwargs):
        self.arguments: list[argparse.Action] = []
        self.commands: dict[str, argparse.ArgumentParser] = {}
        super().__init__(*args, **kwargs)

    def _add_action(self, action):
        self.arguments.append(action)
        return super()._add_action(action)

    def error(self, message: str):  # type: ignore[override]
        raise _UsageError(f"{self.prog}: error: {message}", self)


class _UsageError(Exception):
    def __init__(self, message: str, parser: argparse.ArgumentParser):
        super().__init__(message)
        self.parser = parser


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; given the arguments, only the subcommand they name (see `commands_needed`)."""
    from .. import __version__
    from ..model.state import NATIVE

    speedups = "on" if NATIVE is not None else "off"  # off: not built, or REGCHECK_PURE_PYTHON set
    parser = _Parser(prog="regcheck", description="Executable, provable specs of host-memory registration APIs.")
    parser.add_argument("-V", "--version", action="version", version=f"regcheck {__version__} (C speedups: {speedups})",
                        help="print the version (and whether the C speedups are on) and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES if argv is None else commands_needed(argv):
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        module.register(sub)
    for command in sub.choices.values():  # every command reads a spec, named or in a trace header
        add_spec_limits(command)
    parser.commands = dict(sub.choices)
    parser.set_defaults(root_parser=parser)  # `regcheck completion` walks it
    return parser


def commands_needed(argv: Sequence[str]) -> tuple[str, ...]:
    """The subcommand modules a run with these arguments needs. Each module imports its engines (Z3, the
    testgen machinery) when it is imported, most of the start-up time, so a run imports only the one it
    names; `--version` needs none. Help, a usage error (whose message lists the commands) and `completion`
    (which walks every parser) need them all."""
    for arg in argv:
        if arg in ("-h", "--help"):
            return COMMAND_MODULES
        if arg in ("-V", "--version"):
            return ()
        if not arg.startswith("-"):
            return (arg,) if arg in COMMAND_MODULES and arg not in WHOLE_PARSER_COMMANDS else COMMAND_MODULES
    return COMMAND_MODULES


def parse_command_line(parser, argv: list[str]) -> argparse.Namespace:
    """parse_args, except that arguments the subcommand does not know are that subcommand's usage error
    (argparse leaves them to the top-level parser, whose usage says nothing about the subcommand)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = parser.commands.get(getattr(args, "command", None) or "", parser)
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def apply_format_default(parser, fmt: str | None) -> None:
    """The project's default --format, on every subcommand that offers that format."""
    if fmt is None:
        return
    for command in parser.commands.values():
        for action in command.arguments:
            if action.dest == "format" and action.choices and fmt in action.choices:
                action.default = fmt


def apply_project(args, config: ProjectConfig) -> None:
    """Spec names looked up on the project's spec_path, and its env defaults (those of parameters the
    command's spec has) before the command line's --env, so that the command line's win."""
    if config.spec_path:
        export_spec_path(config.spec_path)
        for name in ("spec", "specs"):
            value = getattr(args, name, None)
            if isinstance(value, str):
                setattr(args, name, resolve_spec(value, config.spec_path))
            elif isinstance(value, list):
                setattr(args, name, [resolve_spec(v, config.spec_path) for v in value])
    if config.env and isinstance(getattr(args, "env", None), list) and isinstance(getattr(args, "spec", None), str):
        items = env_items(spec_env(config.env, args.spec))
        convert = getattr(args, "env_type", None)
        args.env = [convert(i) if convert else i for i in items] + args.env


def spec_env(env: dict, spec_name: str) -> dict:
    """The project env values of parameters `spec_name` declares (all of them when it cannot be read:
    the command then reports that)."""
    from ..language.load import load_spec

    try:
        params = load_spec(spec_name).params
    except RegcheckError:
        return env
    return {k: v for k, v in env.items() if k in params}


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run regcheck in-process (tests call this); returns the exit code."""
    out = Output(stdout or sys.stdout, stderr or sys.stderr)
    out.colour = use_colour(out.stdout)
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    try:
        config, config_error = load_project_config(), None
    except RegcheckError as exc:  # reported once a command runs, so that --help and --version still work
        config, config_error = ProjectConfig(), exc
    apply_format_default(parser, config.format)
    try:
        args = parse_command_line(parser, argv)
    except _UsageError as exc:
        out.err(exc.parser.format_usage().rstrip())
        out.err(str(exc))
        return EXIT_INPUT
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    if not getattr(args, "command", None):
        out.out(parser.format_help().rstrip())
        return EXIT_INPUT
    if config_error is not None and args.command != "completion":  # (shell set-up reads no project)
        print_input_error(out, config_error, getattr(args, "format", "text"), command=args.command)
        return EXIT_INPUT
    from ..language.load import set_spec_limits
    from ..trace.events import DEFAULT_MAX_LINE_BYTES
    from ..trace.reader import set_max_line_bytes

    set_max_line_bytes(getattr(args, "max_line_bytes", None) or DEFAULT_MAX_LINE_BYTES)  # per run, also in-process
    set_spec_limits(args.max_spec_bytes, args.max_spec_nesting)
    saved_spec_path = os.environ.get(SPEC_PATH_VARIABLE)
    try:
        apply_project(args, config)
        return int(args.run(args, out))
    except RegcheckError as exc:
        print_input_error(out, exc, getattr(args, "format", "text"), command=args.command)
        return EXIT_INPUT
    except KeyboardInterrupt as exc:  # (Terminated too: `entry` turns SIGTERM into it)
        if isinstance(exc, Terminated):
            out.err("regcheck: terminated")
            return 128 + signal.SIGTERM
        out.err("regcheck: interrupted")
        return 130
    except BrokenPipeError:
        return 0
    finally:
        set_max_line_bytes(DEFAULT_MAX_LINE_BYTES)
        set_spec_limits()
        restore_spec_path(saved_spec_path)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, so that it stops as on SIGINT: workers, child programs
    and partial output files cleaned up by the same handlers (the default action left them)."""


def _raise_terminated(signum, frame) -> None:
    if _in_unsafe_code(frame):
        _send_again(signum)
        return
    raise Terminated()


def _raise_interrupted(signum, frame) -> None:
    """Python's own SIGINT handler (KeyboardInterrupt), put off as `_raise_terminated` is."""
    if _in_unsafe_code(frame):
        _send_again(signum)
        return
    raise KeyboardInterrupt()


_Z3_DIR = f"{os.sep}z3{os.sep}"
_AGAIN_S = 0.005


def _send_again(signum: int) -> None:
    """The signal again in a moment, from another thread: sent from here, Python would run this
    handler again at once (recursively), still in the code it has to leave first."""
    import threading

    timer = threading.Timer(_AGAIN_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


def _in_unsafe_code(frame) -> bool:
    """Whether a signal arrived in code that an exception must not leave halfway: a finalizer
    (`__del__`: the exception is printed as "Exception ignored" and the signal is lost) or z3's
    Python layer (its reference counts can be left wrong, a crash later, or the exception turns
    into a ctypes ArgumentError). The handler then has the signal sent again, so that it is raised
    once that code has returned; z3's long calls (a check) run in a worker thread meanwhile
    (`checker.symbolic.solver.interruptible_check`), so the wait is short."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or _Z3_DIR in code.co_filename:
            return True
        frame = frame.f_back
    return False


def entry() -> None:
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:  # (an ignored SIGTERM stays ignored)
        signal.signal(signal.SIGTERM, _raise_terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupted)
    try:
        code = main()
    except KeyboardInterrupt as exc:  # before `main` could take it (while starting up): the same codes
        code = 128 + signal.SIGTERM if isinstance(exc, Terminated) else 130
    except Exception:  # a bug, not bad input: keep the traceback, use the documented code
        import traceback

        traceback.print_exc()
        code = EXIT_INTERNAL
    sys.exit(code)
