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
     covers a coverage item no earlier (shorter) test covers. States are deduplicated by what they
     can decide (`coverage.StateKey`): a field no condition, effect, invariant or `pinned`
     declaration reads is left out, and a flags field whose reads only test some bits is cut to
     those bits, so a registration made Portable and one made Portable|IoMemory are searched once
     when no rule looks at those bits. Such states allow the same outcomes to every call sequence;
     what is lost is only boundary labels that name the other entry's flags (and the outputs an
     `ensures` alone constrains, which the pool picks per state). For cuda and hip this cuts the
     states searched from 8,794 and 43,816 to 1,136 and 508 (3.5 and 13 minutes to seconds),
     with the same outcome branches and transitions covered.
  2. Transitions (exact). Deduplicating by state forgets history (register, query, unregister ends
     where the allocation left off), so for each API call W whose effect writes what a branch of a
     later call C reads (`transition_pairs`), W succeeds from a state of the search, optionally one
     more call follows, and C is tried on the addresses W used; a candidate is kept when it shows a
     (W success, C branch) transition no earlier test shows.
  3. Bounded model checking (`checker.engines.bmc`, Z3 through `checker.symbolic.encode`) for every outcome branch
     enumeration did not reach in a configuration: the solver picks the earlier calls and the
     arguments that make exactly that branch hold, in runs a driver can be given (`_testable_runs`:
     each prefix step succeeds for sure, every address lies in an allocation live at its step,
     allocations are real and share no page). Its run is replayed with the concrete semantics
     before it becomes a test; when no run of `bmc_depth` calls exists, the coverage report says so
     (a bounded result, never a proof).
  4. Bounded model checking for the transition pairs steps 1 and 2 did not show: the writer succeeds
     at some step (or is rejected in the last state) and the later call, on an address the writer
     named, shows the branch (`_bmc_transitions`). A run found is shortened, laid out and checked
     like an enumerated candidate; a pair none shows gets a reason in `suite.json`. Queries are cut
     by Z3's resource count, not the clock, in a Z3 context of their own, so a suite is the same
     on any machine and in any process.

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

import contextlib
import itertools
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

from ..engines.runs import Step, a_status, semantics_for
from ..language.analysis import Allocator
from ..language.checked import CheckedSpec
from ..model.outcomes import Allowed
from ..model.semantics import Semantics
from ..model.state import State
from ..trace.events import TraceEvent
from .configs import config_label, configurations, show_json
from .coverage import (CallFacts, StateKey, coverage_report, entry_origins, facts_of, origin_report, outcome_branches,
                       transition_pairs, transition_report)
from .model import (ALLOC_SIZE, ALLOC_STRIDE, HUGE_ALLOCATION, LIVE_ENTRY, MAX_ALLOCS, NULL_SIZE_LIMIT, PAGE,
                    TRANSITION, U64, ConformanceTest, Expectation, GenerateOptions, Node, Suite, expectation_of,
                    live_entry_label)
from .pool import (ArgumentPool, entry_class, expectations_disjoint, is_addr, json_arg, layouts, mover, point_relation,
                   range_relation, relocatable, representative_status, show_arg, signatures, value_class)


# ---------------------------------------------------------------- the search


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


