"""The parser: spec text -> AST, precedence and associativity, spans, and syntax errors as diagnostics."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.language import syntax as S
from checker.language.diagnostics import RegcheckError
from checker.language.load import bundled_spec_names, read_spec_source
from checker.language.parser import parse_spec
from checker.language.typecheck import check_spec

HEADER = 'spec demo "t"\nsource DOC "doc.txt" "a document"\nstatus int success 0\n'


def expr(text: str) -> S.Expr:
    return parse_spec(f"def d = {text}\n", "<e>").decls[0].body


def N(name: str) -> S.Name:
    return S.Name(name)


def I(value: int) -> S.IntLit:
    return S.IntLit(value)


def B(op: str, left, right) -> S.Binary:
    return S.Binary(op, left, right)


def call_clauses(body: str) -> tuple:
    spec = parse_spec(HEADER + "call f(x: int, p: addr) -> (out: addr) {\n" + body + "\n}\n", "<c>")
    return spec.decls[-1].clauses


def syntax_error(text: str):
    with pytest.raises(RegcheckError) as e:
        parse_spec(text, "bad.spec")
    (diag,) = e.value.diagnostics
    return diag


# ---------------------------------------------------------------- expressions

def test_precedence_loosest_to_tightest():
    assert expr("a or b and c") == B("or", N("a"), B("and", N("b"), N("c")))
    assert expr("not a == b") == S.Unary("not", B("==", N("a"), N("b")))
    assert expr("a == b | c & d") == B("==", N("a"), B("|", N("b"), B("&", N("c"), N("d"))))
    assert expr("a & b + c") == B("&", N("a"), B("+", N("b"), N("c")))
    assert expr("a + b * c % d") == B("+", N("a"), B("%", B("*", N("b"), N("c")), N("d")))
    assert expr("a * b ** c") == B("*", N("a"), B("**", N("b"), N("c")))
    assert expr("-a ** b") == B("**", S.Unary("-", N("a")), N("b"))
    assert expr("~a.b") == S.Unary("~", S.Field(N("a"), "b"))


def test_associativity():
    assert expr("a - b - c") == B("-", B("-", N("a"), N("b")), N("c"))
    assert expr("a implies b implies c") == B("implies", N("a"), B("implies", N("b"), N("c")))
    assert expr("2 ** 3 ** 2") == B("**", I(2), B("**", I(3), I(2)))


def test_comparisons_do_not_chain():
    diag = syntax_error(HEADER + "def d = a < b < c\n")
    assert diag.code == "E0102"


def test_range_operators():
    assert expr("r.range overlaps range(p, s)") == B("overlaps", S.Field(N("r"), "range"),
                                                     S.Builtin("range", (N("p"), N("s"))))
    assert expr("r.range contains p") == B("contains", S.Field(N("r"), "range"), N("p"))
    assert expr("p in regs") == B("in", N("p"), N("regs"))
    assert expr("M in flags") == B("in", N("M"), N("flags"))
    assert expr("v in {A, B}") == B("in", N("v"), S.SetLit((N("A"), N("B"))))


def test_quantifier_body_extends_as_far_right_as_possible():
    q = expr("exists r in regs: r.key == p and r.size > 0")
    assert q == S.Quant("exists", "r", "regs", B("and", B("==", S.Field(N("r"), "key"), N("p")),
                                                  B(">", S.Field(N("r"), "size"), I(0))))
    bracketed = expr("(exists r in regs: r.key == p) and ok")
    assert bracketed == B("and", S.Quant("exists", "r", "regs", B("==", S.Field(N("r"), "key"), N("p"))), N("ok"))
    nested = expr("forall a in t: forall b in t: a.key != b.key implies not a.range overlaps b.range")
    assert isinstance(nested, S.Quant) and isinstance(nested.body, S.Quant)
    assert nested.body.body.op == "implies"


def test_literals():
    assert expr("0x10000000") == I(0x10000000) and expr("0x10000000").text == "0x10000000"
    assert expr("4_096") == I(4096)
    assert expr("0X_FF") == I(255)
    assert expr("5.10.1") == S.VersionLit((5, 10, 1))
    assert expr("true") == S.BoolLit(True) and expr("false") == S.BoolLit(False)
    assert expr("2 ** 64") == B("**", I(2), I(64))


def test_index_field_and_builtins():
    assert expr("regs[ptr].flags") == S.Field(S.Index("regs", N("ptr")), "flags")
    assert expr("aligned(p, 4096)") == S.Builtin("aligned", (N("p"), I(4096)))
    assert expr("min(a, b)") == S.Builtin("min", (N("a"), N("b")))


def test_equality_ignores_spans_and_literal_spelling():
    a = parse_spec(HEADER + "const X: int = 0x10\n", "one.spec")
    b = parse_spec("\n\n" + HEADER.replace("\n", "\n  ") + "const X: int = 16\n", "two.spec")
    assert a.decls == b.decls
    assert S.IntLit(16, "0x10") == S.IntLit(16, "16") and hash(S.IntLit(16, "0x10")) == hash(S.IntLit(16))


def test_spans_point_at_the_text():
    spec = parse_spec(HEADER + "const LIMIT: u64 = PAGE * 4\n", "s.spec")
    const = spec.decls[-1]
    assert (const.span.line, const.span.column) == (4, 1)
    name = const.value.left
    assert (name.span.path, name.span.line, name.span.column, name.span.end_column) == ("s.spec", 4, 20, 24)


# ---------------------------------------------------------------- declarations and clauses

def test_declarations():
    spec = parse_spec("""
