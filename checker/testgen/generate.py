"""Conformance tests computed from a spec, as data (`regcheck generate`).

A `ConformanceTest` is a short trace: the calls that reach a state (the prefix), the call under test,
and usually one probe call after it, each API call carrying the outcome the spec expects of it
(`Expectation`). Pointers in a test are outputs of its own allocation events plus offsets, so the
executor's relocation (`checker.drivers.execute`) runs the same test against any driver. Emitters render
tests as trace files (`checker.testgen.suite`) and as a pytest module (`checker.emit.pytest_module`).

How a test is found, per configuration of the spec's parameters (each product, kernel 5.10 and
5.10.1, driver 2005 and 2006, QNX Safety on and off: `configurations`):

  1. Enumeration (exact, concrete semantics). Breadth-first search over call sequences that keep
     every obligation and whose success is determinate, from the initial state, up to `depth` calls,
     with a small pool of arguments (allocation bases, their neighbours one byte and one page away,
     sizes that end exactly at, one byte into or one byte past an existing range, 0, negative, huge,
     every flag combination, every enum member). In each state every API call is tried with a pool
     derived from that state; a candidate is kept when its outcome is determinate (no `undefined`
     obligation broken, no `unspecified` clause holding, at most one `fails` clause holding) and it
     covers a coverage item no earlier (shorter) test covers.
  2. Bounded model checking (`checker.engines.bmc`, Z3 through `checker.symbolic.encode`) for every outcome branch
     enumeration did not reach in a configuration: the solver picks the earlier calls and the
     arguments that make exactly that branch hold, with every address inside an allocation of the
     run. Its run is replayed with the concrete semantics before it becomes a test; when no run of
     `bmc_depth` calls exists, the coverage report says so (a bounded result, never a proof).

Coverage items (what a test shows): each outcome branch of each call per configuration (a `fails`
clause isolated, success, a `may fail` clause holding, "allowed, not forced", or not holding, a
usage or non-undefined obligation broken while the outcome stays determinate, an `ensures` checked),
page locks taken and released (`pinned` declarations), and boundary cases per rule: how the call's
range lies against each existing entry (equal, adjacent below/above, contains, inside, overlapping
by the first or last byte only, ...), the class of each argument the rule reads (null, aligned,
misaligned by one byte, size 0, 1, negative, huge, crossing 2**64, each flag combination, each enum
member) and each state variable's value.

Every kept test must keep its expectations when the allocations are laid out differently (reversed
order far apart, and packed one page apart): the relocation into a driver's memory keeps offsets
inside an allocation, not distances between allocations, so a test whose outcome depends on those
distances would be wrong against a real driver. Such candidates are dropped.

Rules that are not tested against a driver, and why, are listed in the coverage report: `undefined`
obligations (any behaviour is allowed), `unspecified` clauses (the documents are silent), thread
safety (conformance tests make one call at a time), invariants (properties of the model, proved by
`regcheck prove`) and obligations of the environment (kept by every test).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..language import syntax as S
from ..drivers.execute import memory_shape
from ..drivers.pinning import PAGE_SIZE
from ..engines.runs import Step, json_value, semantics_for
from ..model.semantics import Semantics
from ..model.outcomes import Allowed
from ..model.state import State
from ..language.typecheck import normalise_version
from ..trace.events import TraceEvent, TraceHeader, parse_int
from ..language.typecheck import INT_BOUNDS, UNBOUNDED, CheckedSpec, Type, value_bounds

PAGE = PAGE_SIZE
ALLOC_STRIDE = 0x100000  # recorded allocation k (1-based) starts at k * ALLOC_STRIDE
ALLOC_SIZE = 4 * PAGE  # what a prefix allocates: room for adjacent, inner and enclosing ranges
MAX_ALLOCS = 2  # allocations per prefix in the enumeration
DEVICE_BASE = 0x12C0000000  # recorded outputs that are not allocations (device addresses)
NULL_SIZE_LIMIT = 1 << 16
HUGE_ALLOCATION = 1 << 40  # an allocation no test machine can give: only an environmental failure is expected  # a range at address 0 no longer than this reaches no mappable page
U64 = 1 << 64

TESTED, ALLOWED, NOT_TESTABLE, NOT_REACHED, MODEL, ENVIRONMENT = (
    "tested", "allowed, not forced", "not testable", "not reached", "model invariant", "environment")


# ---------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class Expectation:
    """The outcome a test expects of one call: success, or a failure with one of `codes` (None: any
    failure status except those in `excluded`). `rule` is the rule ID that decides it."""

    rule: str
    outcome: str  # "success" | "failure"
    codes: tuple | None = None
    excluded: tuple = ()

    def accepts(self, status, success) -> bool:
        if self.outcome == "success":
            return status == success
        if status == success:
            return False
        return status in self.codes if self.codes is not None else status not in self.excluded

    def to_json(self) -> dict:
        obj: dict = {"rule": self.rule, "outcome": self.outcome}
        if self.outcome == "failure":
            if self.codes is not None:
                obj["codes"] = list(self.codes)
            elif self.excluded:
                obj["except"] = list(self.excluded)
        return obj

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Expectation":
        """From a trace event's `expect` object (already checked by the trace reader)."""
        def status(v):
            return parse_int(v, what="expect") if isinstance(v, str) and v[:1] in "0123456789-" else v
        codes = obj.get("codes")
        return cls(obj["rule"], obj["outcome"], tuple(status(c) for c in codes) if codes is not None else None,
                   tuple(status(c) for c in obj.get("except", ())))

    def describe(self, success) -> str:
        if self.outcome == "success":
            return f"success ({success!r}) [{self.rule}]"
        if self.codes is not None:
            return " or ".join(repr(c) for c in self.codes) + f" [{self.rule}]"
        if self.excluded:
            return "any failure except " + ", ".join(repr(c) for c in self.excluded) + f" [{self.rule}]"
        return f"any failure [{self.rule}]"


def expectation_of(sem: Semantics, al: Allowed) -> Expectation | None:
    """What the spec expects of a call given its `Allowed`, ignoring environmental failures (`may
    fail`); None when every outcome is allowed (an undefined obligation broken, or unspecified)."""
    if al.open:
        return None
    if not al.errors:
        cc = sem.calls[al.call]
        return Expectation(cc.effect_rule or al.call, "success")
    if all(e.codes is not None for e in al.errors):
        codes = sorted({c for e in al.errors for c in e.codes}, key=_status_key)
        return Expectation(al.errors[0].rule, "failure", tuple(codes))
    explicit = {c for e in al.errors if e.codes is not None for c in e.codes}
    anys = [e.excluded for e in al.errors if e.codes is None]
    excluded = frozenset.intersection(*anys) - explicit
    return Expectation(al.errors[0].rule, "failure", None, tuple(sorted(excluded, key=_status_key)))


def _status_key(v):
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


