"""What each call reads and writes (its facts) and the coverage report: for every rule of the spec, which
of its branches the suite tests, and why the rest are not tested."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..language import syntax as S
from ..language.analysis import computed_from, conjuncts, negated, nodes, reads_and_writes
from ..language.checked import CheckedSpec, Type
from .model import (ALLOWED, ENVIRONMENT, MODEL, NOT_REACHED, NOT_TESTABLE, TESTED, TRANSITION, ConformanceTest,
                    OriginCoverage, RuleCoverage, TransitionCoverage, live_entry_label)


# ---------------------------------------------------------------- what each call reads


@dataclass(frozen=True, slots=True)
class CallFacts:
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
    writes: frozenset[str] = frozenset()  # vars and tables its effect writes

    def branch_reads(self, rule: str, branch: str) -> frozenset[str]:
        """What decides that `rule` shows `branch`: success depends on every condition of the call."""
        return self.all_reads if branch == "success" else self.reads.get(rule, frozenset())


def is_addr(t: Type | None) -> bool:
    return t is not None and t.kind == "int" and t.name == "addr"


def _range_size_param(spec: CheckedSpec, size: S.Expr, is_api: bool) -> str | None:
    """The argument a range's size is: a name, or for an environment event a size computed from one
    argument and constants alone (munmap's length rounded up to whole pages), so that the pool asks
    the event for whole pages (a prefix's unmap of a mapping's front page). An API call's computed
    size is left to the pool's plain values: its tests aim sizes at boundaries byte by byte."""
    if isinstance(size, S.Name):
        return size.name
    return None if is_api else computed_from(spec, size)


def facts_of(spec: CheckedSpec, info) -> CallFacts:
    reads: dict[str, frozenset[str]] = {}
    kinds: dict[str, str] = {}
    ranges: dict[str, str] = {}
    params = dict(info.params)
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
            for node in nodes(cond):
                if isinstance(node, S.Builtin) and node.func == "range" and isinstance(node.args[0], S.Name):
                    p, s = node.args[0].name, _range_size_param(spec, node.args[1], info.decl.kind == "call")
                    # only an address's range: the argument pool draws a size with its address
                    # (a range over another integer leaves both to the pool's plain values)
                    if is_addr(params.get(p)) and s in params:
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
    _, writes = reads_and_writes(spec)
    written = frozenset(item[1] for item in writes(info.name))
    return CallFacts(info.name, info.decl.kind == "call", info.params, ranges, reads, all_reads, kinds,
                  frozenset(cond_may), effect, tuple(ensures), thread, written)


def outcome_branches(kind: str, conditional: bool, facts: CallFacts, rule: str) -> tuple[str, ...]:
    """The outcome branches of a rule a test can show (the coverage items the generator aims at)."""
    if kind == "fails":
        return ("fails",)
    if kind == "may-fail":
        return ("allowed", "excluded") if conditional else ("allowed",)
    if kind == "effect":
        return ("success",)
    if kind == "usage" and rule != facts.thread_rule or kind == "requires":
        return ("broken, outcome determinate",)
    return ()


def transition_pairs(facts: Mapping[str, CallFacts]) -> tuple[TransitionCoverage, ...]:
    """Every (earlier call W succeeding, or failing with a documented error, branch of a later call C)
    where W's effect writes state the branch reads: the history-dependent cases a suite of
    single-state tests can miss. After a failure the state must be as before (a rejected call
    changes nothing), which is what a driver that half-applies a rejected call gets wrong."""
    out = []
    for writer in facts.values():
        if not writer.is_api or writer.effect_rule is None or not writer.writes:
            continue
        outcomes = ("success", "failure") if "fails" in writer.kinds.values() else ("success",)
        for outcome in outcomes:
            for call in facts.values():
                if not call.is_api:
                    continue
                for rule, kind in call.kinds.items():
                    for branch in outcome_branches(kind, rule in call.conditional_may, call, rule):
                        if call.branch_reads(rule, branch) & writer.writes:
                            out.append(TransitionCoverage(writer.name, writer.effect_rule, outcome, call.name, rule,
                                                          branch))
    return tuple(out)


def transition_report(pairs: Sequence[TransitionCoverage], tests: Sequence[ConformanceTest],
                      why: Callable[[TransitionCoverage], str] = lambda p: "") -> tuple[TransitionCoverage, ...]:
    """The pairs with the tests that show each; `why(pair)` says why for a pair none shows."""
    shown: dict[str, list[str]] = {}
    for t in tests:
        for item in t.covers:
            shown.setdefault(item, []).append(t.name)
    out = []
    for p in pairs:
        names = tuple(shown.get(f"{p.rule}: {p.label}", ()))
        out.append(TransitionCoverage(p.writer, p.writer_rule, p.writer_outcome, p.call, p.rule, p.branch, names,
                                      "" if names else why(p)))
    return tuple(out)


def entry_origins(spec: CheckedSpec) -> dict[str, tuple[str, ...]]:
    """table -> the calls whose effect can insert an entry into it (in the spec's order): the origins
    an allocation's promise about the table's live entries is judged with, one live at a time."""
    out: dict[str, list[str]] = {t: [] for t in spec.tables}
    for name, info in spec.calls.items():
        for table in dict.fromkeys(st.table for st in S.effect_statements(info.decl) if isinstance(st, S.Insert)):
            out[table].append(name)
    return {t: tuple(calls) for t, calls in out.items()}


def origin_report(promises: Mapping[str, Sequence[tuple[str, str]]], tests: Sequence[ConformanceTest],
                  why: Callable[[str, str, str], str] = lambda rule, table, origin: "") -> dict[str, tuple]:
    """rule -> an `OriginCoverage` for each (table, origin) of `promises[rule]`: the tests judging the
    promise with such an entry live; `why(rule, table, origin)` says why for one that none judges."""
    shown: dict[str, list[str]] = {}
    for t in tests:
        for item in t.covers:
            shown.setdefault(item, []).append(t.name)
    out: dict[str, list[OriginCoverage]] = {}
    for rule, pairs in promises.items():
        for table, origin in pairs:
            names = tuple(shown.get(f"{rule}: {live_entry_label(table, origin)}", ()))
            out.setdefault(rule, []).append(OriginCoverage(table, origin, names,
                                                           "" if names else why(rule, table, origin)))
    return {rule: tuple(items) for rule, items in out.items()}


def _reads(spec: CheckedSpec, e: S.Expr) -> set[str]:
    """Names an expression reads (params, vars, tables), with `def`s expanded."""
    return {b.name for b in spec.reads(e, defs=True)}


# ---------------------------------------------------------------- what a state's fields can decide


FULL = "full"  # a field whose whole value may decide an outcome


def field_classes(spec: CheckedSpec) -> dict[tuple[str, str], object]:
    """(table, field) -> how much of the field's value a condition, effect, invariant or `pinned`
    declaration can see: `None` when none reads it, a bit mask when every read of a flags field
    only tests those bits (`M in r.flags`, `r.flags & M`) or compares it with 0, `FULL` otherwise.
    What an `ensures` reads is left out: it constrains the outputs a driver returns, never the
    outcome a test expects (the generator picks outputs that keep it in each state).

    Two states whose entries agree on these classes allow the same outcomes to every call sequence,
    so the generator's search keeps one of them (`StateKey`); only the entry classes written in
    boundary-case labels, and the outputs recorded, can tell them apart."""
    out: dict[tuple[str, str], object] = {(t, f): None for t, info in spec.tables.items() for f, _ in info.fields}
    for parent in _nodes_outside_ensures(spec.ast):
        for child in _children(parent):
            key = _entry_field(spec, child)
            if key is None:
                continue
            seen = _bits_seen(spec, parent, child) if spec.tables[key[0]].field_type(key[1]).kind == "flags" else FULL
            old = out[key]
            out[key] = FULL if FULL in (old, seen) else (old or 0) | seen
    for t, info in spec.tables.items():
        if info.sized_by is not None:
            out[(t, info.sized_by)] = FULL  # the extent of an entry places the search's addresses
    return out


def _nodes_outside_ensures(tree):
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, S.Ensures):
            continue
        yield x
        stack.extend(c for c in _children(x) if hasattr(c, "__dataclass_fields__"))


