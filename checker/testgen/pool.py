"""The argument pool: the values the generator and the fuzzer try for a call in a state (recorded addresses
around the live allocations, sizes, flags, enum members), and the classes that tell two tests apart."""

from __future__ import annotations

import itertools
from typing import Callable, Iterator, Mapping, Sequence

from ..engines.runs import Step, event_value, json_value
from ..language import syntax as S
from ..language.analysis import memory_shape, nodes
from ..language.checked import INT_BOUNDS, UNBOUNDED, CheckedSpec, Type, value_bounds
from ..model.semantics import Semantics
from ..model.state import State
from .configs import show_json
from .coverage import CallFacts, facts_of, is_addr
from .model import ALLOC_SIZE, ALLOC_STRIDE, DEVICE_BASE, PAGE, U64, Expectation, Node


class ArgumentPool:
    """The arguments the generator and the fuzzer try for a call in a state (recorded addresses).

    Addresses are 0 or lie inside an allocation the prefix made (so the executor can relocate them):
    each allocation's base, the byte and the page after it, its last byte and last page, and each
    table entry's base, the bytes around it, one page before and after it, its last byte and its
    end. Sizes of a `range(ptr, size)`: 0, 1, one to four pages, -1, -1 page, 2**63-1, 2**63,
    2**64-1, and every size that makes the range end at, one byte into or one byte past an
    allocation or entry. Flags: every combination of the declared bits, an undeclared bit alone and
    with each member. Enums: every member. The semantics judges them; nothing here decides outcomes.
    """

    def __init__(self, spec: CheckedSpec, computed_sizes: bool = True):
        self.spec = spec
        self.facts = {n: facts_of(spec, info) for n, info in spec.calls.items()}
        # With `computed_sizes` (the generator's prefixes), also an allocator whose entry's size is
        # computed from the size asked (mmap's whole pages): a prefix asks every allocator for
        # ALLOC_SIZE, a whole number of pages, so its entry is that size, as the allocations a prefix
        # records say (the executor relocates such memory too). Without it (the fuzzer, which counts
        # and places only these allocations itself), an mmap is a call like another: its address
        # comes from `outputs`' other addresses, never one the next allocation will be given.
        self.allocators = memory_shape(spec, computed_sizes=computed_sizes).allocators
        self.exact_allocators = {name: a for name, a in self.allocators.items() if a.exact}
        self.alloc_defaults = {name: dict(spec.calls[name].defaults) for name in self.allocators}
        self.alloc_tables = frozenset(st.table for name in self.allocators for st in S.effect_statements(spec.calls[name].decl)
                                      if isinstance(st, S.Insert))
        self.flag_pool = {name: _flag_values(members) for name, members in spec.flags.items()}

    def live(self, node: Node) -> tuple[tuple[int, int], ...]:
        """The prefix's allocations that are still allocated. Addresses in freed memory are never
        used: the driver may have handed the same addresses out again, where the recording has a
        different allocation."""
        tables = [node.state.tables[t].rows for t in self.alloc_tables]
        return tuple((b, n) for b, n in node.allocs if any(b in rows for rows in tables))

    def transitions(self, node: Node, call: str) -> Iterator[dict]:
        """Arguments for a step of a prefix: existing bases, plain sizes, single flags and pairs."""
        facts = self.facts[call]
        alloc = self.allocators.get(call)
        defaults = self.alloc_defaults.get(call, {})
        per_param = []
        for name, t in facts.params:
            if alloc is not None and name == alloc.size_param:
                values = [ALLOC_SIZE]
            elif name in defaults:  # an allocation's other arguments as their defaults (an mmap's protection)
                values = [defaults[name]]
            elif is_addr(t):
                values = sorted({k for tbl in node.state.tables.values() for k in tbl.rows if isinstance(k, int)}
                                | {k + PAGE for k, n in self.live(node)})
                values = [v for v in values if relocatable(self.live(node), v)]
            elif name in facts.ranges.values():
                values = [PAGE, 2 * PAGE]
            elif t.kind == "flags":
                members = self.spec.flags[t.name]
                values = list(members.values()) + [sum(members.values())]
                values += [a | b for a, b in itertools.combinations(members.values(), 2)]
            elif t.kind == "enum":
                values = list(self.spec.enums[t.name])
            elif t.kind == "bool":
                values = [False, True]
            elif t.kind == "version":
                values = version_values(self.spec)[:1]
            else:
                values = [0]
            per_param.append((name, values))
        for combo in itertools.product(*(v for _, v in per_param)):
            yield dict(zip((n for n, _ in per_param), combo))

    def candidates(self, node: Node, call: str, full: bool = True) -> Iterator[dict]:
        """Arguments to try in a state: a geometry part (addresses and their sizes) crossed with a few
        representative other values, then every other value with a few plain geometries."""
        facts = self.facts[call]
        geo_names, other = [], []
        for name, t in facts.params:
            if is_addr(t):
                geo_names.append(name)
            elif name not in facts.ranges.values():
                other.append((name, self.values(t, full)))
        geos = list(self._geometries(node, facts, geo_names, "full" if full else "reduced"))
        plain = list(self._geometries(node, facts, geo_names, "plain"))
        others_all = [dict(zip([n for n, _ in other], c)) for c in itertools.product(*(v for _, v in other))]
        reps = [dict(zip([n for n, _ in other], c))
                for c in itertools.product(*(self._representatives(facts, n, v) for n, v in other))]
        seen = set()
        for g, o in itertools.chain(itertools.product(geos, reps), itertools.product(plain, others_all)):
            args = {**g, **o}
            key = tuple(sorted(args.items()))
            if key not in seen:
                seen.add(key)
                yield args

    def _representatives(self, facts: CallFacts, name: str, values: list) -> list:
        t = dict(facts.params)[name]
        if t.kind == "flags":
            return [v for v in values if v and v & (v - 1) == 0 and v in self.spec.flags[t.name].values()]
        if t.kind in ("enum", "bool"):
            return values
        return values[:2]

    def values(self, t: Type, full: bool) -> list:
        if t.kind == "flags":
            return self.flag_pool[t.name]
        if t.kind == "enum":
            return list(self.spec.enums[t.name])
        if t.kind == "bool":
            return [False, True]
        if t.kind == "version":
            return version_values(self.spec)
        if t.kind == "int":
            vals = [0, 1, PAGE]
            lo, hi = INT_BOUNDS.get(t.name) or (None, None)
            if full:
                vals += [-1, 2**63, U64 - 1] + [b for b in (lo, hi) if b is not None]
            return list(dict.fromkeys(v for v in vals if (lo is None or v >= lo) and (hi is None or v <= hi)))
        return []

    def _geometries(self, node: Node, facts: CallFacts, names: list[str], mode: str) -> Iterator[dict]:
        """Addresses (and the sizes of their ranges): "full" near every allocation and entry, "reduced"
        at their bases, "plain" one page at each base (and at null)."""
        if not names:
            yield {}
            return
        per_name = []
        for name in names:
            if mode == "plain":
                points = sorted({0} | {b for b, _ in self.live(node)}
                                | {k for t in node.state.tables.values() if t.sized_by for k in t.rows})
            else:
                points = _points(node, self.live(node), mode == "full")
            size_name = facts.ranges.get(name)
            combos = []
            for p in points:
                if size_name is None:
                    combos.append({name: p})
                elif mode == "plain":
                    combos.append({name: p, size_name: PAGE})
                else:
                    st = dict(facts.params)[size_name]
                    for s in _sizes(node, self.live(node), p, st, mode == "full"):
                        combos.append({name: p, size_name: s})
            per_name.append(combos)
        for combo in itertools.product(*per_name):
            out: dict = {}
            for part in combo:
                out.update(part)
            yield out

    def outputs(self, sem: Semantics, node: Node, call: str, args: Mapping) -> dict | None:
        """Recorded outputs for a success: the next allocation base for an allocator, otherwise the
        first candidate value that keeps the call's `ensures`."""
        info = self.spec.calls[call]
        if not info.outputs:
            return {}
        alloc = self.allocators.get(call)
        choices = []
        for name, t in info.outputs:
            if alloc is not None and name == alloc.output:
                choices.append([ALLOC_STRIDE * (len(node.allocs) + 1)])
            elif is_addr(t):
                known = sorted({v for tbl in node.state.tables.values() for rec in tbl.rows.values()
                                for v in rec.values() if type(v) is int and v >= DEVICE_BASE})
                choices.append(known + [DEVICE_BASE + 0x100000 * (len(node.steps) + 1)])
            else:
                choices.append(output_values(self.spec, t, node.state))
        for combo in itertools.product(*choices):
            outs = dict(zip((n for n, _ in info.outputs), combo))
            if not sem.ensures_broken(node.state, call, args, outs):
                return outs
        return None


