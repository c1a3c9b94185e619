"""The consistency checks' targets: for every clause a state where it decides the outcome, obligations
behind documented musts, gaps where no clause says what happens, overlapping clauses and vacuous
invariants."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..language import syntax as S
from ..language.checked import CheckedSpec
from ..model.outcomes import Allowed
from ..symbolic.terms import conj, disj, neg
from .bmc import Target
from .runs import a_status


# ---------------------------------------------------------------- branch conditions


def branch_condition(cc, branch: str, broken_rule: str | None):
    if branch == "success":
        return cc.success_documented
    if branch == "unspecified":
        return cc.success_unspecified
    # "broken": only broken_rule is broken; the call still succeeds (anything may happen when the
    # obligation is `undefined`; otherwise the documented errors still apply)
    conds = []
    undefined = True
    for rule, cond in cc.usage:
        conds.append(neg(cond) if rule == broken_rule else cond)
        if rule == broken_rule:
            undefined = False
    for rule, is_undefined, cond in cc.requires:
        conds.append(neg(cond) if rule == broken_rule else cond)
        if rule == broken_rule:
            undefined = is_undefined
    if not undefined:
        conds.append(disj(neg(cc.any_error), cc.any_unspecified))
    return conj(conds)


def branch_holds(al: Allowed, branch: str, broken_rule: str | None) -> bool:
    if branch == "success":
        return not al.broken and al.success and not al.unspecified
    if branch == "unspecified":
        return not al.broken and bool(al.unspecified)
    return al.broken == (broken_rule,) and (al.open or al.success)


def status_for(spec: CheckedSpec, al: Allowed, info: dict):
    """A status the final call may return that shows what the check is about."""
    kind = info["kind"]
    if kind in ("fails", "may-fail"):
        for e in al.errors + al.env_errors:
            if e.rule == info["rule"]:
                return a_status(spec, e)
    if kind == "overlap" and not al.open:
        for e in al.errors:
            if e.rule in info["rules"]:
                return a_status(spec, e)
    if al.open or al.success or not al.errors:
        return spec.success
    return a_status(spec, al.errors[0])


# ---------------------------------------------------------------- consistency targets


def _clause_cond(cc, kind: str, rule: str):
    if kind == "fails":
        return next(c for r, _, c in cc.errors if r == rule)
    if kind == "may-fail":
        return next(c for r, _, c in cc.env_errors if r == rule)
    if kind == "unspecified":
        return next(c for r, c in cc.unspecified if r == rule)
    if kind == "requires":
        return neg(next(c for r, _, c in cc.requires if r == rule))
    return neg(next(c for r, c in cc.usage if r == rule))


def _open(cc):
    undefined = [neg(c) for _, u, c in cc.requires if u]
    return disj(undefined + [cc.any_unspecified])


def _clause_holds(al: Allowed, kind: str, rule: str) -> bool:
    if kind == "fails":
        return rule in [e.rule for e in al.errors]
    if kind == "may-fail":
        return rule in [e.rule for e in al.env_errors]
    if kind == "unspecified":
        return rule in al.unspecified
    return rule in al.broken


def clause_target(call: str, kind: str, rule: str) -> tuple[Target, dict]:
    def formula(enc, env, cc, st):
        c = _clause_cond(cc, kind, rule)
        if kind == "fails":
            return conj(c, neg(_open(cc)))
        if kind == "unspecified":
            return conj(c, cc.kept)
        return c

    def holds(sem, st, step):
        al = sem.allowed(st, step.call, step.inputs)
        if not _clause_holds(al, kind, rule):
            return False
        if kind == "fails":
            return not al.open
        if kind == "unspecified":
            return not al.broken
        return True
    return Target(("clause", rule), call, formula, holds), {"kind": kind, "rule": rule, "rules": (rule,), "call": call}


@dataclass(frozen=True, slots=True)
class Shadow:
    """The second round for a clause: its condition alone (the outcome may be open)."""

    original: Target
    info: dict

    @property
    def target(self) -> Target:
        kind, rule = self.info["kind"], self.info["rule"]
        return Target(("shadow", self.original.key), self.original.call,
                      lambda enc, env, cc, st: _clause_cond(cc, kind, rule),
                      lambda sem, st, step: _clause_holds(sem.allowed(st, step.call, step.inputs), kind, rule))


# Citations that word a caller obligation: such a clause's condition must break a `requires`.
_MUST = re.compile(r"\b(must|should only)\b", re.IGNORECASE)


def says_must(c: S.Fails) -> bool:
    return c.cite is not None and _MUST.search(c.cite.clause) is not None


def policy_target(call: str, rule: str) -> tuple[Target, dict]:
    """The `fails` clause holds while every obligation of the call is kept."""
    def formula(enc, env, cc, st):
        kept = [c for _, c in cc.usage] + [c for _, _, c in cc.requires]
        return conj([_clause_cond(cc, "fails", rule)] + kept)

    def holds(sem, st, step):
        al = sem.allowed(st, step.call, step.inputs)
        return _clause_holds(al, "fails", rule) and not al.broken
    return Target(("policy", rule), call, formula, holds), {"kind": "policy", "rule": rule, "rules": (rule,), "call": call}


def success_target(call: str) -> tuple[Target, dict]:
    def holds(sem, st, step):
        al = sem.allowed(st, step.call, step.inputs)
        return (not al.broken and al.success and not al.open
                and not sem.ensures_broken(st, step.call, step.inputs, step.outputs))
    return (Target(("success", call), call, lambda enc, env, cc, st: conj(cc.success_documented, cc.ensured), holds),
            {"kind": "success", "call": call})


def gap_target(spec: CheckedSpec, call: str) -> tuple[Target, dict]:
    def formula(enc, env, cc, st):
        return conj(cc.success_documented, cc.ensured, enc.effect_idle(call, st, env))

    def holds(sem, st, step):
        al = sem.allowed(st, step.call, step.inputs)
        if al.broken or not al.success or al.open or sem.ensures_broken(st, step.call, step.inputs, step.outputs):
            return False
        return sem.successor(st, step.call, step.inputs, step.outputs) == st
    return Target(("gap", call), call, formula, holds), {"kind": "gap", "call": call, "around": _around(spec, call)}


def _around(spec: CheckedSpec, call: str) -> tuple[str, ...]:
    """The rules next to a silent success: the effect rule, and clauses reading what its `if`s read."""
    info = spec.calls[call]
    effects = info.clauses(S.Effect)
    names: set[str] = set()
    if effects:
        for node in _stmts_conds(effects[0].body):
            names |= _names(spec, node)
    rules = [effects[0].rule] if effects else []
    for c in info.decl.clauses:
        if isinstance(c, (S.Fails, S.Unspecified, S.Requires)) and _names(spec, c.cond) & names:
            rules.append(c.rule)
    return tuple(rules)


def rules_near(spec: CheckedSpec, call: str, clause) -> tuple[str, ...]:
    """The other clauses of the call that read what an `unspecified` clause reads."""
    names = {b.name for b in spec.reads(clause.cond) if b.kind not in ("enum", "const")}
    info = spec.calls[call]
    return tuple(c.rule for c in info.decl.clauses if c is not clause
                 and isinstance(c, (S.Fails, S.Unspecified, S.Requires)) and _names(spec, c.cond) & names)


def _stmts_conds(body):
    for s in body:
        if isinstance(s, S.If):
            yield s.cond
            yield from _stmts_conds(s.then)
            yield from _stmts_conds(s.orelse)


def _names(spec: CheckedSpec, e) -> set[str]:
    """Every name e mentions, tables included (what two clauses must share to be "around" each other)."""
    return {b.name for b in spec.reads(e)}


def overlap_targets(call: str, clauses) -> list[tuple[Target, dict]]:
    """Pairs of clauses whose conditions hold together while nothing else opens the outcome:
    two errors (both outcomes allowed), an error and a broken (not `undefined`) obligation (the
    caller's bug and a documented error), an error and an `unspecified` clause (the documents give
    an error and are silent at once)."""
    errors = [("fails", c.rule) for c in clauses if isinstance(c, S.Fails)]
    others = [("requires", c.rule) for c in clauses if isinstance(c, S.Requires) and not c.undefined] + \
             [("unspecified", c.rule) for c in clauses if isinstance(c, S.Unspecified)]
    pairs = [(a, b) for i, a in enumerate(errors) for b in errors[i + 1:]] + [(a, b) for a in errors for b in others]
    out = []
    for (ka, ra), (kb, rb) in pairs:
        def formula(enc, env, cc, st, ka=ka, ra=ra, kb=kb, rb=rb):
            rest = [c for r, c in cc.usage] + [c for r, _, c in cc.requires if r != rb]
            rest += [neg(c) for r, c in cc.unspecified if r != rb]
            return conj([_clause_cond(cc, ka, ra), _clause_cond(cc, kb, rb)] + rest)

        def holds(sem, st, step, ka=ka, ra=ra, kb=kb, rb=rb):
            al = sem.allowed(st, step.call, step.inputs)
            if not (_clause_holds(al, ka, ra) and _clause_holds(al, kb, rb)):
                return False
            return set(al.broken) <= {rb} and set(al.unspecified) <= {rb}
        out.append((Target(("overlap", call, ra, rb), call, formula, holds),
                    {"kind": "overlap", "rules": (ra, rb), "call": call}))
    return out


def vacuity_target(inv: S.InvariantDecl) -> tuple[Target, dict]:
    witness = _antecedent(inv.expr)

    def holds(sem, st, step):
        return bool(sem.eval(witness, st))
    target = Target(("vacuity", inv.rule), None, lambda enc, env, cc, st: enc.expr(witness, st, {}), holds)
    return target, {"kind": "vacuity", "rule": inv.rule, "rules": (inv.rule,)}


def _antecedent(e: S.Expr) -> S.Expr:
    """What must hold for the invariant to say something: its quantified entries exist and its
    implication's premise holds (`forall a in T: A implies B` -> `exists a in T: A`)."""
    match e:
        case S.Quant(kind="forall", var=v, table=t, body=b):
            return S.Quant("exists", v, t, _antecedent(b), e.span)
        case S.Binary(op="implies", left=a, right=b):
            rest = _antecedent(b)
            return a if isinstance(rest, S.BoolLit) else S.Binary("and", a, rest, e.span)
        case S.Binary(op="and", left=a, right=b):
            ra, rb = _antecedent(a), _antecedent(b)
            if isinstance(ra, S.BoolLit):
                return rb
            if isinstance(rb, S.BoolLit):
                return ra
            return S.Binary("and", ra, rb, e.span)
    return S.BoolLit(True, e.span)