def _children(node) -> list:
    out = []
    for name in getattr(node, "__dataclass_fields__", ()):
        if name == "span":
            continue
        child = getattr(node, name)
        for c in (child if isinstance(child, tuple) else (child,)):
            if isinstance(c, tuple):  # (name, expr) pairs of an insert
                out.extend(c)
            else:
                out.append(c)
    return out


def _entry_field(spec: CheckedSpec, e) -> tuple[str, str] | None:
    if not isinstance(e, S.Field) or e.name == "key":
        return None
    t = spec.types.get(id(e.obj))
    if t is None or t.kind != "entry":
        return None
    return (t.name, spec.tables[t.name].sized_by if e.name == "range" else e.name)


def _bits_seen(spec: CheckedSpec, parent, field: S.Field):
    """The bits of a flags field a read sees: the tested bits of `M in f` and `f & M`, 0 for `f == 0`
    and `f != 0` (zero-ness is always part of the class), `FULL` for any other use."""
    if isinstance(parent, S.Binary):
        other = parent.left if parent.right is field else parent.right
        value = _constant(spec, other)
        if value is not None:
            if parent.op == "in" and parent.right is field or parent.op == "&":
                return value
            if parent.op in ("==", "!=") and value == 0:
                return 0
    return FULL


def _constant(spec: CheckedSpec, e) -> int | None:
    if isinstance(e, S.IntLit):
        return e.value
    if isinstance(e, S.Name):
        b = spec.binding(e)
        if b.kind == "flag":
            return spec.flag_member[b.name][1]
        if b.kind == "const" and type(spec.consts[b.name][1]) is int:
            return spec.consts[b.name][1]
        return None
    if isinstance(e, S.Binary) and e.op == "|":
        a, b = _constant(spec, e.left), _constant(spec, e.right)
        return None if a is None or b is None else a | b
    return None


