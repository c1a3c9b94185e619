"""The replayer's fast path: a decoder for lines in the plain shape and one generated function per
call that checks and applies such a line, for the events that need no explanation.

Why: most events of a long trace are plain, conforming calls. The general path decodes a line into
dicts, builds a TraceEvent, normalises its arguments, computes the mask, looks up the outcome set
and applies the effect through several calls; that costs several times the parsing of the line.

Decoding: msgspec reads each line straight into a struct per call (a tagged union on "call"),
checking in C what the general path would check in Python: exactly the documented fields, each of
its type and range. The shape it takes is a strict subset of what `checker.trace.events` and the
replayer's normalisation accept, with the same values: JSON integers within int64 and within the
parameter's range, integers spelt as "0x..." strings, flag names or lists of flag names (the step
reads them, `spelt_value`, and checks the range), booleans, enum and status names, a conformance
test's `expect` (checked as the reader checks it, then ignored, as replay ignores it); no unknown
fields or nulls. A `ret` is taken in the status type's own form (a JSON integer, which may also be
spelt "0x...", or one of an enum status's members), and an environment event's C status 0 (the
JSON integer 0 or "0x0") in a spec whose statuses are names, which means success (`event_status`);
the general path alone reads the other forms (a signed "-0x0") and rejects the rest (an unknown
status name, another C status).
msgspec is as strict a JSON reader as orjson (the general path's), and where orjson reads an
integer beyond int64 as a float, the fast path does not take the line.

Steps: each call's step takes its struct and runs straight-line code on local variables. It is not
a second semantics: the clause tests come from `Semantics.mask_tests` and the effect from the same
emitter and statements as `checker.model.semantics`; outcome sets come from `Semantics.allowed_for_mask`.

Where the C module is built, each call's step runs instead on its step machine (`Step`, compiled
from the same AST by `checker.fast.stepcode`). The generated Python step stays the reference; it runs
for a call the machine cannot run, and for every call with `MACHINE_STEPS` False (as tests set).

It is conservative: a line the decoder does not take, and a line its step returns False for (having
changed nothing), goes to the general path, which checks and explains it from the same state. A
call with a thread-safety rule has a step when the replayer hands over its windows of recent calls
(`recent`): the step checks the line's tid/t0/t1 against the window as the general path does and
adds the line to it once the line is handled (the machine's steps do the same, in C).
A step returns False when the line overlaps a call from another thread, the fields do not fit together (outputs missing on success, t1
before t0), any clause test fails to evaluate, a rule is broken, the documents are silent, or the
recorded result is not allowed. tests/test_fastpath.py replays random and corpus traces both ways
and compares reports and states.
"""

from __future__ import annotations

import weakref
from collections import deque
from typing import Annotated, Any, Callable, Literal, Mapping, NamedTuple, Union

import msgspec
from msgspec import UNSET, Meta, UnsetType

from ..language import syntax as S
from ..language.checked import Type
from ..model.codegen import RUNTIME, CodeScope, Emitter, bound_tables
from ..model.outcomes import EvalError
from ..model.semantics import Semantics
from ..model.state import NATIVE, State
from ..trace.events import HEX_UINT, NUMERIC_START, is_int_string
from . import stepcode

Step = Callable[[Any, int], bool]  # step(decoded line, line number) -> handled
VERDICT_CACHE_LIMIT = 4096  # (mask, status) pairs remembered per call; memory must not grow with a trace
THREAD_WINDOW = 64  # calls per non-thread-safe function kept for the overlap check (the replayer's too)
# What `FastPath.decode` raises for a line not in the fast path's shape. Older msgspec releases
# (0.18) let invalid UTF-8 in a tag through as a UnicodeDecodeError, a ValueError. msgspec recurses
# while skipping deeply nested values: such a line goes to the general path, which reports it (T0701).
DECODE_ERRORS = (msgspec.DecodeError, ValueError, RecursionError)


class FastPath(NamedTuple):
    """The fast path of one replay: `decode(raw)` gives a line's event struct (or raises one of
    DECODE_ERRORS), and `steps[type(struct)]` is the step that takes it."""

    decode: Callable[[bytes], Any]
    steps: dict[type, Step]


