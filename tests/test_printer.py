"""The printer: parse(print(ast)) == ast for generated ASTs and for both bundled specs.

AST equality ignores spans, and `IntLit` equality ignores how the literal was written.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.language import syntax as S
from checker.language.load import bundled_spec_names, load_spec, read_spec_source
from checker.language.parser import parse_spec
from checker.language.printer import print_clause, print_expr, print_spec
from checker.language.typecheck import check_spec

# Every word the grammar reserves somewhere; generated identifiers avoid them.
KEYWORDS = {
    "spec", "source", "param", "enum", "flags", "const", "status", "success", "group", "when", "var", "record",
    "table", "sized", "by", "def", "invariant", "call", "event", "requires", "undefined", "fails", "may", "fail",
    "unspecified", "ensures", "usage", "not", "thread_safe", "only", "in", "effect", "order", "cite", "any",
    "if", "else", "delete", "implies", "or", "and", "exists", "forall", "overlaps", "contains", "true", "false",
    "pinned", "where", "except",
}
BINARY_OPS = ("implies", "or", "and", "==", "!=", "<", "<=", ">", ">=", "in", "overlaps", "contains",
              "|", "&", "+", "-", "*", "%", "**")

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.one_of(
    st.sampled_from(["ptr", "size", "regs", "r", "flag", "x", "_t", "A1", "vm", "range", "aligned"]),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True),
).filter(lambda n: n not in KEYWORDS)
rule_ids = st.from_regex(r"[A-Z][A-Z0-9]{0,3}(-[A-Z0-9]{1,4}){1,3}", fullmatch=True)
qnames = st.lists(names, min_size=2, max_size=3).map("::".join)
texts = st.text(max_size=30)


@st.composite
def int_lits(draw) -> S.IntLit:
    value = draw(st.one_of(st.integers(0, 300), st.integers(0, 2**70), st.sampled_from([0, 4096, 2**64 - 1, 2**64])))
    spelling = draw(st.sampled_from(["", "dec", "hex", "HEX", "grouped", "hexgrouped"]))
    text = {"": "", "dec": str(value), "hex": hex(value), "HEX": f"{value:#X}", "grouped": f"{value:_}",
            "hexgrouped": f"{value:#_x}"}[spelling]
    return S.IntLit(value, text)


leaves = st.one_of(
    int_lits(),
    st.booleans().map(S.BoolLit),
    st.lists(st.integers(0, 999), min_size=2, max_size=4).map(lambda p: S.VersionLit(tuple(p))),
    names.map(S.Name),
)


def _compound(children):
    items = st.lists(children, min_size=1, max_size=3).map(tuple)
    return st.one_of(
        st.builds(S.Field, children, names),
        st.builds(S.Index, names, children),
        st.builds(S.Unary, st.sampled_from(["not", "-", "~"]), children),
        st.builds(S.Binary, st.sampled_from(BINARY_OPS), children, children),
        st.builds(S.Builtin, st.sampled_from(["range", "aligned", "min", "max", "f"]), items),
        st.builds(S.Quant, st.sampled_from(["exists", "forall"]), names, names, children),
        items.map(S.SetLit),
    )


exprs = st.recursive(leaves, _compound, max_leaves=14)
small_exprs = st.recursive(leaves, _compound, max_leaves=5)
cites = st.one_of(st.none(), st.builds(S.Cite, names, texts))
codes = st.one_of(st.just(S.AnyFailure()), st.builds(S.AnyFailure, small_exprs), small_exprs)


def _stmts(children):
    body = st.lists(children, max_size=3).map(tuple)
    return st.one_of(children, st.builds(S.If, small_exprs, body, body))


simple_stmts = st.one_of(
    st.builds(S.Assign, names, small_exprs),
    st.builds(S.Insert, names, small_exprs, st.lists(st.tuples(names, small_exprs), min_size=1, max_size=3).map(tuple)),
    st.builds(S.Update, names, small_exprs, names, small_exprs),
    st.builds(S.Delete, names, small_exprs),
)
stmts = st.recursive(simple_stmts, _stmts, max_leaves=6)

clauses = st.one_of(
    st.builds(S.Requires, rule_ids, exprs, st.booleans(), cites),
    st.builds(S.Fails, rule_ids, codes, exprs, cites),
    st.builds(S.MayFail, rule_ids, codes, st.one_of(st.none(), exprs), cites),
    st.builds(S.Unspecified, rule_ids, exprs, cites),
    st.builds(S.Ensures, rule_ids, exprs, cites),
    st.builds(S.NotThreadSafe, rule_ids, cites),
    st.builds(S.OnlyIn, rule_ids, st.lists(names, min_size=1, max_size=3).map(tuple), cites),
    st.builds(S.Effect, rule_ids, st.lists(stmts, max_size=4).map(tuple), cites),
    st.builds(S.Order, st.lists(rule_ids, min_size=2, max_size=4).map(tuple)),
)

types = names.map(S.TypeRef)
args = st.lists(st.builds(S.ArgDecl, names, types), max_size=3).map(tuple)

decls = st.one_of(
    st.builds(S.SpecHeader, names, texts),
    st.builds(S.SourceDecl, names, texts, texts),
    st.builds(S.ParamDecl, names, types, exprs),
    st.builds(S.EnumDecl, names, st.lists(names, min_size=1, max_size=4).map(tuple)),
    st.builds(S.FlagsDecl, names, types, st.lists(st.tuples(names, int_lits()), min_size=1, max_size=4).map(tuple)),
    st.builds(S.ConstDecl, names, types, exprs),
    st.builds(S.StatusDecl, types, exprs),
    st.builds(S.GroupDecl, names, exprs),
    st.builds(S.VarDecl, names, types, exprs),
    st.builds(S.RecordDecl, names, st.lists(st.tuples(names, types), min_size=1, max_size=4).map(tuple)),
    st.builds(S.TableDecl, names, types, names, st.one_of(st.none(), names)),
    st.builds(S.DefDecl, names, exprs),
    st.builds(S.InvariantDecl, rule_ids, exprs, cites),
    st.builds(S.PinnedDecl, rule_ids, names, names, exprs, cites),
    st.builds(S.CallDecl, st.sampled_from(["call", "event"]), st.one_of(names, qnames), args,
              args.filter(bool) | st.just(()), st.lists(clauses, max_size=5).map(tuple)),
)


def _reparse_expr(e: S.Expr) -> S.Expr:
    text = print_expr(e)
    spec = parse_spec(f"def d = {text}\n", "<expr>")
    return spec.decls[0].body


@pytest.mark.slow
@SETTINGS
@given(exprs)
def test_expression_round_trip(e):
    assert _reparse_expr(e) == e, print_expr(e)


@pytest.mark.slow
@SETTINGS
@given(exprs)
def test_expression_printing_is_stable(e):
    text = print_expr(e)
    assert print_expr(_reparse_expr(e)) == text  # literal spelling (hex, underscores) survives too


@pytest.mark.slow
@settings(SETTINGS, max_examples=150)
@given(st.lists(clauses, min_size=1, max_size=6))
def test_clause_round_trip(cs):
    call = S.CallDecl("call", "f", (S.ArgDecl("x", S.TypeRef("int")),), (), tuple(cs))
    text = print_spec(S.SpecFile("<c>", (call,)))
    assert parse_spec(text, "<c>").decls == (call,), text


@pytest.mark.slow
@SETTINGS
@given(st.lists(decls, min_size=1, max_size=6))
def test_declaration_round_trip(ds):
    spec = S.SpecFile("<d>", tuple(ds))
    text = print_spec(spec)
    assert parse_spec(text, "<d>") == spec, text


def test_bundled_specs_round_trip_and_still_check():
    for name in bundled_spec_names():
        src = read_spec_source(name)
        ast = parse_spec(src.text, src.path)
        text = print_spec(ast)
        again = parse_spec(text, src.path)
        assert again == ast
        assert print_spec(again) == text
        checked = check_spec(again)
        assert set(checked.rules) == set(load_spec(name).rules)


def test_literals_keep_their_spelling():
    for text in ("0x1000", "0X10_0000", "4_096", "4096", "5.10.1", "2 ** 64"):
        assert print_expr(_reparse_expr(parse_spec(f"def d = {text}", "t").decls[0].body)) == text
    assert print_expr(S.IntLit(255)) == "255"
    assert print_expr(S.IntLit(255, "0x10")) == "255"  # a spelling that does not match the value is dropped


def test_parentheses_only_where_needed():
    cases = {
        "(a + b) * c": "(a + b) * c",
        "a + (b * c)": "a + b * c",
        "(a - b) - c": "a - b - c",
        "a - (b - c)": "a - (b - c)",
        "(a implies b) implies c": "(a implies b) implies c",
        "a implies (b implies c)": "a implies b implies c",
        "not (a and b)": "not (a and b)",
        "(not a) and b": "not a and b",
        "-(a ** b)": "-(a ** b)",
        "(-a) ** b": "-a ** b",
        "(a == b) == c": "(a == b) == c",
        "a and (exists r in t: r.key == 1)": "a and (exists r in t: r.key == 1)",
        "exists r in t: r.key == 1 and a": "(exists r in t: r.key == 1 and a)",
        "{1, 2}": "{1, 2}",
        "t[k].range.end": "t[k].range.end",
    }
    for source, printed in cases.items():
        assert print_expr(_reparse_expr(parse_spec(f"def d = {source}", "t").decls[0].body)) == printed, source


def test_clause_layout():
    spec = load_spec("acl")
    clause = next(c for c in spec.calls["aclrtHostRegisterV2"].decl.clauses if getattr(c, "rule", "") == "ACL-REG-ALIGN")
    assert print_clause(clause) == (
        "  requires ACL-REG-ALIGN: ptr == 0 or ptr % PAGE == 0 undefined\n"
        '    cite REGISTER_V2 "Parameters, ptr: the host address must sit on a 4 KB page boundary"')