spec acl "title"
source DOC "loc" "title"
param os_kernel: version = 5.10
enum Mode { Off, On, }
flags F: u32 { A = 0x2, B = 0x4 }
const PAGE: u64 = 4096
status int success 0
group Init when vm == Off
var vm: Mode = Off
record R { size: u64, flags: F }
table regs: addr -> R sized by size
table plain: int -> R
def big = PAGE * 2
invariant INV-ONE: forall r in regs: r.size > 0
  cite DOC "sizes are positive"
""", "d.spec")
    kinds = [type(d).__name__ for d in spec.decls]
    assert kinds == ["SpecHeader", "SourceDecl", "ParamDecl", "EnumDecl", "FlagsDecl", "ConstDecl", "StatusDecl",
                     "GroupDecl", "VarDecl", "RecordDecl", "TableDecl", "TableDecl", "DefDecl", "InvariantDecl"]
    assert spec.decls[2].default == S.VersionLit((5, 10))
    assert spec.decls[3].members == ("Off", "On")
    assert spec.decls[4].members == (("A", I(2)), ("B", I(4)))
    assert spec.decls[10].sized_by == "size" and spec.decls[11].sized_by is None
    assert spec.decls[13].cite == S.Cite("DOC", "sizes are positive")


def test_every_clause_kind():
    cs = call_clauses("""
  requires R-ONE: x > 0 undefined
    cite DOC "one"
  requires R-TWO: x < 10
  fails R-THREE: {1, 2} when x == 0
  fails R-FOUR: any when x == 1
  may fail R-FIVE: any
  may fail R-SIX: 3 when x == 2
    cite DOC "six"
  unspecified R-SEVEN: when x == 3
  ensures R-EIGHT: out != 0
  usage R-NINE: not thread_safe
  usage R-TEN: only in Init, Runtime
  order R-THREE > R-FOUR
  effect R-ELEVEN: {
    n = x
    t[p] = { size: x, flags: 0 }
    t[p].size = 1
    if p in t { delete t[p] } else { n = 0 }
  }
    cite DOC "eleven"