def output_values(spec: CheckedSpec, t: Type, st: State) -> list:
    """Values to try for an output that is no address, by its type, in order (the generator's
    recorded outputs and the spec driver's answers both come from here)."""
    if t.kind == "bool":
        return [True, False]
    if t.kind == "enum":
        return list(spec.enums[t.name])
    if t.kind == "version":
        return [(0, 0)]
    if t.kind == "int":
        return int_output_values(spec, st)
    return [0, 1]


def int_output_values(spec: CheckedSpec, st: State) -> list[int]:
    """Values to try for an integer output (not an address), in order: 0 and 1, then what the state
    holds below 2**32 and the declared flags, alone and with a flag added: a query that reports an
    entry's flags, or those flags with a bit the driver sets (cudaHostGetFlags reports Mapped plus
    the Portable bit a registration was given). The generator's recorded outputs and the spec
    driver's answers both come from here, so a promise one can keep the other can."""
    held = sorted({v for tbl in st.tables.values() for rec in tbl.rows.values() for v in rec.values()
                   if type(v) is int and 0 <= v < 1 << 32})
    members = sorted({v for flags in spec.flags.values() for v in flags.values()})
    singles = list(dict.fromkeys([0, 1] + held + members))
    return list(dict.fromkeys(singles + [a | m for a in singles for m in members]))


