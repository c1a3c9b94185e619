"""AST -> spec text in canonical layout; parse(print(ast)) == ast (spans and literal spelling aside)."""

from __future__ import annotations

from typing import assert_never

from . import syntax as S

# Binding strength of binary operators (higher binds tighter), mirroring grammar.lark.
_PREC = {"implies": 1, "or": 2, "and": 3, "==": 5, "!=": 5, "<": 5, "<=": 5, ">": 5, ">=": 5,
         "in": 5, "overlaps": 5, "contains": 5, "|": 6, "&": 7, "+": 8, "-": 8, "*": 9, "%": 9, "**": 10}
_NOT_PREC = 4
_UNARY_PREC = 11
_ATOM_PREC = 12


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def print_expr(e: S.Expr) -> str:
    return _expr(e)[0]


def _wrap(e: S.Expr, need: int) -> str:
    text, prec = _expr(e)
    return f"({text})" if prec < need else text


def _expr(e: S.Expr) -> tuple[str, int]:
    """Text of e and its binding strength (so callers know when parentheses are needed)."""
    match e:
        case S.IntLit(value=v, text=t):
            return (t if t and _int_text_ok(t, v) else str(v)), _ATOM_PREC
        case S.BoolLit(value=v):
            return ("true" if v else "false"), _ATOM_PREC
        case S.VersionLit(parts=p):
            return ".".join(str(x) for x in p), _ATOM_PREC
        case S.Name(name=n):
            return n, _ATOM_PREC
        case S.Field(obj=o, name=n):
            return f"{_wrap(o, _ATOM_PREC)}.{n}", _ATOM_PREC
        case S.Index(table=t, key=k):
            return f"{t}[{print_expr(k)}]", _ATOM_PREC
        case S.Unary(op="not", operand=o):
            return f"not {_wrap(o, _NOT_PREC)}", _NOT_PREC
        case S.Unary(op=op, operand=o):
            return f"{op}{_wrap(o, _UNARY_PREC)}", _UNARY_PREC
        case S.Binary(op=op, left=l, right=r):
            p = _PREC[op]
            if op in ("implies", "**"):  # right-associative
                return f"{_wrap(l, p + 1)} {op} {_wrap(r, p)}", p
            if p == 5:  # comparisons do not chain
                return f"{_wrap(l, p + 1)} {op} {_wrap(r, p + 1)}", p
            return f"{_wrap(l, p)} {op} {_wrap(r, p + 1)}", p
        case S.Builtin(func=f, args=a):
            return f"{f}({', '.join(print_expr(x) for x in a)})", _ATOM_PREC
        case S.Quant(kind=k, var=v, table=t, body=b):
            # A quantifier's body extends as far right as possible, so it is always bracketed when nested.
            return f"({k} {v} in {t}: {print_expr(b)})", _ATOM_PREC
        case S.SetLit(items=items):
            return "{" + ", ".join(print_expr(x) for x in items) + "}", _ATOM_PREC
        case _:
            assert_never(e)


def _int_text_ok(text: str, value: int) -> bool:
    try:
        return int(text.replace("_", ""), 0 if text.lower().startswith("0x") else 10) == value
    except ValueError:
        return False


def _codes(c: S.Codes) -> str:
    if isinstance(c, S.AnyFailure):
        return "any" if c.excluded is None else f"any except {print_expr(c.excluded)}"
    return print_expr(c)


def _cite(c: S.Cite | None) -> str:
    return f"\n    cite {c.source} {_quote(c.clause)}" if c else ""


def _stmts(body: tuple[S.Stmt, ...], indent: str) -> list[str]:
    out: list[str] = []
    for st in body:
        match st:
            case S.Assign(var=v, value=x):
                out.append(f"{indent}{v} = {print_expr(x)}")
            case S.Insert(table=t, key=k, fields=fs):
                inits = ", ".join(f"{n}: {print_expr(x)}" for n, x in fs)
                out.append(f"{indent}{t}[{print_expr(k)}] = {{ {inits} }}")
            case S.Update(table=t, key=k, field=f, value=x):
                out.append(f"{indent}{t}[{print_expr(k)}].{f} = {print_expr(x)}")
            case S.Delete(table=t, key=k):
                out.append(f"{indent}delete {t}[{print_expr(k)}]")
            case S.If(cond=c, then=th, orelse=el):
                out.append(f"{indent}if {print_expr(c)} {{")
                out.extend(_stmts(th, indent + "  "))
                if el:
                    out.append(f"{indent}}} else {{")
                    out.extend(_stmts(el, indent + "  "))
                out.append(f"{indent}}}")
            case _:
                assert_never(st)
    return out


