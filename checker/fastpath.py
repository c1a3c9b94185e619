"""The replayer's fast path: one generated function per call that takes a decoded trace line,
checks it and applies it, for the events that need no explanation.

Why: most events of a long trace are plain, conforming calls. The general path builds a TraceEvent,
normalises its arguments into a dict, computes the mask, looks up the outcome set and applies the
effect through several calls; that costs several times the parsing of the line. Here each call gets
one straight-line function doing the same steps on local variables.

It is not a second semantics. The clause tests come from `Semantics.mask_tests` and the effect from
the same emitter and statements as `checker.semantics`; outcome sets come from
`Semantics.allowed_for_mask`. The line checks accept a strict subset of what `checker.trace` and the
replayer's normalisation accept (JSON integers within the parameter's range, booleans, enum names;
no hex strings, flag-name lists, `expect`, unknown fields or nulls).

It is conservative: a step returns False, having changed nothing, whenever the line is not in that
shape, the call has a thread-safety rule (the replayer keeps a window of calls for it), any clause
test fails to evaluate, a rule is broken, the documents are silent, or the recorded result is not
allowed. The replayer then takes the general path for that line, which checks and explains it from
the same state. tests/test_fastpath.py replays random and corpus traces both ways and compares
reports and states.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from . import syntax as S
from .semantics import _RUNTIME, EvalError, Semantics, State, _Emitter
from .trace import NUMERIC_START
from .typecheck import Type, value_bounds

Step = Callable[[dict, int], bool]  # step(decoded line, line number) -> handled
VERDICT_CACHE_LIMIT = 4096  # (mask, status) pairs remembered per call; memory must not grow with a trace

_factories: "weakref.WeakKeyDictionary[Semantics, dict[str, Callable]]" = weakref.WeakKeyDictionary()


def fast_steps(sem: Semantics, st: State, remember: Callable[[int, str], None]) -> dict[str, Step]:
    """The step functions of the calls that have one, bound to a replay's state.

    `remember(line, call)` is called after a success effect that changed a table or variable (the
    changes are in `st.journal`), as the replayer does on its general path."""
    factories = _factories.get(sem)
    if factories is None:
        factories = _factories[sem] = _compile(sem)
    return {call: make(st, remember, {}, {}, _decider(sem, call)) for call, make in factories.items()}


def _decider(sem: Semantics, call: str) -> Callable[[dict, Any, int, Any], bool]:
    """decide(cache, key, mask, status): whether an event with this mask and recorded status has
    no finding (given that its ensures hold, which the step checks itself); remembered in
    cache[key] while the cache is small."""
    success = sem.success

    def decide(cache: dict, key, m: int, status) -> bool:
        allowed = sem.allowed_for_mask(call, m)
        if allowed.broken or allowed.unspecified:
            ok = False
        elif status == success:
            ok = allowed.success
        else:
            ok = allowed.allows_status(status, success)
        if len(cache) < VERDICT_CACHE_LIMIT:
            cache[key] = ok
        return ok

    return decide


def _compile(sem: Semantics) -> dict[str, Callable]:
    em = _Emitter(sem.spec, sem.config)
    em.bound_tables = {t: (f"TB{k}", f"TR{k}") for k, t in enumerate(sem.spec.tables)}
    lines: list[str] = []
    names: dict[str, str] = {}
    for i, (call, cc) in enumerate(sem.calls.items()):
        code = _step_source(sem, em, call, f"make{i}")
        if code is not None:
            lines += code
            names[call] = f"make{i}"
    if not names:
        return {}
    ns = dict(_RUNTIME)
    ns["EvalError"] = EvalError
    ns["K"] = tuple(em.consts)
    exec(compile("\n".join(lines), f"<regcheck fast path of {sem.spec.name}>", "exec"), ns)  # generated from the AST
    return {call: ns[name] for call, name in names.items()}


def _value_check(em: _Emitter, var: str, t: Type) -> str | None:
    """A Python test that is true when `var` (a JSON value, None when absent) is NOT taken as it is."""
    if t.kind in ("int", "flags"):  # the values coerce_value takes as they are
        bounds = value_bounds(t)
        if bounds is None:
            return f"type({var}) is not int"
        return f"type({var}) is not int or not {bounds[0]} <= {var} <= {bounds[1]}"
    if t.kind == "bool":
        return f"type({var}) is not bool"
    if t.kind == "enum":
        members = frozenset(em.spec.enums[t.name])
        if any(m[:1] in NUMERIC_START for m in members):
            return None
        return f"type({var}) is not str or {var} not in {em.k(members)}"
    return None  # versions and the rest: always the general path


def _step_source(sem: Semantics, em: _Emitter, call: str, name: str) -> list[str] | None:
    """`def name(st, remember, OKS, OKF, decide)` returning the step of `call`, or None when the
    call has no fast path (a thread-safety rule, or a parameter type the fast path does not read).
    OKS caches the verdicts of successes by mask, OKF those of failures by (mask, status)."""
    cc = sem.calls[call]
    info = cc.info
    if cc.thread_rule is not None:
        return None
    params = [n for n, _ in info.params]
    outputs = [n for n, _ in info.outputs]
    is_event = info.decl.kind == "event"
    status_int = sem.spec.status_type.kind == "int"
    success = em._literal(sem.success)
    i1, i2, i3 = "        ", "            ", "                "
    # Required fields are read by subscript (cheaper than .get here); a missing one raises
    # KeyError, a list or string where an object belongs TypeError: both mean "not this shape".
    checks: list[str] = []
    reads: list[str] = []
    if params:
        reads.append(f"{i2}a = o['args']")
        checks.append(f"{i1}if type(a) is not dict or len(a) != {len(params)}: return False")
        for p, t in info.params:
            bad = _value_check(em, f"L_{p}", t)
            if bad is None:
                return None
            reads.append(f"{i2}L_{p} = a[{p!r}]")
            checks.append(f"{i1}if {bad}: return False")
    if not is_event:
        reads.append(f"{i2}status = o['ret']")
    body: list[str] = [f"{i1}try:", *reads, f"{i1}except (KeyError, TypeError):", f"{i2}return False"] if reads else []
    body += checks
    n_fixed = 1 + bool(params) + (not is_event)  # call, args, ret
    body.append(f"{i1}n = {n_fixed}")
    if not params:
        body += [f"{i1}if 'args' in o:", f"{i2}a = o['args']", f"{i2}if type(a) is not dict or a: return False",
                 f"{i2}n += 1"]

    # -- the recorded status
    if is_event:
        body += [f"{i1}if 'ret' in o:", f"{i2}status = o['ret']", f"{i2}n += 1", f"{i1}else:",
                 f"{i2}status = {success}"]
        indent = i2
    else:
        indent = i1
    if status_int:
        body.append(f"{indent}if type(status) is not int: return False")
    else:
        body.append(f"{indent}if type(status) is not str or status[:1] in {em.k(NUMERIC_START)}: return False")

    # -- outputs: known names with plain values; all of them on success
    body += [f"{i1}c = 0", f"{i1}if 'out' in o:", f"{i2}ob = o['out']",
             f"{i2}if type(ob) is not dict: return False", f"{i2}n += 1"]
    if outputs:
        body.append(f"{i2}if ob:")
        for p, t in info.outputs:
            bad = _value_check(em, f"L_{p}", t)
            if bad is None:
                return None
            body += [f"{i3}if {p!r} in ob:", f"{i3}    L_{p} = ob[{p!r}]",
                     f"{i3}    if {bad}: return False", f"{i3}    c += 1"]
        body.append(f"{i3}if c != len(ob): return False")
        body.append(f"{i1}if c != {len(outputs)} and status == {success}: return False")
    else:
        body.append(f"{i2}if ob: return False")

    # -- thread id and timestamps: checked as checker.trace does, otherwise unused here
    body += [f"{i1}if 'tid' in o:", f"{i2}x = o['tid']",
             f"{i2}if type(x) is not int and type(x) is not str: return False", f"{i2}n += 1",
             f"{i1}if 't0' in o:", f"{i2}x = o['t0']", f"{i2}y = o.get('t1')",
             f"{i2}if type(x) is not int or type(y) is not int or not 0 <= x <= y: return False", f"{i2}n += 2",
             f"{i1}if len(o) != n: return False"]

    # -- the clauses: the call's mask, then its outcome set for this status
    em.locals = set(params)
    constant = 0
    tests = []
    for bit, test in enumerate(sem.mask_tests(em, call)):
        if test == "True":
            constant |= 1 << bit
        elif test != "False":
            tests.append(f"{i2}if {test}: m |= {1 << bit}")
    body += [f"{i1}try:", f"{i2}m = {constant}", *tests, f"{i1}except (EvalError, KeyError):", f"{i2}return False"]

    # -- a failure: allowed or not; a success: allowed, its promises on outputs, then the effect
    # (rolled back if it cannot be evaluated)
    body += [f"{i1}if status != {success}:", f"{i2}ok = OKF.get((m, status))", f"{i2}if ok is None:",
             f"{i3}ok = decide(OKF, (m, status), m, status)", f"{i2}return ok",
             f"{i1}ok = OKS.get(m)", f"{i1}if ok is None:", f"{i2}ok = decide(OKS, m, m, status)",
             f"{i1}if not ok: return False", f"{i1}J.clear()"]
    em.locals = set(params) | set(outputs)
    ensures = info.clauses(S.Ensures)
    if ensures:
        body.append(f"{i1}try:")
        body += [f"{i2}if not {em.expr(c.cond)}: return False" for c in ensures]
        body += [f"{i1}except (EvalError, KeyError):", f"{i2}return False"]
    effect = info.clauses(S.Effect)
    if effect:
        body.append(f"{i1}try:")
        for c in effect:
            body += em.stmts(c.body, i2)
        body += [f"{i1}except (EvalError, KeyError):", f"{i2}st.rollback()", f"{i2}return False",
                 f"{i1}if J: remember(line, {call!r})"]
    body.append(f"{i1}return True")
    em.locals = set()
    binds = [f"    {tb}, {tr} = T[{t!r}], T[{t!r}].rows" for t, (tb, tr) in em.bound_tables.items()]
    return [f"def {name}(st, remember, OKS, OKF, decide):",
            "    V = st.vars", "    T = st.tables", "    J = st.journal", "    w = None", *binds,
            "    def step(o, line):", *body, "    return step", ""]