# ---------------------------------------------------------------- pools and classes


def _flag_values(members: Mapping[str, int]) -> list[int]:
    """Every combination of the declared bits, one undeclared bit alone and with each member."""
    bits = list(members.values())
    out = [0]
    for r in range(1, len(bits) + 1):
        for combo in itertools.combinations(bits, r):
            v = 0
            for b in combo:
                v |= b
            out.append(v)
    declared = 0
    for b in bits:
        declared |= b
    undeclared = next(1 << i for i in range(32) if not declared >> i & 1)
    out.append(undeclared)
    out += [undeclared | b for b in bits]
    return list(dict.fromkeys(out))


def relocatable(allocs: Sequence[tuple[int, int]], x: int) -> bool:
    return x == 0 or any(b <= x < b + max(n, 1) for b, n in allocs)


def _points(node: Node, live: Sequence[tuple[int, int]], full: bool) -> list[int]:
    pts = {0}
    for b, n in live:
        pts.add(b)
        if full:
            pts.update((b + 1, b + PAGE, b + 2 * PAGE, b + n - 1, b + n - PAGE))
    for tbl in node.state.tables.values():
        if tbl.sized_by is None:
            continue
        for k, rec in tbl.rows.items():
            pts.add(k)
            if full:
                size = rec[tbl.sized_by]
                pts.update((k + 1, k - 1, k - PAGE, k + PAGE, k + size - 1, k + size))
    return sorted(p for p in pts if p >= 0 and relocatable(live, p))


