"""Spec text -> AST. The only module that imports lark; the grammar is loaded once (LALR)."""

from __future__ import annotations

import difflib
import os
from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Transformer, v_args
from lark import __version__ as lark_version
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from . import syntax as S
from .diagnostics import Diagnostic, RegcheckError, error
from .files import private_cache_dir
from .source import Span

# Friendly names for the grammar's terminals, used in "expected ..." messages.
_TERMINAL_NAMES = {
    "NAME": "a name", "RULE_ID": "a rule ID (like ACL-REG-ALIGN)", "INT": "an integer", "STRING": "a string",
    "VERSION": "a version number", "QNAME": "a qualified name", "LBRACE": "'{'", "RBRACE": "'}'",
    "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "COLON": "':'", "COMMA": "','",
    "EQUAL": "'='", "MORETHAN": "'>'", "CMP_OP": "a comparison", "DOT": "'.'", "__ANON_0": "'->'",
}


@lru_cache(maxsize=1)
def _grammar() -> Lark:
    text = resources.files("checker.language").joinpath("grammar.lark").read_text(encoding="utf-8")
    # Building the LALR tables takes a good part of a start-up, so they are kept in a file (lark checks
    # the grammar's and options' hash stored in it, so a stale one is never used). lark loads that file
    # with pickle, so it lives only in a directory of this user's that nobody else can write, never in
    # the shared temp directory; where there is none, the tables are built each time.
    cache = grammar_cache_file()
    if cache is not None:
        try:
            return Lark(text, parser="lalr", propagate_positions=True, maybe_placeholders=True, cache=cache)
        except OSError:
            pass
    return Lark(text, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def grammar_cache_file() -> str | None:
    """Where the parse tables are cached: in `files.private_cache_dir()`; None (no cache) when
    there is no such folder."""
    folder = private_cache_dir()
    return None if folder is None else os.path.join(folder, f"grammar-lark-{lark_version}.cache")


def parse_spec(text: str, path: str = "<spec>") -> S.SpecFile:
    """Parse spec text; raise RegcheckError with one E01xx diagnostic on a syntax error."""
    try:
        tree = _grammar().parse(text)
    except UnexpectedInput as exc:
        raise RegcheckError([_syntax_diagnostic(exc, text, path)]) from None
    try:
        decls = _ToAst(path).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, RegcheckError):
            raise exc.orig_exc from None
        raise
    return S.SpecFile(path, tuple(decls), Span(path, 1, 1))


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    return f"'{tok.value}'"


def _expected(names: set[str]) -> str:
    # Closing brackets first: at the end of a file they are usually what is missing.
    readable = sorted({_terminal_name(n) for n in names if not n.startswith("$")},
                      key=lambda r: (r not in ("'}'", "')'", "']'"), r))
    if len(readable) > 8:
        readable = readable[:8] + ["..."]
    return ", ".join(readable)


def _terminal_name(terminal: str) -> str:
    if terminal in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[terminal]
    try:
        pattern = _grammar().get_terminal(terminal).pattern
    except KeyError:
        return terminal.lower()
    return f"'{pattern.value}'" if pattern.type == "str" else terminal.lower()


def _syntax_diagnostic(exc: UnexpectedInput, text: str, path: str) -> Diagnostic:
    line = getattr(exc, "line", 0) or 0
    col = getattr(exc, "column", 0) or 0
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if 0 <= exc.pos_in_stream < len(text) else "?"
        what = "unterminated string" if ch == '"' else f"unexpected character {ch!r}"
        hint = " (write `not` to negate; `!` only appears in `!=`)" if ch == "!" else ""
        return error("E0101", f"bad token: {what}{hint}", Span(path, line, col, line, col + 1))
    if isinstance(exc, UnexpectedEOF):
        last = text.rstrip().splitlines() or [""]
        return error("E0103", f"unexpected end of file; expected {_expected(set(exc.expected))}",
                     Span(path, len(last), len(last[-1]) + 1))
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    if tok.type == "$END":
        last = text.rstrip().splitlines() or [""]
        return error("E0103", f"unexpected end of file; expected {_expected(set(exc.expected))}",
                     Span(path, len(last), len(last[-1]) + 1))
    width = len(str(tok.value)) or 1
    hint = _slip_hint(tok, set(exc.expected), _accepted(exc), text)
    return error("E0102", f"unexpected {_describe_token(tok)}; expected {_expected(set(exc.expected))}{hint}",
                 Span(path, line, col, line, col + width))


