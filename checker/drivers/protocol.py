"""The driver protocol: what a driver implements (start, call, close), what a call returns (Result), and
what it reports (Incident); and the checked reading of one call's arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Mapping, Protocol, runtime_checkable


from ..language.diagnostics import Diagnostic, RegcheckError, error


CODE_SPEC_NOT_IMPLEMENTED = "X0807"
CODE_BAD_CALL = "X0808"
CODE_DRIVER_FAILED = "X0809"  # a driver's factory, start or close raised (anything but a RegcheckError)
_NO_OUTPUTS: Any = object()  # Result's `out` when none is given (a new empty dict)

# ---------------------------------------------------------------- the interface


@dataclass(frozen=True, slots=True, init=False)
class Result:
    """What one call returned: `ret` as in the trace format (an int aclError, or "ok" / a cuPVA
    error name) and `out`, the outputs by name (`{"ptr": ...}` for malloc, ...). Treat `out` as
    read-only."""

    ret: int | str
    out: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, ret: int | str, out: Mapping[str, Any] = _NO_OUTPUTS) -> None:  # type: ignore[assignment]
        # The generated __init__'s work (`out` defaults to a new dict), through the slots' own
        # setters: a driver makes a Result per call, and a frozen class's generated __init__ costs
        # more than the rest of a quick call (one object.__setattr__ looked up and called per field).
        _set_ret(self, ret)
        _set_out(self, {} if out is _NO_OUTPUTS else out)


_set_ret, _set_out = Result.ret.__set__, Result.out.__set__  # type: ignore[attr-defined]


class DriverRaised(Exception):
    """The driver under test raised an exception from `call` (`exc`), or returned something other
    than a Result (`exc`: a TypeError saying what)."""

    def __init__(self, call: str, exc: BaseException):
        super().__init__(f"{call}: {type(exc).__name__}: {exc}")
        self.call = call
        self.exc = exc


@runtime_checkable
class Driver(Protocol):
    """An implementation of one spec that the executor can drive, event by event.

    Arguments arrive normalised: integers for addresses, sizes and flags (a flag list already OR-ed
    into one int), enum member names as strings. Addresses are the driver's own: the executor
    relocates a trace's addresses to the ones this driver's allocations returned.
    """

    def start(self, spec: str, env: Mapping[str, Any]) -> None:
        """Prepare for one trace of `spec` (a bundled name or a path) with the header's `env`."""
        ...

    def call(self, name: str, args: Mapping[str, Any]) -> Result:
        """Carry out one call or environment event and report its status and outputs."""
        ...

    def close(self) -> None:
        """Release everything the driver holds; safe to call twice."""
        ...


class IncidentKind(str, Enum):
    REFUSED = "refused"  # an address argument is not memory the driver created; nothing was touched
    ENVIRONMENT = "environment"  # the machine refused (mlock, the pinning cap, mmap); state unchanged


@dataclass(frozen=True, slots=True)
class Incident:
    """Something the reference driver did instead of what a real library would have done."""

    kind: IncidentKind
    call: str
    code: str  # X08xx
    message: str

    def diagnostic(self) -> Diagnostic:
        return error(self.code, f"{self.call}: {self.message}")


@dataclass(frozen=True, slots=True)
class Allocation:
    """Memory the driver handed out: host buffers are real, `cudaMalloc` ones are simulated."""

    base: int
    size: int
    kind: str  # "malloc", "aclrtMallocHost", "cudaMalloc" or "device-alias"

    @property
    def end(self) -> int:
        return self.base + self.size

    def contains(self, address: int, size: int) -> bool:
        return size > 0 and self.base <= address and address + size <= self.end


class CallArgs:
    """One call's arguments, read with a precise error for a missing or mistyped one."""

    __slots__ = ("call", "values")

    def __init__(self, call: str, values: Mapping[str, Any]):
        self.call = call
        self.values = values

    def integer(self, name: str) -> int:
        value = self.values.get(name)
        if type(value) is not int:
            raise self._bad(name, "an integer", value)
        return value

    def integer_or(self, name: str, default: int) -> int:
        """An input the spec gives a default (`mmap`'s `prot`): `default` when the caller left it
        out, as a trace line may; otherwise as `integer`."""
        return default if name not in self.values else self.integer(name)

    def member(self, name: str, allowed: tuple[str, ...]) -> str:
        value = self.values.get(name)
        if value not in allowed:
            raise self._bad(name, "one of " + ", ".join(allowed), value)
        return value

    def _bad(self, name: str, wanted: str, value: Any) -> RegcheckError:
        found = "nothing" if name not in self.values else repr(value)
        return RegcheckError([error(CODE_BAD_CALL, f"{self.call}: argument '{name}' must be {wanted}, found {found}")])


Report = Callable[[Incident], None]
