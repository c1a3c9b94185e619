"""The type checker: names, types, rules and citations, lints; every error at once, in file order.

Malformed snippets with their exact rendered output live in tests/golden/diagnostics (see
test_cli_check.py); the tests here look at the CheckedSpec and at single diagnostics.
"""

from __future__ import annotations

import pytest

from checker.language import syntax as S
from checker.language.diagnostics import Note, RegcheckError, Severity, did_you_mean
from checker.language.load import load_spec
from checker.language.parser import parse_spec
from checker.language.typecheck import check_spec
from checker.language.checked import BOOL, INT, RANGE, Type

HEADER = 'spec demo "t"\nsource DOC "doc.txt" "a document"\nstatus int success 0\n'


def check(text: str):
    return check_spec(parse_spec(text, "t.spec"))


def errors(text: str) -> list:
    """The errors (warnings such as W0501 for the uncited DOC aside)."""
    with pytest.raises(RegcheckError) as e:
        check(text)
    return [d for d in e.value.diagnostics if d.severity is Severity.ERROR]


def codes(text: str) -> list[str]:
    return [d.code for d in errors(text)]


def test_every_error_at_once_in_file_order():
    diags = errors(HEADER + """
enum Mode { Off, On }
record Reg { size: u64 }
table regs: addr -> Reg sized by size
call f(ptr: addr, size: u64, mode: Mode) {
  requires T-MODE: mode == 1
    cite DOC "mode"
  fails T-SIZE: 1 when size
    cite DOC "size"
  fails T-PTR: 1 when ptr == nil
  usage T-GROUP: only in Nowhere
    cite DOC "group"
  effect T-REG: {
    regs[ptr] = { size: size, flags: 0 }
    counter = 1
  }
    cite DOCS "registers"
}
""")
    assert [d.code for d in diags] == ["E0301", "E0301", "E0402", "E0201", "E0201", "E0203", "E0206", "E0403"]
    lines = [d.span.line for d in diags]
    assert lines == sorted(lines)
    assert all(d.severity is Severity.ERROR and d.span.path == "t.spec" for d in diags)


def test_error_message_names_both_types():
    (d,) = errors(HEADER + "enum Mode { Off, On }\nconst M: Mode = Off\ndef bad = M == 1\n")
    assert d.code == "E0301" and d.message == "cannot compare Mode with int"
    assert (d.span.line, d.span.column) == (6, 11)


def test_no_cascade_after_an_unknown_name():
    # one unknown name gives one error, not a type error for every expression around it
    assert codes(HEADER + "def bad = (nothing + 1) * 2 > 3 and nothing\n") == ["E0201", "E0201"]


def test_warnings_w0501_w0502_do_not_stop_the_check():
    spec = check(HEADER + """
source UNUSED "other.txt" "never cited"
call f(x: int) {
  fails T-X: 1 when x == 0
    cite DOC "x is not zero"
}
event e() {
}
""")
    warnings = [(d.code, d.severity) for d in spec.warnings]
    assert warnings == [("W0501", Severity.WARNING), ("W0502", Severity.WARNING)]
    assert "UNUSED" in spec.warnings[0].message and "call f" in spec.warnings[1].message  # events need no effect


def test_w0504_flag_that_is_not_one_bit():
    spec = check(HEADER + "flags F: u32 { A = 0x2, B = 0x6 }\n")
    assert [d.code for d in spec.warnings] == ["W0501", "W0504"]
    assert spec.flags["F"] == {"A": 2, "B": 6}


def test_checked_spec_tables_and_types():
    spec = check(HEADER + """
param kernel: version = 5.10
const PAGE: u64 = 4096
const TWO_PAGES: u64 = PAGE * 2
record Reg { size: u64, flags: u32 }
table regs: addr -> Reg sized by size
var count: int = 0
call reg(ptr: addr, size: u64) {
  fails T-OVERLAP: 1 when exists r in regs: r.range overlaps range(ptr, size)
    cite DOC "no overlap"
  effect T-REG: {
    regs[ptr] = { size: size, flags: 0 }
    count = count + 1
  }
    cite DOC "registers"
}
""")
    assert spec.params == {"kernel": (Type("version"), (5, 10))}
    assert spec.consts["TWO_PAGES"] == (Type("int", "u64"), 8192)
    assert spec.vars == {"count": (INT, 0)}
    info = spec.tables["regs"]
    assert (info.key, info.record, info.sized_by) == (Type("int", "addr"), "Reg", "size")
    assert spec.calls["reg"].params == (("ptr", Type("int", "addr")), ("size", Type("int", "u64")))
    fails = spec.calls["reg"].clauses(S.Fails)[0]
    quant = fails.cond
    assert spec.type_of(quant) == BOOL
    assert spec.type_of(quant.body.left) == RANGE and spec.type_of(quant.body.right) == RANGE
    rule = spec.rules["T-OVERLAP"]
    assert (rule.kind, rule.call, rule.source.name) == ("fails", "reg", "DOC")
    assert rule.summary == "fails T-OVERLAP: 1 when (exists r in regs: r.range overlaps range(ptr, size))"