""")
    assert [type(c).__name__ for c in cs] == ["Requires", "Requires", "Fails", "Fails", "MayFail", "MayFail",
                                               "Unspecified", "Ensures", "NotThreadSafe", "OnlyIn", "Order", "Effect"]
    assert cs[0].undefined and cs[0].cite == S.Cite("DOC", "one") and not cs[1].undefined and cs[1].cite is None
    assert cs[2].codes == S.SetLit((I(1), I(2))) and isinstance(cs[3].codes, S.AnyFailure)
    assert cs[4].cond is None and cs[5].cond == B("==", N("x"), I(2))
    assert cs[9].groups == ("Init", "Runtime")
    assert cs[10].rules == ("R-THREE", "R-FOUR")
    body = cs[11].body
    assert [type(s).__name__ for s in body] == ["Assign", "Insert", "Update", "If"]
    assert body[3].then == (S.Delete("t", N("p")),) and body[3].orelse == (S.Assign("n", I(0)),)


def test_any_except():
    fails, may = call_clauses("""
  fails R-ONE: any except 3 when x == 0
  may fail R-TWO: any except {1, 2}
""")
    assert fails.codes == S.AnyFailure(I(3)) and fails.cond == B("==", N("x"), I(0))
    assert may.codes == S.AnyFailure(S.SetLit((I(1), I(2)))) and may.cond is None
    assert call_clauses("  may fail R-X: any")[0].codes == S.AnyFailure(None)


def test_calls_events_and_qualified_names():
    spec = parse_spec(HEADER + """
