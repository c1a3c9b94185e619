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
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

from ..engines.runs import Step, a_status, semantics_for
from ..language.checked import CheckedSpec
from ..model.outcomes import Allowed
from ..model.semantics import Semantics
from ..model.state import State
from ..trace.events import TraceEvent
from .configs import config_label, configurations, show_json
from .coverage import (CallFacts, StateKey, coverage_report, facts_of, outcome_branches, transition_pairs,
                       transition_report)
from .model import (ALLOC_STRIDE, HUGE_ALLOCATION, MAX_ALLOCS, NULL_SIZE_LIMIT, PAGE, TRANSITION, U64, ConformanceTest,
                    Expectation, GenerateOptions, Node, Suite, expectation_of)
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
        self.stats = {"states": 0, "candidates": 0, "bmc_queries": 0, "bmc_tests": 0, "unstable": 0}
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
        for pair in self.pairs:
            by_call = self.wanted_after.setdefault((pair.writer, pair.writer_outcome), {}).setdefault(pair.call, {})
            by_call[(pair.rule, pair.branch)] = pair.label

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
        coverage = coverage_report(self.spec, self.facts, tests, self.missing, self.open_seen)
        transitions = transition_report(self.pairs, tests)
        self.stats["transitions_covered"] = sum(bool(t.tests) for t in transitions)
        return Suite(self.spec_name, tuple(tests), coverage, tuple(configs), dict(self.stats), transitions)

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
        self._transitions(ctx, shallow)
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
                  transitions_only: bool = False) -> bool:
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
        if transitions_only:
            # Kept only for a new transition: decide that before the costly boundary labels.
            shown = self._transition_items(node, call, args, self._outcomes(call, al)[2])
            if shown <= self.covered:
                return False
        items = self._items(ctx, node, call, args, al, outputs)
        new = items - self.covered
        if not new or transitions_only and not any(label.startswith(TRANSITION) for _, label in new):
            return False
        test = self._build(ctx, node, call, args, al, outputs, items, method)
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
    def _bmc_fallback(self, ctx: _Ctx) -> None:
        wanted = []
        for call in self.api_calls:
            facts = self.facts[call]
            for rule, kind in facts.kinds.items():
                for branch in outcome_branches(kind, rule in facts.conditional_may, facts, rule):
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
        steps, final = self._canonical_layout(list(run.steps[:-1]), run.steps[-1])
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
        if branch in ("allowed", "excluded"):
            cond = next(c for r, _, c in cc.env_errors if r == rule)
            parts.append(cond if branch == "allowed" else neg(cond))
        if branch.startswith("broken"):
            kept = {r: c for r, c in cc.usage} | {r: c for r, _, c in cc.requires}
            parts.append(neg(kept[rule]))
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