class _Compiled(NamedTuple):
    decode: Callable[[bytes], Any]
    makers: dict[type, tuple[str, Callable]]  # event struct -> (call, make); make(st, remember, OKS, OKF, decide, W)
    machines: dict[type, tuple[stepcode.Program, tuple]]  # event struct -> (program, (event, args, out) structs)


# Tests set it False: the generated Python steps even where the C step machine is built.
MACHINE_STEPS = True


_compiled: "weakref.WeakKeyDictionary[Semantics, _Compiled | None]" = weakref.WeakKeyDictionary()


def precompile(sem: Semantics) -> None:
    """Compile the fast path of `sem` now (it is cached per Semantics), e.g. before forking workers
    that then inherit it instead of each compiling it."""
    if sem not in _compiled:
        _compiled[sem] = _compile(sem)


def fast_path(sem: Semantics, st: State, remember: Callable[[int, str], None],
              recent: dict[str, deque] | None = None) -> FastPath | None:
    """The decoder and the step functions of the calls that have one, bound to a replay's state;
    None when no call has a fast path.

    `remember(line, call)` is called after a success effect that changed a table or variable (the
    changes are in `st.journal`), as the replayer does on its general path. `recent` is the
    replayer's windows of recent calls of non-thread-safe functions (call -> deque of (tid, t0, t1,
    line), THREAD_WINDOW long), which the general path reads and fills too; without it such calls
    have no step."""
    return fast_path_deciding(sem, st, remember, recent, _decider)


def fast_path_deciding(sem: Semantics, st: State, remember: Callable[[int, str], None],
                       recent: dict[str, deque] | None,
                       decider: Callable[[Semantics, str], Callable[[dict, Any, int, Any], bool]]) -> FastPath | None:
    """`fast_path` with each call's verdicts asked of `decider(sem, call)`: a function
    decide(cache, key, mask, status) -> whether an event with this mask and status has no finding
    (`fast_path` asks the documents). A step remembers a True verdict per mask (and status), not a
    False one: a decide that always says False sees every mask the step computes, which is how
    `regcheck simulate` reads a call's mask from its step without taking the step."""
    precompile(sem)
    compiled = _compiled[sem]
    if compiled is None:
        return None
    steps: dict[type, Step] = {_NoCall: _never}
    tables = tuple(st.tables[t] for t in sem.spec.tables)
    machine = MACHINE_STEPS and NATIVE is not None and all(isinstance(t, NATIVE.TableCore) for t in tables)
    for struct, (call, make) in compiled.makers.items():
        decide = decider(sem, call)
        calls = None
        if sem.calls[call].thread_rule is not None:
            if recent is None:
                continue
            calls = recent.get(call)
            if calls is None:
                calls = recent[call] = thread_window()
        if machine and struct in compiled.machines:
            program, structs = compiled.machines[struct]
            binding = (tables, st.vars, st.journal, st, remember, decide, {}, {}, call, UNSET, (EvalError, KeyError),
                       calls)
            steps[struct] = NATIVE.Step(program.code, program.consts, program.sets, program.names, program.entries,
                                        program.param_kinds, program.output_kinds, structs, program.enums,
                                        program.success, binding)
        else:
            steps[struct] = make(st, remember, {}, {}, decide, calls)
    return FastPath(compiled.decode, steps)


def window(maxlen: int) -> deque:
    """An empty window of the last `maxlen` 4-tuples appended, oldest first, that counts every item
    ever appended in `pushed` (the replayer's removals; its windows of recent calls come from
    `thread_window`): a CountingWindow, or where the C module is built its Ring (the same items,
    kept without a tuple object each)."""
    return CountingWindow(maxlen=maxlen) if NATIVE is None else NATIVE.Ring(maxlen)


class CountingWindow(deque):
    """A deque(maxlen) that also counts the items ever appended (`pushed`; clear keeps the count),
    as the C module's Ring does: the replayer's index of its removals reads how many came since it
    last looked, instead of scanning the whole window for every finding."""

    __slots__ = ("pushed",)

    def __init__(self, iterable: Any = (), maxlen: int | None = None) -> None:
        super().__init__(iterable, maxlen)
        self.pushed = len(self)

    def append(self, item: tuple) -> None:
        self.pushed += 1
        super().append(item)