class _Generator:
    def __init__(self, spec: CheckedSpec, spec_name: str, options: GenerateOptions):
        self.spec, self.spec_name, self.options = spec, spec_name, options
        self.facts = {n: facts_of(spec, info) for n, info in spec.calls.items()}
        self.api_calls = tuple(n for n, f in self.facts.items() if f.is_api)
        self.kept: list[_Kept] = []
        self.covered: set = set()
        self.missing: dict[tuple[str, str], str] = {}  # (rule, branch@config) -> why not covered
        self.open_seen: dict[str, int] = {}  # rule -> candidates that were open because of it
        self.stats = {"states": 0, "candidates": 0, "bmc_queries": 0, "bmc_transition_queries": 0, "bmc_tests": 0,
                      "unstable": 0}
        self.transition_missing: dict[tuple[str, str], list[tuple[str, str]]] = {}  # -> (config, why not) each
        self.pool = ArgumentPool(spec)
        self.together: dict[str, tuple] = {}  # rule -> the smallest case where it holds with others
        self.pinned_tables = frozenset(p.table for p in spec.pinned)
        self.pairs = transition_pairs(self.facts)
        self.state_key = StateKey(spec)  # states equal under it are searched once
        # call -> the names of its address arguments and outputs (what `_related` compares)
        self.address_names = {n: tuple(p for p, t in info.params + info.outputs if is_addr(t))
                              for n, info in spec.calls.items()}
        # (writer call, its outcome) -> later call -> (rule, branch) -> the transition label, for the
        # pairs to look for
        self.wanted_after: dict[tuple[str, str], dict[str, dict[tuple[str, str], str]]] = {}
        # allocator -> (ensures rule, table the rule reads): a promise about the live entries (fresh
        # memory, disjoint from every live block) that a driver can break only while such an entry is
        # live. (Other calls' ensures read entries their own preconditions already need live.)
        self.entry_promises = {n: tuple((r, t) for r in f.ensures if n in self.pool.allocators
                                        for t in sorted(f.reads.get(r, frozenset()) & spec.tables.keys()))
                               for n, f in self.facts.items()}
        self.promise_tables = frozenset(t for promises in self.entry_promises.values() for _, t in promises)
        # promise rule -> each (table, call whose effect can insert an entry into it): the report lists
        # every origin, also one no test reaches
        origins = entry_origins(spec)
        self.promise_origins = {rule: tuple((table, origin) for origin in origins[table])
                                for promises in self.entry_promises.values() for rule, table in promises}
        self.prefix_succeeded: set[str] = set()  # calls that succeeded as a step of a prefix searched
        self.live_origins: set[tuple[str, str]] = set()  # (table, call) of the live entries prefixes left
        self._last_prefix: tuple | None = None  # (steps, ctx, answer) of `_prefix_promises`
        for pair in self.pairs:
            by_call = self.wanted_after.setdefault((pair.writer, pair.writer_outcome), {}).setdefault(pair.call, {})
            by_call[(pair.rule, pair.branch)] = pair.label

    # ---- driving
    def run(self, progress: Callable[[int, int, str], None] | None = None) -> Suite:
        t0 = time.perf_counter()
        configs = self.options.configs or configurations(self.spec)
        with self._solver_scope():
            for i, env in enumerate(configs, 1):
                self._config(dict(env))
                if progress is not None:
                    progress(i, len(configs), config_label(env))
        self._together()
        tests = self._named()
        self.stats["seconds"] = round(time.perf_counter() - t0, 3)
        self.stats["tests"] = len(tests)
        origins = origin_report(self.promise_origins, tests, self._why_origin_missed)
        coverage = coverage_report(self.spec, self.facts, tests, self.missing, self.open_seen, origins)
        transitions = transition_report(self.pairs, tests, self._why_not_shown)
        self.stats["transitions_covered"] = sum(bool(t.tests) for t in transitions)
        return Suite(self.spec_name, tuple(tests), coverage, tuple(configs), dict(self.stats), transitions)

    def _solver_scope(self):
        """Solver queries in a Z3 context of their own: Z3's choices between equally good answers
        depend on every term its context has seen, so without it a second suite generated in one
        process could differ from the first (and from `regcheck generate`)."""
        if self.options.bmc_depth == 0:
            return contextlib.nullcontext()
        from ..symbolic.solver import isolated_context

        return isolated_context()

    def _config(self, env: dict) -> None:
        sem = semantics_for(self.spec, env)
        ctx = _Ctx(sem, env, config_label(env))
        frontier = [Node(sem.initial_state(), (), ())]
        seen = {self.state_key(frontier[0].state)}
        shallow: list[Node] = []  # states a transition search starts from (room left for two more calls)
        for depth in range(self.options.depth + 1):
            self.stats["states"] += len(frontier)
            for node in frontier:
                self._probe_state(ctx, node, full=depth <= 2)
            if depth < self.options.depth:
                shallow.extend(frontier)
            if depth == self.options.depth:
                break
            nxt = []
            for node in frontier:
                for child in self._successors(ctx, node):
                    snap = self.state_key(child.state)
                    if snap not in seen:
                        seen.add(snap)
                        nxt.append(child)
            frontier = nxt
            if not frontier:  # every reachable state found: deeper levels hold nothing (a huge --depth)
                break
        self._transitions(ctx, shallow)
        if self.options.bmc_depth > 0:
            unrolling = _LazyUnrolling(self, ctx)
            self._bmc_fallback(ctx, unrolling)
            self._bmc_transitions(ctx, unrolling)

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
                    if not alloc.exact and not self._sized_as_asked(st, alloc, args, outputs):
                        continue
                    allocs = allocs + ((outputs[alloc.output], args[alloc.size_param]),)
                yield Node(st, node.steps + (Step(call, dict(args), dict(outputs), status),), allocs)

    def _sized_as_asked(self, st: State, alloc: Allocator, args: Mapping, outputs: Mapping) -> bool:
        """Whether an allocation whose entry's size is computed (an mmap's whole pages) made an entry
        of the size asked, as the prefix records it (else its addresses past that size would not be
        taken for the allocation's, and the executor would relocate it by another size)."""
        record = st.tables[alloc.table].rows.get(outputs[alloc.output])
        return record is not None and record.get(self.spec.tables[alloc.table].sized_by) == args[alloc.size_param]

    def _probe_state(self, ctx: _Ctx, node: Node, full: bool) -> None:
        for call in self.api_calls:
            for args in self.pool.candidates(node, call, full):
                self.stats["candidates"] += 1
                self._consider(ctx, node, call, args, "enumeration")

    # ---- transitions: a call after an earlier call's success that wrote what it reads
    def _transitions(self, ctx: _Ctx, starts: Sequence[Node]) -> None:
        """From each state, a writer W succeeds, optionally one more call follows (the one that
        changes what W wrote, e.g. an unregister), then each later call C that reads it is tried on
        the addresses W used. The breadth-first search cannot find these: it forgets how a state was
        reached (register, query, unregister leaves the state malloc left)."""
        probed: set = set()
        expanded: set = set()
        for node in starts:
            for child in self._rejections(ctx, node):  # W fails: the state must stay as it was
                self._probe_after(ctx, child, child.steps[-1], probed)
            for child in self._successors(ctx, node):
                writer = child.steps[-1]
                if self._outcome_key(writer) not in self.wanted_after:
                    continue
                self._probe_after(ctx, child, writer, probed)
                key = self._after_key(child, writer)
                if key in expanded:
                    continue  # its continuations were searched from another way to the same state
                expanded.add(key)
                for grandchild in self._successors(ctx, child):
                    self._probe_after(ctx, grandchild, writer, probed)

    def _probe_after(self, ctx: _Ctx, node: Node, writer: Step, probed: set) -> None:
        # The same state after the same write (a different way there) shows the same transitions.
        key = self._after_key(node, writer)
        if key in probed:
            return
        probed.add(key)
        wrote = self._addresses(writer)
        for call, wanted in self.wanted_after[self._outcome_key(writer)].items():
            if all((rule, label) in self.covered for (rule, _), label in wanted.items()):
                continue
            for args in self.pool.candidates(node, call, False):
                if not self._related(writer.call, wrote, call, self._used(call, args, {})):
                    continue
                self.stats["candidates"] += 1
                self._consider(ctx, node, call, args, "enumeration", transitions_only=True)

    REJECTIONS_PER_CALL = 16  # failing writer calls tried per state (each leaves the state as it was)

    def _rejections(self, ctx: _Ctx, node: Node) -> Iterator[Node]:
        """The state after a writer call that fails with a documented error (and nothing else
        possible, though an obligation may be broken): the same state, one step longer."""
        sem = ctx.sem
        for call in self.api_calls:
            if (call, "failure") not in self.wanted_after:
                continue
            tried = 0
            for args in self.pool.transitions(node, call):
                al = sem.allowed(node.state, call, args)
                # A broken obligation may be what makes it fail (an unregistration of memory never
                # registered), as in the suite's other failure tests; the outcome must be determinate.
                if al.open or al.success or len(al.errors) != 1:
                    continue
                status = a_status(self.spec, al.errors[0])
                yield Node(node.state, node.steps + (Step(call, dict(args), {}, status),), node.allocs)
                tried += 1
                if tried >= self.REJECTIONS_PER_CALL:
                    break

    def _outcome_key(self, step: Step) -> tuple[str, str]:
        """(call, "success" | "failure"): how `wanted_after` knows an earlier step."""
        failed = step.status is not None and step.status != self.spec.success
        return step.call, "failure" if failed else "success"

    def _addresses(self, step: Step) -> frozenset[int]:
        return self._used(step.call, step.inputs, step.outputs)

    def _used(self, call: str, inputs: Mapping, outputs: Mapping) -> frozenset[int]:
        """The non-null addresses a call names (an output where it has one of that name)."""
        out = []
        for n in self.address_names[call]:
            v = outputs[n] if n in outputs else inputs.get(n)
            if type(v) is int and v != 0:
                out.append(v)
        return frozenset(out)

    def _related(self, writer: str, wrote: frozenset[int], call: str, used: frozenset[int]) -> bool:
        """A later call using the addresses `used` looks at what an earlier `writer` using `wrote`
        wrote: they share an address, or one of the calls has no address at all (a write of global
        state, or a call that reads only global state). A null address is an address: a query of
        null after an unregistration shows nothing about what the unregistration changed."""
        return not self.address_names[writer] or not self.address_names[call] or not wrote.isdisjoint(used)

    def _after_key(self, node: Node, writer: Step) -> tuple:
        return self.state_key(node.state), self._outcome_key(writer), self._addresses(writer)

    def _transition_items(self, node: Node, call: str, args: Mapping, outcomes: Sequence[tuple[str, str]]) -> set:
        """(rule, transition label) for each outcome branch shown after an earlier, related success
        whose effect writes state the branch reads."""
        items = set()
        used = self._used(call, args, {})
        for w in node.steps:
            wanted = self.wanted_after.get(self._outcome_key(w), {}).get(call)
            if wanted and self._related(w.call, self._addresses(w), call, used):
                items |= {(rule, wanted[(rule, branch)]) for rule, branch in outcomes if (rule, branch) in wanted}
        return items

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

    def _consider(self, ctx: _Ctx, node: Node, call: str, args: dict, method: str,
                  transitions_only: bool = False, solver_outputs: Mapping | None = None) -> bool:
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
            if outputs is None and solver_outputs is not None \
                    and not sem.ensures_broken(node.state, call, args, solver_outputs):
                outputs = dict(solver_outputs)  # a value the pool does not hold (flags a query reports)
            if outputs is None:
                return False  # success is allowed but no outputs keep the call's promises
        if transitions_only:
            # Kept only for a new transition: decide that before the costly boundary labels.
            shown = self._transition_items(node, call, args, self._outcomes(call, al)[2])
            if shown <= self.covered:
                return False
        items = self._items(ctx, node, call, args, al, outputs)
        new = items - self.covered
        if not new or transitions_only and not any(label.startswith(TRANSITION) for _, label in new):
            return False
        test = self._build(ctx, node, call, args, al, outputs, items, method, rule=self._promise_rule(new))
        if test is None:
            return False
        self.covered |= items
        self.kept.append(_Kept(test, items, len(self.kept)))
        return True

    def _outcomes(self, call: str, al: Allowed) -> tuple[str, frozenset, list[tuple[str, str]]]:
        """The rule deciding the outcome, what that rule reads, and each (rule, branch) the call shows."""
        facts = self.facts[call]
        if al.errors:
            main, branch = al.errors[0].rule, "fails"
            reads = facts.reads.get(main, frozenset())
        else:
            main, branch = facts.effect_rule or call, "success"
            reads = facts.all_reads
        holding = {e.rule for e in al.env_errors}
        outcomes = ([(main, branch)] + [(r, "allowed") for r in holding]
                    + [(r, "excluded") for r in facts.conditional_may - holding]
                    + [(r, "broken, outcome determinate") for r in al.broken])
        return main, reads, outcomes

    def _items(self, ctx: _Ctx, node: Node, call: str, args: Mapping, al: Allowed, outputs: Mapping) -> frozenset:
        facts = self.facts[call]
        cfg = ctx.label
        main, reads, outcomes = self._outcomes(call, al)
        items = {(r, f"{b} [{cfg}]") for r, b in outcomes}
        if node.steps:
            items |= self._transition_items(node, call, args, outcomes)
        if not al.errors:
            for r in facts.ensures:
                items.add((r, f"checked [{cfg}]"))
        items |= self._promise_items(ctx, node, call, args, al)
        st = node.state
        spec = self.spec
        for name, t in facts.params:
            if name not in reads:
                continue
            v = args[name]
            items.add((main, f"{name} = {value_class(spec, t, v)}"))
            if is_addr(t):
                size_name = facts.ranges.get(name)
                for table in reads:
                    info = spec.tables.get(table)
                    if info is None or info.sized_by is None:
                        continue
                    for k, rec in st.tables[table].rows.items():
                        end = k + rec[info.sized_by]
                        if size_name is not None:
                            s = args[size_name]
                            rel = range_relation(v, v + s, k, end) if s > 0 else None
                            label = f"range({name}, {size_name}) vs {table}"
                        else:
                            rel = point_relation(v, k, end)
                            label = f"{name} vs {table}"
                        if rel is not None:
                            items.add((main, f"{label}: {rel} ({entry_class(spec, info, rec)})"))
                if size_name is not None and v + args[size_name] > U64:
                    items.add((main, f"range({name}, {size_name}) crosses 2**64"))
        for var, (t, _) in spec.vars.items():
            if var in reads and t.kind in ("enum", "bool"):
                items.add((main, f"{var} = {show_json(st.vars[var])}"))
        if not al.errors and self.pinned_tables:
            before = {r for r, _, _ in ctx.sem.pinned_ranges(st)}
            post = ctx.sem.successor(st, call, args, outputs)
            after = {r for r, _, _ in ctx.sem.pinned_ranges(post)}
            for r in after - before:
                items.add((r, "locked"))
            for r in before - after:
                items.add((r, "released"))
        return frozenset(items)

    def _promise_items(self, ctx: _Ctx, node: Node, call: str, args: Mapping, al: Allowed) -> set:
        """(ensures rule, "checked with a live T entry from W") for each successful step (the prefix's
        and the call's) whose `ensures` reads table T, and each call W that made an entry of T still
        live before that step. A promise about the live entries (an allocation disjoint from every
        live block) is judged against a driver only where such entries exist, and a driver that
        aliases only another allocator's blocks (aclrtMallocHost handing out a live malloc block) is
        caught only where that allocator's entry is live: so each origin the spec's effects can create
        is an item."""
        if not self.promise_tables:
            return set()
        items, makers = self._prefix_promises(ctx, node.steps)
        if not al.errors and not self._beyond_any_machine(call, args, al):
            items = items | self._promises_judged(call, makers)
        return items

    def _prefix_promises(self, ctx: _Ctx, steps: tuple[Step, ...]) -> tuple[set, dict[str, set[str]]]:
        """The promise items of a prefix's steps, and table -> the calls that made its live entries
        after them. Every candidate of a state asks with the same prefix: the last answer is kept."""
        last = self._last_prefix
        if last is not None and last[0] is steps and last[1] is ctx:
            return last[2]
        sem = ctx.sem
        st = sem.initial_state()
        made_by: dict[str, dict] = {t: {} for t in self.promise_tables}  # table -> key -> the call that made it
        items: set = set()
        for s in steps:
            if s.status is not None and s.status != sem.success:
                continue  # a rejected call changes nothing and promises nothing
            items |= self._promises_judged(s.call, {t: set(made.values()) for t, made in made_by.items()})
            sem.apply(st, s.call, s.inputs, s.outputs)
            self.prefix_succeeded.add(s.call)
            for table, made in made_by.items():
                rows = st.tables[table].rows
                for key in [k for k in made if k not in rows]:
                    del made[key]
                for key in rows:
                    made.setdefault(key, s.call)
        answer = items, {t: set(made.values()) for t, made in made_by.items()}
        self.live_origins |= {(t, maker) for t, makers in answer[1].items() for maker in makers}
        self._last_prefix = (steps, ctx, answer)
        return answer

    def _promises_judged(self, call: str, makers: Mapping[str, set[str]]) -> set:
        return {(rule, live_entry_label(table, maker)) for rule, table in self.entry_promises[call]
                for maker in makers[table]}

    def _why_origin_missed(self, rule: str, table: str, origin: str) -> str:
        """Why no test judges `rule` (a promise about `table`'s live entries) with an entry made by
        `origin` live: how far the enumeration got towards one. The solver is not asked for these."""
        within = f"no prefix the enumeration searched (at most {self.options.depth} calls)"
        if origin not in self.prefix_succeeded:
            return f"{within} has a successful {origin}"
        if (table, origin) not in self.live_origins:
            return f"{within} leaves a live {table} entry made by {origin}"
        return f"{within} has a successful {self.spec.rules[rule].call} while a {table} entry made by {origin} is live"

    def _promise_rule(self, new: frozenset) -> str | None:
        """The promise a test is named after when live-entry promises are all it newly covers (its
        call may be a setup step, a malloc after aclrtMallocHost say); None: its call's own rule."""
        if not new or not all(label.startswith(LIVE_ENTRY) for _, label in new):
            return None
        order = {r: i for i, r in enumerate(self.spec.rules)}
        return min((r for r, _ in new), key=lambda r: order.get(r, len(order)))

    def _beyond_any_machine(self, call: str, args: Mapping, al: Allowed) -> bool:
        """An allocation no machine can give, where an environmental failure is allowed: its test
        expects that failure, so the call's promises are never judged."""
        alloc = self.pool.allocators.get(call)
        return alloc is not None and args.get(alloc.size_param, 0) > HUGE_ALLOCATION and bool(al.env_errors)

    # ---- a test from a candidate
    def _build(self, ctx: _Ctx, node: Node, call: str, args: dict, al: Allowed, outputs: dict,
               items: frozenset, method: str, rule: str | None = None) -> ConformanceTest | None:
        sem = ctx.sem
        exp = expectation_of(sem, al)
        alloc = self.pool.allocators.get(call)
        if exp.outcome == "success" and self._beyond_any_machine(call, args, al):
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
                if not expectations_disjoint(e1, e2):
                    continue
                outs = {}
                if e1.outcome == "success":
                    outs = self.pool.outputs(ctx.sem, node, call, args)
                    if outs is None:
                        continue
                status = sem.success if e1.outcome == "success" else representative_status(self.spec, e1)
                return Step(call, args, outs, status)
        return None

    def _probe_candidates(self, node: Node, facts: CallFacts, main: Step) -> Iterator[dict]:
        addrs = [v for n, v in main.inputs.items() if n in dict(self.facts[main.call].params)
                 and is_addr(dict(self.facts[main.call].params)[n])]
        addrs += [v for v in main.outputs.values() if type(v) is int]
        keys = sorted({k for tbl in node.state.tables.values() for k in tbl.rows if isinstance(k, int)})
        main_sizes = [main.inputs[s] for s in self.facts[main.call].ranges.values() if s in main.inputs]
        per_param = []
        for name, t in facts.params:
            if is_addr(t):
                values = [v for v in dict.fromkeys(addrs + keys) if v != 0 and relocatable(self.pool.live(node), v)]
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
        reference = signatures(sem, steps)
        if reference is None:
            return False
        for layout in layouts(self._allocations(steps)):
            if signatures(sem, [self._moved(s, layout) for s in steps]) != reference:
                return False
        return True

    def _allocations(self, steps: Sequence[Step]) -> list[tuple[int, int]]:
        """(address, size) of each allocation the steps make, in order."""
        return [(s.outputs[a.output], s.inputs[a.size_param]) for s in steps
                for a in [self.pool.allocators.get(s.call)] if a is not None and a.output in s.outputs]

    def _moved(self, s: Step, layout: Callable[[int], int]) -> Step:
        """The step with every address argument and output moved by `layout`."""
        return Step(s.call, self._move(s.call, s.inputs, layout, "params"),
                    self._move(s.call, s.outputs, layout, "outputs"), s.status)

    def _move(self, call: str, values: Mapping, layout: Callable[[int], int], which: str) -> dict:
        info = self.spec.calls[call]
        types = dict(info.params if which == "params" else info.outputs)
        return {n: (layout(v) if is_addr(types.get(n)) else v) for n, v in values.items()}

    def _event(self, s: Step) -> TraceEvent:
        info = self.spec.calls[s.call]
        args = {n: json_arg(self.spec, t, s.inputs[n]) for n, t in info.params}
        outs = {n: json_arg(self.spec, t, s.outputs[n]) for n, t in info.outputs if n in s.outputs}
        return TraceEvent(0, s.call, args, s.status, outs)

    def _describe(self, steps: Sequence[Step], main: int, probed: bool) -> str:
        def show(s: Step) -> str:
            info = self.spec.calls[s.call]
            args = ", ".join(f"{n}={show_arg(self.spec, t, s.inputs[n])}" for n, t in info.params)
            return f"{s.call}({args})"
        parts = []
        if main:
            parts.append("after " + "; ".join(show(s) for s in steps[:main]) + ": ")
        parts.append(show(steps[main]))
        if probed:
            parts.append("; then probe " + show(steps[main + 1]))
        return "".join(parts)

    # ---- bounded model checking for branches enumeration did not reach
    def _bmc_fallback(self, ctx: _Ctx, unrolling: "_LazyUnrolling") -> None:
        wanted = []
        for call in self.api_calls:
            facts = self.facts[call]
            for rule, kind in facts.kinds.items():
                for branch in outcome_branches(kind, rule in facts.conditional_may, facts, rule):
                    if (rule, f"{branch} [{ctx.label}]") not in self.covered:
                        wanted.append((call, rule, branch))
        if not wanted:
            return
        from ..engines.bmc import Target, cover
        from ..symbolic.solver import Witness

        targets = [Target((call, rule, branch), call, _target_formula(self, call, rule, branch),
                          _target_holds(self, call, rule, branch)) for call, rule, branch in wanted]
        self.stats["bmc_queries"] += len(targets)
        found = cover(unrolling.get(), self.spec_name, targets)
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
        steps, final = self._canonical_layout(list(run.steps[:-1]), run.steps[-1])
        node = self._replayed(ctx, steps, [final])
        return node is not None and self._consider(ctx, node, call, dict(final.inputs), "bmc")

    def _canonical_layout(self, steps: list[Step], final: Step) -> tuple[list[Step], Step]:
        """A run the solver found places allocations anywhere (an allocator returning 1, say), where
        no real allocator puts them and where the executor cannot relocate them (a device allocation
        is relocated by its page offset): allocation k moves to a page-aligned base, ALLOC_STRIDE apart,
        as in enumeration, and every address inside it with it. `_consider` then checks the outcome does not depend on it."""
        allocs = self._allocations(steps)
        if not allocs:
            return steps, final
        bases, at = [], ALLOC_STRIDE
        for _, size in allocs:  # apart, page-aligned, in order: no two overlap, whatever their sizes
            bases.append(at)
            at += (max(size, 1) + PAGE - 1) // PAGE * PAGE + ALLOC_STRIDE
        if at >= U64:
            return steps, final
        layout = mover(allocs, bases)
        return [self._moved(s, layout) for s in steps], self._moved(final, layout)

    # ---- bounded model checking for transitions the search did not reach
    def _bmc_transitions(self, ctx: _Ctx, lazy: "_LazyUnrolling") -> None:
        """For each (writer outcome, later branch) pair no test shows yet, ask the solver for a run:
        the writer succeeds at some step of the unrolling (or fails with one documented error in
        the last state, which it leaves as it was), and the later call, naming an address the writer
        named, shows the branch. The run is laid out, shortened and checked concretely, and becomes
        a test only through `_consider`, like every enumerated candidate. One query asks for any of
        the pairs of one later call, so a configuration where none can be shown costs one query."""
        from ..symbolic.solver import Witness
        from ..symbolic.terms import disj, holds_in

        wanted = [p for p in self.pairs if (p.rule, p.label) not in self.covered and not self._unshareable(p)]
        if not wanted:
            return
        unrolling = lazy.get()
        session = unrolling.session
        by_call: dict[str, list] = {}
        for pair in wanted:
            by_call.setdefault(pair.call, []).append(pair)
        for call, group in by_call.items():
            env, bounds, cc, small = unrolling.final_call(call)
            goals = [self._pair_goal(unrolling, pair, env, cc, small, f"bmc.rejected.{i}.")
                     for i, pair in enumerate(group)]
            remaining = list(range(len(group)))
            with session.frame():
                session.add(*bounds)
                while remaining:
                    remaining = [i for i in remaining if (group[i].rule, group[i].label) not in self.covered]
                    if not remaining:
                        break
                    self.stats["bmc_transition_queries"] += 1
                    ans = session.find(disj([goals[i].formula for i in remaining]))
                    if ans.witness is not Witness.FOUND:
                        reason = (f"the solver gave up ({ans.reason})" if ans.witness is Witness.UNKNOWN else
                                  f"no run of at most {self.options.bmc_depth} calls shows it (bounded model "
                                  "checking, allocations of at least one byte that share no page)")
                        for i in remaining:
                            self._transition_missed(ctx, group[i], reason)
                        break
                    # the model makes at least one goal true: the loop ends
                    i = next(i for i in remaining if holds_in(ans.model, goals[i].formula))
                    remaining.remove(i)
                    run = self._shortest_run(unrolling, group[i], goals[i], env, ans)
                    reason = self._transition_test(ctx, group[i], *run)
                    if reason:
                        self._transition_missed(ctx, group[i], f"bounded model checking found a run, but no test: {reason}")
                    else:
                        self.stats["bmc_tests"] += 1

    def _transition_missed(self, ctx: _Ctx, pair, reason: str) -> None:
        self.transition_missing.setdefault((pair.rule, pair.label), []).append((ctx.label, reason))

    def _why_not_shown(self, pair) -> str:
        if self._unshareable(pair):
            if not self._address_params(pair.call):
                return ("no test can show it: the later call takes no address, and the one it returns is the "
                        "driver's choice")
            return "no test can show it: the rejected call names no address the later call could take"
        if self.options.bmc_depth == 0:
            return "not reached by the search (bounded model checking off)"
        reasons = self.transition_missing.get((pair.rule, pair.label), [])
        if not reasons:
            return "not reached by the search"
        by_reason: dict[str, list[str]] = {}
        for config, reason in reasons:
            by_reason.setdefault(reason, []).append(config)
        if len(by_reason) == 1:
            return f"{next(iter(by_reason))}, in every configuration"
        return "; ".join(f"{reason} [{', '.join(configs)}]" for reason, configs in by_reason.items())

    def _unshareable(self, pair) -> bool:
        """A pair no run can show: both calls name addresses, but the later call takes none as an
        argument (an allocator's result is the driver's choice), or the writer failed and so named
        none but its arguments, and it takes none."""
        writer_addrs = self.address_names[pair.writer]
        later_addrs = self.address_names[pair.call]
        if not writer_addrs or not later_addrs:
            return False
        writer_params = self._address_params(pair.writer)
        return not self._address_params(pair.call) or (pair.writer_outcome == "failure" and not writer_params)

    def _address_params(self, call: str) -> tuple[str, ...]:
        return tuple(n for n, t in self.spec.calls[call].params if is_addr(t))

    def _pair_goal(self, unrolling, pair, env: Mapping, cc, small: list, rejected_prefix: str) -> "_PairGoal":
        """What a run showing `pair` must make true at the end of the unrolling, with the later
        call's inputs and outputs `env` (conditions `cc`)."""
        from ..engines.bmc import SMALL
        from ..symbolic.terms import conj, disj, neg

        enc = unrolling.encoder
        target = [_target_formula(self, pair.call, pair.rule, pair.branch)(enc, env, cc, unrolling.final)]
        later = self._address_params(pair.call)
        if pair.writer_outcome == "success":
            w = unrolling.calls.index(pair.writer)
            names = self.address_names[pair.writer]
            target.append(disj([conj([sv.selector == w, _shares(sv.io[pair.writer], names, env, later)])
                                for sv in unrolling.steps]))
            return _PairGoal(conj(target), None, small)
        rejected_env, w_bounds = enc.fresh_io(pair.writer, rejected_prefix)
        wc = enc.conditions(pair.writer, unrolling.final, rejected_env)
        errors = [c for _, _, c in wc.errors]
        target += w_bounds + [neg(c) for _, c in wc.unspecified]
        target += [c for _, undefined, c in wc.requires if undefined]
        target.append(disj([conj([c] + [neg(o) for j, o in enumerate(errors) if j != i]) for i, c in enumerate(errors)]))
        target.append(_shares(rejected_env, self._address_params(pair.writer), env, later))
        small = small + [conj(rejected_env[n] >= -1, rejected_env[n] <= SMALL) for n in self._address_params(pair.writer)]
        return _PairGoal(conj(target), rejected_env, small)

    def _shortest_run(self, unrolling, pair, goal: "_PairGoal", env: Mapping, ans) -> tuple:
        """(prefix steps, the later call, the rejected writer or None) of a shortest run making
        `goal` true, with readable values where there is one: the first run found tends to take
        detours. `ans` is a model making it true."""
        from ..symbolic.solver import Witness
        from ..symbolic.terms import conj

        session = unrolling.session
        for k in range(len(unrolling.run_of(ans.model, self.spec_name).steps)):
            shorter = session.find(goal.formula, *unrolling.stutter_after(k))
            if shorter.witness is Witness.FOUND:
                ans = shorter
                break
        k = len(unrolling.run_of(ans.model, self.spec_name).steps)
        readable = conj(unrolling.small + goal.small)
        for prefer in ([readable, conj(self._enumeration_sizes(unrolling))], [readable]):
            nicer = session.find(goal.formula, *prefer, *unrolling.stutter_after(k))
            if nicer.witness is Witness.FOUND:
                ans = nicer
                break
        model = ans.model
        inputs, outputs = unrolling.read_io(model, pair.call, env)
        rejected = None
        if goal.rejected_env is not None:
            rejected = Step(pair.writer, unrolling.read_io(model, pair.writer, goal.rejected_env)[0], {}, None)
        return list(unrolling.run_of(model, self.spec_name).steps), Step(pair.call, inputs, outputs, None), rejected

    def _allocations_of(self, unrolling) -> list[tuple]:
        """(step, the step chooses allocator A, A's base, A's size) for each step and allocator."""
        return [(j, sv.selector == unrolling.calls.index(call), sv.io[call][alloc.output], sv.io[call][alloc.size_param])
                for j, sv in enumerate(unrolling.steps) for call, alloc in self.pool.exact_allocators.items()]

    def _testable_runs(self, unrolling) -> list:
        """Runs the executor can play against a driver, as enumeration's are: every address
        argument null or inside an allocation live at its step (the executor moves those, and only
        those, into the driver's memory); allocations of at least one byte (what an allocator
        returns for 0 bytes is its own choice, null or a pointer no other object has), no two
        sharing a page, whichever allocator made them and whether or not the first was freed (one
        address space; an address handed out again is the allocator's choice too, so no test can
        tie a later call to it)."""
        from ..symbolic.terms import conj, disj, implies

        out = [implies(sv.selector == unrolling.calls.index(call), _addresses_inside(self, call, sv.io[call], st))
               for sv, st in zip(unrolling.steps, unrolling.states) for call in unrolling.calls
               if self._address_params(call)]
        allocs = self._allocations_of(unrolling)
        out += [implies(chosen, size >= 1) for _, chosen, _, size in allocs]
        # An environment event returning memory that is no allocation of an exact size (mmap, whose
        # mapping is its length rounded to pages) is not used here: a model's length need not be a
        # whole number of pages, and the allocations above are sized by it. (Enumeration's prefixes
        # map whole pages, so they use it.)
        for call, facts in self.facts.items():
            if not facts.is_api and call not in self.pool.exact_allocators and \
                    any(is_addr(t) for _, t in self.spec.calls[call].outputs):
                out += [sv.selector != unrolling.calls.index(call) for sv in unrolling.steps]
        for j, chosen, base, size in allocs:
            for j2, chosen2, base2, size2 in allocs:
                if j < j2:
                    out.append(implies(conj([chosen, chosen2]),
                                       disj([base + size + PAGE <= base2, base2 + size2 + PAGE <= base])))
        return out

    def _enumeration_sizes(self, unrolling) -> list:
        """The preference for allocations of the enumeration's size (readable, comparable tests)."""
        from ..symbolic.terms import implies

        return [implies(chosen, size == ALLOC_SIZE) for _, chosen, _, size in self._allocations_of(unrolling)]

    def _transition_test(self, ctx: _Ctx, pair, steps: list[Step], final: Step, rejected: Step | None) -> str:
        """Make a test of a solver's run for `pair`: allocations at the enumeration's bases, steps
        the pair does not need dropped, then `_consider`. "" when the pair is covered after, else
        why the run gave no test."""
        holds = _target_holds(self, pair.call, pair.rule, pair.branch)

        def node_of(trial: Sequence[Step], final: Step, rejected: Step | None) -> Node | None:
            later = self._used(pair.call, final.inputs, {})
            # (no step shortened away the allocation an address lies in)
            node = self._replayed(ctx, trial, [s for s in (rejected, final) if s is not None])
            if node is None:
                return None
            if rejected is not None:
                al = ctx.sem.allowed(node.state, rejected.call, rejected.inputs)
                if al.open or al.success or len(al.errors) != 1:
                    return None
                failed = Step(rejected.call, rejected.inputs, {}, a_status(self.spec, al.errors[0]))
                node = Node(node.state, node.steps + (failed,), node.allocs)
            elif not any(s.call == pair.writer and self._related(s.call, self._addresses(s), pair.call, later)
                         for s in node.steps):
                return None
            try:
                return node if holds(ctx.sem, node.state, final) else None
            except Exception:  # an evaluation error in a shortened run: not a witness
                return None

        trial = list(steps)
        if node_of(trial, final, rejected) is None:  # the encoding and the semantics disagree
            return "internal: the solver's run does not replay concretely"
        shorter = True
        while shorter:  # drop one step at a time while the run still shows the pair (runs are short)
            shorter = False
            for i in range(len(trial)):
                if node_of(trial[:i] + trial[i + 1:], final, rejected) is not None:
                    del trial[i]
                    shorter = True
                    break
        # Then the allocations move to the enumeration's bases (shortening first: a step the pair
        # does not need may be what pins an address, a partial munmap say).
        moved, final = self._canonical_layout(trial + ([rejected] if rejected is not None else []), final)
        if rejected is not None:
            moved, rejected = moved[:-1], moved[-1]
        node = node_of(moved, final, rejected)
        if node is None:
            return "the run shows it only where the solver placed its allocations"
        self._consider(ctx, node, pair.call, dict(final.inputs), "bmc", transitions_only=True,
                       solver_outputs=final.outputs)
        if (pair.rule, pair.label) in self.covered:
            return ""
        return ("the run's test was dropped: an outcome depends on where allocations lie, or no outputs "
                "keep the call's promises")

    def _replayed(self, ctx: _Ctx, steps: Sequence[Step], last: Sequence[Step] = ()) -> Node | None:
        """The node a prefix reaches when each step keeps every obligation and succeeds for sure,
        and every address argument of each step, then of `last` (calls made in the final state),
        is null or inside an allocation live at that point, as the pool's are: the executor moves
        only those into the driver's memory (freed memory may be the driver's again, under another
        allocation)."""
        sem = ctx.sem
        st = sem.initial_state()
        allocs: list = []
        out = []
        for s in steps:
            al = sem.allowed(st, s.call, s.inputs)
            if not self._addresses_live(st, allocs, s) or al.open or al.broken or not al.success \
                    or not sem.apply(st, s.call, s.inputs, s.outputs):
                return None
            a = self.pool.allocators.get(s.call)
            if a is not None:
                allocs.append((s.outputs[a.output], s.inputs[a.size_param]))
            out.append(Step(s.call, s.inputs, s.outputs, sem.success if self.facts[s.call].is_api else None))
        if not all(self._addresses_live(st, allocs, s) for s in last):
            return None
        return Node(st, tuple(out), tuple(allocs))

    def _addresses_live(self, st: State, allocs: Sequence[tuple[int, int]], s: Step) -> bool:
        live = self.pool.live(Node(st, (), tuple(allocs)))
        return all(relocatable(live, s.inputs[n]) for n in self._address_params(s.call))

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


