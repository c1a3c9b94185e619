"""A stable import path (docs/drivers.md) for the diagnostics a driver raises; the code lives in
checker.language.diagnostics."""

from .language.diagnostics import Diagnostic, Note, RegcheckError, Severity, error, warning

__all__ = ["Diagnostic", "Note", "RegcheckError", "Severity", "error", "warning"]
