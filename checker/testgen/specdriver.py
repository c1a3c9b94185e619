"""Drivers that answer with a spec's own semantics, and buggy specs to build them from: mutation testing of
the generated conformance suite without hand-written mutants.

`SpecDriver(spec)` implements the driver protocol (`checker.drivers.protocol`) by asking a spec, not an
implementation: it keeps the spec's model state, answers each call with one outcome the spec allows
(success when success is allowed, else the first allowed error, else the first environmental failure)
and hands out addresses from a simulated address space for the spec's allocators. Its memory is not
real, so nothing is page-locked: run it with `check_locks=False`.

`spec_mutants(checked)` derives buggy specs from a spec's syntax tree, one small change each (drop a
`fails` clause, negate a `fails` or `requires` condition, swap a comparison operator, delete a
statement of an effect, replace an error code by another of the spec's codes). Every mutant is printed
and checked again; one that no longer checks is left out. The SpecDriver of a mutant is a buggy driver
whose bug is known exactly, so the share of mutants a suite kills measures the suite.

`score_mutant` runs a suite against one mutant: killed (a test fails), equivalent for this suite (the
mutant allows the same outcome sets as the spec at every event of every test, so no test can tell
them apart) or survived (they differ somewhere, and no test noticed).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..drivers.protocol import CODE_BAD_CALL, Allocation, Incident, Result
from ..engines.replay import Replayer
from ..engines.runs import a_status, semantics_for
from ..language import syntax as S
from ..language.analysis import memory_shape
from ..language.checked import CheckedSpec, Type
from ..language.diagnostics import RegcheckError, error
from ..language.load import check_source
from ..language.printer import print_spec
from ..language.source import SourceFile
from ..model.outcomes import Allowed
from ..model.state import State
from .conform import FAIL, INCONCLUSIVE, run_suite
from .model import ConformanceTest

PAGE = 4096
HOST_BASE = 0x7E00_0000_0000  # where the simulated address space starts (clear of null and small offsets)
GUARD = PAGE  # a free page between blocks, so neighbouring allocations never touch


# ---------------------------------------------------------------- the driver


class SpecDriver:
    """A driver whose behaviour is a spec's (given as text or checked): one allowed outcome per call."""

    def __init__(self, spec: str | CheckedSpec, path: str = "<spec driver>"):
        self.spec = spec if isinstance(spec, CheckedSpec) else check_source(SourceFile.of(path, spec))
        self.shape = memory_shape(self.spec)
        self.sem = None
        self.state: State | None = None
        self.last_incident: Incident | None = None
        self.incidents: list[Incident] = []
        self._blocks: dict[int, Allocation] = {}
        self._next = HOST_BASE

    # -- the Driver interface

    def start(self, spec: str, env: Mapping[str, Any]) -> None:
        """Start a fresh run in the configuration `env`; `spec` (the trace's name for it) is not
        consulted: this driver's behaviour is the spec it was built from."""
        self.sem = semantics_for(self.spec, dict(env))
        self.state = self.sem.initial_state()
        self._blocks, self._next = {}, HOST_BASE
        self.last_incident, self.incidents = None, []

    def call(self, name: str, args: Mapping[str, Any]) -> Result:
        if self.sem is None or self.state is None:
            raise RuntimeError("SpecDriver.call before start (or after close)")
        info = self.spec.calls.get(name)
        if info is None:
            raise RegcheckError([error(CODE_BAD_CALL,
                                       f"the spec driver has no call '{name}' for spec {self.spec.name}")])
        allowed = self.sem.allowed(self.state, name, args)
        if info.decl.kind == "event" or allowed.success or allowed.open:
            return self._succeed(name, args)
        return Result(self._failure_status(allowed))

    def close(self) -> None:
        self.sem, self.state = None, None
        self._blocks = {}

    # -- what the executor may ask of a driver

    def allocations(self) -> tuple[Allocation, ...]:
        return tuple(sorted(self._blocks.values(), key=lambda a: a.base))

    def allocation_of(self, address: int, size: int = 1) -> Allocation | None:
        return next((a for a in self._blocks.values() if a.contains(address, size)), None)

    def owns(self, address: int, size: int) -> bool:
        return self.allocation_of(address, size) is not None

    def expected_locked_pages(self) -> frozenset[int]:
        return frozenset()  # simulated memory: nothing is ever page-locked

    # -- answering

    def _failure_status(self, allowed: Allowed):
        outcome = (allowed.errors or allowed.env_errors or (None,))[0]
        return self.sem.success if outcome is None else a_status(self.spec, outcome)

    def _succeed(self, name: str, args: Mapping[str, Any]) -> Result:
        outs = self._outputs(name, args)
        self.sem.apply(self.state, name, args, outs)  # an effect undefined here leaves the state as it was
        for param in self.shape.releases.get(name, ()):
            self._blocks.pop(args.get(param), None)
        return Result(self.sem.success, outs)

    def _outputs(self, name: str, args: Mapping[str, Any]) -> dict:
        info = self.spec.calls[name]
        alloc = self.shape.allocators.get(name)
        outs: dict[str, Any] = {}
        for out, t in info.outputs:
            if alloc is not None and out == alloc.output:
                outs[out] = self._allocate(max(int(args.get(alloc.size_param, 0)), 0), name)
            else:
                outs[out] = self._first_kept(name, args, outs, out, t)
        return outs

    def _allocate(self, size: int, kind: str) -> int:
        base = self._next
        self._next += -(-max(size, 1) // PAGE) * PAGE + GUARD
        self._blocks[base] = Allocation(base, size, kind)
        return base

    def _first_kept(self, name: str, args: Mapping[str, Any], outs: dict, out: str, t: Type):
        """The first candidate value of an output that keeps the call's `ensures` promises: a fresh
        address, then the values the state already holds (a promise to return the same one again)."""
        candidates = list(self._candidates(t))
        for value in candidates:
            if not self.sem.ensures_broken(self.state, name, args, {**outs, out: value}):
                return value
        return candidates[0]

    def _candidates(self, t: Type) -> Iterator[Any]:
        if t.kind == "int" and t.name == "addr":
            yield self._next
            self._next += PAGE + GUARD  # a device address is simulated; never hand out the same one twice
            for table in self.state.tables.values():
                for _, record in table.entries():
                    yield from (v for v in record.values() if type(v) is int and v != 0)
        elif t.kind == "bool":
            yield from (True, False)
        elif t.kind == "enum":
            yield from self.spec.enums[t.name]
        elif t.kind == "version":
            yield (0, 0)
        else:
            yield from (0, 1)


# ---------------------------------------------------------------- mutants


@dataclass(frozen=True, slots=True)
class SpecMutant:
    """One change to a spec: what was changed (readable), the printed text and the checked spec."""

    description: str
    text: str
    spec: CheckedSpec


COMPARISON_SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}