class ThreadWindow(deque):
    """The pure-Python window of recent calls of one non-thread-safe function: a deque of (tid, t0,
    t1, line), THREAD_WINDOW long, that also keeps the latest t1 it was ever given.

    A call that starts after that end meets no entry, so the generated steps skip the scan: in a
    trace whose calls run one at a time in timestamp order, every call. It is an upper bound, never
    lowered when an entry leaves the window, so the skip is exact."""

    __slots__ = ("latest_end",)

    def __init__(self) -> None:
        super().__init__(maxlen=THREAD_WINDOW)
        self.latest_end = float("-inf")

    def append(self, item: tuple) -> None:
        end = item[2]
        if end > self.latest_end:
            self.latest_end = end
        super().append(item)


def thread_window() -> deque:
    """An empty window of recent calls of a non-thread-safe function (the replayer's, which its
    general path and the steps read and fill): a ThreadWindow, or where the C module is built its
    Ring, which the C steps scan and fill directly."""
    return ThreadWindow() if NATIVE is None else NATIVE.Ring(THREAD_WINDOW)


def _never(o: Any, line: int) -> bool:
    return False


class EventMaker(NamedTuple):
    """How to hand a call to its step from values rather than from a line (`event_makers`)."""

    step: Step
    make: Callable[[tuple, tuple, Any], Any]  # make(inputs, outputs, status) -> the event struct
    bounds: tuple[tuple[int, int] | None, ...]  # per input, then per output: the integers the decoder takes


def event_makers(sem: Semantics, fast: FastPath) -> dict[str, EventMaker]:
    """Per call with a step in `fast`: a maker of the struct the decoder gives for a line of that call
    with the given inputs and outputs (semantics values in declaration order: integers, booleans,
    enum member names) and status, for callers that hold values rather than lines (`regcheck
    simulate`). The struct is built as is, without the decoder's checks: the caller hands the step
    only integers within `bounds` (the decoder is what keeps the step's integers within int64)."""
    makers: dict[str, EventMaker] = {}
    for struct, step in fast.steps.items():
        if struct is _NoCall:
            continue
        made = _struct_makers.get(struct)
        if made is None:  # reading a struct's field types is slow: once per struct
            call = struct.__struct_config__.tag
            types = {f.name: f.type for f in msgspec.structs.fields(struct)}
            bounds = tuple(None if sp is None else (sp[1], sp[2]) for sp in stepcode.field_spellings(sem, call))
            made = _struct_makers[struct] = (call, _struct_maker(struct, _member_struct(types["args"]),
                                                                 _member_struct(types["out"])), bounds)
        call, make, bounds = made
        makers[call] = EventMaker(step, make, bounds)
    return makers


_struct_makers: "weakref.WeakKeyDictionary[type, tuple]" = weakref.WeakKeyDictionary()


class LineValues(NamedTuple):
    """The values of a decoded line, as the replayer's normalisation reads them (`line_readers`)."""

    call: str
    params: tuple[str, ...]  # the call's parameters, in declaration order
    inputs: tuple  # their values, in the same order
    status: Any  # the ret (an environment event without one: the spec's success)
    outs: dict[str, Any]  # the outputs the line has


def line_readers(sem: Semantics, fast: FastPath) -> dict[type, Callable[[Any], LineValues | None]]:
    """Per call with a step in `fast`: read(struct) -> the values of a line the decoder gave as that
    struct (integers, booleans, enum members, as `Replayer.normalise` reads them), for callers that
    need them besides the step's verdict (`regcheck execute`). An integer spelt otherwise than as a
    JSON integer (a "0x..." string, a flag's name or a list of them) is read as the step's machine
    reads it (`spelt_value`); None for a line with one that rule does not take (out of its field's
    bounds): only the general path reads those."""
    readers: dict[type, Callable[[Any], LineValues | None]] = {}
    for struct in fast.steps:
        if struct is not _NoCall:
            readers[struct] = _line_reader(sem, struct.__struct_config__.tag)
    return readers


