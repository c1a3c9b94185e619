"""A stable import path (docs/drivers.md) for the driver protocol and the reference driver; the code
lives in checker.drivers (protocol, executor)."""

from .drivers.executor import ReferenceDriver, load_factory
from .drivers.protocol import Allocation, Driver, Incident, IncidentKind, Result

__all__ = ["Allocation", "Driver", "Incident", "IncidentKind", "ReferenceDriver", "Result", "load_factory"]
