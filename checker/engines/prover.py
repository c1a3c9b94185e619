"""Proof obligations and consistency checks of one spec; results are data (nothing here prints).

Induction. For every property P (each `invariant`, the implicit well-typedness of the state, and
"state written by calls restricted to API groups changes only in those groups"):
  init            the initial state satisfies P, for every configuration;
  call / branch   all invariants and branch  =>  P after the call, for every call and branch:
    success       the caller keeps its obligations (`requires`, `usage ... only in`), no `fails`
                  condition holds, no `unspecified` clause holds, the outputs keep `ensures`;
                  the success effect runs;
    unspecified   obligations kept, some `unspecified` clause holds (the documents are silent,
                  any outcome is allowed), the call reports success: the effect runs. A refutation
                  here is a *documentation gap*, reported in its own category, but it still
                  counts as refuted;
    failure       any failure leaves the state unchanged: trivially PROVED (counted, not solved).
A property whose reads miss everything the effect writes is PROVED by the frame argument.
Verdicts come from `checker.symbolic.solver` (UNKNOWN keeps Z3's reason and is never shown as PROVED). A
REFUTED or UNKNOWN obligation gets a counterexample to induction from a bounded search (at most
`cti_slots` entries per table), replayed with the concrete semantics; a bounded counterexample
turns UNKNOWN into REFUTED (it is a real one).

Guards (the other direction). For every call, property and single obligation r of the call:
can a caller who breaks only r make the call break P? Each FOUND guard names the rule ID the
replayer reports for that way of breaking P (freeing registered memory, ...).

Consistency (bounded model checking from the initial state, `witness_depth` steps, each witness
replayed concretely; what no run of that length shows is decided without bound over the states
that satisfy the invariants): every clause can hold (no dead clause; a `fails` or `unspecified`
clause that holds only when the outcome is open anyway is *shadowed*), every call can succeed,
every invariant is non-vacuous, overlapping error conditions with their outcome sets, and silent
successes (inputs where a call succeeds and no clause or effect statement applies).
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

from ..language import syntax as S
from ..language.analysis import reads_and_writes
from ..language.checked import CheckedSpec
from ..model.outcomes import describe_outcomes
from ..model.semantics import Semantics
from ..model.state import State
from ..symbolic.encode import Encoder, read_config, symbolic_config
from ..symbolic.solver import Answer, Session, Verdict, Witness
from ..symbolic.tables import SymState
from ..symbolic.terms import neg
from .bmc import BmcResult, Covered, Target, Unrolling, cover, search_violation
from .consistency import (Shadow, branch_condition, branch_holds, clause_target, gap_target, overlap_targets,
                          policy_target, rules_near, says_must, status_for, success_target, vacuity_target)
from .proof import (GROUP_FRAME, TYPES, Check, CounterExample, Guard, Obligation, ProofReport, Property, ProveOptions,
                    failing_properties, properties_of)
from .runs import Run, Step, semantics_for, well_typed


# ---------------------------------------------------------------- the prover


Progress = Callable[[str, int, int], None]  # (phase, steps done, steps planned), for a progress bar


class _Prover:
    def __init__(self, spec: CheckedSpec, spec_name: str, options: ProveOptions, progress: Progress | None = None):
        self.spec = spec
        self.spec_name = spec_name
        self.options = options
        self.config, self.config_bounds = symbolic_config(spec)
        self.enc = Encoder(spec, self.config)
        self.props = properties_of(spec)
        self.reads, self.writes = reads_and_writes(spec)
        self.pre = self.enc.fresh_state("pre.")
        self.hypotheses = (self.config_bounds + self.enc.well_typed(self.pre)
                           + [self.enc.invariant(inv, self.pre) for inv in spec.invariants])
        self._bounded_cache: dict = {}
        self._bounded_goals: dict = {}
        self._progress = progress
        self._phase, self._done, self._planned = "", 0, 0

    # ---- progress: one step per obligation or guard, one per bounded search
    def begin(self, phase: str, planned: int) -> None:
        self._phase, self._done, self._planned = phase, 0, planned
        if self._progress is not None:
            self._progress(phase, 0, planned)

    def step(self) -> None:
        self._done += 1
        if self._progress is not None:
            self._progress(self._phase, self._done, self._planned)

    def planned_obligations(self) -> int:
        """How many obligations `induction` makes (the branches `call_obligations` takes per call)."""
        n = sum(not p.id.startswith(GROUP_FRAME) for p in self.props)
        for info in self.spec.calls.values():
            clauses = info.decl.clauses
            branches = (1 + any(isinstance(c, S.Unspecified) for c in clauses)
                        + any(isinstance(c, (S.Fails, S.MayFail)) for c in clauses))
            n += branches * len(self.props)
        return n

    def touches(self, prop: Property, call: str) -> bool:
        return prop.everything or bool(prop.reads & self.writes(call))

    # ---- induction
    def induction(self) -> list[Obligation]:
        out = []
        self.begin("induction", self.planned_obligations())
        init = self.enc.initial_state(bounded=False)
        session = Session(self.options.solver, self.config_bounds)
        for prop in self.props:
            if prop.id.startswith(GROUP_FRAME):
                continue
            ans = session.prove(prop.holds(self.enc, init, init, None))
            out.append(self._obligation(prop, None, "init", ans))
            self.step()
        for call in self.spec.calls:
            out += self.call_obligations(call)
        return out

    def call_obligations(self, call: str) -> list[Obligation]:
        enc = self.enc
        env, bounds = enc.fresh_io(call, f"{call}.")
        cc = enc.conditions(call, self.pre, env)
        post = enc.effect(call, self.pre, env)
        session = Session(self.options.solver, self.hypotheses + bounds + [cc.ensured])
        branches = [("success", cc.success_documented)]
        if cc.unspecified:
            branches.append(("unspecified", cc.success_unspecified))
        out = []
        goals = {prop.id: prop.holds(enc, self.pre, post, call) for prop in self.props if self.touches(prop, call)}
        for branch, cond in branches:
            with session.frame():
                session.add(cond)
                for prop in self.props:
                    if not self.touches(prop, call):
                        out.append(Obligation(prop.id, call, branch, Verdict.PROVED, "frame",
                                              "the effect writes nothing the property reads", 0.0, prop.rules))
                        self.step()
                        continue
                    ans = session.prove(goals[prop.id])
                    ob = self._obligation(prop, call, branch, ans)
                    if ob.verdict is not Verdict.PROVED:
                        ob = self._with_cti(ob, prop, call, branch)
                    out.append(ob)
                    self.step()
        if cc.fails or cc.env_errors:
            for prop in self.props:
                out.append(Obligation(prop.id, call, "failure", Verdict.PROVED, "trivial",
                                      "a failure leaves the state unchanged", 0.0, prop.rules))
                self.step()
        return out

    def _obligation(self, prop: Property, call, branch: str, ans: Answer) -> Obligation:
        rules = prop.rules
        if call is not None:
            effect = self.spec.calls[call].clauses(S.Effect)
            rules = rules + ((effect[0].rule,) if effect else ())
        return Obligation(prop.id, call, branch, ans.verdict, "solver", ans.reason, ans.seconds, rules)

    def _with_cti(self, ob: Obligation, prop: Property, call: str, branch: str) -> Obligation:
        t0 = time.perf_counter()
        cex = self.bounded_example(prop, call, branch, None)
        seconds = ob.seconds + time.perf_counter() - t0
        if cex is None:
            return Obligation(ob.property, call, branch, ob.verdict, ob.how, ob.reason, seconds, ob.rules)
        rules = tuple(dict.fromkeys(ob.rules + cex.rules))
        if ob.verdict is Verdict.UNKNOWN and cex.validated:
            note = f"solver: {ob.reason}; a bounded counterexample settles it"
            return Obligation(ob.property, call, branch, Verdict.REFUTED, "bounded", note, seconds, rules, cex)
        return Obligation(ob.property, call, branch, ob.verdict, ob.how, ob.reason, seconds, rules, cex)

    def _bounded(self, call: str):
        """The call over a bounded symbolic pre-state (`cti_slots` entries per table), in one session."""
        cached = self._bounded_cache.get(call)
        if cached is None:
            enc = Encoder(self.spec, self.config)
            n = self.options.cti_slots
            pre = enc.fresh_state(f"cti.{call}.", slots=n)
            env, bounds = enc.fresh_io(call, f"cti.{call}.io.")
            cc = enc.conditions(call, pre, env)
            post = enc.effect(call, pre, env)
            facts = (self.config_bounds + enc.well_typed(pre) + [enc.invariant(inv, pre) for inv in self.spec.invariants]
                     + bounds + [cc.ensured])
            cached = (enc, pre, env, cc, post, Session(self.options.solver, facts))
            self._bounded_cache[call] = cached
        return cached

    def bounded_example(self, prop: Property, call: str, branch: str, broken_rule: str | None) -> CounterExample | None:
        """A small concrete pre-state and step that break prop (with only broken_rule broken, if given)."""
        return self._bounded_search(prop, call, branch, broken_rule)[0]

    def _bounded_search(self, prop, call, branch, broken_rule) -> tuple[CounterExample | None, Answer]:
        enc, pre, env, cc, post, session = self._bounded(call)
        key = (call, prop.id)
        if key not in self._bounded_goals:
            self._bounded_goals[key] = neg(prop.holds(enc, pre, post, call))
        ans = session.find(branch_condition(cc, branch, broken_rule), self._bounded_goals[key])
        if ans.witness is not Witness.FOUND:
            return None, ans
        return self._example(enc, ans.model, pre, call, env, prop, branch, broken_rule), ans

    def _example(self, enc: Encoder, model, pre_sym: SymState, call: str, env: Mapping, prop: Property,
                 branch: str, broken_rule: str | None) -> CounterExample:
        info = self.spec.calls[call]
        cfg = read_config(self.spec, model, self.config)
        pre = enc.read_state(model, pre_sym)
        inputs = {n: enc.types.read(t, model, env[n]) for n, t in info.params}
        outputs = {n: enc.types.read(t, model, env[n]) for n, t in info.outputs}
        sem = semantics_for(self.spec, cfg)
        check = _ExampleCheck(self, sem, prop, call, inputs, outputs, branch, broken_rule)
        validated = check(pre)
        if validated:
            pre = check.shrink(pre)
        post = sem.successor(pre, call, inputs, outputs)
        failing = tuple(p.id for p in self.props if not p.concrete(sem, pre, call, post))
        rules: list[str] = list(prop.rules)
        try:
            al = sem.allowed(pre, call, inputs)
            rules += list(al.broken) + list(al.unspecified)
        except Exception:
            validated = False
        effect = info.clauses(S.Effect)
        if effect:
            rules.append(effect[0].rule)
        return CounterExample(cfg, pre, call, inputs, outputs, post, tuple(dict.fromkeys(rules)), failing, validated)

    # ---- guards
    def guards(self) -> list[Guard]:
        """Which single broken obligation lets a call break a property (bounded search, concrete check).

        The induction obligations already prove that no call breaks a property while the caller
        keeps its obligations; guards only name the rule behind each way to break it, so a bounded
        search (`cti_slots` entries per table) is enough: NONE here means none that small.
        """
        out = []
        work = [(call, rule, prop) for call, info in self.spec.calls.items()
                for rule in [u.rule for u in info.clauses(S.OnlyIn)] + [r.rule for r in info.clauses(S.Requires)]
                for prop in self.props if prop.id != TYPES and self.touches(prop, call)]
        self.begin("guards", len(work))
        for call, rule, prop in work:
            t0 = time.perf_counter()
            example, ans = self._bounded_search(prop, call, "broken", rule)
            witness = Witness.FOUND if example is not None and example.validated else ans.witness
            if witness is Witness.FOUND and example is None:
                witness = Witness.UNKNOWN
            out.append(Guard(prop.id, call, rule, witness, ans.reason, time.perf_counter() - t0, example))
            self.step()
        return out

    # ---- reachability of refuted invariants
    def reach(self, obligations: Sequence[Obligation]) -> list[BmcResult]:
        refuted = sorted({o.property for o in obligations if o.verdict is not Verdict.PROVED
                          and o.property in {inv.rule for inv in self.spec.invariants}})
        if not refuted or self.options.reach_depth <= 0:
            return []
        return [search_violation(self.spec, self.spec_name, self.options.reach_depth, self.options.solver,
                                 invariants=refuted)]

    # ---- consistency
    def consistency(self) -> tuple[list[Check], int]:
        unrolling = Unrolling(self.spec, self.options.witness_depth, self.options.solver)
        targets = self._targets()
        found = cover(unrolling, self.spec_name, [t for t, _ in targets])
        # second round: fails/unspecified clauses not live with the outcome decided by them
        shadow = [Shadow(t, info) for t, info in targets if info["kind"] in ("fails", "unspecified")
                  and found[t.key].witness is not Witness.FOUND]
        shadow_found = cover(unrolling, self.spec_name, [s.target for s in shadow]) if shadow else {}
        checks: list[Check] = []
        disjoint = 0
        for t, info in targets:
            c = found[t.key]
            if info["kind"] == "overlap":
                check = self._overlap_check(t, info, c)
                if check is None:
                    disjoint += 1
                else:
                    checks.append(check)
                continue
            if info["kind"] == "policy":
                checks.append(self._policy_check(t, info, c))
                continue
            if c.witness is Witness.FOUND:
                checks.append(self._found_check(t, info, c))
                continue
            if info["kind"] in ("fails", "unspecified"):
                sc = shadow_found.get(("shadow", t.key))
                # A search that gave up (UNKNOWN) earns no definite word: "shadowed" needs the first
                # search to have found nothing (NONE) or the unbounded query to show the clause never
                # decides the outcome; "dead" needs the shadow search to have found nothing too.
                if sc is not None and sc.witness is Witness.FOUND and c.witness is not Witness.NONE \
                        and self._unbounded(t, info).witness is not Witness.NONE:
                    checks.append(self._unbounded_check(t, info, c))
                    continue
                if sc is not None and sc.witness is Witness.UNKNOWN:
                    check = self._unbounded_check(t, info, c)
                    if check.status == "dead":
                        check = Check(check.kind, check.subject, check.call, "unknown", False, check.rules,
                                      "it never decides the outcome in a state satisfying the invariants; whether "
                                      f"its condition holds where the outcome is open is unknown (solver: {sc.reason})",
                                      check.seconds)
                    checks.append(check)
                    continue
                if sc is not None and sc.witness is Witness.FOUND:
                    detail = ("the documents are silent only where the caller already broke an obligation"
                              if info["kind"] == "unspecified" else
                              "holds only where the outcome is open anyway (a broken `undefined` obligation "
                              "or an `unspecified` clause)")
                    checks.append(Check("clause", info["rule"], t.call, "shadowed", True, info["rules"], detail,
                                        sc.seconds, self._finish_run(sc.run, info)))
                    continue
            checks.append(self._unbounded_check(t, info, c))
        return checks, disjoint

    def _targets(self) -> list[tuple[Target, dict]]:
        out = []
        spec = self.spec
        for call, info in spec.calls.items():
            clauses = info.decl.clauses
            for c in clauses:
                match c:
                    case S.Fails():
                        out.append(clause_target(call, "fails", c.rule))
                    case S.MayFail() if c.cond is not None:
                        out.append(clause_target(call, "may-fail", c.rule))
                    case S.Unspecified():
                        target, meta = clause_target(call, "unspecified", c.rule)
                        meta["rules"] = (c.rule,) + rules_near(spec, call, c)
                        out.append((target, meta))
                    case S.Requires():
                        out.append(clause_target(call, "requires", c.rule))
                    case S.OnlyIn():
                        out.append(clause_target(call, "usage", c.rule))
            out += [policy_target(call, c.rule) for c in clauses if isinstance(c, S.Fails) and says_must(c)]
            out.append(success_target(call))
            if info.decl.kind == "call":
                out.append(gap_target(spec, call))
            out += overlap_targets(call, clauses)
        for inv in spec.invariants:
            out.append(vacuity_target(inv))
        return out

    def _finish_run(self, run: Run | None, info: dict) -> Run | None:
        """Give the final call the status the check is about."""
        if run is None or not run.steps or info.get("call") is None:
            return run
        last = run.steps[-1]
        if self.spec.calls[last.call].decl.kind != "call":
            return run
        sem = semantics_for(self.spec, run.env)
        st = sem.initial_state()
        for s in run.steps[:-1]:
            sem.apply(st, s.call, s.inputs, s.outputs)
        al = sem.allowed(st, last.call, last.inputs)
        status = status_for(self.spec, al, info)
        return Run(run.spec, run.env, run.steps[:-1] + (Step(last.call, last.inputs, last.outputs, status),))

    def _found_check(self, t: Target, info: dict, c: Covered) -> Check:
        kind = info["kind"]
        run = self._finish_run(c.run, info)
        if kind == "success":
            return Check("call", t.call, t.call, "reachable", True, (), "succeeds after the witness run", c.seconds, run)
        if kind == "vacuity":
            return Check("invariant", info["rule"], None, "non-vacuous", True, (info["rule"],),
                         "its antecedent holds in a reachable state", c.seconds, run)
        if kind == "gap":
            return Check("gap", t.call, t.call, "silent", True, info["around"],
                         "succeeds and no effect statement applies: check that the documents say so", c.seconds, run)
        return Check("clause", info["rule"], t.call, "live", True, info["rules"], _LIVE[kind], c.seconds, run)

    def _overlap_check(self, t: Target, info: dict, c: Covered) -> Check | None:
        a, b = info["rules"]
        if c.witness is Witness.FOUND:
            run = self._finish_run(c.run, info)
            return Check("overlap", f"{a} + {b}", t.call, "overlap", True, (a, b), self._outcomes(run), c.seconds, run)
        ans = self._unbounded(t, info)
        if ans.witness is Witness.NONE:
            return None
        status = "possible" if ans.witness is Witness.FOUND else "unknown"
        return Check("overlap", f"{a} + {b}", t.call, status, True, (a, b),
                     f"both can hold in a state satisfying the invariants, {self._searched(c)}" if status == "possible"
                     else f"solver: {ans.reason}", c.seconds + ans.seconds)

    def _searched(self, c: Covered) -> str:
        """What the bounded witness search said, for an item it did not show: none within the depth, or
        it gave up (a timeout is never reported as a definite absence)."""
        return (f"no run of {self.options.witness_depth} steps shows it" if c.witness is Witness.NONE else
                f"the search for a run gave up (solver: {c.reason or 'unknown'})")

    def _policy_check(self, t: Target, info: dict, c: Covered) -> Check:
        rule = info["rule"]
        if c.witness is Witness.FOUND:
            return Check("policy", rule, t.call, "unguarded", False, (rule,),
                         "its citation says the caller must, but a call that keeps every obligation reaches it: "
                         "encode the \"must\" as a `requires` (docs/language.md, obligations and documented errors)",
                         c.seconds, self._finish_run(c.run, info))
        ans = self._unbounded(t, info)
        seconds = c.seconds + ans.seconds
        if ans.witness is Witness.NONE:
            return Check("policy", rule, t.call, "guarded", True, (rule,), "every state where it holds breaks an obligation",
                         seconds)
        if ans.witness is Witness.FOUND:
            return Check("policy", rule, t.call, "possible", False, (rule,),
                         "its citation says the caller must, and in a state the invariants allow a call that keeps "
                         f"every obligation reaches it ({self._searched(c)})", seconds)
        return Check("policy", rule, t.call, "unknown", False, (rule,), f"solver: {ans.reason or c.reason}", seconds)

    def _outcomes(self, run: Run | None) -> str:
        if run is None or not run.steps:
            return ""
        sem = semantics_for(self.spec, run.env)
        st = sem.initial_state()
        for s in run.steps[:-1]:
            sem.apply(st, s.call, s.inputs, s.outputs)
        last = run.steps[-1]
        al = sem.allowed(st, last.call, last.inputs)
        broken = f"broken obligations {', '.join(al.broken)}; " if al.broken else ""
        return f"{broken}outcomes: {describe_outcomes(al, self.spec.success)}"

    def _unbounded(self, t: Target, info: dict) -> Answer:
        """Does the target hold in some state satisfying the invariants (no bound on entries)?"""
        enc = self.enc
        if t.call is None:
            formula = t.formula(enc, {}, None, self.pre)
            return Session(self.options.solver, self.hypotheses).find(formula)
        env, bounds = enc.fresh_io(t.call, f"unb.{t.call}.")
        cc = enc.conditions(t.call, self.pre, env)
        return Session(self.options.solver, self.hypotheses + bounds).find(t.formula(enc, env, cc, self.pre))

    def _unbounded_check(self, t: Target, info: dict, c: Covered) -> Check:
        kind = info["kind"]
        ans = self._unbounded(t, info)
        seconds = c.seconds + ans.seconds
        depth = self.options.witness_depth
        subject = info.get("rule") or t.call
        ck = {"success": "call", "vacuity": "invariant", "gap": "gap"}.get(kind, "clause")
        if ans.witness is Witness.NONE:
            if kind == "gap":
                return Check("gap", t.call, t.call, "none", True, info["around"], "no silent success", seconds)
            status = {"success": "never", "vacuity": "vacuous"}.get(kind, "dead")
            detail = {"never": "no state satisfying the invariants lets the call succeed",
                      "vacuous": "its antecedent never holds in a state satisfying the invariants"}.get(
                status, "its condition never holds in a state satisfying the invariants")
            return Check(ck, subject, t.call, status, False, info.get("rules", ()), detail, seconds)
        if ans.witness is Witness.FOUND and c.witness is Witness.UNKNOWN and kind != "gap":
            # It can hold; whether a run shows it is unknown (the bounded search gave up): never "unreached".
            return Check(ck, subject, t.call, "unknown", False, info.get("rules", ()),
                         f"holds in a state satisfying the invariants; the search for a run of {depth} steps gave "
                         f"up (solver: {c.reason or 'unknown'})", seconds)
        if ans.witness is Witness.FOUND:
            status = "possible" if kind == "gap" else "unreached"
            return Check(ck, subject, t.call, status, kind == "gap", info.get("rules", ()),
                         f"holds in a state satisfying the invariants, but no run of {depth} steps shows it "
                         f"(raise --witness-depth)", seconds)
        return Check(ck, subject, t.call, "unknown", False, info.get("rules", ()), f"solver: {ans.reason or c.reason}",
                     seconds)


_LIVE = {
    "fails": "decides the outcome in a reachable state",
    "may-fail": "its condition holds in a reachable state",
    "unspecified": "holds in a reachable state where the caller keeps its obligations",
    "requires": "a caller can break it in a reachable state",
    "usage": "a caller can break it in a reachable state",
}


class _ExampleCheck:
    """Is a concrete pre-state a counterexample (invariants hold, the branch is taken, prop fails after)?"""

    def __init__(self, prover: "_Prover", sem: Semantics, prop: Property, call: str, inputs: Mapping,
                 outputs: Mapping, branch: str, broken_rule: str | None):
        self.prover, self.sem, self.prop, self.call = prover, sem, prop, call
        self.inputs, self.outputs, self.branch, self.broken_rule = inputs, outputs, branch, broken_rule

    def __call__(self, pre: State) -> bool:
        sem = self.sem
        try:
            if failing_properties(sem, pre) or not well_typed(sem.spec, pre):
                return False
            al = sem.allowed(pre, self.call, self.inputs)
            if not branch_holds(al, self.branch, self.broken_rule):
                return False
            if sem.ensures_broken(pre, self.call, self.inputs, self.outputs):
                return False
            post = sem.successor(pre, self.call, self.inputs, self.outputs)
            return not self.prop.concrete(sem, pre, self.call, post)
        except Exception:  # an evaluation error: not a counterexample
            return False

    def shrink(self, pre: State) -> State:
        """Drop table entries one at a time while the state stays a counterexample."""
        changed = True
        while changed:
            changed = False
            for name, table in pre.tables.items():
                for key in list(table.rows):
                    trial = pre.copy()
                    trial.tables[name].remove(key)
                    if self(trial):
                        pre, changed = trial, True
                        break
                if changed:
                    break
        return pre


# ---------------------------------------------------------------- entry point


def prove(spec: CheckedSpec, spec_name: str, options: ProveOptions = ProveOptions(),
          progress: Progress | None = None) -> ProofReport:
    """All obligations, guards and (optionally) consistency checks of one spec.

    `progress(phase, done, planned)`, if given, is called as each phase begins (done = 0) and after
    each step: one per obligation ("induction"), one per guard ("guards"), one for each bounded
    search ("reach", "consistency")."""
    t0 = time.perf_counter()
    prover = _Prover(spec, spec_name, options, progress)
    phases = {}
    obligations = prover.induction()
    phases["induction"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    guards = prover.guards() if options.guards else []
    phases["guards"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    prover.begin("reach", 1)
    reach = prover.reach(obligations)
    prover.step()
    phases["reach"] = time.perf_counter() - t1
    checks, disjoint = [], 0
    if options.consistency:
        t1 = time.perf_counter()
        prover.begin("consistency", 1)
        checks, disjoint = prover.consistency()
        prover.step()
        phases["consistency"] = time.perf_counter() - t1
    return ProofReport(spec_name, spec.name, tuple(obligations), tuple(guards), tuple(reach), tuple(checks), disjoint,
                       options, time.perf_counter() - t0, phases)