@dataclass(frozen=True, slots=True)
class ConformanceTest:
    """One test as data: a trace whose API calls carry the outcomes the spec expects.

    `events` are as a recording would have them (`ret` a representative expected status, `out` the
    recorded outputs); `expectations[i]` is what event i must return (None for environment events).
    `covers` lists the coverage items ("RULE: item") this test was kept for.
    """

    name: str
    rule: str
    spec: str
    env: Mapping[str, Any]
    events: tuple[TraceEvent, ...]
    expectations: tuple[Expectation | None, ...]
    covers: tuple[str, ...] = ()
    method: str = "enumeration"
    description: str = ""

    @property
    def pytest_name(self) -> str:
        return "test_" + identifier(self.name)

    def header(self) -> TraceHeader:
        meta = {"test": self.name, "rule": self.rule, "method": self.method,
                "generator": "regcheck fuzz" if self.method == "fuzz" else "regcheck generate"}
        if self.description:
            meta["description"] = self.description
        if self.covers:
            meta["covers"] = list(self.covers)
        return TraceHeader(spec=self.spec, env=dict(self.env), meta=meta)

    def trace_events(self) -> list[TraceEvent]:
        """The events with their `expect` objects, as a suite's trace file holds them."""
        out = []
        for ev, exp in zip(self.events, self.expectations):
            out.append(TraceEvent(ev.line, ev.call, ev.args, ev.ret, ev.out, ev.tid, ev.t0, ev.t1,
                                  exp.to_json() if exp is not None else None))
        return out


@dataclass(frozen=True, slots=True)
class RuleCoverage:
    """How one rule ID is covered: a status (`tested`, `allowed, not forced`, `not testable`, `not
    reached`, `model invariant`, `environment`), why, and per branch the tests that show it."""

    rule: str
    kind: str
    call: str | None
    status: str
    note: str
    branches: tuple[tuple[str, tuple[str, ...]], ...] = ()
    boundaries: int = 0  # boundary items (geometry, argument classes, state values) covered

    def to_json(self) -> dict:
        return {"rule": self.rule, "kind": self.kind, "call": self.call, "status": self.status, "note": self.note,
                "branches": {b: list(t) for b, t in self.branches}, "boundary_items": self.boundaries}


@dataclass(frozen=True, slots=True)
class Suite:
    spec: str  # as a trace header names it (a bundled name or a path)
    tests: tuple[ConformanceTest, ...]
    coverage: tuple[RuleCoverage, ...]
    configs: tuple[Mapping[str, Any], ...]
    stats: Mapping[str, Any] = field(default_factory=dict)

    def test(self, name: str) -> ConformanceTest:
        for t in self.tests:
            if t.name == name:
                return t
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class GenerateOptions:
    """`depth`: calls in an enumerated prefix; `bmc_depth`: steps the model checker may use for a
    branch enumeration did not reach (0: no solver); `configs`: parameter sets (None: the spec's,
    see `configurations`)."""

    depth: int = 3
    bmc_depth: int = 5
    configs: tuple[Mapping[str, Any], ...] | None = None
    timeout_ms: int = 5000


# ---------------------------------------------------------------- configurations


def configurations(spec: CheckedSpec) -> tuple[dict, ...]:
    """Parameter sets that exercise every value the spec distinguishes, as trace-header JSON.

    Per parameter: its default; every member of an enum; both booleans; for each version literal
    the spec compares it with, that version and the next one above it (5.10 and 5.10.1); for each
    integer literal, that value and the one below (2006 and 2005). With few combinations in all
    (at most 8) every combination is taken, otherwise the default with one parameter varied at a time.
    """
    pool: dict[str, list] = {}
    for name, (t, default) in spec.params.items():
        values = [default]
        if t.kind == "enum":
            values += list(spec.enums[t.name])
        elif t.kind == "bool":
            values += [False, True]
        for lit in _literals_compared_with(spec, name):
            if t.kind == "version" and isinstance(lit, S.VersionLit):
                v = normalise_version(lit.parts)
                values += [v, normalise_version(lit.parts + (1,))]
            elif t.kind == "int" and isinstance(lit, S.IntLit):
                values += [lit.value, lit.value - 1]
        seen: list = []
        for v in values:
            if v not in seen:
                seen.append(v)
        pool[name] = seen
    names = list(pool)
    defaults = {n: spec.params[n][1] for n in names}
    total = 1
    for n in names:
        total *= len(pool[n])
    if total <= 8:
        combos = [dict(zip(names, vs)) for vs in itertools.product(*(pool[n] for n in names))]
        combos.sort(key=lambda c: c != defaults)  # the default first
    else:
        combos = [dict(defaults)]
        for n in names:
            for v in pool[n][1:]:
                combos.append({**defaults, n: v})
    return tuple({n: json_value(spec.params[n][0], v) for n, v in c.items()} for c in combos)


def _literals_compared_with(spec: CheckedSpec, param: str) -> Iterator[S.Expr]:
    for node in _walk(spec.ast):
        if isinstance(node, S.Binary) and node.op in ("<", "<=", ">", ">=", "==", "!="):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                if isinstance(a, S.Name) and a.name == param and isinstance(b, (S.IntLit, S.VersionLit)):
                    yield b


def _walk(node) -> Iterator:
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, tuple):
            stack.extend(x)
            continue
        if not hasattr(x, "__dataclass_fields__"):
            continue
        yield x
        for name in x.__dataclass_fields__:
            if name != "span":
                child = getattr(x, name)
                if isinstance(child, tuple) or hasattr(child, "__dataclass_fields__"):
                    stack.append(child)


def config_label(env: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_show_json(v)}" for k, v in env.items())


def _show_json(v) -> str:
    return "true" if v is True else "false" if v is False else str(v)


# ---------------------------------------------------------------- what each call reads


@dataclass(frozen=True, slots=True)
class _Facts:
    """Spec-level facts about one call (independent of the configuration)."""

    name: str
    is_api: bool
    params: tuple[tuple[str, Type], ...]
    ranges: dict[str, str]  # address param -> the size param of `range(ptr, size)` in its clauses
    reads: dict[str, frozenset[str]]  # rule -> names its condition reads (params, vars, tables)
    all_reads: frozenset[str]
    kinds: dict[str, str]  # rule -> clause kind
    conditional_may: frozenset[str]
    effect_rule: str | None
    ensures: tuple[str, ...]
    thread_rule: str | None


def _facts(spec: CheckedSpec, info) -> _Facts:
    reads: dict[str, frozenset[str]] = {}
    kinds: dict[str, str] = {}
    ranges: dict[str, str] = {}
    params = {n for n, _ in info.params}
    cond_may = set()
    ensures, effect, thread = [], None, None
    for c in info.decl.clauses:
        cond = getattr(c, "cond", None)
        rule = getattr(c, "rule", None)
        if rule is not None:
            kinds[rule] = spec.rules[rule].kind
        if isinstance(c, S.OnlyIn):
            names: set[str] = set()
            for g in c.groups:
                names |= _reads(spec, spec.groups[g])
            reads[c.rule] = frozenset(names)
        elif cond is not None and rule is not None:
            reads[rule] = frozenset(_reads(spec, cond))
            for node in _walk(cond):
                if isinstance(node, S.Builtin) and node.func == "range" and all(isinstance(a, S.Name) for a in node.args):
                    p, s = node.args[0].name, node.args[1].name
                    if p in params and s in params:
                        ranges.setdefault(p, s)
        if isinstance(c, S.MayFail) and c.cond is not None:
            cond_may.add(c.rule)
        if isinstance(c, S.Ensures):
            ensures.append(c.rule)
        if isinstance(c, S.Effect):
            effect = c.rule
        if isinstance(c, S.NotThreadSafe):
            thread = c.rule
    all_reads = frozenset().union(*reads.values()) if reads else frozenset()
    return _Facts(info.name, info.decl.kind == "call", info.params, ranges, reads, all_reads, kinds,
                  frozenset(cond_may), effect, tuple(ensures), thread)