def _line_reader(sem: Semantics, call: str) -> Callable[[Any], LineValues | None]:
    info = sem.calls[call].info
    params, outputs = tuple(n for n, _ in info.params), tuple(n for n, _ in info.outputs)
    spelt = tuple((i, sp) for i, sp in enumerate(stepcode.field_spellings(sem, call)) if sp is not None)
    status_spelt = stepcode.status_spelling(sem)
    n, success, astuple, new_tuple = len(params), sem.success, msgspec.structs.astuple, tuple.__new__
    every_field_spelt = bool(spelt) and len(spelt) == n + len(outputs)
    members = _event_status_members(sem, call)

    def read(o: Any) -> LineValues | None:
        inputs = astuple(o.args) if params else ()
        got = astuple(o.out) if outputs and o.out is not UNSET else ()
        plain = every_field_spelt  # (then a line whose fields are all JSON integers or absent, the
        if plain:                  # usual line, has no spelt field to read)
            for v in inputs:
                if v.__class__ is not int and v is not UNSET:
                    plain = False
                    break
            for v in got:
                if v.__class__ is not int and v is not UNSET:
                    plain = False
                    break
        if not plain:
            for i, spelling in spelt:
                v = inputs[i] if i < n else (got[i - n] if got else 0)
                if v.__class__ is not int and v is not UNSET:
                    v = spelt_value(v, spelling)
                    if v is None:
                        return None
                    if i < n:
                        inputs = (*inputs[:i], v, *inputs[i + 1:])
                    else:
                        got = (*got[:i - n], v, *got[i - n + 1:])
        if not got:
            outs = {}
        elif UNSET in got:
            outs = {k: v for k, v in zip(outputs, got) if v is not UNSET}
        else:
            outs = dict(zip(outputs, got))
        status = o.ret
        if status is UNSET:
            status = success
        elif members is not None:
            status = event_status(status, members, success)
            if status is None:
                return None
        elif status.__class__ is str and status_spelt is not None:
            status = spelt_value(status, status_spelt)
            if status is None:
                return None
        # LineValues(...), without the frame of its generated __new__ (once per line)
        return new_tuple(LineValues, (call, params, inputs, status, outs))
    return read


def _event_status_members(sem: Semantics, call: str) -> frozenset | None:
    """The status names of a spec whose statuses are names, where `call` is an environment event
    (whose `ret` may also be the C status 0: `event_status`); None otherwise."""
    t = sem.spec.status_type
    if sem.calls[call].info.decl.kind != "event" or t.kind != "enum":
        return None
    return frozenset(sem.spec.enums[t.name])


def _member_struct(t: Any) -> type:
    """The struct type of a field typed `S` or `S | UnsetType`."""
    if isinstance(t, type) and issubclass(t, msgspec.Struct):
        return t
    return next(m for m in t.__args__ if isinstance(m, type) and issubclass(m, msgspec.Struct))


def _struct_maker(event: type, args: type, out: type) -> Callable[[tuple, tuple, Any], Any]:
    no_outputs = out()  # the steps only read structs: one serves every event without outputs

    def make(inputs: tuple, outputs: tuple, status: Any) -> Any:
        return event(args=args(*inputs), ret=status, out=out(*outputs) if outputs else no_outputs)
    return make


def spelt_value(v: Any, spelling: stepcode.Spelling) -> int | None:
    """The integer a spelt field stands for (a "0x..." string, a flag's name, a list of flag names
    the decoder has checked), or None when it is outside [lo, hi] or not one of these: the general
    path then reads the line. The machine's `load` reads spellings by the same rule."""
    names, lo, hi = spelling
    if v.__class__ is str:
        if v[:2] in ("0x", "0X") and HEX_UINT(v):
            n = int(v, 16)
        elif names is not None and v in names:
            n = names[v]
        else:
            return None
    else:
        n = 0
        for x in v:
            n |= names[x]
    return n if lo <= n <= hi else None


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


