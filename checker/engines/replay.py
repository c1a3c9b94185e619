"""Replay a recorded trace against a spec: streaming, one pass, every finding explained.

Findings:
  usage        the caller broke an obligation or a usage rule (API group, thread safety)
  conformance  the recorded result is not an outcome the spec allows in that state
  unspecified  the documents are silent on this case (informational; the trace still conforms)

After a finding replay goes on from the state the recorded result implies: a recorded success
applies the success effect, a recorded failure leaves the state as it was. Memory grows with the
number of live table entries (plus a bounded window per non-thread-safe function), not with the
trace length.

Input error codes (in addition to checker/trace/reader.py's T0701-T0714):
  T0730 unknown call for this spec      T0731 missing argument        T0732 unknown argument or output
  T0733 bad argument, output or ret    T0734 missing ret             T0735 missing output of a success
  T0737 (a warning) --spec replaced the spec the trace header names
"""

from __future__ import annotations

import difflib
import os
import re
from collections import defaultdict, deque
from collections.abc import Mapping as MappingBase
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..fast.fastpath import DECODE_ERRORS, CountingWindow, FastPath, fast_path, thread_window, window
from ..language import syntax as S
from ..language.checked import UNBOUNDED, CheckedSpec, Type, value_bounds
from ..language.diagnostics import Diagnostic, Note, RegcheckError, error, excerpt, warning
from ..language.load import bundled_spec_name, document_where, load_spec, load_spec_as
from ..language.source import Span
from ..model.outcomes import ClauseEvalError
from ..model.semantics import Semantics
from ..model.state import NATIVE, State
from ..model.values import coerce_value, resolve_config
from ..trace.events import NUMERIC_START, TraceEvent, TraceHeader, parse_int
from ..trace.reader import UNDECODED, EventStream, header_spec_ref, read_trace
from .runs import semantics_for as compiled_semantics

_ABSENT = object()
_NO_FINDINGS: list = []  # shared by every event without findings: callers must not append to it
REMOVED_WINDOW = 4096  # removed entries remembered for "the free that came before" notes


@dataclass(frozen=True, slots=True)
class Citation:
    """The document a finding's rule cites, named so a user can follow it: `link` is its URL, or
    for a bundled spec's document without one its entry in docs/sources.md."""
    title: str
    link: str
    clause: str

    def to_json(self) -> dict:
        return {"title": self.title, "link": self.link, "clause": self.clause}


@dataclass(frozen=True, slots=True)
class Finding:
    line: int
    kind: str
    rule: str
    call: str
    message: str
    related: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    # A usage finding on a call the runtime rejected with a status one of its documented errors
    # allows: the caller broke the rule, the runtime caught it (a team probing on purpose filters these).
    rejected: bool = False
    document: Citation | None = None

    def to_json(self) -> dict:
        out = {"line": self.line, "kind": self.kind, "rule": self.rule, "call": self.call,
               "message": self.message, "related": list(self.related)}
        if self.rejected:
            out["rejected"] = True
        if self.document is not None:
            out["document"] = self.document.to_json()
        return out


@dataclass(frozen=True, slots=True)
class ReplayReport:
    path: str
    spec: str
    events: int
    findings: tuple[Finding, ...]
    truncated: bool = False
    notes: tuple[Diagnostic, ...] = ()  # warnings about the run itself (T0737: --spec replaced the header's)

    @property
    def verdict(self) -> str:
        return "violates" if any(f.kind != "unspecified" for f in self.findings) else "conforms"

    def without_rejected(self) -> "ReplayReport":
        """The report without the usage findings on calls the runtime rejected with a documented
        error (`Finding.rejected`): for programs that probe the documented errors on purpose."""
        return replace(self, findings=tuple(f for f in self.findings if not f.rejected))

    def to_json(self) -> dict:
        out = {"verdict": self.verdict, "events": self.events, "findings": [f.to_json() for f in self.findings]}
        if self.truncated:
            out["truncated"] = True
        if self.notes:
            out["notes"] = [d.to_json() for d in self.notes]
        return out


# ---------------------------------------------------------------- argument normalisation


def _field_reader(name: str, t: Type, spec: CheckedSpec) -> tuple[str, int, int, Callable[[Any], Any]]:
    """(name, lo, hi, convert): JSON ints within [lo, hi] are taken as they are (the fast path);
    anything else goes through `convert`, which raises ValueError when it is not a value of t."""
    lo, hi = (value_bounds(t) or UNBOUNDED) if t.kind in ("int", "flags") else (1, 0)  # (1, 0): no fast path
    return name, lo, hi, lambda v: coerce_value(t, v, spec)


@dataclass(slots=True)
class _CallShape:
    """How to read one call's arguments, outputs and status from a trace event."""

    name: str
    is_event: bool
    params: tuple[tuple[str, int, int, Callable], ...]
    outputs: tuple[tuple[str, int, int, Callable], ...]
    param_names: frozenset
    output_names: frozenset
    defaults: Mapping[str, Any]  # the values of the inputs a line may leave out (`CallInfo.defaults`)