def _reads(spec: CheckedSpec, e: S.Expr) -> set[str]:
    """Names an expression reads (params, vars, tables), with `def`s expanded."""
    return {b.name for b in spec.reads(e, defs=True)}


# ---------------------------------------------------------------- the search


@dataclass(frozen=True, slots=True)
class Node:
    """A state reached by a prefix: its steps and the allocations (recorded base, size) it made."""

    state: State
    steps: tuple[Step, ...]
    allocs: tuple[tuple[int, int], ...]


@dataclass(slots=True)
class _Ctx:
    sem: Semantics
    env: dict  # JSON values
    label: str


@dataclass(slots=True)
class _Kept:
    test: ConformanceTest
    items: frozenset  # (rule, label)
    order: int


class ArgumentPool:
    """The arguments the generator and the fuzzer try for a call in a state (recorded addresses).

    Addresses are 0 or lie inside an allocation the prefix made (so the executor can relocate them):
    each allocation's base, the byte and the page after it, its last byte and last page, and each
    table entry's base, the bytes around it, one page before and after it, its last byte and its
    end. Sizes of a `range(ptr, size)`: 0, 1, one to four pages, -1, -1 page, 2**63-1, 2**63,
    2**64-1, and every size that makes the range end at, one byte into or one byte past an
    allocation or entry. Flags: every combination of the declared bits, an undeclared bit alone and
    with each member. Enums: every member. The semantics judges them; nothing here decides outcomes.
    """

    def __init__(self, spec: CheckedSpec):
        self.spec = spec
        self.facts = {n: _facts(spec, info) for n, info in spec.calls.items()}
        self.allocators = memory_shape(semantics_for(spec, {})).allocators
        self.alloc_tables = frozenset(st.table for name in self.allocators for st in _effect_statements(spec.calls[name])
                                      if isinstance(st, S.Insert))
        self.flag_pool = {name: _flag_values(members) for name, members in spec.flags.items()}

    def live(self, node: Node) -> tuple[tuple[int, int], ...]:
        """The prefix's allocations that are still allocated. Addresses in freed memory are never
        used: the driver may have handed the same addresses out again, where the recording has a
        different allocation."""
        tables = [node.state.tables[t].rows for t in self.alloc_tables]
        return tuple((b, n) for b, n in node.allocs if any(b in rows for rows in tables))

    def transitions(self, node: Node, call: str) -> Iterator[dict]:
        """Arguments for a step of a prefix: existing bases, plain sizes, single flags and pairs."""
        facts = self.facts[call]
        alloc = self.allocators.get(call)
        per_param = []
        for name, t in facts.params:
            if alloc is not None and name == alloc.size_param:
                values = [ALLOC_SIZE]
            elif _is_addr(t):
                values = sorted({k for tbl in node.state.tables.values() for k in tbl.rows if isinstance(k, int)}
                                | {k + PAGE for k, n in self.live(node)})
                values = [v for v in values if _relocatable(self.live(node), v)]
            elif name in facts.ranges.values():
                values = [PAGE, 2 * PAGE]
            elif t.kind == "flags":
                members = self.spec.flags[t.name]
                values = list(members.values()) + [sum(members.values())]
                values += [a | b for a, b in itertools.combinations(members.values(), 2)]
            elif t.kind == "enum":
                values = list(self.spec.enums[t.name])
            elif t.kind == "bool":
                values = [False, True]
            else:
                values = [0]
            per_param.append((name, values))
        for combo in itertools.product(*(v for _, v in per_param)):
            yield dict(zip((n for n, _ in per_param), combo))

    def candidates(self, node: Node, call: str, full: bool = True) -> Iterator[dict]:
        """Arguments to try in a state: a geometry part (addresses and their sizes) crossed with a few
        representative other values, then every other value with a few plain geometries."""
        facts = self.facts[call]
        geo_names, other = [], []
        for name, t in facts.params:
            if _is_addr(t):
                geo_names.append(name)
            elif name not in facts.ranges.values():
                other.append((name, self.values(t, full)))
        geos = list(self._geometries(node, facts, geo_names, "full" if full else "reduced"))
        plain = list(self._geometries(node, facts, geo_names, "plain"))
        others_all = [dict(zip([n for n, _ in other], c)) for c in itertools.product(*(v for _, v in other))]
        reps = [dict(zip([n for n, _ in other], c))
                for c in itertools.product(*(self._representatives(facts, n, v) for n, v in other))]
        seen = set()
        for g, o in itertools.chain(itertools.product(geos, reps), itertools.product(plain, others_all)):
            args = {**g, **o}
            key = tuple(sorted(args.items()))
            if key not in seen:
                seen.add(key)
                yield args

    def _representatives(self, facts: _Facts, name: str, values: list) -> list:
        t = dict(facts.params)[name]
        if t.kind == "flags":
            return [v for v in values if v and v & (v - 1) == 0 and v in self.spec.flags[t.name].values()]
        if t.kind in ("enum", "bool"):
            return values
        return values[:2]

    def values(self, t: Type, full: bool) -> list:
        if t.kind == "flags":
            return self.flag_pool[t.name]
        if t.kind == "enum":
            return list(self.spec.enums[t.name])
        if t.kind == "bool":
            return [False, True]
        if t.kind == "int":
            vals = [0, 1, PAGE]
            lo, hi = INT_BOUNDS.get(t.name) or (None, None)
            if full:
                vals += [-1, 2**63, U64 - 1] + [b for b in (lo, hi) if b is not None]
            return list(dict.fromkeys(v for v in vals if (lo is None or v >= lo) and (hi is None or v <= hi)))
        return []

    def _geometries(self, node: Node, facts: _Facts, names: list[str], mode: str) -> Iterator[dict]:
        """Addresses (and the sizes of their ranges): "full" near every allocation and entry, "reduced"
        at their bases, "plain" one page at each base (and at null)."""
        if not names:
            yield {}
            return
        per_name = []
        for name in names:
            if mode == "plain":
                points = sorted({0} | {b for b, _ in self.live(node)}
                                | {k for t in node.state.tables.values() if t.sized_by for k in t.rows})
            else:
                points = _points(node, self.live(node), mode == "full")
            size_name = facts.ranges.get(name)
            combos = []
            for p in points:
                if size_name is None:
                    combos.append({name: p})
                elif mode == "plain":
                    combos.append({name: p, size_name: PAGE})
                else:
                    st = dict(facts.params)[size_name]
                    for s in _sizes(node, self.live(node), p, st, mode == "full"):
                        combos.append({name: p, size_name: s})
            per_name.append(combos)
        for combo in itertools.product(*per_name):
            out: dict = {}
            for part in combo:
                out.update(part)
            yield out

    def outputs(self, sem: Semantics, node: Node, call: str, args: Mapping) -> dict | None:
        """Recorded outputs for a success: the next allocation base for an allocator, otherwise the
        first candidate value that keeps the call's `ensures`."""
        info = self.spec.calls[call]
        if not info.outputs:
            return {}
        alloc = self.allocators.get(call)
        choices = []
        for name, t in info.outputs:
            if alloc is not None and name == alloc.output:
                choices.append([ALLOC_STRIDE * (len(node.allocs) + 1)])
            elif _is_addr(t):
                known = sorted({v for tbl in node.state.tables.values() for rec in tbl.rows.values()
                                for v in rec.values() if type(v) is int and v >= DEVICE_BASE})
                choices.append(known + [DEVICE_BASE + 0x100000 * (len(node.steps) + 1)])
            else:
                choices.append([0, 1])
        for combo in itertools.product(*choices):
            outs = dict(zip((n for n, _ in info.outputs), combo))
            if not sem.ensures_broken(node.state, call, args, outs):
                return outs
        return None