def _compile(sem: Semantics) -> _Compiled | None:
    em = Emitter(sem.spec, sem.config)
    lines: list[str] = []
    names: dict[type, tuple[str, str]] = {}
    machines: dict[type, tuple[stepcode.Program, tuple]] = {}
    for i, call in enumerate(sem.calls):
        structs = _event_structs(sem, em, call, i)
        code = _step_source(sem, em, call, f"make{i}") if structs is not None else None
        if code is not None:
            lines += code
            names[structs[0]] = (call, f"make{i}")
            program = _program(sem, call)
            if program is not None:
                machines[structs[0]] = (program, structs)
    if not names:
        return None
    ns = dict(RUNTIME)
    ns["EvalError"] = EvalError
    ns["K"] = tuple(em.consts)
    ns["U"] = UNSET
    ns["SPELT"] = spelt_value
    ns["EVENT_STATUS"] = event_status
    ns["ThreadWindow"] = ThreadWindow
    exec(compile("\n".join(lines), f"<regcheck fast path of {sem.spec.name}>", "exec"), ns)  # generated from the AST
    decoder = msgspec.json.Decoder(Union[(_NoCall, *names)])  # type: ignore[valid-type]
    return _Compiled(decoder.decode, {struct: (call, ns[name]) for struct, (call, name) in names.items()}, machines)


def _program(sem: Semantics, call: str) -> stepcode.Program | None:
    """The step-machine code of a call's step, where the C module is built."""
    if NATIVE is None:
        return None
    return stepcode.compile_step(sem, call, NATIVE.OPCODES, NATIVE.MAX_REGS, NATIVE.MAX_MASK_BITS)


INT64_MIN, INT64_MAX = stepcode.INT64_MIN, stepcode.INT64_MAX  # msgspec's bounds must fit an int64; orjson reads larger ints as floats


def _wire_type(em: Emitter, t: Type, spelt: bool = True) -> Any:
    """The msgspec type of the JSON values the fast path takes for a value of type `t` (a strict
    subset of what `coerce_value` takes), or None when it takes none (that call then has no fast
    step). Integers are kept within int64, which also keeps them where orjson, the general path's
    decoder, reads them as integers. An integer may also arrive spelt (`stepcode.spelling_of`): any
    string, which the step reads as "0x..." hex or a flag's name or else leaves to the general
    path, and for flags a list of the type's flag names, which the decoder checks."""
    if t.kind in ("int", "flags"):
        flag_names, lo, hi = stepcode.spelling_of(em.spec, t)  # the bounds within int64, and the names
        if lo > hi:
            return None
        if not spelt:
            return Annotated[int, Meta(ge=lo, le=hi)]
        spellings = (str, list[Literal[tuple(flag_names)]]) if flag_names else (str,)
        return Union[(Annotated[int, Meta(ge=lo, le=hi)], *spellings)]
    if t.kind == "bool":
        return bool
    if t.kind == "enum":
        members = em.spec.enums[t.name]
        if not members or any(m[:1] in NUMERIC_START for m in members):
            return None
        return Literal[tuple(members)]
    return None  # versions and the rest: always the general path


TIME = Annotated[int, Meta(ge=0, le=INT64_MAX)]
_STATUS_ITEM = Union[Annotated[int, Meta(ge=INT64_MIN, le=INT64_MAX)], str]  # beyond int64: the general path


class _ExpectSuccess(msgspec.Struct, tag_field="outcome", tag="success", forbid_unknown_fields=True):
    """A conformance test's `expect` of a success, in the shape `trace.events` checks it (replay
    only checks it; `regcheck conform` reads it)."""

    rule: Annotated[str, Meta(min_length=1)]


class _ExpectFailure(msgspec.Struct, tag_field="outcome", tag="failure", forbid_unknown_fields=True,
                     rename={"except_": "except"}):
    rule: Annotated[str, Meta(min_length=1)]
    codes: list[_STATUS_ITEM] | UnsetType = UNSET
    except_: list[_STATUS_ITEM] | UnsetType = UNSET

    def __post_init__(self):
        # The checks the decoder's types cannot say: not both lists, and a string that starts like a
        # number must be a trace integer. A line failing them is the general path's to report.
        if self.codes is not UNSET and self.except_ is not UNSET:
            raise ValueError("both codes and except")
        for items in (self.codes, self.except_):
            if items is not UNSET and any(x.__class__ is str and x[:1] in NUMERIC_START and not is_int_string(x)
                                          for x in items):
                raise ValueError("a malformed integer string")