# Finding what the parser would really accept replays its pending reductions once per terminal, at a
# cost that grows with the depth of its stack; deeper than this (only a pathological spec gets there)
# the hints make do with the terminals of the failing state.
_DEEPEST_STACK_FOR_ACCEPTS = 400


def _accepted(exc: UnexpectedToken) -> set[str]:
    """The terminals the parser would take where it failed."""
    parser = exc.interactive_parser
    if parser is None or len(parser.parser_state.state_stack) > _DEEPEST_STACK_FOR_ACCEPTS:
        return set(exc.expected)
    return set(exc.accepts or exc.expected)


# Operators written as words, suggested for a misspelt one wherever it stands: by the time such a word
# fails, the LALR parser has often reduced the expression before it, so the state no longer says that
# an operator could have come.
_OPERATOR_WORDS = ("overlaps", "contains", "implies")


def _slip_hint(tok: Token, expected: set[str], accepts: set[str], text: str) -> str:
    """A hint for the usual slips of someone used to C or Python, in parentheses, or "".

    `accepts` are the terminals the parser would really take here (`expected` can be wider: LALR
    merges states). A slip is told by the offending token and its left neighbour in the text rather
    than by `match_examples`: the same slip fails in many parser states (after a name, a `)`, a `]`,
    an integer...), and what tells them apart is the text."""
    left = text[tok.start_pos - 1] if tok.start_pos else ""  # the character just before the token
    right = text[tok.end_pos:].lstrip()[:1] if tok.end_pos is not None else ""  # the next one after it
    citable = "CITE" in expected or "CITE" in accepts
    if citable and (tok.type == "STRING" or (tok.type == "NAME" and right == '"')):
        return " (a citation is `cite SOURCE \"clause\"`)"
    if tok.type == "EQUAL" and "CMP_OP" in accepts:
        return " (write `==` to compare; `=` assigns, and only in an effect)"
    if tok.type == "AMPERSAND" and left == "&":
        return " (write `and` for a logical and; `&` is bitwise)"
    if tok.type == "VBAR" and left == "|":
        return " (write `or` for a logical or; `|` is bitwise)"
    if tok.type == "NAME":
        return _keyword_hint(str(tok.value), accepts)
    return ""


def _keyword_hint(word: str, accepts: set[str]) -> str:
    """`did you mean` for a name that is a misspelt keyword: one of those the parser takes here, or an
    operator word."""
    keywords = [k for k in map(_keyword_of, accepts) if k]
    close = (difflib.get_close_matches(word, keywords, n=1, cutoff=0.75)
             or difflib.get_close_matches(word, _OPERATOR_WORDS, n=1, cutoff=0.8))
    return f" (did you mean `{close[0]}`?)" if close else ""


def _keyword_of(terminal: str) -> str:
    """The word a keyword terminal stands for (`'when'` for WHEN), or "" for any other terminal."""
    try:
        pattern = _grammar().get_terminal(terminal).pattern
    except KeyError:
        return ""
    return pattern.value if pattern.type == "str" and pattern.value.isidentifier() else ""


def _int_value(text: str) -> int:
    return int(text.replace("_", ""), 0) if text.lower().startswith("0x") else int(text.replace("_", ""))