class _Generator:
    def __init__(self, spec: CheckedSpec, spec_name: str, options: GenerateOptions):
        self.spec, self.spec_name, self.options = spec, spec_name, options
        self.facts = {n: _facts(spec, info) for n, info in spec.calls.items()}
        self.api_calls = tuple(n for n, f in self.facts.items() if f.is_api)
        self.kept: list[_Kept] = []
        self.covered: set = set()
        self.missing: dict[tuple[str, str], str] = {}  # (rule, branch@config) -> why not covered
        self.open_seen: dict[str, int] = {}  # rule -> candidates that were open because of it
        self.stats = {"states": 0, "candidates": 0, "bmc_queries": 0, "bmc_tests": 0, "unstable": 0}
        self.pool = ArgumentPool(spec)
        self.together: dict[str, tuple] = {}  # rule -> the smallest case where it holds with others
        self.pinned_tables = frozenset(p.table for p in spec.pinned)

    # ---- driving
    def run(self, progress: Callable[[int, int, str], None] | None = None) -> Suite:
        t0 = time.perf_counter()
        configs = self.options.configs or configurations(self.spec)
        for i, env in enumerate(configs, 1):
            self._config(dict(env))
            if progress is not None:
                progress(i, len(configs), config_label(env))
        self._together()
        tests = self._named()
        self.stats["seconds"] = round(time.perf_counter() - t0, 3)
        self.stats["tests"] = len(tests)
        coverage = _coverage(self.spec, self.facts, tests, self.missing, self.open_seen)
        return Suite(self.spec_name, tuple(tests), coverage, tuple(configs), dict(self.stats))

    def _config(self, env: dict) -> None:
        sem = semantics_for(self.spec, env)
        ctx = _Ctx(sem, env, config_label(env))
        frontier = [Node(sem.initial_state(), (), ())]
        seen = {frontier[0].state.snapshot()}
        for depth in range(self.options.depth + 1):
            self.stats["states"] += len(frontier)
            for node in frontier:
                self._probe_state(ctx, node, full=depth <= 2)
            if depth == self.options.depth:
                break
            nxt = []
            for node in frontier:
                for child in self._successors(ctx, node):
                    snap = child.state.snapshot()
                    if snap not in seen:
                        seen.add(snap)
                        nxt.append(child)
            frontier = nxt
        if self.options.bmc_depth > 0:
            self._bmc_fallback(ctx)

    # ---- enumeration
    def _successors(self, ctx: _Ctx, node: Node) -> Iterator[Node]:
        sem = ctx.sem
        for call, facts in self.facts.items():
            alloc = self.pool.allocators.get(call)
            if alloc is not None and len(node.allocs) >= MAX_ALLOCS:
                continue
            for args in self.pool.transitions(node, call):
                al = sem.allowed(node.state, call, args)
                if al.broken or al.open or not al.success:
                    continue
                outputs = self.pool.outputs(ctx.sem, node, call, args)
                if outputs is None:
                    continue
                st = node.state.copy()
                if not sem.apply(st, call, args, outputs):
                    continue
                status = sem.success if facts.is_api else None
                allocs = node.allocs
                if alloc is not None:
                    allocs = allocs + ((outputs[alloc.output], args[alloc.size_param]),)
                yield Node(st, node.steps + (Step(call, dict(args), dict(outputs), status),), allocs)

    def _probe_state(self, ctx: _Ctx, node: Node, full: bool) -> None:
        for call in self.api_calls:
            for args in self.pool.candidates(node, call, full):
                self.stats["candidates"] += 1
                self._consider(ctx, node, call, args, "enumeration")

    # ---- one candidate
    def _together(self) -> None:
        """A test for each `fails` rule that never holds alone: the smallest case where it holds with
        others; its expectation is the union of their failures."""
        isolated = {rule for rule, label in self.covered if label.startswith("fails [")}
        for rule, (_, ctx, node, call, args) in sorted(self.together.items()):
            if rule in isolated:
                continue
            al = ctx.sem.allowed(node.state, call, args)
            others = ", ".join(e.rule for e in al.errors if e.rule != rule)
            items = frozenset({(rule, f"fails together with {others} [{ctx.label}]")}
                              | {(r, f"broken, outcome determinate [{ctx.label}]") for r in al.broken})
            test = self._build(ctx, node, call, args, al, {}, items, "enumeration", rule=rule)
            if test is not None:
                self.covered |= items
                self.kept.append(_Kept(test, items, len(self.kept)))

    def _consider(self, ctx: _Ctx, node: Node, call: str, args: dict, method: str) -> bool:
        sem = ctx.sem
        al = sem.allowed(node.state, call, args)
        if al.open:
            for r in al.undefined + al.unspecified:
                self.open_seen[r] = self.open_seen.get(r, 0) + 1
            return False
        if len(al.errors) > 1:
            # Not isolated: the outcome would not show which rule decided it. Remember the smallest
            # such case per rule, for rules that no configuration lets hold alone (`_together`).
            exp = expectation_of(ctx.sem, al)
            width = len(exp.codes) if exp.codes is not None else 1 << 30
            for e in al.errors:
                best = self.together.get(e.rule)
                rank = (len(al.errors), width, len(node.steps))
                if best is None or rank < best[0]:
                    self.together[e.rule] = (rank, ctx, node, call, dict(args))
            return False
        outputs = {}
        if not al.errors:
            outputs = self.pool.outputs(ctx.sem, node, call, args)
            if outputs is None:
                return False  # success is allowed but no outputs keep the call's promises
        items = self._items(ctx, node, call, args, al, outputs)
        if items <= self.covered:
            return False
        test = self._build(ctx, node, call, args, al, outputs, items, method)
        if test is None:
            return False
        self.covered |= items
        self.kept.append(_Kept(test, items, len(self.kept)))
        return True

    def _items(self, ctx: _Ctx, node: Node, call: str, args: Mapping, al: Allowed, outputs: Mapping) -> frozenset:
        facts = self.facts[call]
        cfg = ctx.label
        if al.errors:
            main, branch = al.errors[0].rule, "fails"
            reads = facts.reads.get(main, frozenset())
        else:
            main, branch = facts.effect_rule or call, "success"
            reads = facts.all_reads
        items = {(main, f"{branch} [{cfg}]")}
        holding = {e.rule for e in al.env_errors}
        for r in holding:
            items.add((r, f"allowed [{cfg}]"))
        for r in facts.conditional_may - holding:
            items.add((r, f"excluded [{cfg}]"))
        for r in al.broken:
            items.add((r, f"broken, outcome determinate [{cfg}]"))
        if not al.errors:
            for r in facts.ensures:
                items.add((r, f"checked [{cfg}]"))
        st = node.state
        spec = self.spec
        for name, t in facts.params:
            if name not in reads:
                continue
            v = args[name]
            items.add((main, f"{name} = {_value_class(spec, t, v)}"))
            if _is_addr(t):
                size_name = facts.ranges.get(name)
                for table in reads:
                    info = spec.tables.get(table)
                    if info is None or info.sized_by is None:
                        continue
                    for k, rec in st.tables[table].rows.items():
                        end = k + rec[info.sized_by]
                        if size_name is not None:
                            s = args[size_name]
                            rel = _range_relation(v, v + s, k, end) if s > 0 else None
                            label = f"range({name}, {size_name}) vs {table}"
                        else:
                            rel = _point_relation(v, k, end)
                            label = f"{name} vs {table}"
                        if rel is not None:
                            items.add((main, f"{label}: {rel} ({_entry_class(spec, info, rec)})"))
                if size_name is not None and v + args[size_name] > U64:
                    items.add((main, f"range({name}, {size_name}) crosses 2**64"))
        for var, (t, _) in spec.vars.items():
            if var in reads and t.kind in ("enum", "bool"):
                items.add((main, f"{var} = {_show_json(st.vars[var])}"))
        if not al.errors and self.pinned_tables:
            before = {r for r, _, _ in ctx.sem.pinned_ranges(st)}
            post = ctx.sem.successor(st, call, args, outputs)
            after = {r for r, _, _ in ctx.sem.pinned_ranges(post)}
            for r in after - before:
                items.add((r, "locked"))
            for r in before - after:
                items.add((r, "released"))
        return frozenset(items)

    # ---- a test from a candidate
    def _build(self, ctx: _Ctx, node: Node, call: str, args: dict, al: Allowed, outputs: dict,
               items: frozenset, method: str, rule: str | None = None) -> ConformanceTest | None:
        sem = ctx.sem
        exp = expectation_of(sem, al)
        alloc = self.pool.allocators.get(call)
        huge = alloc is not None and args.get(alloc.size_param, 0) > HUGE_ALLOCATION
        if exp.outcome == "success" and huge and al.env_errors:
            # No machine has that much memory: the test checks that the failure is an environmental
            # one (never a documented-meaning code), so it is about the `may fail` rule.
            exp = Expectation(al.env_errors[0].rule, "success")
            items = items | {(exp.rule, f"expected for a size no machine can give [{ctx.label}]")}
        status = sem.success if exp.outcome == "success" else representative_status(self.spec, exp)
        main = Step(call, dict(args), dict(outputs) if exp.outcome == "success" else {}, status)
        steps = node.steps + (main,)
        if exp.outcome == "success":
            post = sem.successor(node.state, call, args, outputs)
            alt = node.state
        else:
            post = node.state
            alt_outputs = self.pool.outputs(ctx.sem, node, call, args)
            alt = sem.successor(node.state, call, args, alt_outputs) if alt_outputs is not None else None
        allocs = node.allocs
        if alloc is not None and exp.outcome == "success":
            allocs = allocs + ((outputs[alloc.output], args[alloc.size_param]),)
        probe = self._probe(ctx, Node(post, steps, allocs), alt, main) if alt is not None else None
        if probe is not None:
            steps = steps + (probe,)
        if not self._stable(ctx, steps):
            self.stats["unstable"] += 1
            if probe is None or not self._stable(ctx, steps[:-1]):
                return None
            steps = steps[:-1]
        expectations = self._expectations(ctx, steps)
        if expectations[len(node.steps)] != exp:  # the main call's, as decided above
            expectations = expectations[:len(node.steps)] + (exp,) + expectations[len(node.steps) + 1:]
        events = tuple(self._event(s) for s in steps)
        rule = rule or exp.rule
        covers = tuple(sorted(f"{r}: {label}" for r, label in items))
        description = self._describe(steps, len(node.steps), probe is not None and len(steps) > len(node.steps) + 1)
        return ConformanceTest("", rule, self.spec_name, dict(ctx.env), events, expectations, covers, method,
                               description)

    def _probe(self, ctx: _Ctx, node: Node, alt: State, main: Step) -> Step | None:
        """A call after the one under test whose determinate outcome differs between the state the
        test expects and the state the other outcome would have left: it catches a driver that
        answers right but changes (or fails to change) its state."""
        for keep in (True, False):  # a probe that keeps every obligation, else one that breaks a determinate one
            probe = self._probe_pass(ctx, node, alt, main, keep)
            if probe is not None:
                return probe
        return None

    def _probe_pass(self, ctx: _Ctx, node: Node, alt: State, main: Step, keep: bool) -> Step | None:
        sem = ctx.sem
        for call in self.api_calls:
            facts = self.facts[call]
            for args in self._probe_candidates(node, facts, main):
                a1 = sem.allowed(node.state, call, args)
                if a1.open or len(a1.errors) > 1 or (keep and a1.broken):
                    continue
                a2 = sem.allowed(alt, call, args)
                if a2.open:
                    continue
                e1, e2 = expectation_of(sem, a1), expectation_of(sem, a2)
                if not _disjoint(e1, e2):
                    continue
                outs = {}
                if e1.outcome == "success":
                    outs = self.pool.outputs(ctx.sem, node, call, args)
                    if outs is None:
                        continue
                status = sem.success if e1.outcome == "success" else representative_status(self.spec, e1)
                return Step(call, args, outs, status)
        return None

    def _probe_candidates(self, node: Node, facts: _Facts, main: Step) -> Iterator[dict]:
        addrs = [v for n, v in main.inputs.items() if n in dict(self.facts[main.call].params)
                 and _is_addr(dict(self.facts[main.call].params)[n])]
        addrs += [v for v in main.outputs.values() if type(v) is int]
        keys = sorted({k for tbl in node.state.tables.values() for k in tbl.rows if isinstance(k, int)})
        main_sizes = [main.inputs[s] for s in self.facts[main.call].ranges.values() if s in main.inputs]
        per_param = []
        for name, t in facts.params:
            if _is_addr(t):
                values = [v for v in dict.fromkeys(addrs + keys) if v != 0 and _relocatable(self.pool.live(node), v)]
            elif name in facts.ranges.values():
                values = [s for s in dict.fromkeys(main_sizes + [PAGE]) if s > 0]
            elif t.kind == "flags":
                members = self.spec.flags[t.name]
                flag = [v for n2, v in main.inputs.items() if n2 == name]
                values = list(dict.fromkeys(flag + list(members.values())))
            else:
                values = self.pool.values(t, False)[:2] if t.kind == "int" else self.pool.values(t, False)
            per_param.append(values)
        for combo in itertools.product(*per_param):
            yield dict(zip((n for n, _ in facts.params), combo))

    def _expectations(self, ctx: _Ctx, steps: Sequence[Step]) -> tuple[Expectation | None, ...]:
        sem = ctx.sem
        st = sem.initial_state()
        out = []
        for s in steps:
            al = sem.allowed(st, s.call, s.inputs)
            exp = expectation_of(sem, al) if self.facts[s.call].is_api else None
            out.append(exp)
            if s.status is None or s.status == sem.success:
                sem.apply(st, s.call, s.inputs, s.outputs)
        return tuple(out)

    def _stable(self, ctx: _Ctx, steps: Sequence[Step]) -> bool:
        """The outcome of every step stays the same when the allocations are laid out otherwise."""
        sem = ctx.sem
        allocs = [(s.outputs[a.output], s.inputs[a.size_param]) for s in steps
                  for a in [self.pool.allocators.get(s.call)] if a is not None and a.output in s.outputs]
        reference = _signatures(sem, steps)
        if reference is None:
            return False
        for layout in _layouts(allocs):
            moved = [Step(s.call, self._move(s.call, s.inputs, layout, "params"),
                          self._move(s.call, s.outputs, layout, "outputs"), s.status) for s in steps]
            if _signatures(sem, moved) != reference:
                return False
        return True

    def _move(self, call: str, values: Mapping, layout: Callable[[int], int], which: str) -> dict:
        info = self.spec.calls[call]
        types = dict(info.params if which == "params" else info.outputs)
        return {n: (layout(v) if _is_addr(types.get(n)) else v) for n, v in values.items()}

    def _event(self, s: Step) -> TraceEvent:
        info = self.spec.calls[s.call]
        args = {n: json_arg(self.spec, t, s.inputs[n]) for n, t in info.params}
        outs = {n: json_arg(self.spec, t, s.outputs[n]) for n, t in info.outputs if n in s.outputs}
        return TraceEvent(0, s.call, args, s.status, outs)

    def _describe(self, steps: Sequence[Step], main: int, probed: bool) -> str:
        def show(s: Step) -> str:
            info = self.spec.calls[s.call]
            args = ", ".join(f"{n}={_show_arg(self.spec, t, s.inputs[n])}" for n, t in info.params)
            return f"{s.call}({args})"
        parts = []
        if main:
            parts.append("after " + "; ".join(show(s) for s in steps[:main]) + ": ")
        parts.append(show(steps[main]))
        if probed:
            parts.append("; then probe " + show(steps[main + 1]))
        return "".join(parts)

    # ---- bounded model checking for branches enumeration did not reach
    def _bmc_fallback(self, ctx: _Ctx) -> None:
        wanted = []
        for call in self.api_calls:
            facts = self.facts[call]
            for rule, kind in facts.kinds.items():
                for branch in _branches(kind, rule in facts.conditional_may, facts, rule):
                    if (rule, f"{branch} [{ctx.label}]") not in self.covered:
                        wanted.append((call, rule, branch))
        if not wanted:
            return
        from ..engines.bmc import Target, Unrolling, cover
        from ..symbolic.solver import SolverOptions, Witness

        unrolling = Unrolling(self.spec, self.options.bmc_depth, SolverOptions(timeout_ms=self.options.timeout_ms),
                              env=ctx.env)
        targets = [Target((call, rule, branch), call, _target_formula(self, call, rule, branch),
                          _target_holds(self, call, rule, branch)) for call, rule, branch in wanted]
        self.stats["bmc_queries"] += len(targets)
        found = cover(unrolling, self.spec_name, targets)
        for (call, rule, branch), result in found.items():
            key = (rule, f"{branch} [{ctx.label}]")
            if key in self.covered:
                continue
            if result.witness is Witness.FOUND:
                if self._from_run(ctx, result.run, call):
                    self.stats["bmc_tests"] += 1
                if key in self.covered:
                    continue
                self.missing[key] = ("bounded model checking found a run, but not one usable as a test "
                                     "(a prefix step with an open outcome, or an outcome that depends on "
                                     "where allocations lie)")
            elif result.witness is Witness.NONE:
                self.missing[key] = f"no run of at most {self.options.bmc_depth} calls shows it (bounded model checking)"
            else:
                self.missing[key] = f"the solver gave up ({result.reason})"

    def _from_run(self, ctx: _Ctx, run, call: str) -> bool:
        sem = ctx.sem
        steps = list(run.steps[:-1])
        final = run.steps[-1]
        st = sem.initial_state()
        allocs: list = []
        for s in steps:
            al = sem.allowed(st, s.call, s.inputs)
            if al.open or al.broken or not al.success or not sem.apply(st, s.call, s.inputs, s.outputs):
                return False
            a = self.pool.allocators.get(s.call)
            if a is not None:
                allocs.append((s.outputs[a.output], s.inputs[a.size_param]))
        node = Node(st, tuple(Step(s.call, s.inputs, s.outputs, sem.success if self.facts[s.call].is_api else None)
                               for s in steps), tuple(allocs))
        return self._consider(ctx, node, call, dict(final.inputs), "bmc")

    # ---- names
    def _named(self) -> list[ConformanceTest]:
        order = {r: i for i, r in enumerate(self.spec.rules)}
        kept = sorted(self.kept, key=lambda k: (order.get(k.test.rule, len(order)), k.order))
        counts: dict[str, int] = {}
        out = []
        for k in kept:
            n = counts[k.test.rule] = counts.get(k.test.rule, 0) + 1
            t = k.test
            out.append(ConformanceTest(f"{t.rule}-{n}", t.rule, t.spec, t.env, t.events, t.expectations, t.covers,
                                       t.method, t.description))
        return out