EXPECT = Union[_ExpectSuccess, _ExpectFailure]
TID = Annotated[int, Meta(ge=INT64_MIN, le=INT64_MAX)] | str


def _fields_struct(name: str, fields: list[tuple[str, Any]], optional: bool = False,
                   defaults: Mapping[str, Any] | None = None) -> type | None:
    """A struct of fields `f0, f1, ...` renamed to the given JSON names, each required (or taking
    its value in `defaults` when absent: an input with a default, `CallInfo.defaults`), or with
    `optional` each UNSET when absent; unknown names are an error. None when a field has no wire type."""
    if any(t is None for _, t in fields):
        return None
    defaults = defaults or {}
    slots = [(f"f{i}", t | UnsetType, UNSET) if optional else
             (f"f{i}", t, defaults[n]) if n in defaults else (f"f{i}", t) for i, (n, t) in enumerate(fields)]
    # (the fields with a default come last: the type checker holds a spec's inputs to that, E0301)
    return msgspec.defstruct(name, slots, rename={f"f{i}": n for i, (n, _) in enumerate(fields)},
                             forbid_unknown_fields=True, gc=False)  # gc=False: as the event struct's


def _event_structs(sem: Semantics, em: Emitter, call: str, index: int) -> tuple[type, type, type] | None:
    """The msgspec structs of one call's lines in the fast path's shape (the event, tagged by
    "call", and its args and out); None when some field has no wire type."""
    info = sem.calls[call].info
    # An input a line leaves out takes its default here, as in `Replayer.normalise`: both steps
    # (the Python one and the C module's) then read the struct's fields as if the line had it.
    args = _fields_struct(f"Args{index}", [(p, _wire_type(em, t)) for p, t in info.params], defaults=dict(info.defaults))
    out = _fields_struct(f"Out{index}", [(p, _wire_type(em, t)) for p, t in info.outputs], optional=True)
    status = _status_wire_type(sem, em, info.decl.kind == "event")
    if args is None or out is None or status is None:
        return None
    fields: list[tuple] = [("args", args) if info.params else ("args", args | UnsetType, UNSET)]
    fields.append(("ret", status | UnsetType, UNSET) if info.decl.kind == "event" else ("ret", status))
    fields += [("out", out | UnsetType, UNSET), ("tid", TID | UnsetType, UNSET),
               ("t0", TIME | UnsetType, UNSET), ("t1", TIME | UnsetType, UNSET), ("expect", EXPECT | UnsetType, UNSET)]
    # kw_only: a required "ret" may follow the optional "args". gc=False: a decoded line cannot be in
    # a reference cycle (nothing changes it), so the collector need not track one struct per line.
    event = msgspec.defstruct(f"Event{index}", fields, tag_field="call", tag=call, forbid_unknown_fields=True,
                              kw_only=True, gc=False)
    return event, args, out


def _status_wire_type(sem: Semantics, em: Emitter, event: bool = False) -> Any:
    t = sem.spec.status_type
    # A status is taken as a JSON integer (or any string, which the step reads as "0x..." or leaves
    # to the general path: `stepcode.status_spelling`), or as an enum member.
    if event and t.kind == "enum" and _wire_type(em, t) is not None:
        # An environment event may also carry its C function's status 0 (`event_status`), as
        # the JSON integer 0 or a "0x..." string: any string, which the step reads as a member's name
        # or else as that zero.
        return Union[str, Annotated[int, Meta(ge=0, le=0)]]
    return _wire_type(em, t, spelt=t.kind == "int") if t.kind in ("int", "enum") else None


_C_ZERO: stepcode.Spelling = (None, 0, 0)


def event_status(status: Any, members: frozenset, success: Any) -> Any:
    """The status of an environment event in a spec whose statuses are names, as the decoder gave
    it: a member's name, or the C status 0 its function returned (the JSON integer 0, the only
    integer the decoder takes there, or "0x0"), which means success (trace-format.md's `ret`);
    None for any other string (the general path reads it: an unknown name is an input error)."""
    if status.__class__ is int:
        return success
    if status in members:
        return status
    return success if spelt_value(status, _C_ZERO) is not None else None


