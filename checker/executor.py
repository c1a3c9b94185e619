"""A stable import path (docs/drivers.md) for the driver protocol and the reference driver; the code
lives in checker.drivers.executor."""

from .drivers.executor import Allocation, Driver, Incident, IncidentKind, ReferenceDriver, Result, load_factory

__all__ = ["Allocation", "Driver", "Incident", "IncidentKind", "ReferenceDriver", "Result", "load_factory"]
