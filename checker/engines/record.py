"""Recording real programs: build the LD_PRELOAD interposer and run a program under it.

`record(argv, output, spec, env)` writes the trace header, runs the program with
`LD_PRELOAD=<interposer>` and `REGCHECK_TRACE=<output>`, waits for it and returns its exit status.
The interposer (checker/engines/interposer/regcheck_preload.c, package data) appends one event per line
while the program runs; docs/recording.md says what it intercepts and what it cannot see.

The interposer is C, compiled on first use with the system compiler (`$CC`, else `cc`, `gcc` or
`clang` on PATH) into a per-user cache, `$XDG_CACHE_HOME/regcheck/` or `~/.cache/regcheck/`,
keyed by a hash of the source and of the compiler's identity, so an edited source or another
compiler gets a new build. Without a compiler an earlier build of the same source is used.

Three call families are recorded, one per trace: Ascend CANN (`acl`), the CUDA runtime (`cuda`)
and HIP (`hip`). The family is the first of `RECORDED_CALLS` whose calls the spec all declares;
the interposer learns it from `REGCHECK_FAMILY` and writes only that family's calls. For cuda and
hip the header's runtime version is read from the runtime library the program links, when it can
be found (`runtime_env`).

Error codes (X08xx, environment; X0801-X0808 belong to checker.drivers.pinning and checker.drivers.executor):
  X0810  no C compiler found (and no earlier build of this interposer in the cache)
  X0811  the interposer failed to build (the message carries the compiler's output)
  X0812  the spec cannot be recorded: it does not declare every call of any family the interposer
         writes (acl, cuda, hip), or declares only one of `mprotect` and mmap's `prot`; cuPVA is
         not intercepted (see the docs)
  X0813  the build cache or the trace file cannot be written
  X0814  the program cannot be started
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from .. import __version__
from ..language.diagnostics import Diagnostic, RegcheckError, error, warning
from ..language.files import OutputFile, cannot_write
from ..language.load import load_spec
from ..model.values import parse_version, resolve_config
from ..trace.events import TraceHeader
from ..trace.writer import TraceWriter

CODE_NO_COMPILER = "X0810"
CODE_BUILD_FAILED = "X0811"
CODE_SPEC_NOT_RECORDABLE = "X0812"
CODE_CANNOT_WRITE = "X0813"
CODE_CANNOT_RUN = "X0814"
CODE_NOT_INTERCEPTABLE = "X0815"  # a warning: the program will run, but nothing can be recorded

SOURCE_NAME = "regcheck_preload.c"
COMPILERS = ("cc", "gcc", "clang")
CFLAGS = ("-shared", "-fPIC", "-O2", "-pthread")
LIBS = ("-ldl",)
BUILD_TIMEOUT_S = 300
MAX_COMPILER_OUTPUT = 4000

# The calls the interposer writes, per family (the value of REGCHECK_FAMILY); a spec must declare
# all of one family's to have its traces recorded. In acl traces a registered mapping is written as
# `malloc`/`free` (the acl spec has no mapping events), in cuda and hip ones as `mmap`/`munmap`.
RECORDED_CALLS: dict[str, tuple[str, ...]] = {
    "acl": ("malloc", "free", "aclrtMallocHost", "aclrtFreeHost", "aclrtHostRegisterV2",
            "aclrtHostGetDevicePointer", "aclrtHostUnregister"),
    "cuda": ("malloc", "free", "mmap", "munmap", "cudaHostRegister", "cudaHostUnregister",
             "cudaHostGetDevicePointer", "cudaHostGetFlags", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost",
             "cudaMalloc", "cudaFree", "cudaSetDeviceFlags"),
    "hip": ("malloc", "free", "mmap", "munmap", "hipHostRegister", "hipHostUnregister", "hipHostGetDevicePointer",
            "hipHostMalloc", "hipHostFree", "hipMalloc", "hipFree"),
}
# A mapping's protection, in the families with mapping events: `mmap`'s `prot` (written when not
# read-write) and the `mprotect` event. A spec that declares both gets them; one that declares
# neither (a cuda or hip spec written before stop 41) is recorded without them, and the header's
# meta says so (PROTECTIONS_LEFT_OUT); one that declares only one of the two is X0812.
PROTECTION_FAMILIES = ("cuda", "hip")
PROTECTION_EVENT, PROTECTION_ARG = "mprotect", "prot"
PROTECTIONS_LEFT_OUT = "protections_not_recorded"


@dataclass(frozen=True, slots=True)
class RuntimeLibrary:
    """Where a family's runtime version comes from: its parameter, library and version call."""
    param: str  # the spec parameter it fills
    soname: str  # the library's name, without a version suffix
    function: str  # int F(int *version), answered without a device