def print_clause(c: S.Clause) -> str:
    match c:
        case S.Requires(rule=r, cond=x, undefined=u, cite=ci):
            return f"  requires {r}: {print_expr(x)}{' undefined' if u else ''}{_cite(ci)}"
        case S.Fails(rule=r, codes=co, cond=x, cite=ci):
            return f"  fails {r}: {_codes(co)} when {print_expr(x)}{_cite(ci)}"
        case S.MayFail(rule=r, codes=co, cond=x, cite=ci):
            when = f" when {print_expr(x)}" if x is not None else ""
            return f"  may fail {r}: {_codes(co)}{when}{_cite(ci)}"
        case S.Unspecified(rule=r, cond=x, cite=ci):
            return f"  unspecified {r}: when {print_expr(x)}{_cite(ci)}"
        case S.Ensures(rule=r, cond=x, cite=ci):
            return f"  ensures {r}: {print_expr(x)}{_cite(ci)}"
        case S.NotThreadSafe(rule=r, cite=ci):
            return f"  usage {r}: not thread_safe{_cite(ci)}"
        case S.OnlyIn(rule=r, groups=g, cite=ci):
            return f"  usage {r}: only in {', '.join(g)}{_cite(ci)}"
        case S.Effect(rule=r, body=b, cite=ci):
            lines = [f"  effect {r}: {{", *_stmts(b, "    "), "  }"]
            return "\n".join(lines) + _cite(ci)
        case S.Order(rules=rs):
            return f"  order {' > '.join(rs)}"
        case _:
            assert_never(c)


def _args(args: tuple[S.ArgDecl, ...]) -> str:
    return ", ".join(f"{a.name}: {a.type.name}" + ("" if a.default is None else f" = {print_expr(a.default)}")
                     for a in args)


def print_decl(d: S.Decl) -> str:
    match d:
        case S.SpecHeader(name=n, title=t):
            return f"spec {n} {_quote(t)}"
        case S.SourceDecl(name=n, location=l, title=t):
            return f"source {n} {_quote(l)} {_quote(t)}"
        case S.ParamDecl(name=n, type=t, default=x):
            return f"param {n}: {t.name} = {print_expr(x)}"
        case S.EnumDecl(name=n, members=m):
            return f"enum {n} {{ {', '.join(m)} }}"
        case S.FlagsDecl(name=n, base=b, members=m):
            inner = ",\n".join(f"  {name} = {print_expr(v)}" for name, v in m)
            return f"flags {n}: {b.name} {{\n{inner}\n}}"
        case S.ConstDecl(name=n, type=t, value=x):
            return f"const {n}: {t.name} = {print_expr(x)}"
        case S.StatusDecl(type=t, success=x):
            return f"status {t.name} success {print_expr(x)}"
        case S.GroupDecl(name=n, cond=x):
            return f"group {n} when {print_expr(x)}"
        case S.VarDecl(name=n, type=t, init=x):
            return f"var {n}: {t.name} = {print_expr(x)}"
        case S.RecordDecl(name=n, fields=fs):
            return f"record {n} {{ {', '.join(f'{fn}: {ft.name}' for fn, ft in fs)} }}"
        case S.TableDecl(name=n, key=k, record=r, sized_by=sb):
            return f"table {n}: {k.name} -> {r}" + (f" sized by {sb}" if sb else "")
        case S.DefDecl(name=n, body=x):
            return f"def {n} = {print_expr(x)}"
        case S.InvariantDecl(rule=r, expr=x, cite=ci):
            return f"invariant {r}: {print_expr(x)}{_cite(ci)}"
        case S.PinnedDecl(rule=r, var=v, table=t, cond=x, cite=ci):
            return f"pinned {r}: {v} in {t} where {print_expr(x)}{_cite(ci)}"
        case S.CallDecl(kind=k, name=n, params=ps, outputs=os_, clauses=cs):
            head = f"{k} {n}({_args(ps)})" + (f" -> ({_args(os_)})" if os_ else "")
            if not cs:
                return head + " {\n}"
            return head + " {\n" + "\n".join(print_clause(c) for c in cs) + "\n}"
        case _:
            assert_never(d)


def print_spec(spec: S.SpecFile) -> str:
    return "\n\n".join(print_decl(d) for d in spec.decls) + "\n"
