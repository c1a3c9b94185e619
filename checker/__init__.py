"""regcheck: executable, provable specifications of host-memory registration APIs."""

__version__ = "0.1.0"