def generate_suite(spec_name: str, options: GenerateOptions = GenerateOptions(), spec: CheckedSpec | None = None,
                   progress: Callable[[int, int, str], None] | None = None) -> Suite:
    """The conformance suite of a spec (a bundled name or a path), as data.

    `progress(done, total, label)` hears about each configuration as it is finished (progress bars)."""
    from ..language.load import load_spec

    checked = spec if spec is not None else load_spec(spec_name)
    return _Generator(checked, spec_name, options).run(progress)


# ---------------------------------------------------------------- targets for the model checker


def _branches(kind: str, conditional: bool, facts: _Facts, rule: str) -> tuple[str, ...]:
    if kind == "fails":
        return ("fails",)
    if kind == "may-fail":
        return ("allowed", "excluded") if conditional else ("allowed",)
    if kind == "effect":
        return ("success",)
    if kind == "usage" and rule != facts.thread_rule or kind == "requires":
        return ("broken, outcome determinate",)
    return ()


def _target_formula(gen: _Generator, call: str, rule: str, branch: str):
    from ..symbolic.encode import conj, disj, neg

    facts = gen.facts[call]
    spec = gen.spec

    def formula(enc, env, cc, st):
        parts = [neg(c) for _, c in cc.unspecified]
        parts += [c for _, undefined, c in cc.requires if undefined]
        errors = {r: c for r, _, c in cc.errors}
        if branch == "fails":
            parts += [c if r == rule else neg(c) for r, c in errors.items()]
        else:
            parts += [neg(c) for c in errors.values()]
        if branch in ("allowed", "excluded"):
            cond = next(c for r, _, c in cc.env_errors if r == rule)
            parts.append(cond if branch == "allowed" else neg(cond))
        if branch.startswith("broken"):
            kept = {r: c for r, c in cc.usage} | {r: c for r, _, c in cc.requires}
            parts.append(neg(kept[rule]))
        for name, t in facts.params:
            if not _is_addr(t):
                continue
            p = env[name]
            inside = []
            size_name = facts.ranges.get(name)
            for table in _alloc_tables(gen):
                tbl = st.tables[table]
                sized = spec.tables[table].sized_by

                def body(e, tbl=tbl, sized=sized, p=p, size_name=size_name):
                    n = tbl.get(e, sized)
                    if size_name is None:
                        return conj([e.key <= p, disj([p < e.key + n, p == e.key])])
                    s = env[size_name]
                    return conj([e.key <= p, disj([p < e.key + n, p == e.key]), disj([s <= 0, p + s <= e.key + n])])
                inside.append(tbl.entries_exists(f"gen.{table}", body))
            null = p == 0
            if size_name is not None:
                null = conj([p == 0, env[size_name] <= NULL_SIZE_LIMIT])
            parts.append(disj([null] + inside))
        return conj(parts)
    return formula


