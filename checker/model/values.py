"""Configuration values: parsing versions and integers and resolving a trace's env against a spec's
parameters (used by the semantics, the executor and replay)."""

from __future__ import annotations

import re
from typing import Any, Mapping


from ..language.checked import CheckedSpec, Type, normalise_version, value_bounds
from ..language.diagnostics import RegcheckError, error, excerpt


# ---------------------------------------------------------------- configuration


# The numeric part, then nothing or a distribution suffix, which starts with a separator
# ("5.10.0-136.oe2203.aarch64", "6.6.0+", "6.1.0~bpo11"): a letter, a dot or an "x" straight after
# the numbers ("6.6a", "6..6", "0x6.6") is a typo, not a suffix, and would silently read as another
# version.
_VERSION_PREFIX = re.compile(r"\s*([0-9]+(?:\.[0-9]+)*)(?:$|[-+_~\s(])")


def parse_version(value) -> tuple[int, ...] | None:
    """A version from "5.10.1", "5.10.0-136.oe2203.aarch64" (the distribution suffix is ignored)
    or a list of ints; None when it does not start with a number, or when what follows the
    number does not start with a separator (`_VERSION_PREFIX`)."""
    if isinstance(value, (list, tuple)) and value and all(type(x) is int and x >= 0 for x in value):
        return normalise_version(value)
    if not isinstance(value, str):
        return None
    m = _VERSION_PREFIX.match(value)
    if m is None:
        return None
    return normalise_version(int(p) for p in m.group(1).split("."))


def coerce_value(t: Type, value, spec: CheckedSpec):
    """A JSON value as a value of type t, or raise ValueError with a reason."""
    match t.kind:
        case "bool":
            if isinstance(value, bool):
                return value
            raise ValueError("expected true or false")
        case "int" | "flags":
            v = coerce_int(value, spec.flags.get(t.name) if t.kind == "flags" else None)
            bounds = value_bounds(t)
            if bounds and not bounds[0] <= v <= bounds[1]:
                raise ValueError(f"{v} is out of range for {'flags ' if t.kind == 'flags' else ''}{t.name}")
            return v
        case "version":
            v = parse_version(value)
            if v is None:
                raise ValueError(f"{excerpt(value)} is not a version number like 5.10.1")
            return v
        case "enum":
            if isinstance(value, str) and value in spec.enums[t.name]:
                return value
            raise ValueError(f"expected one of {', '.join(spec.enums[t.name])}")
        case _:
            raise ValueError(f"values of type {t} cannot be given")


def type_problem(spec: CheckedSpec, t: Type, value) -> str | None:
    """Why `value`, already of t's kind (an int for int and flags, a str for an enum), is not a value
    of type `t`: out of t's range, or not a member of its enum; None when it is. Callers check the kind
    first, each by its own rule (a driver's outputs must be exact ints and bools; a state is not
    checked for kinds at all), so that the range and membership rules live here only."""
    if t.kind in ("int", "flags"):
        bounds = value_bounds(t)
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            return f"out of the range of {t} ({bounds[0]}..{bounds[1]})"
    elif t.kind == "enum" and value not in spec.enums[t.name]:
        return f"not a member of {t}"
    return None


_INT_STRING = re.compile(r"-?0[xX][0-9a-fA-F]+").fullmatch


def coerce_int(value, flag_names: Mapping[str, int] | None = None) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer, found a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        # Only the trace format's integer strings (docs/trace-format.md): "0x..." hex, optionally
        # negative, ASCII digits, nothing around it. No decimal strings, "+", spaces or other digits.
        if _INT_STRING(value):
            return int(value, 16)
        if flag_names is not None and value in flag_names:
            return flag_names[value]
        raise ValueError(f"{excerpt(value)} is not an integer (write a JSON integer or a \"0x...\" hex string)")
    if isinstance(value, list) and flag_names is not None:
        total = 0
        for item in value:
            if not isinstance(item, str) or item not in flag_names:
                raise ValueError(f"unknown flag {item!r} (known: {', '.join(flag_names)})")
            total |= flag_names[item]
        return total
    raise ValueError("expected an integer")


def resolve_config(spec: CheckedSpec, env: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters for one trace: given values (checked against their types) over the spec's defaults."""
    diags = []
    config = {n: v for n, (_, v) in spec.params.items()}
    for name, value in env.items():
        if name not in spec.params:
            diags.append(error("T0720", f"unknown parameter '{name}' for spec {spec.name} (known: {', '.join(spec.params)})"))
            continue
        try:
            config[name] = coerce_value(spec.params[name][0], value, spec)
        except ValueError as exc:
            diags.append(error("T0721", f"parameter '{name}': {exc}"))
    if diags:
        raise RegcheckError(diags)
    return config
