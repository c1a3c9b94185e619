"""Drivers that answer with a spec's own semantics, and buggy specs to build them from: mutation testing of
the generated conformance suite without hand-written mutants.

`SpecDriver(spec)` implements the driver protocol (`checker.drivers.protocol`) by asking a spec, not an
implementation: it keeps the spec's model state, answers each call with one outcome the spec allows
(success when success is allowed, else the first allowed error, else the first environmental failure)
and hands out addresses from a simulated address space for the spec's allocators. Given a `contrast`
spec (the original of a mutant), it shows its difference: where it allows an outcome the contrast
does not, it answers with that one (a buggy driver whose bug shows wherever the bug can act). Its memory is not
real, so nothing is page-locked: run it with `check_locks=False`.

`spec_mutants(checked)` derives buggy specs from a spec's syntax tree, one small change each (drop a
`fails` clause, negate a `fails` or `requires` condition, reduce an `and`/`or` in one to one of its
operands, swap a comparison operator, delete a
statement of an effect, apply a statement of an effect to the wrong key (one page up), replace an
error code by another of the spec's codes, drop an `ensures` promise, so that the driver may answer
with another output). Every mutant is printed
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
from ..engines.replay import Replayer, status_names
from ..engines.runs import a_status, semantics_for, status_candidates
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
from .pool import output_values

PAGE = 4096
HOST_BASE = 0x7E00_0000_0000  # where the simulated address space starts (clear of null and small offsets)
GUARD = PAGE  # a free page between blocks, so neighbouring allocations never touch


# ---------------------------------------------------------------- the driver


class SpecDriver:
    """A driver whose behaviour is a spec's (given as text or checked): one allowed outcome per call."""

    def __init__(self, spec: str | CheckedSpec, path: str = "<spec driver>", contrast: CheckedSpec | None = None):
        self.spec = spec if isinstance(spec, CheckedSpec) else check_source(SourceFile.of(path, spec))
        # (with mmap, whose pages it hands out as an allocation's: a generated prefix maps whole pages)
        self.shape = memory_shape(self.spec, computed_sizes=True)
        self.contrast = contrast
        self.sem = None
        self.state: State | None = None
        self.contrast_sem = None
        self.contrast_state: State | None = None
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
        if self.contrast is not None:
            self.contrast_sem = semantics_for(self.contrast, dict(env))
            self.contrast_state = self.contrast_sem.initial_state()
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
        if info.decl.kind == "event":
            return self._succeed(name, args)
        if self.contrast_sem is not None:
            telling = self._telling_answer(name, args, allowed)
            if telling is not None:
                return telling
        if allowed.success or allowed.open:
            return self._succeed(name, args)
        return Result(self._failure_status(allowed))

    def _telling_answer(self, name: str, args: Mapping[str, Any], allowed: Allowed) -> Result | None:
        """An answer this spec allows and the contrast does not, if there is one: success, else a
        failure status (each code of a finite error set, a few of an `any` one)."""
        theirs = self.contrast_sem.allowed(self.contrast_state, name, args)
        if theirs.open:
            return None
        if (allowed.success or allowed.open) and not theirs.success:
            return self._succeed(name, args)
        success = self.sem.success
        # An open outcome (an obligation this spec thinks broken, a silent case) allows any status.
        failures = [list(status_names(self.spec).values())] if allowed.open else []
        failures += [self._statuses_of(outcome) for outcome in (*allowed.errors, *allowed.env_errors)]
        for statuses in failures:
            for status in statuses:
                if status != success and not theirs.allows_status(status, success):
                    return Result(status)
        return None

    def _statuses_of(self, outcome) -> list:
        """Statuses an allowed failure permits: its codes; for `any [except ...]`, the spec's named
        statuses it does not exclude (the ones a contrast most often forbids), then a_status's."""
        if outcome.codes is not None:
            return status_candidates(self.spec, outcome)
        excluded = set(getattr(outcome, "excluded", ()) or ())
        named = [v for v in status_names(self.spec).values() if v not in excluded and v != self.sem.success]
        return named + status_candidates(self.spec, outcome)

    def close(self) -> None:
        self.sem, self.state = None, None
        self.contrast_sem, self.contrast_state = None, None
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
        if self.contrast_sem is not None:  # the contrast follows the same answers
            self.contrast_sem.apply(self.contrast_state, name, args, outs)
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
        else:
            yield from output_values(self.spec, t, self.state)


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
    for operator in (_drop_fails, _negate_conditions, _drop_operands, _swap_comparisons, _delete_statements,
                     _wrong_keys, _replace_codes, _drop_ensures):
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


