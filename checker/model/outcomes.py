"""What the semantics says of one call: the outcomes it allows, the rules it breaks, and the judgement of
an observed result."""

from __future__ import annotations

from dataclasses import dataclass

from ..language.diagnostics import RegcheckError, error
from ..language.source import Span


# ---------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class ErrorOutcome:
    """An allowed failure: its rule and status codes (None: any non-success status, except those in
    `excluded`)."""

    rule: str
    codes: frozenset | None
    excluded: frozenset = frozenset()

    def allows(self, status) -> bool:
        return status in self.codes if self.codes is not None else status not in self.excluded


@dataclass(frozen=True, slots=True)
class Allowed:
    """What the spec allows for one call in one state: broken obligations and the outcome set.

    `errors` are the documented failures whose condition holds (after any declared order); when one
    holds, success is not allowed. `env_errors` are always allowed. When `undefined` (a broken
    obligation leaves the outcome open) or `unspecified` (the documents are silent) is non-empty,
    every outcome is allowed.
    """

    call: str
    broken: tuple[str, ...]
    undefined: tuple[str, ...]
    unspecified: tuple[str, ...]
    errors: tuple[ErrorOutcome, ...]
    env_errors: tuple[ErrorOutcome, ...]
    success: bool

    @property
    def open(self) -> bool:
        return bool(self.undefined or self.unspecified)

    def allows_status(self, status, success_value) -> bool:
        if self.open:
            return True
        if status == success_value:
            return self.success
        return any(e.allows(status) for e in self.errors) or any(e.allows(status) for e in self.env_errors)


@dataclass(frozen=True, slots=True)
class Judgement:
    """How a recorded result compares with what was allowed."""

    conforms: bool
    rules: tuple[str, ...]  # the rules the result breaks (empty when it conforms)
    expected: str  # a readable description of the allowed outcomes ("" when it conforms)


CONFORMS = Judgement(True, (), "")


class EvalError(Exception):
    """A spec expression could not be evaluated (a lookup of a missing key): a spec bug."""


class ClauseEvalError(RegcheckError):
    """E0310 located: the clause of `call` whose expression could not be evaluated (its rule and
    span in the spec), and why. A replay adds the trace line it was evaluating for."""

    def __init__(self, spec: str, call: str, rule: str, span: Span, reason: str):
        self.spec, self.call, self.rule, self.span, self.reason = spec, call, rule, span, reason
        super().__init__([error("E0310", f"spec {spec}: {call}: rule {rule} could not be evaluated: {reason}", span)])

    def __reduce__(self):  # picklable, for the engines that run in worker processes
        return ClauseEvalError, (self.spec, self.call, self.rule, self.span, self.reason)


def describe_outcomes(allowed: Allowed, success) -> str:
    if allowed.open:
        return "any outcome (" + ", ".join(allowed.undefined + allowed.unspecified) + ")"
    parts = []
    if allowed.success:
        parts.append(f"success ({success})")
    for e in allowed.errors + allowed.env_errors:
        if e.codes is not None:
            codes = " or ".join(str(c) for c in sorted(e.codes, key=str))
        else:
            codes = "any failure" + (" except " + ", ".join(str(c) for c in sorted(e.excluded, key=str)) if e.excluded else "")
        parts.append(f"{codes} [{e.rule}]")
    return "; ".join(parts)
