"""Drivers for the executor: the `Driver` interface and the reference driver that runs for real.

A `Driver` carries out a trace's calls against an implementation of one spec: `start(spec, env)`,
then `call(name, args) -> Result` once per event, then `close()`. `ReferenceDriver` implements the four
bundled specs (`acl`, `cupva`, `cuda`, `hip`) with real memory from `checker.drivers.pinning.PinnedArena`:
host memory it hands out is its own memfd-backed mapping, PINNED registrations (every CUDA and HIP
registration, and their pinned allocators' blocks) `mlock` their pages (counted per page), MAPPED
ones get a second real mapping of the same pages as their device address. There is no accelerator
here, so device allocations (cuPVA's CUDA pointers, cudaMalloc, hipMalloc) come from a simulated
device address space.

The reference driver is an independent implementation of the documented behaviour: it keeps its own
tables and never asks `checker.model.semantics` what a call should return (testing it against the spec
would otherwise be circular). Where the spec allows several outcomes it returns what the open-source
CANN runtime returns in its software-table mode (`shared/api-rules.md` 1.3-1.8), for cuPVA what
the Register/Unregister pages' Throws lists say, and for CUDA and HIP what the catalogue
(`shared/cuda-hip-rules.md`) records the runtimes doing; docs/drivers.md tabulates every choice.

A trace is untrusted input. Every address argument the driver would act on (lock, map, free) must
lie inside memory it created; anything else is refused without touching memory: the call returns a
failure status and an `Incident` (kind REFUSED) is recorded. A failure of the machine (mlock refused,
the pinning cap reached, mmap failed) during an API call returns the vendor's failure status and
records an `Incident` (kind ENVIRONMENT); the driver's tables and the kernel's locks are then as they
were before the call.

Error codes (X08xx, executor environment; X0801-X0806 are checker.drivers.pinning's):
  X0807  the reference driver does not implement this spec
  X0808  a call the driver does not implement, or a missing or mistyped argument

Drivers are not thread-safe; use one from one thread.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from typing import Any, Callable, Mapping


from ..language.diagnostics import RegcheckError, error
from ..language.load import load_spec
from ..model.values import resolve_config
from .acl import AclDriver
from .cuda import CudaDriver
from .cupva import PvaDriver
from .hip import HipDriver
from .pinning import DEFAULT_MAX_LOCKED_BYTES, LockCalls, PinnedArena, install_signal_cleanup
from .protocol import (CODE_BAD_CALL, CODE_SPEC_NOT_IMPLEMENTED, Allocation, CallArgs, Driver, Incident, IncidentKind,
                       Result)


# ---------------------------------------------------------------- the reference driver


class ReferenceDriver:
    """The reference implementation of the bundled specs, with real memory and real page locks.

    Options: `max_locked_bytes` caps the bytes it will ever hold locked (a call that would pass it
    fails as an environmental failure); `lock_calls` replaces mlock/munlock (tests inject failures);
    `signal_cleanup` makes `start` install checker.drivers.pinning's SIGINT/SIGTERM cleanup (main thread only).
    """

    def __init__(self, *, max_locked_bytes: int = DEFAULT_MAX_LOCKED_BYTES, lock_calls: LockCalls | None = None,
                 signal_cleanup: bool = True):
        if max_locked_bytes < 0:
            raise ValueError("max_locked_bytes must not be negative")
        self.max_locked_bytes = max_locked_bytes
        self._lock_calls = lock_calls
        self._signal_cleanup = signal_cleanup
        self._arena: PinnedArena | None = None
        self._impl: AclDriver | PvaDriver | CudaDriver | HipDriver | None = None
        self.spec_name: str | None = None
        self.config: dict[str, Any] = {}
        self.incidents: list[Incident] = []
        self.last_incident: Incident | None = None

    # -- the Driver interface

    def start(self, spec: str, env: Mapping[str, Any]) -> None:
        """Load `spec`'s parameters from `env` and open a fresh arena.

        Raises RegcheckError: X0807 for a spec this driver does not implement, T0720/T0721 for a bad
        parameter, E06xx for a spec that cannot be loaded. Starting again closes the previous run.
        """
        checked = load_spec(spec)
        if checked.name not in _IMPLEMENTATIONS:
            raise RegcheckError([error(
                CODE_SPEC_NOT_IMPLEMENTED,
                f"the reference driver implements the specs {', '.join(sorted(_IMPLEMENTATIONS))}, not '{checked.name}'")])
        config = resolve_config(checked, env)
        self.close()
        if self._signal_cleanup and threading.current_thread() is threading.main_thread():
            install_signal_cleanup()
        self._arena = PinnedArena(self.max_locked_bytes, calls=self._lock_calls)
        self.spec_name, self.config = checked.name, config
        self.incidents, self.last_incident = [], None
        self._impl = _IMPLEMENTATIONS[checked.name](self._arena, config, self._note)

    def call(self, name: str, args: Mapping[str, Any]) -> Result:
        """Carry out one call or event. Raises RegcheckError only for an unknown call or argument
        (X0808) and for an environment event the machine cannot carry out (X08xx from pinning)."""
        if self._impl is None:
            raise RuntimeError("ReferenceDriver.call before start (or after close)")
        self.last_incident = None
        handler = self._impl.handlers.get(name)
        if handler is None:
            raise RegcheckError([error(
                CODE_BAD_CALL, f"the reference driver has no call '{name}' for spec {self.spec_name}")])
        return handler(CallArgs(name, args))

    def close(self) -> None:
        """Unlock and unmap everything; the driver can be started again afterwards."""
        if self._arena is not None:
            self._arena.close()
        self._arena = None
        self._impl = None

    def __enter__(self) -> "ReferenceDriver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the executor compares with the kernel

    @property
    def arena(self) -> PinnedArena | None:
        return self._arena

    @property
    def calls(self) -> frozenset[str]:
        """The calls and environment events the started spec's implementation carries out."""
        return frozenset(self._require_impl().handlers)

    @property
    def refusals(self) -> tuple[Incident, ...]:
        return tuple(i for i in self.incidents if i.kind is IncidentKind.REFUSED)

    def allocations(self) -> tuple[Allocation, ...]:
        """Every live allocation, host and simulated device, and every MAPPED device alias."""
        return tuple(sorted(self._require_impl().allocations(), key=lambda a: a.base))

    def allocation_of(self, address: int, size: int = 1) -> Allocation | None:
        """The allocation whose bytes include [address, address + size), if any (O(log n))."""
        return self._require_impl().allocation_of(address, size)

    def owns(self, address: int, size: int) -> bool:
        """Whether [address, address + size) lies inside one allocation this driver handed out."""
        return (self._impl or self._require_impl()).owns(address, size)  # (allocation_of(...) is not None)

    def expected_locked_pages(self) -> frozenset[int]:
        """The pages the driver's own tables say must be locked: pinned-allocator blocks (aclrtMallocHost,
        cudaMallocHost, cudaHostAlloc, hipHostMalloc) and live PINNED (CUDA, HIP: every) registrations."""
        return self._require_impl().expected_locked_pages()

    def arena_locked_pages(self) -> frozenset[int]:
        """The pages the arena holds locked (its per-page counts)."""
        return frozenset(self._require_arena().locked_pages())

    def kernel_locked_pages(self) -> frozenset[int]:
        """The pages of the driver's memory the kernel marks locked (from /proc/self/smaps)."""
        return self._require_arena().kernel_locked_pages()

    # The executor's event-by-event lock check (checker.drivers.lockcheck) asks these three: every
    # change to the kernel's locks on this driver's pages is a call its arena makes. (`x or
    # self._require_x()`: the check asks them at every event, and only a missing one needs the call.)

    def take_changed_spans(self) -> list[tuple[int, int]]:
        """The spans of real memory mapped, unmapped, locked or unlocked since the last call."""
        return (self._arena or self._require_arena()).take_changed_spans()

    def kernel_locked_in(self, spans: list[tuple[int, int]]) -> frozenset[int]:
        """The pages within `spans` of the driver's real memory that the kernel holds locked."""
        return (self._arena or self._require_arena()).kernel_locked_in(spans)

    def tracks(self, address: int, size: int) -> bool:
        """Whether the range is real memory, whose every change `take_changed_spans` reports (not
        the simulated device memory)."""
        return (self._arena or self._require_arena()).owns(address, size)

    # -- internals

    def _note(self, incident: Incident) -> None:
        self.incidents.append(incident)
        self.last_incident = incident

    def _require_impl(self) -> "AclDriver | PvaDriver | CudaDriver | HipDriver":
        if self._impl is None:
            raise RuntimeError("the reference driver is not started")
        return self._impl

    def _require_arena(self) -> PinnedArena:
        if self._arena is None:
            raise RuntimeError("the reference driver is not started")
        return self._arena


_IMPLEMENTATIONS: dict[str, type] = {"acl": AclDriver, "cupva": PvaDriver, "cuda": CudaDriver, "hip": HipDriver}
CODE_NO_FACTORY = "E0615"  # --driver names no callable factory (a malformed name, or its module does not import)


# ---------------------------------------------------------------- choosing a driver


def load_factory(text: str | None) -> Callable[[], Driver]:
    """`MODULE:FACTORY` (the --driver option) -> the factory; the reference driver when text is empty or None."""
    if not text:
        return ReferenceDriver
    module, _, attr = text.partition(":")
    if not module or not attr:
        raise RegcheckError([error(CODE_NO_FACTORY, f"--driver must be MODULE:FACTORY, not {text!r}")])
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: a driver module next to the user is found
    try:
        factory = getattr(importlib.import_module(module), attr)
    except Exception as exc:  # noqa: BLE001 - importing the user's module may raise anything (a SyntaxError, ...)
        raise RegcheckError([error(CODE_NO_FACTORY, f"cannot load driver factory {text!r}: "
                                                    f"{type(exc).__name__}: {exc}")]) from None
    if not callable(factory):
        raise RegcheckError([error(CODE_NO_FACTORY, f"driver factory {text!r} is not callable")])
    return factory