def test_rule_kinds_of_the_bundled_specs():
    acl = load_spec("acl")
    assert acl.rules["ACL-REG-ALIGN"].kind == "undefined"
    assert acl.rules["ENV-FREE-UNKNOWN"].kind == "requires"
    assert acl.rules["ACL-REG-OVERLAP"].kind == "fails"
    assert acl.rules["ACL-REG-ENV"].kind == "may-fail"
    assert acl.rules["ACL-REG-WRAP"].kind == "unspecified"
    assert acl.rules["ACL-GETDEV-STABLE"].kind == "ensures"
    assert acl.rules["ACL-REG-EFFECT"].kind == "effect"
    assert acl.rules["ACL-INV-NO-OVERLAP"].kind == "invariant" and acl.rules["ACL-INV-NO-OVERLAP"].call is None
    cupva = load_spec("cupva")
    assert cupva.rules["PVA-REG-THREAD-SAFETY"].kind == "usage"
    assert cupva.rules["PVA-REG-API-GROUP"].kind == "usage"
    assert cupva.status_type == Type("enum", "Error") and cupva.success == "ok" and acl.success == 0


@pytest.mark.parametrize("name", ["acl", "cupva", "cuda", "hip"])
def test_every_bundled_rule_cites_a_declared_source(name):
    spec = load_spec(name)
    for rule in spec.rules.values():
        assert rule.cite is not None and rule.source is not None, rule.rule
        assert rule.cite.clause.strip() and rule.source.name in spec.sources
    assert spec.warnings == ()  # the bundled specs are lint-clean


def test_versions_compare_as_numbers_and_normalise():
    spec = check(HEADER + "const V: version = 5.10.0\nparam k: version = 5.10.1\ndef newer = k > V\n")
    assert spec.consts["V"][1] == (5, 10)
    assert spec.params["k"][1] == (5, 10, 1)
    assert (5, 10) < (5, 10, 1) < (5, 11)  # tuples: the order the semantics uses