def _shapes(sem: Semantics) -> dict[str, _CallShape]:
    spec = sem.spec
    out = {}
    for name, cc in sem.calls.items():
        info = cc.info
        out[name] = _CallShape(
            name, info.decl.kind == "event",
            tuple(_field_reader(n, t, spec) for n, t in info.params),
            tuple(_field_reader(n, t, spec) for n, t in info.outputs),
            frozenset(n for n, _ in info.params), frozenset(n for n, _ in info.outputs),
            dict(info.defaults),
        )
    return out


def status_names(spec: CheckedSpec) -> dict[str, Any]:
    """The names of a spec's statuses, each with the status it stands for: the members of an enum
    status (what a trace's `ret` is written as); for an integer status, the constants the spec
    itself uses as statuses (in its `status` declaration and the codes of its `fails` and `may
    fail` clauses), which a trace must write as their integers (the error names the integer)."""
    t = spec.status_type
    if t.kind == "enum":
        return {m: m for m in spec.enums[t.name]}
    if t.kind != "int":
        return {}
    exprs = [d.success for d in spec.ast.decls if isinstance(d, S.StatusDecl)]
    for info in spec.calls.values():
        for c in info.decl.clauses:
            if isinstance(c, (S.Fails, S.MayFail)):
                exprs.append(c.codes.excluded if isinstance(c.codes, S.AnyFailure) else c.codes)
    names = {}
    for e in exprs:
        for x in S.subexpressions(e):
            if isinstance(x, S.Name) and spec.binding(x).kind == "const":
                names[x.name] = spec.consts[x.name][1]
    return dict(sorted(names.items(), key=lambda kv: (kv[1], kv[0])))


def _suggest(name: str, known: Iterable[str], cutoff: float = 0.6) -> tuple[Note, ...]:
    """A did-you-mean note for a misspelt name, or none when nothing is close enough."""
    close = closest_name(name, known, cutoff)
    return (Note(f"did you mean '{close}'?"),) if close is not None else ()