def _sizes(node: Node, live: Sequence[tuple[int, int]], p: int, t: Type, full: bool) -> list[int]:
    sizes = [PAGE, 0, 1, 2 * PAGE, 3 * PAGE]
    if full:
        sizes += [4 * PAGE, -1, -PAGE, 2**63 - 1, 2**63, U64 - 1]
        ends = set()
        for b, n in live:
            ends.update((b + n, b + n - 1, b + n + 1))
        for tbl in node.state.tables.values():
            if tbl.sized_by is None:
                continue
            for k, rec in tbl.rows.items():
                size = rec[tbl.sized_by]
                ends.update((k, k + 1, k + size - 1, k + size, k + size + 1))
        sizes += sorted(e - p for e in ends if e > p)
    lo, hi = value_bounds(t) or UNBOUNDED
    return list(dict.fromkeys(s for s in sizes if lo <= s <= hi))


def range_relation(b: int, e: int, k: int, end: int) -> str | None:
    """How [b, e) lies against an entry [k, end); None when they are apart (or the entry is empty)."""
    if end <= k:
        return None
    if e <= k or end <= b:
        if e == k:
            return "adjacent below"
        if b == end:
            return "adjacent above"
        return None
    if (b, e) == (k, end):
        return "equal"
    if b <= k and end <= e:
        return "contains (same base)" if b == k else "contains (same end)" if e == end else "contains strictly"
    if k <= b and e <= end:
        return "inside (same base)" if b == k else "inside (same end)" if e == end else "inside strictly"
    if b < k:
        return "overlaps its first byte only" if e == k + 1 else "overlaps its start"
    return "overlaps its last byte only" if b == end - 1 else "overlaps its end"


def point_relation(p: int, k: int, end: int) -> str | None:
    if p == k:
        return "at its base"
    if k < p < end - 1:
        return "interior"
    if p == end - 1 and p > k:
        return "its last byte"
    if p == end:
        return "one past its end"
    return None


def value_class(spec: CheckedSpec, t: Type, v) -> str:
    if t.kind == "flags":
        return _flag_names(spec.flags[t.name], v)
    if t.kind in ("enum",):
        return str(v)
    if t.kind == "bool":
        return show_json(v)
    if t.kind != "int":
        return repr(v)
    if t.name == "addr":
        if v == 0:
            return "null"
        return "page-aligned" if v % PAGE == 0 else "misaligned by one byte" if v % PAGE == 1 else "misaligned"
    if v == 0:
        return "0"
    if v < 0:
        return "negative"
    if v == 1:
        return "1"
    bounds = INT_BOUNDS.get(t.name)
    if bounds and v == bounds[1]:
        return "the largest value of its type"
    if v >= 2**63:
        return "huge (>= 2**63)"
    return "a multiple of the page size" if v % PAGE == 0 else "not a multiple of the page size"


def _flag_names(members: Mapping[str, int], v: int) -> str:
    if v == 0:
        return "0"
    names = [n for n, b in members.items() if v & b == b]
    rest = v
    for n in names:
        rest &= ~members[n]
    return "|".join(names + ([f"{rest:#x}"] if rest else []))


def entry_class(spec: CheckedSpec, info, rec: Mapping) -> str:
    parts = []
    for f, t in info.fields:
        v = rec[f]
        if t.kind == "flags":
            parts.append(f"{f}={_flag_names(spec.flags[t.name], v)}")
        elif t.kind in ("enum", "bool"):
            parts.append(f"{f}={show_json(v)}")
        elif is_addr(t):
            parts.append(f"{f}={'set' if v else 'unset'}")
    return ", ".join(parts) or info.name


def version_values(spec: CheckedSpec) -> list[tuple[int, ...]]:
    """Version arguments to try: every version the spec writes and the one just past it (a version is
    compared with literals, so these decide every comparison), and 0.0; the spec's largest first."""
    written = {n.parts for n in nodes(spec.ast) if isinstance(n, S.VersionLit)}
    values = written | {p[:-1] + (p[-1] + 1,) for p in written} | {(0, 0)}
    return sorted(values, reverse=True)