@pytest.mark.parametrize("snippet, code", [
    ("enum A { X, Y }\nenum B { Y, Z }\n", "E0202"),  # a member in two enums
    ("record R { key: u64 }\n", "E0202"),  # `key` and `range` are reserved fields
    ("record R { size: u64 }\ntable t: addr -> R sized by length\n", "E0203"),
    ("record R { size: u64 }\ntable t: Mode -> R sized by size\n", "E0201"),
    ("record R { size: u64 }\ntable t: addr -> R\ndef d = exists r in t: r.range.size > 0\n", "E0203"),
    ("record R { size: u64 }\ntable t: addr -> R sized by size\ndef r = 1\ndef d = exists r in t: true\n", "E0209"),
    ("const A: int = B\nconst B: int = 1\n", "E0201 E0303"),  # constants only use earlier constants
    ("var v: int = 0\nconst C: int = v\n", "E0208 E0303"),
    ("def d = aligned(1)\n", "E0302"),
    ("def d = sqrt(4)\n", "E0201"),
    ("def d = true + 1\n", "E0301"),
    ("def d = 5.10 < 3\n", "E0301"),
    ("record R { size: u64 }\ntable t: addr -> R sized by size\ndef d = 1 overlaps t\n", "E0301 E0301"),
    ("def d = DOC\n", "E0208"),  # a source is not a value
    # Found by testing: a declaration named in its own value was a KeyError (exit 3).
    # (E0303 too: the value is not a constant expression either)
    ("const A: int = A + 1\n", "E0201 E0303"),
    ("const A: int = min(A, 1)\n", "E0303 E0201"),
    ("param p: int = p\n", "E0201 E0303"),
    ("var v: int = v + 1\n", "E0201 E0303"),
    ("var v: bool = not v\n", "E0303 E0201"),
    # Found by testing: a table compared or defined as a value passed the check and crashed replay.
    ("record R { size: u64 }\ntable t: addr -> R\ndef d = t == t\n", "E0301"),
    ("record R { size: u64 }\ntable t: addr -> R\ndef d = t\ndef e = 5 in d\n", "E0301"),
    # Found by testing: a table as a set's element passed the check and crashed replay and simulate (exit 3);
    # entries and sets as elements are no values either (no back end compares them).
    ("record R { size: u64 }\ntable t: addr -> R\ndef d = t in {t}\n", "E0301"),
    ("record R { size: u64 }\ntable t: addr -> R\ngroup g when t in {t}\n", "E0301"),
    ("record R { size: u64 }\ntable t: addr -> R\ndef d = exists r in t: r in {r}\n", "E0301"),
    ("def d = {1} in {{1}, {2}}\n", "E0301 E0301"),
    # Found by testing: values outside their declared type were accepted.
    ("const B: u32 = -1\n", "E0304"),
    ("const A: u64 = 0x1ffffffffffffffff\n", "E0304"),
    ("const C: i64 = 2 ** 63\n", "E0304"),
    ("param p: u32 = 4294967296\n", "E0304"),
    ("var v: u64 = -1\n", "E0304"),
    ("flags F: u32 { A = 1 }\nconst E: F = 0x100000000\n", "E0304"),
    ("const D: u64 = 2**64 - 1\nconst N: i64 = -(2**63)\n", ""),
    # Found by testing: records elsewhere than a table's rows passed the check, with misleading errors later.
    ("record R { size: u64, other: R }\n", "E0301"),
    ("record R { size: u64 }\ntable w: R -> R\n", "E0301"),
    ("record R { size: u64 }\nvar v: R = 0\n", "E0301"),
    # Found by testing: a range argument passed the check, and no trace could give one.
    ("call f(r: range) {\n  fails D-X: 1 when r.size == 0\n    cite DOC \"x\"\n}\n", "E0301"),
])
def test_single_errors(snippet, code):
    if not code:
        check(HEADER + snippet)  # no error
        return
    assert codes(HEADER + snippet) == code.split()


@pytest.mark.parametrize("status", ["bool success true", "version success 1.0"])
def test_a_status_no_trace_can_give_is_an_error(status):
    """Found by testing: `status bool` and `status version` passed the check, and no trace could
    then give a call's result (`ret` is an integer or an enum member's name: T0705, T0706)."""
    diags = errors(f'spec demo "t"\nsource DOC "doc.txt" "a document"\nstatus {status}\n')
    assert [(d.code, d.span.line, d.span.column) for d in diags] == [("E0301", 3, 8)]


def test_negating_a_non_integer_constant_is_a_diagnostic_not_a_crash():
    # regression: the constant folder used to raise TypeError on `-Off`
    diags = errors('spec demo "t"\nenum Mode { Off, On }\nstatus Mode success -Off\n')
    assert [(d.code, d.message) for d in diags] == [("E0301", "expected Mode, found int"),
                                                    ("E0301", "expected an integer, found Mode")]


def test_status_code_must_be_constant_names_the_real_problem():
    # regression: an argument used as a status code was reported as an unknown name
    assert codes(HEADER + "call f(x: int) {\n  fails T-X: x when x < 0\n    cite DOC \"x\"\n}\n") == ["E0303"]


def test_missing_header_and_duplicate_status():
    assert codes('source DOC "d" "t"\nstatus int success 0\n') == ["E0204"]
    assert codes(HEADER + "status int success 1\n") == ["E0202"]


# ---------------------------------------------------------------- one meaning per name (E0209, bindings)

def _names_of(spec) -> list[S.Name]:
    import dataclasses

    def walk(x):
        if isinstance(x, (list, tuple)):
            for y in x:
                yield from walk(y)
        elif dataclasses.is_dataclass(x):
            yield x
            for f in dataclasses.fields(x):
                if f.name != "span":
                    yield from walk(getattr(x, f.name))
    return [x for x in walk(spec.ast) if isinstance(x, S.Name)]


@pytest.mark.parametrize("name", ["acl", "cupva", "cuda", "hip", "tests/data/ops.spec"])
def test_every_name_of_a_checked_spec_has_one_binding(name):
    spec = load_spec(name)
    names = _names_of(spec)
    assert names and all(id(n) in spec.bindings for n in names)
    for n in names:
        b = spec.binding(n)
        assert b.name == n.name
        if b.kind == "var":
            assert n.name in spec.vars
        elif b.kind == "table":
            assert n.name in spec.tables
        elif b.kind in ("param", "const", "def"):
            assert n.name in {"param": spec.params, "const": spec.consts, "def": spec.defs}[b.kind]
        elif b.kind == "enum":
            assert n.name in spec.enum_of_member
        elif b.kind == "flag":
            assert n.name in spec.flag_member
        else:
            assert b.local and b.kind in ("input", "output", "bound")