def _drop_operands(clause, codes) -> Iterator[tuple[str, Any]]:
    """A condition weakened or strengthened: each `and`/`or` in it replaced by one of its operands
    (a check that forgets half of what it should test)."""
    if not isinstance(clause, (S.Fails, S.Requires)):
        return
    junction = lambda x: isinstance(x, S.Binary) and x.op in ("and", "or")  # noqa: E731
    count = sum(1 for x in S.subexpressions(clause.cond) if junction(x))
    for n in range(count):
        for side in ("left", "right"):
            found: list[str] = []

            def keep(node, side=side, found=found):
                found.append(node.op)
                return getattr(node, side)

            cond = _rewrite_nth(clause.cond, junction, keep, n)
            yield (f"{clause.rule}: {found[0]} {n + 1} reduced to its {side} operand",
                   dataclasses.replace(clause, cond=cond))


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


_KEYED = (S.Insert, S.Update, S.Delete)


def _wrong_keys(clause, codes) -> Iterator[tuple[str, Any]]:
    """Each table write or deletion of an effect applied to the entry one page above its key (a
    driver that files a registration, or removes one, under the wrong address)."""
    if not isinstance(clause, S.Effect):
        return
    keyed = [st for st in S.statements(clause.body) if isinstance(st, _KEYED)]
    for n, target in enumerate(keyed):
        def shift(st):
            return dataclasses.replace(st, key=S.Binary("+", st.key, S.IntLit(PAGE)))
        body = _rewrite_nth(clause.body, lambda x: isinstance(x, _KEYED), shift, n)
        yield (f"{clause.rule}: statement on {target.table}[...] applied to the key + {PAGE:#x}",
               dataclasses.replace(clause, body=body))


def _drop_ensures(clause, codes) -> Iterator[tuple[str, Any]]:
    """A promise about the outputs dropped: the spec driver then answers with the first output it
    tries (a fresh address), not the one the promise names (a stale or changed output)."""
    if isinstance(clause, S.Ensures):
        yield f"drop ensures {clause.rule}", None


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


KILLED, EQUIVALENT, REFINES, SURVIVED = "killed", "equivalent", "refines", "survived"


@dataclass(frozen=True, slots=True)
class MutantScore:
    description: str
    verdict: str  # killed | equivalent | refines | survived
    detail: str  # the first failing test and its rule, or where the outcome sets differ


def score_mutant(mutant: SpecMutant, original: CheckedSpec, tests: Sequence[ConformanceTest]) -> MutantScore:
    """Run the suite against the mutant's SpecDriver (stopping at the first failure)."""
    report = run_suite(tests, lambda: SpecDriver(mutant.spec, contrast=original), check_locks=False,
                       stop_on_failure=True)
    failed = [r for r in report.results if r.status == FAIL]
    if failed:
        first = failed[0]
        problem = first.problems[0] if first.problems else None
        how = f" [{problem.rule}] ({problem.kind})" if problem is not None else ""
        return MutantScore(mutant.description, KILLED, first.name + how)
    difference = first_difference(original, mutant.spec, tests)
    if difference is None:
        return MutantScore(mutant.description, EQUIVALENT, "same outcome sets on every test")
    if first_difference(original, mutant.spec, tests, wider_only=True) is None:
        return MutantScore(mutant.description, REFINES,
                           f"allows fewer outcomes than the spec (first at {difference}) and none it forbids, on "
                           "every test: a driver that behaves so conforms")
    inconclusive = report.count(INCONCLUSIVE)
    if inconclusive:  # its wrong answers pass for environmental failures: the suite cannot call them bugs
        difference += f"; {inconclusive} test(s) inconclusive"
    return MutantScore(mutant.description, SURVIVED, "differs at " + difference)


def first_difference(original: CheckedSpec, mutant: CheckedSpec, tests: Sequence[ConformanceTest],
                     wider_only: bool = False) -> str | None:
    """Where the two specs first allow different outcome sets along a test's events (both models
    following the test's recorded results), or None when they never do on these tests. With
    `wider_only`, only where the mutant allows an outcome the original does not."""
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
            if (not _within(b, a, sem_a.success)) if wider_only else _outcome_set(a) != _outcome_set(b):
                return f"{test.name} event {i} {ev.call}"
            if status is None or status == sem_a.success:
                sem_a.apply(st_a, ev.call, args, outs)
                sem_b.apply(st_b, ev.call, args, outs)
    return None


def _within(mine: Allowed, theirs: Allowed, success) -> bool:
    """Whether every status `mine` allows, `theirs` allows too."""
    if theirs.open:
        return True
    if mine.open or (mine.success and not theirs.success):
        return False
    return _failures_within(_statuses((*mine.errors, *mine.env_errors)), _statuses((*theirs.errors, *theirs.env_errors)),
                            success)


def _failures_within(mine: tuple, theirs: tuple, success) -> bool:
    (kind_a, a), (kind_b, b) = mine, theirs
    if kind_a == "some":
        return a - {success} <= b if kind_b == "some" else not (a & b)
    return kind_b == "all but" and b <= a  # every status but a few: only within another such set


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