def json_arg(spec: CheckedSpec, t: Type, v):
    """A semantics value as a trace argument: flags as their member names where they cover it exactly."""
    if t.kind == "flags" and v:
        members = spec.flags[t.name]
        names = [n for n, b in members.items() if v & b == b]
        covered = 0
        for n in names:
            covered |= members[n]
        if covered == v:
            return names
    return event_value(t, v)


def show_arg(spec: CheckedSpec, t: Type, v) -> str:
    if t.kind == "flags":
        return _flag_names(spec.flags[t.name], v)
    if t.kind == "int" and isinstance(v, int):
        return hex(v) if abs(v) >= 4096 else str(v)
    if t.kind == "version":
        return json_value(t, v)  # 1.2.1, as the spec writes it
    return str(v)


def representative_status(spec: CheckedSpec, exp: Expectation):
    """A status the expectation accepts, for the test's `ret` (what a recording might show)."""
    if exp.codes:
        return exp.codes[0]
    status_type = spec.status_type
    if status_type.kind == "enum":
        candidates = [m for m in spec.enums[status_type.name] if m != spec.success]
    else:  # the statuses the spec's failure clauses name, then any non-zero value
        candidates = sorted(_named_statuses(spec)) + [1, -1]
    for c in candidates:
        if exp.accepts(c, spec.success):
            return c
    raise AssertionError(f"no status accepted by {exp}")


def _named_statuses(spec: CheckedSpec) -> set:
    out = set()
    for info in spec.calls.values():
        for c in info.decl.clauses:
            codes = getattr(c, "codes", None)
            if isinstance(codes, S.AnyFailure):
                codes = codes.excluded
            if codes is None:
                continue
            for x in (codes.items if isinstance(codes, S.SetLit) else (codes,)):
                value = spec.code_values[id(x)]
                if type(value) is int:  # the statuses written as numbers or integer constants
                    out.add(value)
    out.discard(spec.success)
    return out


def expectations_disjoint(a: Expectation | None, b: Expectation | None) -> bool:
    if a is None or b is None:
        return False
    if a.outcome != b.outcome:
        return True
    if a.outcome == "success":
        return False
    return a.codes is not None and b.codes is not None and not set(a.codes) & set(b.codes)


def signatures(sem: Semantics, steps: Sequence[Step]):
    """Per step: the outcome classes the spec allows (None when a step cannot be applied)."""
    st = sem.initial_state()
    out = []
    for s in steps:
        try:
            al = sem.allowed(st, s.call, s.inputs)
        except Exception:  # an evaluation error in a moved state: not comparable
            return None
        out.append((al.open, tuple(sorted(e.rule for e in al.errors)), al.success, al.broken,
                    tuple(e.rule for e in al.env_errors)))
        if s.status is None or s.status == sem.success:
            if not sem.apply(st, s.call, s.inputs, s.outputs):
                return None
    return tuple(out)


def layouts(allocs: Sequence[tuple[int, int]]) -> list[Callable[[int], int]]:
    """Two other placements of the recorded allocations (offsets in a page kept): reversed order far
    apart high in the address space, and the same order packed one page apart."""
    if not allocs:
        return []
    largest = max(max(n, 1) for _, n in allocs)
    stride = (largest // PAGE + 2) * PAGE * 16
    far = [0x7F0000000000 - (i + 1) * stride + b % PAGE for i, (b, _) in enumerate(allocs)]
    packed, at = [], 0x40000000
    for b, n in allocs:
        packed.append(at + b % PAGE)
        at += (max(n, 1) + b % PAGE) // PAGE * PAGE + 2 * PAGE
    return [mover(allocs, far), mover(allocs, packed)]


def mover(allocs: Sequence[tuple[int, int]], bases: Sequence[int]) -> Callable[[int], int]:
    """Addresses inside allocation i (base, size) moved to the same offset from bases[i]; others kept."""
    def move(x):
        if type(x) is not int or x == 0:
            return x
        for (b, n), nb in zip(reversed(allocs), reversed(bases)):
            if b <= x < b + max(n, 1):
                return x - b + nb
        return x
    return move