class _NoCall(msgspec.Struct, tag_field="call", tag="\x00", forbid_unknown_fields=True):
    """A union member for a call name no spec has (NUL): with it the decoder always reads a tagged
    union, which requires the "call" field, even when only one call has a fast step."""


def clause_tests(sem: Semantics, em: Emitter, call: str,
                 tables: Mapping[str, tuple[str, str]]) -> tuple[list[str], list[str], list[str], list[str]]:
    """The Python tests of a call's mask clauses (in bit order) and of its `ensures`, for its step,
    with what they ask more than once asked once (`Emitter.with_shared_probes`; nothing between
    the mask and the ensures changes a table): (mask tests, ensures tests, the shared probes' locals,
    the row lookups that go first)."""
    info = sem.calls[call].info
    own = frozenset(n for n, _ in info.params)
    with_outputs = CodeScope(own | frozenset(n for n, _ in info.outputs), tables)
    ensures = info.clauses(S.Ensures)

    def mask_and_ensures() -> list[str]:
        return [*sem.mask_tests(em, call, CodeScope(own, tables)), *(em.expr(c.cond, with_outputs) for c in ensures)]
    code, shared, rows = em.with_shared_probes(mask_and_ensures, own, with_outputs.locals)
    cut = len(code) - len(ensures)
    return code[:cut], code[cut:], shared, rows