def _alloc_tables(gen: _Generator) -> list[str]:
    return sorted(gen.pool.alloc_tables)


def _target_holds(gen: _Generator, call: str, rule: str, branch: str):
    def holds(sem: Semantics, st: State, step) -> bool:
        al = sem.allowed(st, call, step.inputs)
        if al.open:
            return False
        errors = [e.rule for e in al.errors]
        if branch == "fails":
            return errors == [rule]
        if errors:
            return False
        if branch == "allowed":
            return rule in {e.rule for e in al.env_errors}
        if branch == "excluded":
            return rule not in {e.rule for e in al.env_errors}
        if branch.startswith("broken"):
            return rule in al.broken
        return True
    return holds


# ---------------------------------------------------------------- pools and classes


def _flag_values(members: Mapping[str, int]) -> list[int]:
    """Every combination of the declared bits, one undeclared bit alone and with each member."""
    bits = list(members.values())
    out = [0]
    for r in range(1, len(bits) + 1):
        for combo in itertools.combinations(bits, r):
            v = 0
            for b in combo:
                v |= b
            out.append(v)
    declared = 0
    for b in bits:
        declared |= b
    undeclared = next(1 << i for i in range(32) if not declared >> i & 1)
    out.append(undeclared)
    out += [undeclared | b for b in bits]
    return list(dict.fromkeys(out))


