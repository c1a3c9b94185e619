"""`regcheck record -o TRACE -- PROGRAM ARGS...`: run a program and record its registration calls.

Exit status: the program's own (128 + N when signal N ended it), so a script can tell how the
program ran; regcheck's own problems (no compiler, a failed build, a bad option) exit 2 with a
diagnostic before the program starts.
"""

from __future__ import annotations

import argparse

from ..engines.record import build_interposer, header_env, record
from .common import EXIT_INPUT, EXIT_OK, render_all


def register(sub) -> None:
    p = sub.add_parser(
        "record", usage="%(prog)s -o TRACE [--spec SPEC] [--env KEY=VALUE]... [options] -- PROGRAM [ARGS...]\n"
                        "       %(prog)s --build-only",
        help="run a program and record its host-memory registration calls as a trace",
        description="Run PROGRAM with an LD_PRELOAD interposer that records the host registration calls of "
                    "the spec's family (acl: Ascend CANN's aclrtHostRegisterV2 family; cuda: the CUDA runtime's "
                    "cudaHostRegister family, cudaMalloc, cudaFree, cudaSetDeviceFlags; hip: HIP's hipHostRegister "
                    "family, hipMalloc, hipFree) and the allocations and mappings they touch into TRACE (format v1, "
                    "docs/trace-format.md); check it with `regcheck replay TRACE`. The interposer is built with "
                    "the system C compiler on first use (docs/recording.md). Exit status: the program's; 2 for "
                    "regcheck's own errors.")
    p.add_argument("-o", "--output", metavar="TRACE",
                   help="the trace file to write (created or truncated; required unless --build-only)")
    p.add_argument("--spec", default="acl",
                   help="the spec named in the trace header: acl (default), cuda, hip, or a spec file declaring "
                        "one of their call families (cuPVA calls are not intercepted)")
    p.add_argument("--env", action="append", default=[], type=_pair, metavar="KEY=VALUE",
                   help="a spec parameter for the trace header, e.g. --env os_kernel=5.10 --env product=AtlasA3 "
                        "or --env cuda_runtime=12.4 (repeatable; unset parameters take the host's value where "
                        "regcheck can read it, else the spec's default)")
    p.add_argument("--build-only", action="store_true",
                   help="build the interposer into the cache (e.g. at install time), print its path, run nothing")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS...]",
                   help="the program to run and its arguments")
    p.set_defaults(run=run, env_type=_pair)  # env_type: how project --env defaults are converted


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return name.strip(), value


def run(args, out) -> int:
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if args.build_only:
        out.out(str(build_interposer()))
        return EXIT_OK
    if not args.output or not program:
        out.err("regcheck record: error: give the trace file with -o TRACE and the program after `--`, "
                "e.g. regcheck record -o run.jsonl -- ./app")
        return EXIT_INPUT
    env = header_env(args.spec, args.env)
    result = record(program, args.output, args.spec, env)
    if result.warnings:
        out.err(render_all(result.warnings))
    how = (f"was killed by signal {result.signal}" if result.signal is not None
           else f"exited with status {result.status}")
    if result.recorded_pid is None:
        out.err(f"regcheck: no registration calls were recorded in {result.output} (the program made none "
                f"that the interposer saw); {program[0]} {how}")
    else:
        counted = "events" if result.events is None else f"{result.events} events"
        out.err(f"regcheck: recorded {counted} from process {result.recorded_pid} into "
                f"{result.output}; {program[0]} {how}")
    return result.status