def closest_name(name: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The known name `name` most likely misspells, or None. Before spelling, two slips recorders
    make: a name that adds or drops a C++ namespace (`cupva::Error::InvalidArgument`, `Register`)
    and one with its words in another order (`hipMallocHost`)."""
    pool = sorted(set(known) - {name})
    last, words = name.rsplit("::", 1)[-1], _words(name)
    close = ([k for k in pool if k.rsplit("::", 1)[-1] == last] or [k for k in pool if _words(k) == words]
             or [k for k in pool if k.lower() == name.lower()] or difflib.get_close_matches(name, pool, 1, cutoff))
    return close[0] if close else None


def _words(name: str) -> tuple[str, ...]:
    """The words of an identifier, lower case and sorted: `hipHostMalloc` -> (host, hip, malloc)."""
    return tuple(sorted(w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", name)))


# ---------------------------------------------------------------- the replayer


class Replayer:
    """Replays events one at a time; `feed` returns the findings of one event."""

    def __init__(self, sem: Semantics, path: str = "<trace>"):
        self.sem = sem
        self.spec = sem.spec
        self.path = path
        self.state: State = sem.initial_state()
        self.shapes = _shapes(sem)
        # (table, key) -> (line, call) of the event that created each live entry: a MadeLines, or
        # where the C module is built its Made (the same mapping, held in C)
        self.created: Mapping[tuple[str, Any], tuple[int, str]] = MadeLines() if NATIVE is None else NATIVE.Made()
        # (table, key, line, call) of the last REMOVED_WINDOW removals, oldest first: appending is
        # all a removal costs; `_related` picks the latest removal of each entry not live again.
        # (A deque, or the C module's Ring, which holds the same items without a tuple each.)
        self.removed: deque[tuple[str, Any, int, str]] = window(REMOVED_WINDOW)
        self.removals = RemovalIndex(self.removed)  # read only when a finding asks
        # remember(line, call): after a success effect, note which line created or removed each entry
        # that `state.journal` lists (a closure: it runs for most events of a trace)
        self._remember = _remembering(self.created, self.removed, self.state.journal)
        self.recent: dict[str, deque] = {}
        # Whether the general path's last event applied a success effect (not kept on the fast path)
        self.last_applied = False
        self._rule_tables: dict[str, frozenset[str]] = {}
        self._citations: dict[str, Citation | None] = {}
        self.success = sem.success
        self.status_type = self.spec.status_type
        self.status_names = status_names(self.spec)
        self.events = 0

    # ---- input checking
    def _input_error(self, ev: TraceEvent, code: str, msg: str, *notes: Note) -> RegcheckError:
        return RegcheckError([error(code, msg, Span(self.path, ev.line, 1), *notes)])

    def normalise(self, ev: TraceEvent) -> tuple[_CallShape, dict, Any, dict]:
        shape = self.shapes.get(ev.call)
        if shape is None:
            known = ", ".join(self.shapes)
            raise self._input_error(ev, "T0730", f"unknown call {excerpt(ev.call)} for spec {self.spec.name} (known: {known})",
                                    *_suggest(ev.call, self.shapes))
        raw = ev.args
        args = {}
        defaulted = 0
        for n, lo, hi, conv in shape.params:
            v = raw.get(n, _ABSENT)
            if type(v) is int and lo <= v <= hi:
                args[n] = v
                continue
            if v is _ABSENT:
                v = shape.defaults.get(n, _ABSENT)
                if v is _ABSENT:
                    raise self._input_error(ev, "T0731", f"{ev.call}: missing argument '{n}'")
                args[n] = v
                defaulted += 1
                continue
            try:
                args[n] = conv(v)
            except ValueError as exc:
                raise self._input_error(ev, "T0733", f"{ev.call}: argument '{n}': {exc}") from None
        if len(raw) + defaulted != len(args):
            extra = sorted(set(raw) - shape.param_names)
            raise self._input_error(ev, "T0732", f"{ev.call}: unknown argument(s) {', '.join(extra)}")
        status = self._status(ev, shape)
        outs = {}
        rawo = ev.out
        if rawo:
            for n, lo, hi, conv in shape.outputs:
                v = rawo.get(n, _ABSENT)
                if type(v) is int and lo <= v <= hi:
                    outs[n] = v
                elif v is not _ABSENT:
                    try:
                        outs[n] = conv(v)
                    except ValueError as exc:
                        raise self._input_error(ev, "T0733", f"{ev.call}: output '{n}': {exc}") from None
            if len(rawo) != len(outs):
                extra = sorted(set(rawo) - shape.output_names)
                raise self._input_error(ev, "T0732", f"{ev.call}: unknown output(s) {', '.join(extra)}")
        if status == self.success and len(outs) != len(shape.outputs):
            missing = [n for n, *_ in shape.outputs if n not in outs]
            raise self._input_error(ev, "T0735", f"{ev.call} succeeded but its output(s) {', '.join(missing)} are missing")
        return shape, args, status, outs

    def _status(self, ev: TraceEvent, shape: _CallShape):
        ret = ev.ret
        if ret is None:
            if shape.is_event:
                return self.success
            raise self._input_error(ev, "T0734", f"{ev.call}: missing \"ret\" (the recorded result)")
        integer_status = self.status_type.kind == "int"
        if type(ret) is int and integer_status:
            return ret
        if isinstance(ret, str) and ret[:1] not in NUMERIC_START:
            return self._status_name(ev, ret)
        try:
            value = parse_int(ret, what="ret")
        except ValueError:
            raise self._input_error(ev, "T0733", f"{ev.call}: ret {excerpt(ret)} is not a status") from None
        if integer_status:
            return value
        if shape.is_event and value == 0:
            # An environment function such as cudaMalloc returns its own C status, 0 for success,
            # and recorders of real programs write that rather than the spec's success name.
            return self.success
        if shape.is_event:
            raise self._input_error(ev, "T0733", f"{ev.call}: ret {excerpt(ret)}: an environment event records a "
                                    f"success (0, {self.success!r} or no ret); a failed {ev.call} changes nothing, "
                                    "so leave it out of the trace")
        raise self._input_error(ev, "T0733", f"{ev.call}: ret {excerpt(ret)} must be a status name such as "
                                f"{self.success!r} (spec {self.spec.name}: {', '.join(self.status_names)})")

    def _status_name(self, ev: TraceEvent, name: str):
        """The status a name in `ret` stands for (`status_names`); an unknown name is an input
        error, never a result the driver returned."""
        known = self.status_names
        if self.status_type.kind not in ("enum", "int"):
            return name  # a status type no bundled spec uses: the spec's judgement is all there is
        if self.status_type.kind == "enum":
            value = known.get(name, _ABSENT)
            if value is not _ABSENT:
                return value
            raise self._input_error(ev, "T0733", f"{ev.call}: unknown status {excerpt(name)} for spec {self.spec.name}: "
                                    f"write one of its {self.status_type} names without a namespace, {self.success!r} "
                                    f"for success (known: {', '.join(known)})", *_suggest(name, known))
        # An integer status is written as the integer the function returned, as in the schema and
        # in `expect` codes: a name is an input error that says which integer to write.
        if name in known:
            raise self._input_error(ev, "T0733", f"{ev.call}: ret {excerpt(name)}: spec {self.spec.name} records "
                                    f"statuses as integers; write {known[name]} ({name})")
        # The spec names a few of the vendor's many statuses: a name close to one of them is more
        # often another real status than a slip, so only a near spelling is suggested.
        close = closest_name(name, known, 0.85)
        notes = (Note(f"did you mean {known[close]} ({close})?"),) if close is not None else ()
        named = ", ".join(f"{v} ({n})" for n, v in known.items()) or "none"
        raise self._input_error(ev, "T0733", f"{ev.call}: ret {excerpt(name)} is not an integer status: write the "
                                f"integer the function returned (the statuses spec {self.spec.name} names: {named})", *notes)

    def fast_path(self) -> FastPath | None:
        """The fast path (checker.fast.fastpath) bound to this replayer's state, its record of which
        line made each entry and its windows of recent calls: a line its step takes is checked and
        applied as `feed` would have (with no finding); one it declines is `feed`'s, from the same
        state. None when no call has a fast step."""
        return fast_path(self.sem, self.state, self._remember, self.recent)

    # ---- one event
    def feed(self, ev: TraceEvent) -> list[Finding]:
        """Check one event, then move to the state its recorded result implies."""
        return self.check(ev, *self.normalise(ev))

    def check(self, ev: TraceEvent, shape: _CallShape, args: dict, status, outs: dict) -> list[Finding]:
        """`feed` of an event `normalise` has read already (into these four)."""
        try:
            return self._check(ev, shape, args, status, outs)
        except ClauseEvalError as exc:
            raise self._unevaluable(ev, exc) from None

    def _unevaluable(self, ev: TraceEvent, exc: ClauseEvalError) -> RegcheckError:
        """E0310 at the trace line whose call the spec could not evaluate, with the clause."""
        return RegcheckError([error(
            "E0310", f"{ev.call}: spec {exc.spec} could not evaluate rule {exc.rule} ({exc.span.path}:{exc.span.line}) "
            f"for this call: {exc.reason}; a spec bug (guard the expression)", Span(self.path, ev.line, 1),
            Note(f"rule {exc.rule} of {exc.call}", exc.span))])

    def _check(self, ev: TraceEvent, shape: _CallShape, args: dict, status, outs: dict) -> list[Finding]:
        self.events += 1
        sem = self.sem
        st = self.state
        cc = sem.calls[shape.name]
        allowed = sem.allowed(st, shape.name, args)
        success = status == self.success
        findings: list[Finding] = _NO_FINDINGS
        if allowed.broken or allowed.unspecified or cc.thread_rule is not None or not (success and allowed.success):
            findings = self._explain(ev, shape, cc, allowed, args, status, outs)
        elif cc.ensures and sem.ensures_broken(st, shape.name, args, outs):
            findings = self._explain(ev, shape, cc, allowed, args, status, outs)
        # (False for a success whose effect could not be evaluated here and was undone: ITF's `applied`)
        self.last_applied = success and sem.apply(st, shape.name, args, outs)
        if self.last_applied and st.journal:
            self._remember(ev.line, ev.call)
        return findings

    def _explain(self, ev, shape, cc, allowed, args, status, outs) -> list[Finding]:
        """The findings of one event (the slow path: only events that may have any)."""
        findings: list[Finding] = []
        rejected = status != self.success and any(e.allows(status) for e in allowed.errors)
        for rule in allowed.broken:
            findings.append(self._usage(ev, rule, args, status if rejected else None))
        if cc.thread_rule is not None and ev.t0 is not None and ev.tid is not None:
            clash = self._thread_clash(shape.name, ev)
            if clash is not None:
                findings.append(self.finding(ev, "usage", cc.thread_rule,
                                             f"called from thread {ev.tid} while the call at line {clash} "
                                             f"from another thread was still running; the function is not thread-safe",
                                             ((clash, shape.name),)))
        judgement = self.sem.judge(allowed, self.state, args, status, outs)
        if not judgement.conforms:
            findings.append(self._conformance(ev, judgement, args, status, outs))
        for rule in allowed.unspecified:
            findings.append(self.finding(ev, "unspecified", rule, "the documents do not say what happens here; "
                                         f"recorded result {excerpt(status)} accepted", self._related(rule, ev, args)))
        return findings

    def _thread_clash(self, call: str, ev: TraceEvent) -> int | None:
        recent = self.recent.get(call)
        if recent is None:
            recent = self.recent[call] = thread_window()
        clash = None
        for tid, t0, t1, line in recent:
            if tid != ev.tid and t0 <= ev.t1 and ev.t0 <= t1:
                clash = line
        recent.append((ev.tid, ev.t0, ev.t1, ev.line))
        return clash

    # ---- explaining
    def _related(self, rule: str, ev: TraceEvent, args: Mapping) -> tuple[tuple[int, str], ...]:
        """Earlier events a finding relates to: those that created the entries the rule looked at."""
        found = set()
        for key in self.sem.witnesses(self.state, ev.call, rule, args):
            made = self.created.get(key)
            if made is not None:
                found.add(made)
        if not found:  # nothing live to blame: perhaps the memory was freed or unregistered earlier
            values = {v for v in args.values() if type(v) is int and v != 0}
            latest = self.removals.latest
            for table in self._tables_of_rule(rule):
                for key in values:
                    removal = latest(table, key)
                    if removal is not None and (table, key) not in self.created:  # live again: not what is missing now
                        found.add(removal)
        return tuple(sorted(found))

    def _tables_of_rule(self, rule: str) -> frozenset[str]:
        """The tables a rule's condition mentions (cached): only their removals can explain it."""
        cached = self._rule_tables.get(rule)
        if cached is None:
            info = self.spec.rules.get(rule)
            clauses = self.spec.calls[info.call].decl.clauses if info and info.call else ()
            cached = frozenset(b.name for c in clauses if getattr(c, "rule", None) == rule
                               for b in self.spec.reads(getattr(c, "cond", None)) if b.kind == "table")
            self._rule_tables[rule] = cached
        return cached

    def _citation(self, rule: str) -> Citation | None:
        """The document a rule cites (cached per rule, as `_tables_of_rule`): a title and a link the
        user can follow, not the spec's location, since most of the bundled specs' documents are
        research notes the user does not have (docs/sources.md says so)."""
        if rule in self._citations:
            return self._citations[rule]
        info = self.spec.rules.get(rule)
        cited = None
        if info is not None and info.source and info.cite:
            link = document_where(info.source, bundled_spec_name(info.span.path))
            cited = Citation(info.source.title, link, info.cite.clause)
        self._citations[rule] = cited
        return cited

    def _cite_note(self, rule: str, cited: Citation | None) -> tuple[str, ...]:
        info = self.spec.rules.get(rule)
        if info is None:
            return ()
        notes = [f"{info.span.path}:{info.span.line}: {info.summary}"]
        if cited is not None:
            notes.append(f"document: {cited.title} <{cited.link}>: {cited.clause}")
        return tuple(notes)

    def finding(self, ev: TraceEvent, kind: str, rule: str, message: str,
                related: tuple[tuple[int, str], ...] = ()) -> Finding:
        """A finding at `ev`'s line with the notes every finding carries (the related events, the
        rule's clause and citation); the executor reports its own kinds through it too."""
        notes = tuple(f"{self.path}:{line}: related: the {call} recorded here" for line, call in related)
        cited = self._citation(rule)
        return Finding(ev.line, kind, rule, ev.call, f"{ev.call}: {message}", tuple(line for line, _ in related),
                       notes + self._cite_note(rule, cited), document=cited)

    def _usage(self, ev: TraceEvent, rule: str, args: Mapping, rejected_with=None) -> Finding:
        """A broken obligation; `rejected_with`: the documented error status the runtime returned."""
        info = self.spec.rules[rule]
        if info.kind == "usage":
            active, unknown = self.sem.active_groups(self.state)
            groups = ", ".join(active) or "none"
            groups += "".join(f"; {g} cannot be evaluated: {why}" for g, why in unknown)
            msg = f"called outside its API group (active group: {groups})"
        else:
            msg = "caller obligation broken" + ("; the documents leave the outcome undefined" if info.kind == "undefined" else "")
        if info.cite:
            msg += f": {info.cite.clause}"
        f = self.finding(ev, "usage", rule, msg, self._related(rule, ev, args))
        if rejected_with is None:
            return f
        note = f"the runtime rejected the call with {rejected_with!r}, a documented error here (--ignore-rejected hides such findings)"
        return replace(f, notes=f.notes + (note,), rejected=True)

    def _conformance(self, ev: TraceEvent, judgement, args: Mapping, status, outs: Mapping) -> Finding:
        rules = judgement.rules or ("(none)",)
        rule = rules[0]
        kind = self.spec.rules[rule].kind if rule in self.spec.rules else ""
        if status == self.success and kind == "ensures":
            shown = ", ".join(f"{n}={show_value(v)}" for n, v in outs.items())
            info = self.spec.rules[rule]
            msg = f"succeeded with {shown}, which breaks the promise {rule}" + (f": {info.cite.clause}" if info.cite else "")
        elif kind == "effect":
            msg = (f"returned {excerpt(status)}, but no documented failure applies in this state, so the call must "
                   f"succeed; the spec allows {judgement.expected}")
        else:
            msg = f"returned {excerpt(status)}; the spec allows {judgement.expected}"
        scope = {**args, **outs}
        related = tuple(sorted({made for r in rules for made in self._related(r, ev, scope)}))
        f = self.finding(ev, "conformance", rule, msg, related)
        if len(rules) > 1:
            f = replace(f, message=f.message + f" (also {', '.join(rules[1:])})")
        return f


class RemovalIndex:
    """The latest removal of each (table, key) in the replayer's window of removals, by a dict
    lookup: what `_related` asks for every finding whose entries are gone.

    A scan of the window instead (REMOVED_WINDOW items, newest first) cost about 0.6 ms per finding,
    so a trace with a finding every few events replayed some ten times slower than a clean one. The
    index is brought up to date only when asked, from the items pushed since it last was (the
    window counts its pushes), so a replay without findings pays nothing for it. An entry is believed
    only while its removal is still in the window; the dict is rebuilt from the window once it holds
    more than twice the window's length, so its memory stays bounded."""

    __slots__ = ("window", "index", "indexed")

    def __init__(self, window: Any):
        self.window = window
        self.index: dict[tuple[str, Any], tuple[int, int, str]] = {}  # (table, key) -> (push number, line, call)
        self.indexed = 0  # the window's pushes taken into `index`

    def latest(self, table: str, key: Any) -> tuple[int, str] | None:
        """(line, call) of the latest removal of (table, key) that the window still holds, or None."""
        window = self.window
        pushed = window.pushed
        if pushed != self.indexed:
            self._catch_up(pushed)
        hit = self.index.get((table, key))
        if hit is None or hit[0] < pushed - len(window):  # gone from the window since
            return None
        return hit[1], hit[2]

    def _catch_up(self, pushed: int) -> None:
        window, index = self.window, self.index
        held = len(window)
        first = pushed - held  # the push number of window[0]
        new = pushed - self.indexed
        if new >= held or len(index) > 2 * (window.maxlen or 0):
            index.clear()
            for number, (table, key, line, call) in enumerate(window, first):
                index[(table, key)] = (number, line, call)
        else:
            for i in range(held - new, held):
                table, key, line, call = window[i]
                index[(table, key)] = (first + i, line, call)
        self.indexed = pushed


CALL_BITS = 16  # a MadeLines value: line << CALL_BITS | the call's number


class MadeLines(MappingBase):
    """Replayer.created without the C module: (table, key) -> (line, call) of the event that made
    each live entry, read as a mapping (get, in, [], len, iteration, items; entries come table by
    table), written by `_python_remembering` alone. Held as one dict per table, key -> line <<
    CALL_BITS | the call's number: an int per entry where a dict by (table, key) holds a key tuple
    and a value tuple (21 MiB more at 100,000 live registrations in each of two tables,
    bench/bench_replay.py's pure-Python peak RSS of live-100k). A value is the (line, call) tuple
    itself past 2**CALL_BITS call names (a spec declares a few dozen)."""

    __slots__ = ("tables", "numbers", "calls")

    def __init__(self) -> None:
        self.tables: defaultdict[str, dict] = defaultdict(dict)  # table -> {key: value}
        self.numbers: dict[str, int] = {}  # call -> its number
        self.calls: list[str] = []  # number -> call

    def value(self, line: int, call: str) -> int | tuple[int, str]:
        """What an entry made by (line, call) holds (`line`: an int; a negative one decodes too)."""
        number = self.numbers.get(call)
        if number is None:
            if len(self.calls) >> CALL_BITS:
                return (line, call)
            number = self.numbers[call] = len(self.calls)
            self.calls.append(call)
        return line << CALL_BITS | number

    def _made(self, value) -> tuple[int, str]:
        if type(value) is int:
            return value >> CALL_BITS, self.calls[value & ((1 << CALL_BITS) - 1)]
        return value

    def _value_at(self, where, default):
        if type(where) is not tuple or len(where) != 2:  # (a dict's key is a (table, key) tuple)
            return default
        table, key = where
        try:
            entries = self.tables.get(table)
            return default if entries is None else entries.get(key, default)
        except TypeError:  # an unhashable table or key
            return default

    def get(self, where, default=None):
        value = self._value_at(where, _ABSENT)
        return default if value is _ABSENT else self._made(value)

    def __contains__(self, where) -> bool:
        return self._value_at(where, _ABSENT) is not _ABSENT

    def __getitem__(self, where) -> tuple[int, str]:
        value = self._value_at(where, _ABSENT)
        if value is _ABSENT:
            raise KeyError(where)
        return self._made(value)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return ((table, key) for table, entries in self.tables.items() for key in entries)

    def __len__(self) -> int:
        return sum(len(entries) for entries in self.tables.values())


def _remembering(created: Mapping, removed: deque, journal: list) -> Callable[[int, str], None]:
    """remember(line, call): created[(table, key)] = (line, call) for each put of `journal` to an
    entry not in `created` yet (an update keeps the creating line); each removal leaves `created`
    and goes to `removed` as (table, key, line, call). `created` is a MadeLines, or where the C
    module is built its Made (or a dict).

    A put whose journal entry holds a previous record updates an entry that was live before it,
    which the replayer's `created` already holds (every entry a replay makes is remembered, from
    tables that start empty), so it is skipped without looking `created` up: most updates of a
    trace (a device pointer noted on a registration) then cost no probe of a large dict."""
    if NATIVE is not None:  # the same function in C (checker/native/_native.c)
        return partial(NATIVE.remember, created, removed, journal)
    return _python_remembering(created, removed, journal)  # type: ignore[arg-type]


def _python_remembering(created: MadeLines, removed: deque, journal: list) -> Callable[[int, str], None]:
    tables, numbers, value = created.tables, created.numbers, created.value  # (tables: a defaultdict)
    # A CountingWindow's append is a Python method (count, then deque's append); this closure is
    # its one writer while replaying, so it counts itself and calls deque's append, a Python call
    # fewer per removal.
    counting = type(removed) is CountingWindow
    push = deque.append if counting else type(removed).append

    def remember(line: int, call: str) -> None:
        made = None
        for table, key, op, old in journal:
            if table is None:
                continue
            if op == "put":
                if old is not None:  # an update: its entry is in `created` (see `_remembering`)
                    continue
                if made is None:  # value(line, call), without the call where the call has its number
                    try:
                        made = line << CALL_BITS | numbers[call]
                    except KeyError:
                        made = value(line, call)
                tables[table].setdefault(key, made)  # an update keeps the creating line
            else:
                tables[table].pop(key, None)
                if counting:
                    removed.pushed += 1  # type: ignore[attr-defined]
                push(removed, (table, key, line, call))
    return remember


def show_value(v) -> str:
    """Addresses in hex, statuses and names as they are."""
    if type(v) is int and (v >= 0x10000 or v < 0):
        return hex(v)
    return repr(v) if isinstance(v, str) else str(v)


# ---------------------------------------------------------------- whole traces


def semantics_for(header: TraceHeader, spec_name: str | None, path: str, shown_as: str | None = None,
                  trace_shown: str | None = None) -> Semantics:
    """The spec named on the command line (if any: it replaces the header's, see `spec_notes`) or in
    the header (a relative path from the trace's directory: `header_spec_ref`), configured by the
    header's env. `shown_as`: how findings and diagnostics name the spec (default: as opened);
    `trace_shown` likewise for the trace at `path`."""
    at_header = Span(trace_shown or path, header.line, 1)
    ref = spec_name or header_spec_ref(header, path)
    try:
        spec = load_spec(ref) if shown_as is None else load_spec_as(ref, shown_as)
    except RegcheckError as exc:
        if spec_name is not None:  # the command line's spec: no fault of the trace's
            raise
        raise _at_header(exc, at_header) from None
    try:
        config = resolve_config(spec, header.env)
    except RegcheckError as exc:
        raise RegcheckError([error(d.code, d.message, at_header) for d in exc.diagnostics]) from None
    # One compiled semantics (and fast path) per (spec, configuration), shared by every trace of a
    # corpus this process replays: compiling costs tens of milliseconds, a short trace less.
    return compiled_semantics(spec, config)


def _at_header(exc: RegcheckError, header: Span) -> RegcheckError:
    """A spec the trace header names that cannot be found or read is the header's error: its
    diagnostics without a line (no place at all, or the missing file as a whole) point at the
    header; an error inside the spec file keeps its line there."""
    return RegcheckError([replace(d, span=header) if d.span.line <= 0 else d for d in exc.diagnostics])


def spec_notes(header: TraceHeader, spec_name: str | None, path: str,
               shown_as: str | None = None, trace_shown: str | None = None) -> tuple[Diagnostic, ...]:
    """T0737 when a spec given on the command line replaces another one the header names (the
    same spec by name or by file is no replacement). `shown_as`: how the note names that spec;
    `trace_shown`: how it names the trace at `path`."""
    if spec_name is None or header.spec == spec_name or _same_file(header_spec_ref(header, path), spec_name):
        return ()
    given = load_spec(spec_name).name
    if header.spec == given:
        return ()
    return (warning("T0737", f"the trace header names spec '{header.spec}'; --spec replaced it with "
                             f"'{shown_as or spec_name}'", Span(trace_shown or path, header.line, 1)),)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


PROGRESS_EVERY = 65536
_PYTHON_LOOP = False  # tests set it: the fast path's Python loop (`_drive`) even where the C one is built


def _reporting(events: Iterable[TraceEvent], on_events: Callable[[int], None]) -> Iterator[TraceEvent]:
    """The events, calling on_events(n) after every PROGRESS_EVERY of them and for the rest at the end."""
    n = 0
    for ev in events:
        yield ev
        n += 1
        if n == PROGRESS_EVERY:
            on_events(n)
            n = 0
    if n:
        on_events(n)


def replay_events(sem: Semantics, events: Iterable[TraceEvent], path: str = "<trace>",
                  max_findings: int | None = None, on_events: Callable[[int], None] | None = None,
                  fast: bool = True) -> ReplayReport:
    """Replay events; with max_findings, stop after that many usage/conformance findings.

    `on_events(n)` (for progress bars) hears about every n events replayed, in batches of 65,536;
    without it the loop pays nothing for progress. Events straight from `read_trace` (an unread
    `EventStream`) go through the fast path (checker.fast.fastpath) unless `fast` is False; the report is
    the same either way."""
    if max_findings is not None and max_findings < 1:
        raise ValueError("max_findings must be at least 1")
    r = Replayer(sem, path)
    if fast and isinstance(events, EventStream):
        return _replay_stream(r, events, max_findings, on_events)
    return _replay_iter(r, events, max_findings, on_events)


def _replay_iter(r: Replayer, events: Iterable[TraceEvent], max_findings: int | None,
                 on_events: Callable[[int], None] | None) -> ReplayReport:
    """`replay_events` over TraceEvents: every event through `Replayer.feed`."""
    if on_events is not None:
        events = _reporting(events, on_events)
    findings = _Findings(max_findings)
    feed = r.feed
    for ev in events:
        found = feed(ev)
        if found and findings.add(found):
            break
    return ReplayReport(r.path, r.sem.spec.name, r.events, tuple(findings.items), findings.truncated)


def _replay_stream(r: Replayer, stream: EventStream, max_findings: int | None,
                   on_events: Callable[[int], None] | None) -> ReplayReport:
    """`replay_events` over raw lines: each decoded line first goes to its call's fast step; a line
    the step does not handle (it changed nothing then) is checked and fed as an event."""
    fast = r.fast_path()
    if fast is None:
        return _replay_iter(r, stream, max_findings, on_events)
    decode, steps = fast
    feed, event = r.feed, stream.event
    findings = _Findings(max_findings)
    seen = 0  # events so far, both ways
    report_at = PROGRESS_EVERY if on_events is not None else -1
    lineno = stream.lineno
    drive = _drive if NATIVE is None or _PYTHON_LOOP else NATIVE.drive
    lines = iter(stream.raw_lines())
    try:
        while True:
            budget = report_at - seen if report_at > 0 else -1
            lineno, handled, raw, done = drive(lines, decode, steps, DECODE_ERRORS, lineno, budget)
            seen += handled
            if isinstance(done, BaseException):  # reading failed after line `lineno`
                raise done
            if raw is not None:  # a line the fast steps did not take
                ev = event(raw, UNDECODED, lineno)
                if ev is None:  # a blank line
                    continue
                found = feed(ev)
                seen += 1
            else:
                found = None
            if seen == report_at:
                on_events(PROGRESS_EVERY)  # type: ignore[misc]
                report_at += PROGRESS_EVERY
            if found and findings.add(found) or done:
                break
    except OSError as exc:
        raise stream.read_error(exc, lineno) from None
    if on_events is not None and seen % PROGRESS_EVERY:
        on_events(seen % PROGRESS_EVERY)
    return ReplayReport(r.path, r.sem.spec.name, seen, tuple(findings.items), findings.truncated)


def _drive(lines: Iterator[bytes], decode: Callable, steps: dict, errors: tuple, lineno: int,
           budget: int) -> tuple[int, int, bytes | None, bool | BaseException]:
    """The fast path's loop, in Python: `checker._native.drive` (see checker/native/_native.c)
    where that is built. It takes lines (line `lineno + 1` first) and gives each decoded line to its
    call's step, until a line the steps do not take (returned as raw, for the general path),
    `budget` lines taken (for progress), the end (done True), or a failed read (done: the error).
    Returns (the number of the last line taken, lines the steps took, raw, done)."""
    handled = 0
    try:
        for raw in lines:
            lineno += 1
            try:
                o = decode(raw)
            except errors:  # not JSON, or not in the shape of any fast step's line
                return lineno, handled, raw, False
            if not steps[type(o)](o, lineno):
                return lineno, handled, raw, False
            handled += 1
            if handled == budget:
                return lineno, handled, None, False
    except OSError as exc:
        return lineno, handled, None, exc
    return lineno, handled, None, True


class _Findings:
    """The findings of a replay in order; `add` says when `limit` usage/conformance findings are in."""

    __slots__ = ("items", "limit", "violations", "truncated")

    def __init__(self, limit: int | None):
        self.items: list[Finding] = []
        self.limit = limit
        self.violations = 0
        self.truncated = False

    def add(self, found: list[Finding]) -> bool:
        for f in found:
            self.items.append(f)
            if f.kind != "unspecified":
                self.violations += 1
                if self.limit is not None and self.violations >= self.limit:
                    self.truncated = True
                    return True
        return False


def replay_trace(path: str, spec_name: str | None = None, max_findings: int | None = None) -> ReplayReport:
    """Replay one trace file (streaming). Raises RegcheckError on input errors, with the line."""
    header, events = read_trace(path)
    try:
        sem = semantics_for(header, spec_name, path)
        return replace(replay_events(sem, events, path, max_findings), notes=spec_notes(header, spec_name, path))
    finally:
        close = getattr(events, "close", None)
        if close:
            close()