def _step_source(sem: Semantics, em: Emitter, call: str, name: str) -> list[str]:
    """`def name(st, remember, OKS, OKF, decide, W)` returning the step of `call`: it takes the line
    decoded into the call's event struct. OKS caches the verdicts of successes by mask, OKF those of
    failures by (mask, status); W is the window of recent calls of a non-thread-safe call (else None)."""
    cc = sem.calls[call]
    info = cc.info
    threads = cc.thread_rule is not None
    params = [n for n, _ in info.params]
    outputs = [n for n, _ in info.outputs]
    success = em.literal(sem.success)
    i1, i2 = "        ", "            "
    # The decoder has checked every field's type, range and name; what is left are the relations
    # between fields: all outputs on success, and t0 <= t1 (both or neither).
    body: list[str] = []
    spellings = stepcode.field_spellings(sem, call)
    if params:
        body.append(f"{i1}a = o.args")
        for i, p in enumerate(params):
            body.append(f"{i1}L_{p} = a.f{i}")
            if spellings[i] is not None:
                body += [f"{i1}if L_{p}.__class__ is not int:", f"{i2}L_{p} = SPELT(L_{p}, SP[{i}])",
                         f"{i2}if L_{p} is None: return False"]
    body.append(f"{i1}status = o.ret")
    status_spelt = stepcode.status_spelling(sem)
    if status_spelt is not None:  # an integer status may be spelt "0x...": the int it stands for is judged
        body += [f"{i1}if status.__class__ is str:", f"{i2}status = SPELT(status, SPS)",
                 f"{i2}if status is None: return False"]
    members = _event_status_members(sem, call)
    if members is not None:  # the C status 0 means success here, as does no ret
        body += [f"{i1}if status is U or status.__class__ is int:", f"{i2}status = {success}",
                 f"{i1}elif status not in SM:", f"{i2}status = EVENT_STATUS(status, SM, {success})",
                 f"{i2}if status is None: return False"]
    elif info.decl.kind == "event":
        body += [f"{i1}if status is U:", f"{i2}status = {success}"]
    if outputs:
        body += [f"{i1}ob = o.out", f"{i1}if ob is U:", f"{i2}if status == {success}: return False",
                 f"{i1}else:"]
        for i, p in enumerate(outputs):
            body.append(f"{i2}L_{p} = ob.f{i}")
            if spellings[len(params) + i] is not None:
                body += [f"{i2}if L_{p}.__class__ is not int and L_{p} is not U:",
                         f"{i2}    L_{p} = SPELT(L_{p}, SP[{len(params) + i}])",
                         f"{i2}    if L_{p} is None: return False"]
        present = " or ".join(f"L_{p} is U" for p in outputs)
        body.append(f"{i2}if ({present}) and status == {success}: return False")
    body += [f"{i1}t0 = o.t0", f"{i1}t1 = o.t1", f"{i1}if t0 is U or t1 is U:", f"{i2}if t0 is not t1: return False",
             f"{i1}elif t0 > t1: return False"]
    if threads:
        # The general path's check (Replayer._thread_clash): a call of another thread whose interval
        # meets this one's is a finding, for the general path to explain. `seen` is this line's
        # entry, added to the window once the line is handled.
        # A ThreadWindow's latest end skips the scan for a call that starts after every entry (WS:
        # the window is a C Ring, which has no such bound, and is always scanned).
        body += [f"{i1}tid = o.tid", f"{i1}seen = None", f"{i1}if t0 is not U and tid is not U:",
                 f"{i2}if WS or t0 <= W.latest_end:",
                 f"{i2}    for wt, w0, w1, _ in W:", f"{i2}        if wt != tid and w0 <= t1 and t0 <= w1: return False",
                 f"{i2}seen = (tid, t0, t1, line)"]

    # -- the clauses: the call's mask, then its outcome set for this status
    tables = bound_tables(sem.spec)
    constant = 0
    tests = []
    mask_tests, ensure_tests, shared, rows = clause_tests(sem, em, call, tables)
    for bit, test in enumerate(mask_tests):
        if test == "True":
            constant |= 1 << bit
        elif test != "False":
            tests.append(f"{i2}if {test}: m |= {1 << bit}")
    if shared:  # probes two clauses ask: each computed once, on first use (rows: looked up once, first)
        body.append(f"{i1}{' = '.join(shared)} = None")
    body += [f"{i1}try:", *(f"{i2}{r}" for r in rows), f"{i2}m = {constant}", *tests,
             f"{i1}except (EvalError, KeyError):", f"{i2}return False"]

    # -- a failure: allowed or not; a success: allowed, its promises on outputs, then the effect
    # (rolled back if it cannot be evaluated)
    # (a verdict cached as False is decided again: such a line leaves for the general path anyway)
    if threads:
        body += [f"{i1}if status != {success}:", f"{i2}ok = OKF.get((m, status)) or decide(OKF, (m, status), m, status)",
                 f"{i2}if ok and seen is not None: W.append(seen)", f"{i2}return ok"]
    else:
        body += [f"{i1}if status != {success}:",
                 f"{i2}return OKF.get((m, status)) or decide(OKF, (m, status), m, status)"]
    body += [f"{i1}if OKS.get(m) is not True and not decide(OKS, m, m, status): return False", f"{i1}J.clear()"]
    with_outputs = CodeScope(frozenset(params) | frozenset(outputs), tables)
    if ensure_tests:
        body.append(f"{i1}try:")
        body += [f"{i2}if not {test}: return False" for test in ensure_tests]
        body += [f"{i1}except (EvalError, KeyError):", f"{i2}return False"]
    effect = info.clauses(S.Effect)
    if effect:
        body.append(f"{i1}try:")
        for c in effect:
            body += em.stmts(c.body, i2, with_outputs)
        body += [f"{i1}except (EvalError, KeyError):", f"{i2}st.rollback()", f"{i2}return False",
                 f"{i1}if J: remember(line, {call!r})"]
    if threads:
        body.append(f"{i1}if seen is not None: W.append(seen)")
    body.append(f"{i1}return True")
    binds = [f"    {tb}, {tr} = T[{t!r}], T[{t!r}].rows" for t, (tb, tr) in tables.items()]
    return [f"def {name}(st, remember, OKS, OKF, decide, W):",
            f"    SP = {spellings!r}",
            *([f"    SPS = {status_spelt!r}"] if status_spelt is not None else []),
            *([f"    SM = frozenset({sorted(members)!r})"] if members is not None else []),
            "    V = st.vars", "    T = st.tables", "    J = st.journal", "    w = None", *binds,
            *(["    WS = W.__class__ is not ThreadWindow"] if threads else []),
            "    def step(o, line):", *body, "    return step", ""]