def test_bindings_say_which_declaration_a_name_means():
    spec = check(HEADER + """
param strict: bool = true
const PAGE: u64 = 4096
enum Mode { Init, Run }
flags F: u32 { MAPPED = 0x2 }
record R { size: u64 }
table regs: addr -> R sized by size
var mode: Mode = Init
def running = mode == Run
call c(p: addr, f: F) -> (out: u64) {
  fails T-E: 1 when strict and p % PAGE != 0 and MAPPED in f and running and (exists r in regs: r.key == p)
    cite DOC "e"
  ensures T-O: out > 0
    cite DOC "o"
  effect T-X: { mode = Run }
    cite DOC "x"
}
""")
    kinds = {}
    for n in _names_of(spec):
        kinds.setdefault(n.name, set()).add(spec.binding(n).kind)
    assert kinds == {"strict": {"param"}, "p": {"input"}, "PAGE": {"const"}, "MAPPED": {"flag"}, "f": {"input"},
                     "running": {"def"}, "mode": {"var"}, "Run": {"enum"}, "r": {"bound"}, "out": {"output"},
                     "Init": {"enum"}}


SHADOWING = [
    ("var x: int = 0\ncall c(x: int) {\n  effect T-X: { x = x }\n    cite DOC \"x\"\n}\n", "state variable"),
    ("const K: int = 1\ncall c(K: int) {\n}\n", "constant"),
    ("param K: int = 1\ncall c(K: int) {\n}\n", "configuration parameter"),
    ("def K = 1\ncall c(K: int) {\n}\n", "definition"),
    ("enum E { K }\ncall c(K: int) {\n}\n", "enum member"),
    ("flags F: u32 { K = 0x1 }\ncall c(K: u32) {\n}\n", "flag"),
    ("record R { size: u64 }\ntable K: addr -> R\ncall c() -> (K: addr) {\n}\n", "table"),
    ("record K { size: u64 }\ncall c(K: int) {\n}\n", "record"),
    ("enum K { A }\ncall c(K: int) {\n}\n", "enum type"),
    ("group K when true\ncall c(K: int) {\n}\n", "API group"),
    ("call c(DOC: int) {\n}\n", "source"),
    ("var K: int = 0\nrecord R { size: u64 }\ntable t: addr -> R sized by size\ninvariant T-I: forall K in t: true\n"
     "  cite DOC \"i\"\n", "state variable"),
    ("var K: int = 0\nrecord R { size: u64 }\ntable t: addr -> R sized by size\npinned T-P: K in t where true\n"
     "  cite DOC \"p\"\n", "state variable"),
]


@pytest.mark.parametrize("snippet, what", SHADOWING)
def test_a_local_named_like_a_declaration_is_rejected(snippet, what):
    diags = [d for d in errors(HEADER + snippet) if d.code == "E0209"]
    assert len(diags) == 1 and f"the {what} declared at line" in diags[0].message
    assert diags[0].notes and diags[0].notes[0].span.line > 0


def test_a_quantified_variable_named_like_an_argument_is_rejected():
    diags = errors(HEADER + "record R { size: u64 }\ntable t: addr -> R sized by size\n"
                   "call c(p: addr) {\n  fails T-E: 1 when exists p in t: true\n    cite DOC \"e\"\n}\n")
    assert [d.code for d in diags] == ["E0209"] and "an argument in scope" in diags[0].message


def test_names_of_builtin_types_and_groups_like_members_are_allowed():
    # `munmap(addr: addr, ...)` as recorders write it; cuPVA's `group Init when vm == Init`.
    spec = check(HEADER + "enum Phase { Init }\nvar vm: Phase = Init\ngroup Init when vm == Init\n"
                 "event munmap(addr: addr, length: u64) {\n  usage T-G: only in Init\n    cite DOC \"g\"\n}\n")
    assert [n for n, _ in spec.calls["munmap"].params] == ["addr", "length"]


