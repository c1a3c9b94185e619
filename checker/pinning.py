"""A stable import path (docs/drivers.md) for real page locking; the code lives in
checker.drivers.pinning."""

from .drivers.pinning import (PAGE_SIZE, ArenaClosed, LockCalls, MappingFailed, NotLocked, NotOwned, PinnedArena,
                              PinningError, PinningFailed, Region, RegionKind, install_signal_cleanup, libc_calls,
                              pinning_permitted, uninstall_signal_cleanup, vmlck_bytes)

__all__ = ["PAGE_SIZE", "ArenaClosed", "LockCalls", "MappingFailed", "NotLocked", "NotOwned", "PinnedArena",
           "PinningError", "PinningFailed", "Region", "RegionKind", "install_signal_cleanup", "libc_calls",
           "pinning_permitted", "uninstall_signal_cleanup", "vmlck_bytes"]