def spec_mutants(checked: CheckedSpec, limit: int | None = None) -> tuple[list[SpecMutant], int]:
    """The mutants of a spec that still check, in a stable order, and how many of the candidate
    changes were left out because the changed spec no longer checks. With `limit`, only that many
    candidates, spread evenly over the list so that every operator keeps its share."""
    candidates = list(candidate_mutations(checked.ast))
    if limit is not None and limit < len(candidates):
        candidates = [candidates[i * len(candidates) // limit] for i in range(limit)]
    kept: list[SpecMutant] = []
    rejected = 0
    for n, (description, tree) in enumerate(candidates, 1):
        text = print_spec(tree)
        try:
            spec = check_source(SourceFile.of(f"<{checked.name} mutant {n}>", text))
        except RegcheckError:
            rejected += 1
            continue
        kept.append(SpecMutant(description, text, spec))
    return kept, rejected


def candidate_mutations(tree: S.SpecFile) -> Iterator[tuple[str, S.SpecFile]]:
    """Every single-change variant of the tree, grouped by operator."""
    codes = _spec_codes(tree)
    for operator in (_drop_fails, _negate_conditions, _swap_comparisons, _delete_statements, _replace_codes):
        for i, decl in enumerate(tree.decls):
            if not isinstance(decl, S.CallDecl):
                continue
            for j, clause in enumerate(decl.clauses):
                for description, new_clause in operator(clause, codes):
                    kept = (new_clause,) if new_clause is not None else ()  # None: the clause is dropped
                    clauses = decl.clauses[:j] + kept + decl.clauses[j + 1:]
                    new_decl = dataclasses.replace(decl, clauses=clauses)
                    yield (f"{decl.name}: {description}",
                           dataclasses.replace(tree, decls=tree.decls[:i] + (new_decl,) + tree.decls[i + 1:]))


def _drop_fails(clause, codes) -> Iterator[tuple[str, Any]]:
    if isinstance(clause, S.Fails):
        yield f"drop fails {clause.rule}", None


def _negate_conditions(clause, codes) -> Iterator[tuple[str, Any]]:
    if isinstance(clause, (S.Fails, S.Requires)):
        kind = "fails" if isinstance(clause, S.Fails) else "requires"
        yield f"negate {kind} {clause.rule}", dataclasses.replace(clause, cond=S.Unary("not", clause.cond))


def _swap_comparisons(clause, codes) -> Iterator[tuple[str, Any]]:
    if not isinstance(clause, (S.Fails, S.Requires)):
        return
    count = sum(1 for x in S.subexpressions(clause.cond) if isinstance(x, S.Binary) and x.op in COMPARISON_SWAPS)
    for n in range(count):
        found: list[str] = []

        def swap(node, found=found):
            found.append(node.op)
            return dataclasses.replace(node, op=COMPARISON_SWAPS[node.op])

        cond = _rewrite_nth(clause.cond, lambda x: isinstance(x, S.Binary) and x.op in COMPARISON_SWAPS, swap, n)
        yield (f"{clause.rule}: comparison {n + 1} {found[0]} -> {COMPARISON_SWAPS[found[0]]}",
               dataclasses.replace(clause, cond=cond))


def _delete_statements(clause, codes) -> Iterator[tuple[str, Any]]:
    if not isinstance(clause, S.Effect):
        return
    for n, st in enumerate(S.statements(clause.body)):
        yield f"{clause.rule}: delete statement {n + 1} ({type(st).__name__.lower()})", \
            dataclasses.replace(clause, body=_delete_nth_statement(clause.body, [n]))


def _replace_codes(clause, codes) -> Iterator[tuple[str, Any]]:
    if not isinstance(clause, S.Fails) or isinstance(clause.codes, S.AnyFailure):
        return
    own = {_code_key(c) for c in _code_items(clause.codes)}
    other = next((c for c in codes if _code_key(c) not in own), None)
    if other is not None:
        yield f"{clause.rule}: codes -> {_code_key(other)}", dataclasses.replace(clause, codes=other)


def _spec_codes(tree: S.SpecFile) -> list:
    """The error codes the spec's `fails` clauses name, in order of first appearance."""
    seen: dict[str, Any] = {}
    for decl in tree.decls:
        if isinstance(decl, S.CallDecl):
            for c in decl.clauses:
                if isinstance(c, S.Fails) and not isinstance(c.codes, S.AnyFailure):
                    for item in _code_items(c.codes):
                        seen.setdefault(_code_key(item), item)
    return list(seen.values())


def _code_items(codes) -> tuple:
    return codes.items if isinstance(codes, S.SetLit) else (codes,)


def _code_key(code) -> str:
    return code.name if isinstance(code, S.Name) else repr(getattr(code, "value", code))


def _rewrite_nth(node, match: Callable[[Any], bool], change: Callable[[Any], Any], n: int):
    """`node` with its n-th matching subexpression (parents first, left to right) changed."""
    counter = [n]

    def walk(x):
        if isinstance(x, tuple):
            return tuple(walk(y) for y in x)
        if not dataclasses.is_dataclass(x) or isinstance(x, type):
            return x
        if match(x):
            if counter[0] == 0:
                counter[0] = -1
                return change(x)
            counter[0] -= 1
        if counter[0] < 0:
            return x
        updates = {f.name: walk(getattr(x, f.name)) for f in dataclasses.fields(x) if f.name != "span"}
        return dataclasses.replace(x, **updates)

    return walk(node)


def _delete_nth_statement(body: tuple, counter: list[int]) -> tuple:
    """`body` without its n-th statement, counted as `S.statements` walks it (an `if` before its branches)."""
    out = []
    for st in body:
        if counter[0] == 0:
            counter[0] = -1
            continue
        counter[0] -= 1
        if isinstance(st, S.If) and counter[0] >= 0:
            st = dataclasses.replace(st, then=_delete_nth_statement(st.then, counter),
                                     orelse=_delete_nth_statement(st.orelse, counter))
        out.append(st)
    return tuple(out)


# ---------------------------------------------------------------- scoring


KILLED, EQUIVALENT, SURVIVED = "killed", "equivalent", "survived"


@dataclass(frozen=True, slots=True)
class MutantScore:
    description: str
    verdict: str  # killed | equivalent | survived
    detail: str  # the first failing test and its rule, or where the outcome sets differ


def score_mutant(mutant: SpecMutant, original: CheckedSpec, tests: Sequence[ConformanceTest]) -> MutantScore:
    """Run the suite against the mutant's SpecDriver (stopping at the first failure)."""
    report = run_suite(tests, lambda: SpecDriver(mutant.spec), check_locks=False, stop_on_failure=True)
    failed = [r for r in report.results if r.status == FAIL]
    if failed:
        first = failed[0]
        problem = first.problems[0] if first.problems else None
        how = f" [{problem.rule}] ({problem.kind})" if problem is not None else ""
        return MutantScore(mutant.description, KILLED, first.name + how)
    difference = first_difference(original, mutant.spec, tests)
    if difference is None:
        return MutantScore(mutant.description, EQUIVALENT, "same outcome sets on every test")
    inconclusive = report.count(INCONCLUSIVE)
    if inconclusive:  # its wrong answers pass for environmental failures: the suite cannot call them bugs
        difference += f"; {inconclusive} test(s) inconclusive"
    return MutantScore(mutant.description, SURVIVED, "differs at " + difference)


def first_difference(original: CheckedSpec, mutant: CheckedSpec, tests: Sequence[ConformanceTest]) -> str | None:
    """Where the two specs first allow different outcome sets along a test's events (both models
    following the test's recorded results), or None when they never do on these tests."""
    for test in tests:
        env = dict(test.env)
        sem_a, sem_b = semantics_for(original, env), semantics_for(mutant, env)
        replayer = Replayer(sem_a, test.name)
        st_a, st_b = sem_a.initial_state(), sem_b.initial_state()
        for i, ev in enumerate(test.events, 1):
            _, args, status, outs = replayer.normalise(ev)
            try:
                a, b = sem_a.allowed(st_a, ev.call, args), sem_b.allowed(st_b, ev.call, args)
            except RegcheckError:
                return f"{test.name} event {i} {ev.call}: the mutant cannot evaluate it"
            if _outcome_set(a) != _outcome_set(b):
                return f"{test.name} event {i} {ev.call}"
            if status is None or status == sem_a.success:
                sem_a.apply(st_a, ev.call, args, outs)
                sem_b.apply(st_b, ev.call, args, outs)
    return None


def _outcome_set(allowed: Allowed) -> tuple:
    """The statuses a call may return, as sets (not as the clauses that allow them): `{A}` or
    `any` together with `A` is the same set as `any` alone."""
    if allowed.open:
        return ("open",)
    return allowed.success, _statuses(allowed.errors), _statuses(allowed.env_errors)


def _statuses(outcomes) -> tuple:
    """("some", codes) for a finite set of statuses, ("all but", codes) for every failure but those."""
    named = frozenset().union(*(e.codes for e in outcomes if e.codes is not None))
    open_ended = [e.excluded for e in outcomes if e.codes is None]
    if not open_ended:
        return "some", named
    return "all but", frozenset.intersection(*map(frozenset, open_ended)) - named