def test_an_enum_member_named_like_another_declaration_is_a_duplicate():
    assert "E0202" in codes(HEADER + "var Ready: bool = false\nenum State { Ready }\n")
    assert "E0202" in codes(HEADER + "const Done: int = 1\nflags F: u32 { Done = 0x1 }\n")


# ---------------------------------------------------------------- did you mean

SUGGESTIONS = [  # (snippet, code, the suggestion), each an unknown name of one category
    ("call c(size: u64) {\n  fails T-S: 1 when sise == 0\n    cite DOC \"s\"\n}\n", "E0201", "size"),  # argument
    ("const PAGE: int = 4096\ndef d = PAEG > 0\n", "E0201", "PAGE"),  # constant
    ("enum Mode { Off, Running }\nvar m: Mode = Off\ndef d = m == Runing\n", "E0201", "Running"),  # member
    ("enum Mode { Off, On }\nvar m: mode = Off\n", "E0201", "Mode"),  # a type, case aside
    ("var n: U64 = 0\n", "E0201", "u64"),  # a builtin type
    ("record Reg { size: u64 }\ntable t: addr -> Regs\n", "E0201", "Reg"),
    ("record Reg { size: u64 }\ntable t: addr -> Reg sized by sise\n", "E0203", "size"),
    ("record Reg { size: u64 }\ntable regs: addr -> Reg\ndef d = forall r in reg: true\n", "E0203", "regs"),
    ("record Reg { size: u64 }\ntable t: addr -> Reg sized by size\ndef d = forall r in t: r.sizes > 0\n",
     "E0203", "size"),
    ("record Reg { size: u64 }\ntable t: addr -> Reg sized by size\ndef d = forall r in t: r.rang.size > 0\n",
     "E0203", "range"),  # an entry's own fields count too
    ("def d = range(1, 2).bse > 0\n", "E0203", "base"),
    ("def d = algned(1, 2)\n", "E0201", "aligned"),
    ("var on: bool = true\ngroup Ready when on\ncall c() {\n  usage T-U: only in Redy\n    cite DOC \"u\"\n}\n",
     "E0201", "Ready"),
    ("record Reg { size: u64 }\ntable t: addr -> Reg\ncall c(p: addr) {\n  effect T-E: {\n"
     "    t[p] = { sise: 1 }\n  }\n    cite DOC \"e\"\n}\n", "E0203", "size"),  # insert
    ("record Reg { size: u64 }\ntable t: addr -> Reg\ncall c(p: addr) {\n  effect T-E: {\n"
     "    t[p].sise = 1\n  }\n    cite DOC \"e\"\n}\n", "E0203", "size"),  # update
]


@pytest.mark.parametrize("snippet, code, suggestion", SUGGESTIONS)
def test_an_unknown_name_suggests_the_closest_known_one(snippet, code, suggestion):
    (diag,) = [d for d in errors(HEADER + snippet) if d.code == code]
    assert [n.message for n in diag.notes] == [f"did you mean '{suggestion}'?"]


def test_suggestions_come_from_the_right_category():
    # `Regs` is a table, not a record: a record is what `->` needs, and there is none close.
    diags = errors(HEADER + "record Other { size: u64 }\ntable Regs: addr -> Other\ntable t: addr -> Reg\n")
    (diag,) = [d for d in diags if "unknown record" in d.message]
    assert diag.notes == ()
    # A source is no value, so a misspelt value never gets one.
    (diag,) = errors(HEADER + "def d = DOCS\n")
    assert diag.code == "E0201" and diag.notes == ()


def test_no_suggestion_when_nothing_is_close():
    (diag,) = errors(HEADER + "call c(ptr: addr) {\n  fails T-P: 1 when ptr == nil\n    cite DOC \"p\"\n}\n")
    assert diag.code == "E0201" and diag.notes == ()


def test_a_spec_full_of_unknown_names_gets_suggestions_on_the_first_ones_only():
    many = "".join(f"def d{i} = x{i}\n" for i in range(300))
    diags = errors(HEADER + "const x: int = 1\n" + many)
    assert len(diags) == 300 and 0 < sum(bool(d.notes) for d in diags) < 300


def test_did_you_mean_ignores_case_and_prefers_a_same_but_case_match():
    assert did_you_mean("SIZE", ["sizes", "size"]) == (Note("did you mean 'size'?"),)
    assert did_you_mean("mod", ["Mode", "Off"]) == (Note("did you mean 'Mode'?"),)
    assert did_you_mean("size", ["size"]) == ()  # the name itself is no suggestion
    assert did_you_mean("zzz", ["size"]) == ()