class StateKey:
    """What a state can decide, as a hashable value: its snapshot with each field reduced to its
    class (`field_classes`): unread fields left out, flags fields cut to the bits read."""

    def __init__(self, spec: CheckedSpec):
        classes = field_classes(spec)
        self.plan = {t: tuple((f, classes[(t, f)]) for f, _ in info.fields if classes[(t, f)] is not None)
                     for t, info in spec.tables.items()}
        self.exact = all(c is FULL for c in classes.values())

    def __call__(self, st) -> tuple:
        if self.exact:
            return st.snapshot()
        tables = []
        for name, tbl in sorted(st.tables.items()):
            plan = self.plan[name]
            rows = sorted((k, tuple(rec[f] if c is FULL else (rec[f] & c, rec[f] == 0) for f, c in plan))
                          for k, rec in tbl.rows.items())
            tables.append((name, tuple(rows)))
        return tuple(sorted(st.vars.items())), tuple(tables)


# ---------------------------------------------------------------- the coverage report


def coverage_report(spec: CheckedSpec, facts: Mapping[str, CallFacts], tests: Sequence[ConformanceTest],
              missing: Mapping, open_seen: Mapping[str, int],
              origins: Mapping[str, tuple[OriginCoverage, ...]] = {}) -> tuple[RuleCoverage, ...]:
    """Each rule's status, note and the tests of each branch; `origins` (from `origin_report`), per
    promise about live entries, the origins of those entries and the tests judging it with each."""
    by_rule: dict[str, dict[str, list[str]]] = {}
    boundaries: dict[str, int] = {}
    for t in tests:
        for item in t.covers:
            rule, _, label = item.partition(": ")
            if label.startswith(TRANSITION + ": "):
                continue  # reported per pair by `transition_report`
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
    silent = silent_when_broken(spec)
    for rule, info in spec.rules.items():
        branches = tuple((b, tuple(ts)) for b, ts in sorted(by_rule.get(rule, {}).items()))
        call_facts = facts.get(info.call) if info.call else None
        if rule in silent and not branches:
            out.append(RuleCoverage(rule, info.kind, info.call, NOT_TESTABLE,
                                    f"breaking it makes {silent[rule]} (unspecified) hold too: any outcome is then "
                                    "allowed, so no test can fail", (), boundaries.get(rule, 0), origins.get(rule, ())))
            continue
        status, note = _status_of(info, call_facts, branches, missing, open_seen)
        if status == ENVIRONMENT:
            note += f" ({using.get(info.call, 0)} tests use {info.call})"
            if boundaries.get(rule):  # an environment allocation's promise judged with live entries
                note += f"; {boundaries[rule]} boundary cases"
        out.append(RuleCoverage(rule, info.kind, info.call, status, note, branches, boundaries.get(rule, 0),
                                origins.get(rule, ())))
    return tuple(out)


def silent_when_broken(spec: CheckedSpec) -> dict[str, str]:
    """`requires` rules whose breaking makes an `unspecified` clause of the same call hold, in every
    state and configuration (each conjunct of that clause's condition is one of the broken
    condition's): rule -> the unspecified rule. Their broken branch is never determinate."""
    out: dict[str, str] = {}
    for info in spec.calls.values():
        silences = [(c.rule, _conjunct_set(c.cond)) for c in info.clauses(S.Unspecified)]
        for req in info.clauses(S.Requires):
            broken = _conjunct_set(negated(req.cond))
            hit = next((rule for rule, conds in silences if conds <= broken), None)
            if hit is not None and not req.undefined:
                out[req.rule] = hit
    return out


def _conjunct_set(e: S.Expr) -> frozenset:
    """The conjuncts of e, `not (a == b)` written `a != b` (and the other way round), so that the
    same condition spelt either way compares equal (nodes compare without their spans)."""
    return frozenset(_plain(c) for c in conjuncts(e))


def _plain(e: S.Expr) -> S.Expr:
    if isinstance(e, S.Unary) and e.op == "not" and isinstance(e.operand, S.Binary) and e.operand.op in ("==", "!="):
        b = e.operand
        return S.Binary("!=" if b.op == "==" else "==", b.left, b.right, b.span)
    return e


def _status_of(info, facts: CallFacts | None, branches, missing, open_seen) -> tuple[str, str]:
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
