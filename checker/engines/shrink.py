"""Delta debugging of a violating trace: a smallest subsequence with the same first finding.

The candidate subsequences keep the header and the events' original order; one is kept when it
replays without an input error and its first violating finding (usage or conformance) has the
same kind and rule ID as the original's. ddmin (Zeller and Hildebrandt, 2002) followed by a pass
that tries removing each remaining event makes the result 1-minimal: removing any single event
loses the finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..language.diagnostics import Diagnostic, RegcheckError, error
from ..language.source import Span
from ..model.semantics import Semantics
from ..trace.events import TraceEvent, TraceHeader
from ..trace.reader import header_spec_ref, read_trace
from .replay import Finding, replay_events, semantics_for, spec_notes


@dataclass(frozen=True, slots=True)
class ShrinkResult:
    header: TraceHeader
    target: Finding  # the first violating finding of the original trace
    original: int  # events in the original trace
    events: tuple[TraceEvent, ...]  # the shrunk sequence
    tests: int  # candidate replays tried
    spec_ref: str = ""  # the spec the trace was shrunk against, as load_spec takes it from here
    notes: tuple[Diagnostic, ...] = ()  # T0737: --spec replaced the header's spec


def first_violation(sem: Semantics, events: Sequence[TraceEvent]) -> Finding | None:
    """The first usage or conformance finding of a replay, or None (also None on an input error)."""
    try:
        report = replay_events(sem, events)
    except RegcheckError:
        return None
    return next((f for f in report.findings if f.kind != "unspecified"), None)


def ddmin(items: list, keeps: Callable[[list], bool]) -> list:
    """A 1-minimal sublist of items (order kept) for which keeps() is still true."""
    n = 2
    while len(items) >= 2:
        size = -(-len(items) // n)
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        for i, chunk in enumerate(chunks):
            if keeps(chunk):
                items, n = chunk, 2
                break
            complement = [x for j, c in enumerate(chunks) if j != i for x in c]
            if len(chunks) > 2 and keeps(complement):
                items, n = complement, max(n - 1, 2)
                break
        else:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    i = 0
    while i < len(items) and len(items) > 1:  # the 1-minimality pass
        candidate = items[:i] + items[i + 1:]
        if keeps(candidate):
            items = candidate
        else:
            i += 1
    return items


def shrink_trace(path: str, spec_name: str | None = None) -> ShrinkResult:
    header, events = read_trace(path)
    all_events = list(events)
    sem = semantics_for(header, spec_name, path)
    spec_ref = spec_name or header_spec_ref(header, path)
    notes = spec_notes(header, spec_name, path)
    # The whole trace's input errors are the user's to see (a candidate's are just "not kept").
    report = replay_events(sem, all_events, path)
    target = next((f for f in report.findings if f.kind != "unspecified"), None)
    if target is None:
        raise RegcheckError([error("T0740", "the trace has no usage or conformance finding: nothing to shrink",
                                   Span(path, 1, 1))])
    prefix = [ev for ev in all_events if ev.line <= target.line]  # later events cannot matter
    tests = 0

    def keeps(candidate: list) -> bool:
        nonlocal tests
        tests += 1
        f = first_violation(sem, candidate)
        return f is not None and f.rule == target.rule and f.kind == target.kind

    smallest = ddmin(prefix, keeps) if keeps(prefix) else prefix
    return ShrinkResult(header, target, len(all_events), tuple(smallest), tests, spec_ref, notes)