def _is_addr(t: Type | None) -> bool:
    return t is not None and t.kind == "int" and t.name == "addr"


def _relocatable(allocs: Sequence[tuple[int, int]], x: int) -> bool:
    return x == 0 or any(b <= x < b + max(n, 1) for b, n in allocs)


def _points(node: Node, live: Sequence[tuple[int, int]], full: bool) -> list[int]:
    pts = {0}
    for b, n in live:
        pts.add(b)
        if full:
            pts.update((b + 1, b + PAGE, b + 2 * PAGE, b + n - 1, b + n - PAGE))
    for tbl in node.state.tables.values():
        if tbl.sized_by is None:
            continue
        for k, rec in tbl.rows.items():
            pts.add(k)
            if full:
                size = rec[tbl.sized_by]
                pts.update((k + 1, k - 1, k - PAGE, k + PAGE, k + size - 1, k + size))
    return sorted(p for p in pts if p >= 0 and _relocatable(live, p))


def _sizes(node: Node, live: Sequence[tuple[int, int]], p: int, t: Type, full: bool) -> list[int]:
    sizes = [PAGE, 0, 1, 2 * PAGE, 3 * PAGE]
    if full:
        sizes += [4 * PAGE, -1, -PAGE, 2**63 - 1, 2**63, U64 - 1]
        ends = set()
        for b, n in live:
            ends.update((b + n, b + n - 1, b + n + 1))
        for tbl in node.state.tables.values():
            if tbl.sized_by is None:
                continue
            for k, rec in tbl.rows.items():
                size = rec[tbl.sized_by]
                ends.update((k, k + 1, k + size - 1, k + size, k + size + 1))
        sizes += sorted(e - p for e in ends if e > p)
    lo, hi = value_bounds(t) or UNBOUNDED
    return list(dict.fromkeys(s for s in sizes if lo <= s <= hi))


def _range_relation(b: int, e: int, k: int, end: int) -> str | None:
    """How [b, e) lies against an entry [k, end); None when they are apart (or the entry is empty)."""
    if end <= k:
        return None
    if e <= k or end <= b:
        if e == k:
            return "adjacent below"
        if b == end:
            return "adjacent above"
        return None
    if (b, e) == (k, end):
        return "equal"
    if b <= k and end <= e:
        return "contains (same base)" if b == k else "contains (same end)" if e == end else "contains strictly"
    if k <= b and e <= end:
        return "inside (same base)" if b == k else "inside (same end)" if e == end else "inside strictly"
    if b < k:
        return "overlaps its first byte only" if e == k + 1 else "overlaps its start"
    return "overlaps its last byte only" if b == end - 1 else "overlaps its end"


def _point_relation(p: int, k: int, end: int) -> str | None:
    if p == k:
        return "at its base"
    if k < p < end - 1:
        return "interior"
    if p == end - 1 and p > k:
        return "its last byte"
    if p == end:
        return "one past its end"
    return None


def _value_class(spec: CheckedSpec, t: Type, v) -> str:
    if t.kind == "flags":
        return _flag_names(spec.flags[t.name], v)
    if t.kind in ("enum",):
        return str(v)
    if t.kind == "bool":
        return _show_json(v)
    if t.kind != "int":
        return repr(v)
    if t.name == "addr":
        if v == 0:
            return "null"
        return "page-aligned" if v % PAGE == 0 else "misaligned by one byte" if v % PAGE == 1 else "misaligned"
    if v == 0:
        return "0"
    if v < 0:
        return "negative"
    if v == 1:
        return "1"
    bounds = INT_BOUNDS.get(t.name)
    if bounds and v == bounds[1]:
        return "the largest value of its type"
    if v >= 2**63:
        return "huge (>= 2**63)"
    return "a multiple of the page size" if v % PAGE == 0 else "not a multiple of the page size"


def _flag_names(members: Mapping[str, int], v: int) -> str:
    if v == 0:
        return "0"
    names = [n for n, b in members.items() if v & b == b]
    rest = v
    for n in names:
        rest &= ~members[n]
    return "|".join(names + ([f"{rest:#x}"] if rest else []))


def _entry_class(spec: CheckedSpec, info, rec: Mapping) -> str:
    parts = []
    for f, t in info.fields:
        v = rec[f]
        if t.kind == "flags":
            parts.append(f"{f}={_flag_names(spec.flags[t.name], v)}")
        elif t.kind in ("enum", "bool"):
            parts.append(f"{f}={_show_json(v)}")
        elif _is_addr(t):
            parts.append(f"{f}={'set' if v else 'unset'}")
    return ", ".join(parts) or info.name


def json_arg(spec: CheckedSpec, t: Type, v):
    """A semantics value as a trace argument: flags as their member names where they cover it exactly."""
    if t.kind == "flags" and v:
        members = spec.flags[t.name]
        names = [n for n, b in members.items() if v & b == b]
        covered = 0
        for n in names:
            covered |= members[n]
        if covered == v:
            return names
    return json_value(t, v)


def _show_arg(spec: CheckedSpec, t: Type, v) -> str:
    if t.kind == "flags":
        return _flag_names(spec.flags[t.name], v)
    if t.kind == "int" and isinstance(v, int):
        return hex(v) if abs(v) >= 4096 else str(v)
    return str(v)


def representative_status(spec: CheckedSpec, exp: Expectation):
    """A status the expectation accepts, for the test's `ret` (what a recording might show)."""
    if exp.codes:
        return exp.codes[0]
    status_type = spec.status_type
    if status_type.kind == "enum":
        candidates = [m for m in spec.enums[status_type.name] if m != spec.success]
    else:  # the statuses the spec's failure clauses name, then any non-zero value
        candidates = sorted(_named_statuses(spec)) + [1, -1]
    for c in candidates:
        if exp.accepts(c, spec.success):
            return c
    raise AssertionError(f"no status accepted by {exp}")