def _unquote(tok: Token) -> str:
    raw = str(tok)[1:-1]
    out, i = [], 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(nxt, nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@v_args(meta=True)
class _ToAst(Transformer):
    """Builds AST nodes bottom-up; each node records its span from lark's position metadata."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.path, 0, 0)
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tspan(self, tok: Token) -> Span:
        return Span(self.path, tok.line, tok.column, tok.end_line or tok.line, tok.end_column or tok.column + 1)

    # ---- top level
    def start(self, meta, items):
        return items

    def spec_header(self, meta, c):
        return S.SpecHeader(str(c[0]), _unquote(c[1]), self._span(meta))

    def source(self, meta, c):
        return S.SourceDecl(str(c[0]), _unquote(c[1]), _unquote(c[2]), self._span(meta))

    def param(self, meta, c):
        return S.ParamDecl(str(c[0]), c[1], c[2], self._span(meta))

    def name_list(self, meta, c):
        return tuple(str(t) for t in c)

    def enum(self, meta, c):
        return S.EnumDecl(str(c[0]), tuple(str(t) for t in c[1:]), self._span(meta))

    def _int_lit(self, tok: Token) -> S.IntLit:
        # The INT token admits "0x_" (digits only underscores); that is a bad token, not a crash.
        try:
            value = _int_value(str(tok))
        except ValueError:
            raise RegcheckError([error("E0101", f"bad token: malformed integer '{tok}'", self._tspan(tok))]) from None
        return S.IntLit(value, str(tok), self._tspan(tok))

    def flag_member(self, meta, c):
        return (str(c[0]), self._int_lit(c[1]))

    def flags(self, meta, c):
        return S.FlagsDecl(str(c[0]), c[1], tuple(c[2:]), self._span(meta))

    def const(self, meta, c):
        return S.ConstDecl(str(c[0]), c[1], c[2], self._span(meta))

    def status(self, meta, c):
        return S.StatusDecl(c[0], c[1], self._span(meta))

    def group(self, meta, c):
        return S.GroupDecl(str(c[0]), c[1], self._span(meta))

    def var(self, meta, c):
        return S.VarDecl(str(c[0]), c[1], c[2], self._span(meta))

    def field_decl(self, meta, c):
        return (str(c[0]), c[1])

    def record(self, meta, c):
        return S.RecordDecl(str(c[0]), tuple(c[1:]), self._span(meta))

    def sized(self, meta, c):
        return str(c[0])

    def table(self, meta, c):
        return S.TableDecl(str(c[0]), c[1], str(c[2]), c[3], self._span(meta))

    def def_decl(self, meta, c):
        return S.DefDecl(str(c[0]), c[1], self._span(meta))

    def invariant(self, meta, c):
        return S.InvariantDecl(str(c[0]), c[1], c[2], self._span(meta))

    def pinned(self, meta, c):
        return S.PinnedDecl(str(c[0]), str(c[1]), str(c[2]), c[3], c[4], self._span(meta))

    def type(self, meta, c):
        return S.TypeRef(str(c[0]), self._tspan(c[0]))

    # ---- calls and clauses
    def call_kind(self, meta, c):
        return str(c[0])

    def call_name(self, meta, c):
        return str(c[0])

    def arg(self, meta, c):
        return S.ArgDecl(str(c[0]), c[1], self._span(meta), c[2])

    def arg_list(self, meta, c):
        return tuple(c)

    def outputs(self, meta, c):
        return c[0]

    def call(self, meta, c):
        kind, name, params, outputs, clauses = c[0], c[1], c[2], c[3], c[4:]
        return S.CallDecl(kind, name, params or (), outputs or (), tuple(clauses), self._span(meta))

    def cite(self, meta, c):
        return S.Cite(str(c[0]), _unquote(c[1]), self._span(meta))

    def undefined(self, meta, c):
        return "undefined"

    def requires(self, meta, c):
        return S.Requires(str(c[0]), c[1], c[2] is not None, c[3], self._span(meta))

    def fails(self, meta, c):
        return S.Fails(str(c[0]), c[1], c[2], c[3], self._span(meta))

    def may_fail(self, meta, c):
        return S.MayFail(str(c[0]), c[1], c[2], c[3], self._span(meta))

    def unspecified(self, meta, c):
        return S.Unspecified(str(c[0]), c[1], c[2], self._span(meta))

    def ensures(self, meta, c):
        return S.Ensures(str(c[0]), c[1], c[2], self._span(meta))

    def usage_threads(self, meta, c):
        return S.NotThreadSafe(str(c[0]), c[1], self._span(meta))

    def usage_groups(self, meta, c):
        return S.OnlyIn(str(c[0]), c[1], c[2], self._span(meta))

    def effect(self, meta, c):
        return S.Effect(str(c[0]), tuple(c[1:-1]), c[-1], self._span(meta))

    def order(self, meta, c):
        return S.Order(tuple(str(t) for t in c), self._span(meta))

    def any_failure(self, meta, c):
        return S.AnyFailure(c[0], self._span(meta))

    # ---- statements
    def if_stmt(self, meta, c):
        return S.If(c[0], tuple(c[1:-1]), c[-1] or (), self._span(meta))

    def else_part(self, meta, c):
        return tuple(c)

    def delete_stmt(self, meta, c):
        return S.Delete(str(c[0]), c[1], self._span(meta))

    def field_init(self, meta, c):
        return (str(c[0]), c[1])

    def insert_stmt(self, meta, c):
        return S.Insert(str(c[0]), c[1], tuple(c[2:]), self._span(meta))

    def update_stmt(self, meta, c):
        return S.Update(str(c[0]), c[1], str(c[2]), c[3], self._span(meta))

    def assign_stmt(self, meta, c):
        return S.Assign(str(c[0]), c[1], self._span(meta))

    # ---- expressions
    def _bin(self, op, meta, c):
        return S.Binary(op, c[0], c[-1], self._span(meta))

    def implies_op(self, meta, c):
        return self._bin("implies", meta, c)

    def or_op(self, meta, c):
        return self._bin("or", meta, c)

    def and_op(self, meta, c):
        return self._bin("and", meta, c)

    def not_op(self, meta, c):
        return S.Unary("not", c[0], self._span(meta))

    def quant_kind(self, meta, c):
        return str(c[0])

    def quant(self, meta, c):
        return S.Quant(c[0], str(c[1]), str(c[2]), c[3], self._span(meta))

    def compare(self, meta, c):
        return S.Binary(str(c[1]), c[0], c[2], self._span(meta))

    def in_op(self, meta, c):
        return self._bin("in", meta, c)

    def overlaps_op(self, meta, c):
        return self._bin("overlaps", meta, c)

    def contains_op(self, meta, c):
        return self._bin("contains", meta, c)

    def bitor_op(self, meta, c):
        return self._bin("|", meta, c)

    def bitand_op(self, meta, c):
        return self._bin("&", meta, c)

    def arith(self, meta, c):
        return S.Binary(str(c[1]), c[0], c[2], self._span(meta))

    def power_op(self, meta, c):
        return self._bin("**", meta, c)

    def neg(self, meta, c):
        return S.Unary("-", c[0], self._span(meta))

    def invert(self, meta, c):
        return S.Unary("~", c[0], self._span(meta))

    def field(self, meta, c):
        return S.Field(c[0], str(c[1]), self._span(meta))

    def index(self, meta, c):
        return S.Index(str(c[0]), c[1], self._span(meta))

    def builtin(self, meta, c):
        return S.Builtin(str(c[0]), tuple(c[1:]), self._span(meta))

    def int_lit(self, meta, c):
        return self._int_lit(c[0])

    def version_lit(self, meta, c):
        return S.VersionLit(tuple(int(p) for p in str(c[0]).split(".")), self._tspan(c[0]))

    def true_lit(self, meta, c):
        return S.BoolLit(True, self._span(meta))

    def false_lit(self, meta, c):
        return S.BoolLit(False, self._span(meta))

    def name(self, meta, c):
        return S.Name(str(c[0]), self._tspan(c[0]))

    def set_lit(self, meta, c):
        return S.SetLit(tuple(c), self._span(meta))