def _target_formula(gen: _Generator, call: str, rule: str, branch: str):
    from ..symbolic.terms import conj, disj, neg

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
            parts.append(cc.ensured)  # outputs a conforming driver could give (a test may record them)
        if branch in ("allowed", "excluded"):
            cond = next(c for r, _, c in cc.env_errors if r == rule)
            parts.append(cond if branch == "allowed" else neg(cond))
        if branch.startswith("broken"):
            kept = {r: c for r, c in cc.usage} | {r: c for r, _, c in cc.requires}
            parts.append(neg(kept[rule]))
        parts.append(_addresses_inside(gen, call, env, st))
        return conj(parts)
    return formula


def _addresses_inside(gen: _Generator, call: str, env: Mapping, st):
    """Z3: each address argument of `call` (inputs `env`) is null or inside an allocation of `st`
    (its range too, for an address with a size), as the argument pool's addresses are."""
    from ..symbolic.terms import conj, disj

    spec, facts = gen.spec, gen.facts[call]
    parts = []
    for name, t in facts.params:
        if not is_addr(t):
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


def _shares(io: Mapping, names: Sequence[str], env: Mapping, later: Sequence[str]):
    """The writer's inputs/outputs `io` name a non-null address the later call takes in `env`;
    true when either names no address (a write or read of global state), as `_related` says."""
    from ..symbolic.terms import conj, disj

    if not names or not later:
        return conj([])
    return disj([conj([io[a] == env[b], env[b] != 0]) for a in names for b in later])