def _named_statuses(spec: CheckedSpec) -> set:
    out = set()
    for info in spec.calls.values():
        for c in info.decl.clauses:
            codes = getattr(c, "codes", None)
            if isinstance(codes, S.AnyFailure):
                codes = codes.excluded
            if codes is None:
                continue
            for x in (codes.items if isinstance(codes, S.SetLit) else (codes,)):
                value = spec.code_values[id(x)]
                if type(value) is int:  # the statuses written as numbers or integer constants
                    out.add(value)
    out.discard(spec.success)
    return out


def _disjoint(a: Expectation | None, b: Expectation | None) -> bool:
    if a is None or b is None:
        return False
    if a.outcome != b.outcome:
        return True
    if a.outcome == "success":
        return False
    return a.codes is not None and b.codes is not None and not set(a.codes) & set(b.codes)


def _signatures(sem: Semantics, steps: Sequence[Step]):
    """Per step: the outcome classes the spec allows (None when a step cannot be applied)."""
    st = sem.initial_state()
    out = []
    for s in steps:
        try:
            al = sem.allowed(st, s.call, s.inputs)
        except Exception:  # an evaluation error in a moved state: not comparable
            return None
        out.append((al.open, tuple(sorted(e.rule for e in al.errors)), al.success, al.broken,
                    tuple(e.rule for e in al.env_errors)))
        if s.status is None or s.status == sem.success:
            if not sem.apply(st, s.call, s.inputs, s.outputs):
                return None
    return tuple(out)


def _layouts(allocs: Sequence[tuple[int, int]]) -> list[Callable[[int], int]]:
    """Two other placements of the recorded allocations (offsets in a page kept): reversed order far
    apart high in the address space, and the same order packed one page apart."""
    if not allocs:
        return []
    largest = max(max(n, 1) for _, n in allocs)
    stride = (largest // PAGE + 2) * PAGE * 16
    far = [0x7F0000000000 - (i + 1) * stride + b % PAGE for i, (b, _) in enumerate(allocs)]
    packed, at = [], 0x40000000
    for b, n in allocs:
        packed.append(at + b % PAGE)
        at += (max(n, 1) + b % PAGE) // PAGE * PAGE + 2 * PAGE
    return [_mover(allocs, far), _mover(allocs, packed)]


def _mover(allocs: Sequence[tuple[int, int]], bases: Sequence[int]) -> Callable[[int], int]:
    def move(x):
        if type(x) is not int or x == 0:
            return x
        for (b, n), nb in zip(reversed(allocs), reversed(bases)):
            if b <= x < b + max(n, 1):
                return x - b + nb
        return x
    return move


def _effect_statements(info) -> Iterator[S.Stmt]:
    def walk(body):
        for st in body:
            yield st
            if isinstance(st, S.If):
                yield from walk(st.then)
                yield from walk(st.orelse)
    for clause in info.clauses(S.Effect):
        yield from walk(clause.body)


def identifier(text: str) -> str:
    """text as part of a Python identifier: each character other than a letter, digit or _ becomes _."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)


# ---------------------------------------------------------------- the coverage report


def _coverage(spec: CheckedSpec, facts: Mapping[str, _Facts], tests: Sequence[ConformanceTest],
              missing: Mapping, open_seen: Mapping[str, int]) -> tuple[RuleCoverage, ...]:
    by_rule: dict[str, dict[str, list[str]]] = {}
    boundaries: dict[str, int] = {}
    for t in tests:
        for item in t.covers:
            rule, _, label = item.partition(": ")
            branch = label.split(" [", 1)[0]
            if label.endswith("]") and " [" in label or branch in ("locked", "released"):
                by_rule.setdefault(rule, {}).setdefault(branch, [])
                if t.name not in by_rule[rule][branch]:
                    by_rule[rule][branch].append(t.name)
            else:
                boundaries[rule] = boundaries.get(rule, 0) + 1
    using: dict[str, int] = {}
    for t in tests:
        for call in {ev.call for ev in t.events}:
            using[call] = using.get(call, 0) + 1
    out = []
    for rule, info in spec.rules.items():
        branches = tuple((b, tuple(ts)) for b, ts in sorted(by_rule.get(rule, {}).items()))
        call_facts = facts.get(info.call) if info.call else None
        status, note = _status_of(info, call_facts, branches, missing, open_seen)
        if status == ENVIRONMENT:
            note += f" ({using.get(info.call, 0)} tests use {info.call})"
        out.append(RuleCoverage(rule, info.kind, info.call, status, note, branches, boundaries.get(rule, 0)))
    return tuple(out)


def _status_of(info, facts: _Facts | None, branches, missing, open_seen) -> tuple[str, str]:
    kind = info.kind
    tested = bool(branches)
    why_missing = _missing_note({label: why for (rule, label), why in missing.items() if rule == info.rule})
    if kind == "invariant":
        return MODEL, "a property of the spec's model, proved by `regcheck prove`; not a driver behaviour"
    if facts is not None and not facts.is_api:
        if kind == "undefined":
            return NOT_TESTABLE, "undefined behaviour (breaking it leaves every outcome open); kept by every test"
        return ENVIRONMENT, "an environment event's contract, kept wherever a test uses the event as setup"
    if kind == "undefined":
        return NOT_TESTABLE, (f"undefined behaviour: breaking it leaves every outcome open (met in "
                              f"{open_seen.get(info.rule, 0)} candidates, none kept); kept by every test")
    if kind == "unspecified":
        return NOT_TESTABLE, (f"the documents are silent: any outcome is allowed (met in {open_seen.get(info.rule, 0)} "
                              "candidates, none kept)")
    if kind == "usage" and facts is not None and info.rule == facts.thread_rule:
        return NOT_TESTABLE, "thread safety needs concurrent calls; conformance tests make one call at a time"
    if kind == "pinned":
        if tested:
            return TESTED, "page locks compared with the kernel's after every step of every test"
        return NOT_REACHED, "no test takes this lock"
    if kind == "may-fail":
        if tested:
            return ALLOWED, "an environmental failure: allowed where its condition holds, never forced"
        return NOT_REACHED, why_missing or "its condition never held in a determinate case"
    if tested and all(b.startswith("fails together with") for b, _ in branches):
        return TESTED, ("never isolated: in no configuration is it the only `fails` clause that holds (bounded "
                        "model checking, runs of up to the bmc depth); tested where it holds together with others, "
                        "the expected failure being the union of theirs")
    if tested:
        return TESTED, f"not shown in every configuration: {why_missing}" if why_missing else ""
    return NOT_REACHED, why_missing or "no determinate case found"


def _missing_note(by_label: Mapping[str, str]) -> str:
    """`fails [cfg A]: why`, ... grouped by reason: `why: fails in cfg A; fails in cfg B`."""
    by_reason: dict[str, list[str]] = {}
    for label, why in sorted(by_label.items()):
        branch, _, cfg = label.partition(" [")
        by_reason.setdefault(why, []).append(f"{branch} [{cfg}" if cfg else branch)
    return "; ".join(f"{why}: {', '.join(where)}" for why, where in by_reason.items())
