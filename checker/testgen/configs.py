"""The configurations a suite covers: every boolean and enum parameter's values, and each version and
integer compared in the spec on both sides of the comparison."""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Mapping

from ..engines.runs import json_value
from ..language import syntax as S
from ..language.analysis import nodes
from ..language.checked import CheckedSpec, normalise_version


# ---------------------------------------------------------------- configurations


def configurations(spec: CheckedSpec) -> tuple[dict, ...]:
    """Parameter sets that exercise every value the spec distinguishes, as trace-header JSON.

    Per parameter: its default; every member of an enum; both booleans; for each version literal
    the spec compares it with, that version and the next one above it (5.10 and 5.10.1), and for a
    `<` or `>=` comparison the one below (4.0 for 4.1); for each
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
    return tuple({n: json_value(spec.params[n][0], v) for n, v in c.items()} for c in combos)


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
