"""The configurations a suite covers: every boolean and enum parameter's values, and each version and
integer compared in the spec on both sides of the comparison."""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Mapping

from ..engines.runs import json_value, semantics_for
from ..language import syntax as S
from ..language.analysis import conjuncts, nodes
from ..language.checked import CheckedSpec, normalise_version


# ---------------------------------------------------------------- configurations


def configurations(spec: CheckedSpec) -> tuple[dict, ...]:
    """Parameter sets that exercise every value the spec distinguishes, as trace-header JSON.

    Per parameter: its default; every member of an enum; both booleans; for each version literal
    the spec compares it with, that version and the next one above it (5.10 and 5.10.1), and for a
    `<` or `>=` comparison the one below (4.0 for 4.1); for each
    integer literal, that value and the one below (2006 and 2005). With few combinations in all
    (at most 8) every combination is taken, otherwise the default with one parameter varied at a time,
    and for each clause whose condition needs several parameters at once (`observed and hip_runtime
    < 5.6`) and none of those, one more that satisfies that part of it (`guard_configurations`).
    """
    pool: dict[str, list] = {}
    for name, (t, default) in spec.params.items():
        values = [default]
        if t.kind == "enum":
            values += list(spec.enums[t.name])
        elif t.kind == "bool":
            values += [False, True]
        for op, lit in _literals_compared_with(spec, name):
            if t.kind == "version" and isinstance(lit, S.VersionLit):
                v = normalise_version(lit.parts)
                values += [v, normalise_version(lit.parts + (1,))]
                if op in ("<", ">=") and lit.parts[-1] > 0:  # `x < 4.1` holds only below it: 4.0 too
                    values.append(normalise_version(lit.parts[:-1] + (lit.parts[-1] - 1,)))
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
    configs = [_as_json(spec, c) for c in combos]
    return tuple(configs + guard_configurations(spec, pool, configs))


def _as_json(spec: CheckedSpec, combo: Mapping[str, Any]) -> dict:
    return {n: json_value(spec.params[n][0], v) for n, v in combo.items()}


def guard_configurations(spec: CheckedSpec, pool: Mapping[str, list], configs: list[dict]) -> list[dict]:
    """For each clause condition whose parameter part reads several parameters and holds in none of
    `configs`, the first combination of their `pool` values (the others at their defaults) where it
    holds: a one-at-a-time choice never reaches `observed and hip_runtime < 5.6`. The part is
    evaluated by the spec's own semantics, so what holds is what the generator will see."""
    found: list[dict] = []
    defaults = {n: spec.params[n][1] for n in pool}
    for guard in _parameter_guards(spec):
        params = sorted(set().union(*(_params_read(spec, c) for c in guard)))
        if any(_holds(spec, guard, c) for c in configs + found):
            continue
        for values in itertools.product(*(_values_for(spec, guard, n, pool[n], defaults) for n in params)):
            config = _as_json(spec, {**defaults, **dict(zip(params, values))})
            if _holds(spec, guard, config):
                found.append(config)
                break
    return found


# What a condition's parameter part may read besides parameters: nothing that depends on a state.
_STATELESS = frozenset({"param", "const", "enum", "flag", "def"})


def _parameter_guards(spec: CheckedSpec) -> Iterator[tuple[S.Expr, ...]]:
    """Per clause condition, its conjuncts that read parameters and nothing of a state or a call,
    where they read two parameters or more."""
    for info in spec.calls.values():
        for clause in info.decl.clauses:
            cond = getattr(clause, "cond", None)
            if not isinstance(cond, S.Expr):
                continue
            part = [c for c in conjuncts(cond) if _reads_only_parameters(spec, c)]
            if len(set().union(*(_params_read(spec, c) for c in part))) >= 2:
                yield tuple(part)


def _values_for(spec: CheckedSpec, guard: tuple[S.Expr, ...], param: str, values: list, defaults: Mapping) -> list:
    """The values of `param` that satisfy the guard's conjuncts reading it alone: each is judged in
    the configuration that varies only it (one the caller has, so its semantics is built already),
    and only their combinations are tried whole."""
    alone = tuple(c for c in guard if _params_read(spec, c) == {param})
    return [v for v in values if _holds(spec, alone, _as_json(spec, {**defaults, param: v}))]


def _params_read(spec: CheckedSpec, e: S.Expr) -> set[str]:
    return {b.name for b in spec.reads(e, defs=True) if b.kind == "param"}


def _reads_only_parameters(spec: CheckedSpec, e: S.Expr) -> bool:
    reads = spec.reads(e, defs=True)
    return any(b.kind == "param" for b in reads) and all(b.kind in _STATELESS for b in reads)


def _holds(spec: CheckedSpec, guard: tuple[S.Expr, ...], config: Mapping[str, Any]) -> bool:
    sem = semantics_for(spec, dict(config))
    return all(sem.eval(c, sem.initial_state()) for c in guard)


_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _literals_compared_with(spec: CheckedSpec, param: str) -> Iterator[tuple[str, S.Expr]]:
    """(operator, literal) for each comparison of the parameter with a literal, written as
    `param OP literal` (a comparison written the other way round is mirrored)."""
    for node in nodes(spec.ast):
        if isinstance(node, S.Binary) and node.op in _MIRRORED:
            for a, b, op in ((node.left, node.right, node.op), (node.right, node.left, _MIRRORED[node.op])):
                if isinstance(a, S.Name) and a.name == param and isinstance(b, (S.IntLit, S.VersionLit)):
                    yield op, b


def config_label(env: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={show_json(v)}" for k, v in env.items())


def show_json(v) -> str:
    return "true" if v is True else "false" if v is False else str(v)