@dataclass(frozen=True, slots=True)
class _PairGoal:
    formula: object  # Z3: a run ending here shows the pair
    rejected_env: Mapping | None  # the rejected writer's inputs, for a pair after a failure
    small: list  # readable-value preferences for the final calls

class _LazyUnrolling:
    """One configuration's unrolling, built on first use (most configurations need none)."""

    def __init__(self, gen: _Generator, ctx: _Ctx):
        self.gen, self.ctx, self.unrolling = gen, ctx, None

    def get(self):
        if self.unrolling is None:
            from ..engines.bmc import Unrolling
            from ..symbolic.solver import SolverOptions

            o = self.gen.options
            self.unrolling = Unrolling(self.gen.spec, o.bmc_depth,
                                       SolverOptions(timeout_ms=o.timeout_ms, rlimit=o.rlimit), env=self.ctx.env,
                                       determinate=True)
            self.unrolling.session.add(*self.gen._testable_runs(self.unrolling))
        return self.unrolling


def _alloc_tables(gen: _Generator) -> list[str]:
    return sorted(gen.pool.alloc_tables)


def _inside_concretely(gen: _Generator, call: str, args: Mapping, st: State) -> bool:
    """`_addresses_inside` on a concrete state (so shortening a run keeps the allocations it needs)."""
    facts = gen.facts[call]
    for name, t in facts.params:
        if not is_addr(t):
            continue
        p, size_name = args[name], facts.ranges.get(name)
        size = args[size_name] if size_name is not None else None
        if p == 0 and (size is None or size <= NULL_SIZE_LIMIT):
            continue
        if not any(k <= p and (p < k + rec[gen.spec.tables[table].sized_by] or p == k)
                   and (size is None or size <= 0 or p + size <= k + rec[gen.spec.tables[table].sized_by])
                   for table in _alloc_tables(gen) for k, rec in st.tables[table].rows.items()):
            return False
    return True


def _target_holds(gen: _Generator, call: str, rule: str, branch: str):
    def holds(sem: Semantics, st: State, step) -> bool:
        if not _inside_concretely(gen, call, step.inputs, st):
            return False
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