RUNTIME_LIBRARIES = {
    "cuda": RuntimeLibrary("cuda_runtime", "libcudart.so", "cudaRuntimeGetVersion"),
    "hip": RuntimeLibrary("hip_runtime", "libamdhip64.so", "hipRuntimeGetVersion"),
}
RUNTIME_QUERY_TIMEOUT_S = 60


@dataclass(frozen=True, slots=True)
class Compiler:
    argv: tuple[str, ...]  # the command, e.g. ("gcc",) or ("ccache", "cc")
    path: str  # where argv[0] was found


@dataclass(frozen=True, slots=True)
class RecordResult:
    status: int  # the program's exit status, as a shell reports it (128 + N for signal N)
    signal: int | None  # the signal that ended the program, if one did
    output: str  # the trace written
    events: int | None  # event lines in the trace (None: written to a pipe or device, not counted)
    recorded_pid: int | None  # the process whose calls are in the trace (None: no event written)
    interposer: str  # the shared object that was preloaded
    warnings: tuple[Diagnostic, ...] = ()


# ---------------------------------------------------------------- building the interposer


def interposer_source() -> bytes:
    """The interposer's C source, shipped as package data."""
    return resources.files("checker.engines").joinpath("interposer", SOURCE_NAME).read_bytes()


def cache_root(environ: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/regcheck` (an absolute XDG_CACHE_HOME only, as the XDG spec says), else
    `~/.cache/regcheck`."""
    xdg = environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path(environ.get("HOME") or os.path.expanduser("~")) / ".cache"
    return base / "regcheck"


def find_compiler(environ: Mapping[str, str]) -> tuple[Compiler | None, str]:
    """The C compiler to use and, when there is none, why (for the X0810 message)."""
    search = environ.get("PATH", "")
    cc = environ.get("CC", "").strip()
    if cc:
        try:
            argv = tuple(shlex.split(cc))
        except ValueError as exc:  # an unbalanced quote: not a command line
            return None, f"CC={cc!r} is not a command line ({exc})"
        found = _which(argv[0], search)
        if found is None:
            return None, f"CC={cc!r} names no executable program"
        return Compiler(argv, found), ""
    for name in COMPILERS:
        found = _which(name, search)
        if found is not None:
            return Compiler((name,), found), ""
    return None, f"none of {', '.join(COMPILERS)} is on PATH and CC is not set"


def _which(program: str, search: str) -> str | None:
    if "/" in program:
        return program if os.path.isfile(program) and os.access(program, os.X_OK) else None
    return shutil.which(program, path=search)


def _compiler_identity(compiler: Compiler, environ: Mapping[str, str]) -> str:
    """What makes two builds different: the compiler's path and version, the flags, the machine."""
    try:
        done = subprocess.run([*compiler.argv, "--version"], capture_output=True, env=dict(environ),
                              timeout=60, check=False)
        version = (done.stdout + done.stderr).decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        version = f"unknown ({exc})"
    return "\n".join([compiler.path, *compiler.argv, version, *CFLAGS, *LIBS, platform.machine()])


def build_interposer(environ: Mapping[str, str] | None = None) -> Path:
    """The interposer's shared object, built into the cache unless a build for this source and
    compiler is there already. Raises RegcheckError X0810 / X0811 / X0813."""
    environ = dict(os.environ if environ is None else environ)
    source = interposer_source()
    source_hash = hashlib.sha256(source).hexdigest()[:16]
    directory = cache_root(environ) / f"preload-{source_hash}"
    compiler, why = find_compiler(environ)
    if compiler is None:
        earlier = sorted(directory.glob("regcheck_preload-*.so"), key=lambda p: p.stat().st_mtime) if directory.is_dir() else []
        if earlier:  # a build of this very source: still good without a compiler
            return earlier[-1]
        raise RegcheckError([error(CODE_NO_COMPILER, f"no C compiler found: {why}; `regcheck record` builds its "
                                   "LD_PRELOAD interposer with the system C compiler on first use (install gcc or "
                                   "clang, or set CC)")])
    key = hashlib.sha256(f"{source_hash}\n{_compiler_identity(compiler, environ)}".encode()).hexdigest()[:16]
    target = directory / f"regcheck_preload-{key}.so"
    if target.is_file():
        return target
    try:
        directory.mkdir(parents=True, exist_ok=True)
        src_path = directory / SOURCE_NAME
        if not src_path.is_file() or src_path.read_bytes() != source:
            _write_atomically(src_path, source)
    except OSError as exc:
        raise RegcheckError([error(CODE_CANNOT_WRITE, f"cannot write the build cache {directory}: "
                                   f"{exc.strerror or exc}")]) from None
    partial = directory / f".{target.name}.{os.getpid()}.tmp"
    command = [*compiler.argv, *CFLAGS, "-o", str(partial), str(src_path), *LIBS]
    try:
        done = subprocess.run(command, capture_output=True, env=environ, timeout=BUILD_TIMEOUT_S, check=False)
        output = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
        failed = done.returncode != 0 or not partial.is_file()
        reason = f"exit status {done.returncode}"
    except subprocess.TimeoutExpired:
        output, failed, reason = "", True, f"no result after {BUILD_TIMEOUT_S} s"
    except OSError as exc:
        output, failed, reason = "", True, f"cannot run the compiler: {exc.strerror or exc}"
    if failed:
        partial.unlink(missing_ok=True)
        if len(output) > MAX_COMPILER_OUTPUT:
            output = "...\n" + output[-MAX_COMPILER_OUTPUT:]
        raise RegcheckError([error(CODE_BUILD_FAILED, f"build failed ({reason}): {shlex.join(command)}"
                                   + (f"\n{output}" if output else " (the compiler printed nothing)"))])
    os.replace(partial, target)  # atomic: a concurrent build of the same key writes the same bytes
    return target


def _write_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_bytes(data)
    os.replace(partial, path)


# ---------------------------------------------------------------- running a program


def header_env(spec_name: str, pairs: Sequence[tuple[str, str]]) -> dict:
    """`--env KEY=VALUE` pairs as header `env` values typed by the spec's parameters (an integer
    for `driver_version`, a string for `os_kernel`), checked as the replayer will check them."""
    spec = load_spec(spec_name)
    env: dict = {}
    for name, text in pairs:
        declared = spec.params.get(name)
        kind = declared[0].kind if declared else None
        if kind == "int":
            try:
                env[name] = int(text, 0)
            except ValueError:
                env[name] = text  # resolve_config names the problem
        elif kind == "bool" and text.lower() in ("true", "false", "1", "0", "yes", "no"):
            env[name] = text.lower() in ("true", "1", "yes")
        else:
            env[name] = text
    resolve_config(spec, env)
    return env


def host_env(spec_name: str, env: Mapping, release: str | None = None) -> dict:
    """The parameters this host can tell, for those of the spec's that `env` leaves unset: the
    running kernel's version (`platform.release()`, or `release`) for each version parameter whose
    name says it is a kernel's (acl's `os_kernel`). A value the user gave always wins, and a release
    string that is no version (an odd custom kernel) is left out rather than guessed at."""
    spec = load_spec(spec_name)
    kernel = platform.release() if release is None else release
    found: dict = {}
    for name, declared in spec.params.items():
        if name in env or declared[0].kind != "version" or "kernel" not in name.lower():
            continue
        if kernel and parse_version(kernel) is not None:
            found[name] = kernel
    return found


def recorded_family(spec_name: str) -> str:
    """The call family recorded for this spec: the first of RECORDED_CALLS whose calls it all
    declares. X0812 when there is none (cuPVA's C++ API is not intercepted at all)."""
    spec = load_spec(spec_name)
    missing = {family: [c for c in calls if c not in spec.calls] for family, calls in RECORDED_CALLS.items()}
    for family, lacks in missing.items():
        if not lacks:
            return family
    if "cupva::mem::Register" in spec.calls:
        why = ("cuPVA is not intercepted: its C++ API reports errors by exceptions that a C interposer cannot "
               "catch (see docs/recording.md)")
    else:
        family, lacks = min(missing.items(), key=lambda item: len(item[1]))
        why = (f"the interposer records the acl, cuda or hip family, and a spec must declare all of a family's "
               f"calls; the closest, {family}, lacks {', '.join(lacks)}")
    raise RegcheckError([error(CODE_SPEC_NOT_RECORDABLE, f"cannot record for spec '{spec_name}': {why}")])


def records_protections(spec_name: str, family: str) -> bool:
    """Whether the trace carries page protections (see PROTECTION_FAMILIES): True when the spec
    declares both the `mprotect` event and `mmap`'s `prot`, False when it declares neither or the
    family has no mapping events; X0812 when it declares one without the other, since half of them
    would record a protection the spec cannot follow, or miss changes the trace then never shows."""
    if family not in PROTECTION_FAMILIES:
        return False
    spec = load_spec(spec_name)
    has_event = PROTECTION_EVENT in spec.calls
    has_arg = any(name == PROTECTION_ARG for name, _ in spec.calls["mmap"].params)
    if has_event == has_arg:
        return has_event
    lacks = f"mmap's argument '{PROTECTION_ARG}'" if has_event else f"the event '{PROTECTION_EVENT}'"
    has = f"the event '{PROTECTION_EVENT}'" if has_event else f"mmap's argument '{PROTECTION_ARG}'"
    raise RegcheckError([error(CODE_SPEC_NOT_RECORDABLE, (
        f"cannot record for spec '{spec_name}': it declares {has} but not {lacks}; page protections are "
        f"recorded with both (as spec/{family}.spec declares them) or, with neither, left out"))])


# ---------------------------------------------------------------- the runtime version from the host


@dataclass(frozen=True, slots=True)
class RuntimeProbe:
    found: dict  # the parameter and its value, e.g. {"cuda_runtime": "12.4"}; empty when unknown
    unknown: dict  # the parameter and why it could not be read, e.g. {"cuda_runtime": "libcudart.so not found ..."}
    library: str | None = None  # the library the version was read from


def runtime_env(family: str, spec_name: str, env: Mapping, argv: Sequence[str], program: str,
                environ: Mapping[str, str]) -> RuntimeProbe:
    """The runtime version of a cuda or hip trace, read from the library the program will load,
    unless `env` (the user) gives it or the spec has no such parameter. The library is the one
    the program links, as `ldd` resolves it (or, for a wrapper such as `timeout 60 ./app`, one
    that a later argument naming an executable file links), else the first of that name in
    LD_LIBRARY_PATH. A program that loads it with dlopen, or is started by a shell command line,
    shows neither; the version is then left to the spec's default, and the header says why."""
    lib = RUNTIME_LIBRARIES.get(family)
    if lib is None or lib.param in env or lib.param not in load_spec(spec_name).params:
        return RuntimeProbe({}, {})
    programs = [program] + [a for a in argv[1:] if "/" in a and os.path.isfile(a) and os.access(a, os.X_OK)]
    path = next((found for p in programs if (found := _linked_library(p, lib.soname, environ))), None)
    path = path or _library_on_path(lib.soname, environ)
    if path is None:
        return RuntimeProbe({}, {lib.param: f"{lib.soname} not found: the program does not link it (ldd) and "
                                            "LD_LIBRARY_PATH does not hold it"})
    version, why = _query_version(path, lib, environ)
    if version is None:
        return RuntimeProbe({}, {lib.param: f"{path}: {why}"}, path)
    return RuntimeProbe({lib.param: version}, {}, path)


def _unrecorded(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment for regcheck's own probes: no interposer, nothing of a recording."""
    return {k: v for k, v in environ.items() if not k.startswith("REGCHECK_") and k != "LD_PRELOAD"}


def _linked_library(program: str, soname: str, environ: Mapping[str, str]) -> str | None:
    """The path the dynamic loader resolves `soname*` to for `program` (ldd), if it links it."""
    ldd = shutil.which("ldd", path=environ.get("PATH", os.defpath))
    if ldd is None:
        return None
    try:
        done = subprocess.run([ldd, program], capture_output=True, env=_unrecorded(environ),
                              timeout=RUNTIME_QUERY_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if arrow and name.startswith(soname):
            path = rest.rsplit(" (", 1)[0].strip()
            if os.path.isabs(path) and os.path.isfile(path):
                return path
    return None


def _library_on_path(soname: str, environ: Mapping[str, str]) -> str | None:
    for directory in environ.get("LD_LIBRARY_PATH", "").split(":"):
        if not directory or not os.path.isdir(directory):
            continue
        names = sorted(n for n in os.listdir(directory) if n == soname or n.startswith(soname + "."))
        if names:
            return os.path.join(directory, names[0])
    return None


# Run in a separate interpreter: a vendor runtime's initialisers (threads, signal handlers, a crash
# on a broken install) then cannot touch regcheck's own process.
_VERSION_QUERY = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
version = ctypes.c_int(0)
print(getattr(lib, sys.argv[2])(ctypes.byref(version)), version.value)
"""


def _query_version(path: str, lib: RuntimeLibrary, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """("major.minor", "") from the library's version call, or (None, why)."""
    try:
        done = subprocess.run([sys.executable, "-c", _VERSION_QUERY, path, lib.function], capture_output=True,
                              env=_unrecorded(environ), timeout=RUNTIME_QUERY_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, f"{lib.function} gave no answer within {RUNTIME_QUERY_TIMEOUT_S} s"
    except OSError as exc:
        return None, f"cannot run {sys.executable}: {exc.strerror or exc}"
    words = done.stdout.decode("ascii", "replace").split()
    if done.returncode != 0 or len(words) != 2 or not all(w.lstrip("-").isdigit() for w in words):
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
        return None, f"cannot load it or call {lib.function}: {last}"
    status, number = int(words[0]), int(words[1])
    if status != 0 or number <= 0:
        return None, f"{lib.function} returned status {status} (version {number})"
    return _version_text(lib.param, number), ""


def _version_text(param: str, number: int) -> str:
    """A version number as the runtime encodes it, as "major.minor": CUDA 1000 * major + 10 * minor
    (12040 is 12.4); HIP 10,000,000 * major + 100,000 * minor + patch (60241134 is 6.2)."""
    if param == "hip_runtime":
        return f"{number // 10_000_000}.{number // 100_000 % 100}"
    return f"{number // 1000}.{number % 1000 // 10}"


def program_warnings(path: str) -> tuple[Diagnostic, ...]:
    """Programs that LD_PRELOAD cannot reach: statically linked ELF files and set-user-ID ones."""
    out = []
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            head = f.read(64)
            elf = _elf_has_interpreter(f, head)
    except OSError:
        return ()
    if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        out.append(warning(CODE_NOT_INTERCEPTABLE, f"{path} is set-user-ID or set-group-ID: the dynamic loader "
                           "ignores LD_PRELOAD for it, so none of its calls will be recorded"))
    if elf is False:
        out.append(warning(CODE_NOT_INTERCEPTABLE, f"{path} is statically linked: LD_PRELOAD cannot intercept its "
                           "calls, so none of them will be recorded"))
    return tuple(out)


def _elf_has_interpreter(f, head: bytes) -> bool | None:
    """True for a dynamically linked ELF file, False for a static one, None when not 64-bit ELF."""
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:
        return None
    order = "little" if head[5] == 1 else "big"
    phoff = int.from_bytes(head[32:40], order)
    phentsize = int.from_bytes(head[54:56], order)
    phnum = int.from_bytes(head[56:58], order)
    f.seek(phoff)
    table = f.read(phentsize * phnum)
    PT_INTERP = 3
    return any(int.from_bytes(table[i:i + 4], order) == PT_INTERP for i in range(0, len(table), phentsize))


def record(argv: Sequence[str], output: str | os.PathLike[str], spec: str = "acl", env: Mapping | None = None,
           environ: Mapping[str, str] | None = None) -> RecordResult:
    """Run `argv` under the interposer, recording into `output` (created or truncated).

    The header is written before the program starts; each process that might record opens the
    trace for appending, and the first one to write an event owns it. Returns when the program
    has exited. Raises RegcheckError for regcheck's own problems (X0810-X0814, spec errors)."""
    environ = dict(os.environ if environ is None else environ)
    env = dict(env or {})
    if not argv:
        raise RegcheckError([error(CODE_CANNOT_RUN, "no program to run: give it after `--`")])
    family = recorded_family(spec)
    protections = records_protections(spec, family)
    from_host = host_env(spec, env)
    env.update(from_host)
    resolve_config(load_spec(spec), env)
    interposer = build_interposer(environ)
    program = _which(argv[0], environ.get("PATH", os.defpath))
    if program is None:
        why = ("not an executable program (no execute permission, or a directory)"
               if "/" in argv[0] and os.path.exists(argv[0]) else
               "no such program" + ("" if "/" in argv[0] else " on PATH"))
        raise RegcheckError([error(CODE_CANNOT_RUN, f"cannot run {argv[0]!r}: {why}")])
    warnings = program_warnings(program)
    runtime = runtime_env(family, spec, env, argv, program, environ)
    if runtime.found:
        env, from_host = {**env, **runtime.found}, {**from_host, **runtime.found}
        resolve_config(load_spec(spec), env)
    output = os.path.abspath(os.fspath(output))
    meta = {"recorder": f"regcheck record {__version__}", "program": list(argv), "interposer": interposer.name}
    if from_host:
        meta["env_from_host"] = sorted(from_host)  # which env values this host supplied, not the user
    if runtime.unknown:
        meta["env_not_from_host"] = runtime.unknown  # what the host could not tell, and why
    if runtime.library:
        meta["runtime_library"] = runtime.library
    if family in PROTECTION_FAMILIES and not protections:
        meta[PROTECTIONS_LEFT_OUT] = (f"the spec declares neither '{PROTECTION_EVENT}' nor mmap's "
                                      f"'{PROTECTION_ARG}': every mapping is written as read-write")
    # The header only; the interposer appends the events. A device or FIFO is written in place, never
    # replaced, and held open while the program runs (so that a FIFO's reader does not see its end early).
    target = OutputFile(output, CODE_CANNOT_WRITE)
    try:
        TraceWriter(target.file, TraceHeader(spec, env, meta=meta)).close()
    except OSError as exc:
        target.abort()
        raise cannot_write(output, exc, CODE_CANNOT_WRITE) from None
    if not target.special:
        target.commit()
    try:
        done, recorded_pid = _run_recorded(argv, program, interposer, output, family, protections, environ)
    finally:
        target.commit()
    code = done.returncode
    status, signum = (code, None) if code >= 0 else (128 - code, -code)
    return RecordResult(status, signum, output, _count_events(output), recorded_pid, str(interposer), warnings)


def _run_recorded(argv, program: str, interposer: Path, output: str, family: str, protections: bool,
                  environ: Mapping[str, str]):
    """Run the program with the interposer preloaded; (the completed process, the recording pid)."""
    with tempfile.TemporaryDirectory(prefix="regcheck-record-") as scratch:
        claim = os.path.join(scratch, "owner")
        child_env = dict(environ)
        preload = environ.get("LD_PRELOAD", "").strip()
        child_env["LD_PRELOAD"] = str(interposer) + (f":{preload}" if preload else "")
        child_env["REGCHECK_TRACE"] = output
        child_env["REGCHECK_CLAIM"] = claim
        child_env["REGCHECK_FAMILY"] = family
        child_env["REGCHECK_PROTECTIONS"] = "1" if protections else "0"
        try:
            with _stop_signals_held() as held:
                child = subprocess.Popen(list(argv), executable=program, env=child_env)
        except OSError as exc:
            raise RegcheckError([error(CODE_CANNOT_RUN, f"cannot run {argv[0]!r}: {exc.strerror or exc}")]) from None
        try:
            if held:  # stop now, the child with us, as a stop during its wait does
                child.kill()
                for signum in held:
                    signal.raise_signal(signum)
            child.wait()
        except BaseException:
            child.kill()
            child.wait()
            raise
        return subprocess.CompletedProcess(list(argv), child.returncode), _read_pid(claim)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _stop_signals_held() -> Iterator[list[int]]:
    """SIGINT and SIGTERM noted (the list yielded), not acted on, while the program starts. Why: the
    handlers raise an exception, and one raised inside Popen after its fork, before Popen has returned
    the child, leaves the program running on with nobody to stop it; the caller raises them again
    once it holds the child. Only the main thread sets handlers; an ignored signal stays ignored."""
    held: list[int] = []
    saved = {}
    if threading.current_thread() is threading.main_thread():
        for signum in _STOP_SIGNALS:
            if signal.getsignal(signum) not in (signal.SIG_IGN, None):  # (None: set outside Python, kept)
                saved[signum] = signal.signal(signum, lambda n, _frame: held.append(n))
    try:
        yield held
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _read_pid(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _count_events(path: str) -> int | None:
    """Non-blank lines after the header (the trace is checked when it is replayed, not here); None
    when the output is not a regular file (a pipe, /dev/stdout or a FIFO cannot be read back)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            return max(0, sum(1 for line in f if line.strip()) - 1)
    except OSError:
        return 0