call cupva::mem::Register(ptr: addr, size: i64) {
}
event vm_state(state: VmState) {
}
call none() -> (out: addr) {
}
""", "q.spec")
    reg, ev, none = spec.decls[-3:]
    assert (reg.kind, reg.name, [a.name for a in reg.params]) == ("call", "cupva::mem::Register", ["ptr", "size"])
    assert ev.kind == "event" and ev.params[0].type == S.TypeRef("VmState")
    assert none.params == () and [a.name for a in none.outputs] == ["out"]


def test_strings_and_comments():
    spec = parse_spec('# a comment\nspec s "a \\"quoted\\" word\\\\ and\\ttab" # trailing comment\n', "s.spec")
    assert spec.decls[0].title == 'a "quoted" word\\ and\ttab'


def test_bundled_specs_parse():
    for name in bundled_spec_names():
        src = read_spec_source(name)
        spec = parse_spec(src.text, src.path)
        assert isinstance(spec.decls[0], S.SpecHeader) and spec.decls[0].name == name


# ---------------------------------------------------------------- syntax errors

@pytest.mark.parametrize("text, code, line, column, words", [
    (HEADER + "const X: int = 3 $ 4\n", "E0101", 4, 18, "unexpected character '$'"),
    (HEADER + 'source S "unterminated\n', "E0101", 4, 10, "unterminated string"),
    (HEADER + "const X: int = 0x_\n", "E0101", 4, 16, "malformed integer '0x_'"),
    (HEADER + "call f(x: int) {\n  requires R-X x > 0\n}\n", "E0102", 5, 16, "expected ':'"),
    (HEADER + "record R { size u64 }\n", "E0102", 4, 17, "unexpected 'u64'"),
    (HEADER + "call f(x: int) {\n  fails R-X: 1 when x == 0\n", "E0103", 5, 27, "expected '}'"),
    (HEADER + "const X: int = (1 + 2\n", "E0103", 4, 22, "expected ')'"),
    (HEADER + "invariant lower-case: true\n", "E0102", 4, 11, "expected a rule ID"),
])
def test_syntax_errors(text, code, line, column, words):
    diag = syntax_error(text)
    assert (diag.code, diag.span.line, diag.span.column) == (code, line, column), diag
    assert words in diag.message
    assert diag.span.path == "bad.spec"


# A token soup drawn from the language, so that random text gets past the lexer often.
_WORDS = ["spec", "source", "call", "event", "requires", "fails", "when", "may", "fail", "effect", "cite",
          "exists", "forall", "in", "and", "not", "implies", "{", "}", "(", ")", "[", "]", ":", ",", ".", "=",
          "==", "<", "->", "**", "x", "regs", "R-ONE", "0x10", "5.10", '"s"', "\n", "#c\n", "any", "0x_"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_WORDS), max_size=40).map(" ".join))
def test_random_token_soup_gives_a_spec_or_diagnostics_never_a_crash(text):
    try:
        spec = parse_spec(text, "soup.spec")
    except RegcheckError as exc:
        assert exc.diagnostics and all(re.fullmatch(r"E01\d\d", d.code) for d in exc.diagnostics)
        return
    try:
        check_spec(spec)
    except RegcheckError as exc:
        assert exc.diagnostics


def _tokens(text: str) -> list[str]:
    return re.findall(r"\s+|\"[^\"\n]*\"|[A-Za-z_][A-Za-z0-9_:]*(?:-[A-Z0-9]+)*|0[xX][0-9a-fA-F_]+|[0-9][0-9_.]*|\S",
                      text)


_ACL = read_spec_source("acl").text


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_spec_gives_diagnostics_never_a_crash(data):
    """Delete, duplicate or replace a few tokens of the real spec: the result parses and checks, or the
    user gets diagnostics; nothing else escapes (a traceback would be a bug)."""
    toks = _tokens(_ACL)
    words = sorted({t for t in toks if not t.isspace()})
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(toks) - 1))
        how = data.draw(st.sampled_from(["delete", "replace", "insert"]))
        if how == "delete":
            toks[i] = ""
        elif how == "replace":
            toks[i] = data.draw(st.sampled_from(words))
        else:
            toks[i] += " " + data.draw(st.sampled_from(words))
    text = "".join(toks)
    try:
        check_spec(parse_spec(text, "mutant.spec"))
    except RegcheckError as exc:
        assert exc.diagnostics


# ---------------------------------------------------------------- hints for the usual slips

CALL = HEADER + "call f(x: int, p: addr) {\n"


@pytest.mark.parametrize("text, code, hint", [
    (CALL + "  fails R-X: 1 when x = 0\n}\n", "E0102", "write `==` to compare"),
    (CALL + "  effect R-E: { if x = 0 { } }\n}\n", "E0102", "write `==` to compare"),
    (HEADER + "def d = f(1) = 2\n", "E0102", "write `==` to compare"),
    (HEADER + "def d = a && b\n", "E0102", "write `and`"),
    (HEADER + "def d = a || b\n", "E0102", "write `or`"),
    (HEADER + "def d = !a\n", "E0101", "write `not`"),
    (HEADER + "def d = a overlap b\n", "E0102", "did you mean `overlaps`?"),
    (HEADER + "def d = (a contain b)\n", "E0102", "did you mean `contains`?"),
    (CALL + "  require R-X: x > 0\n}\n", "E0102", "did you mean `requires`?"),
    (CALL + "  fails R-X: 1 wen x == 0\n}\n", "E0102", "did you mean `when`?"),
    (HEADER + "cnst X: int = 1\n", "E0102", "did you mean `const`?"),
    (CALL + "  requires R-X: x > 0\n    DOC \"x is positive\"\n}\n", "E0102", "a citation is `cite SOURCE"),
    (CALL + "  requires R-X: x > 0 \"x is positive\"\n}\n", "E0102", "a citation is `cite SOURCE"),
])
def test_the_usual_slips_get_a_hint(text, code, hint):
    diag = syntax_error(text)
    assert diag.code == code and f"({hint}" in diag.message, diag.message


@pytest.mark.parametrize("text", [
    HEADER + "def d = a & & b\n",  # two separate `&`s are no `&&`
    HEADER + "def d = a == b = c\n",  # no comparison could come here
    HEADER + "def d = a b\n",  # `b` is no keyword
    CALL + "  requires R-X x > 0\n}\n",  # golden 02: the colon is missing, nothing else
])
def test_no_hint_where_no_slip_fits(text):
    assert not syntax_error(text).message.endswith(")")  # every hint is a parenthesis at the end


def test_assignments_in_an_effect_still_parse():
    clauses = call_clauses("  effect R-E: { if x == 0 { x = 1 } }")
    assert isinstance(clauses[0].body[0].then[0], S.Assign)


def test_a_deep_parse_stack_still_gets_the_hint():
    # Past the depth where the parser's accepted tokens are worked out, the failing state still tells.
    diag = syntax_error(HEADER + "def d = " + "-" * 1000 + "a = 1\n")
    assert "write `==` to compare" in diag.message
