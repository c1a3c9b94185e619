"""Pictures of a spec: Mermaid and Graphviz DOT text (`regcheck diagram SPEC`).

Two views, both built from the checked spec as a small graph and then written out as text:

  calls   every call and environment event with its outcome branches, each edge labelled with the
          rule ID that leads there: the caller's obligations (a usage finding), the documented
          failures with their status codes, the failures the environment may cause, the cases
          the documents leave open, and success with its effect; the effect's edges go to the
          tables and state variables it writes; invariants hang off the tables they constrain.
  states  the finite part of the state: every enum or bool state variable as a state machine
          (its values, the initial one, the calls that assign it) and the API groups active in
          each value, with the calls restricted to them. A spec whose state is only tables (acl)
          has nothing finite to draw; the view says so.

Pure text generation: nothing here renders or prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ..language import syntax as S
from ..language.analysis import identifier
from ..language.checked import CheckedSpec
from ..language.diagnostics import escape_controls
from ..language.printer import print_expr

VIEWS = ("calls", "states")


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    label: str
    kind: str  # call | event | usage | failure | env-failure | open | success | promise | table | var | invariant | state | note


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    label: str
    style: str = "solid"  # solid | dashed | dotted


@dataclass(frozen=True, slots=True)
class Cluster:
    id: str
    label: str
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Graph:
    title: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    clusters: tuple[Cluster, ...] = ()
    initial: tuple[str, ...] = ()  # state view: the initial states


def _codes(c: S.Codes) -> str:
    if isinstance(c, S.AnyFailure):
        return "any failure"
    items = c.items if isinstance(c, S.SetLit) else (c,)
    return " | ".join(print_expr(x) for x in items)


def _writes(body: Iterable[S.Stmt]) -> list[tuple[str, str, bool]]:
    """(target, how, is_table) for every statement of an effect, branches included."""
    out: list[tuple[str, str, bool]] = []
    for st in body:
        match st:
            case S.Assign(var=v, value=x):
                out.append((v, f"{v} = {print_expr(x)}", False))
            case S.Insert(table=t):
                out.append((t, "insert", True))
            case S.Update(table=t, field=f):
                out.append((t, f"update .{f}", True))
            case S.Delete(table=t):
                out.append((t, "delete", True))
            case S.If(then=th, orelse=el):
                out.extend(_writes(th))
                out.extend(_writes(el))
    return out


def _signature(decl: S.CallDecl) -> str:
    text = f"{decl.name}(" + ", ".join(a.name for a in decl.params) + ")"
    if decl.outputs:
        text += " -> (" + ", ".join(a.name for a in decl.outputs) + ")"
    return text


def calls_graph(spec: CheckedSpec) -> Graph:
    """Calls, outcome branches with rule IDs, tables and invariants."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    clusters: list[Cluster] = []
    for name, info in spec.tables.items():
        nodes.append(Node(f"t_{identifier(name)}", f"{name}: {info.key} -> {info.record}", "table"))
    written_vars: dict[str, str] = {}
    for i, (name, cinfo) in enumerate(spec.calls.items()):
        decl = cinfo.decl
        c = f"c{i}"
        members = [c]
        nodes.append(Node(c, ("event " if decl.kind == "event" else "") + _signature(decl), decl.kind))
        usage = f"{c}_usage"
        ok = f"{c}_ok"
        k = 0
        for clause in decl.clauses:
            k += 1
            match clause:
                case S.Requires(rule=r, undefined=u):
                    edges.append(Edge(c, usage, f"{r}" + (" (undefined)" if u else ""), "dashed"))
                case S.OnlyIn(rule=r, groups=gs):
                    edges.append(Edge(c, usage, f"{r} (outside {', '.join(gs)})", "dashed"))
                case S.NotThreadSafe(rule=r):
                    edges.append(Edge(c, usage, f"{r} (concurrent call)", "dashed"))
                case S.Fails(rule=r, codes=codes):
                    nid = f"{c}_f{k}"
                    nodes.append(Node(nid, f"fails: {_codes(codes)}", "failure"))
                    members.append(nid)
                    edges.append(Edge(c, nid, r))
                case S.MayFail(rule=r, codes=codes):
                    nid = f"{c}_f{k}"
                    nodes.append(Node(nid, f"may fail: {_codes(codes)}", "env-failure"))
                    members.append(nid)
                    edges.append(Edge(c, nid, r, "dotted"))
                case S.Unspecified(rule=r):
                    nid = f"{c}_u{k}"
                    nodes.append(Node(nid, "any outcome (documents silent)", "open"))
                    members.append(nid)
                    edges.append(Edge(c, nid, r, "dotted"))
                case S.Ensures(rule=r):
                    nid = f"{c}_e{k}"
                    nodes.append(Node(nid, f"promise {r}", "promise"))
                    members.append(nid)
                    edges.append(Edge(ok, nid, "ensures", "dotted"))
                case S.Effect(rule=r, body=body):
                    seen: set[str] = set()
                    for target, how, is_table in _writes(body):
                        key = f"{target}/{how}"
                        if key in seen:
                            continue
                        seen.add(key)
                        if is_table:
                            edges.append(Edge(ok, f"t_{identifier(target)}", how, "dashed"))
                        else:
                            written_vars[target] = f"v_{identifier(target)}"
                            edges.append(Edge(ok, f"v_{identifier(target)}", how, "dashed"))
                case S.Order():
                    pass  # which failure wins when several apply: not a branch of its own
                case _:
                    rule = getattr(clause, "rule", None)  # a clause kind this view does not know yet
                    if rule:
                        nid = f"{c}_x{k}"
                        nodes.append(Node(nid, type(clause).__name__, "note"))
                        members.append(nid)
                        edges.append(Edge(c, nid, rule, "dotted"))
        if any(e.dst == usage for e in edges):
            nodes.append(Node(usage, "usage finding (caller bug)", "usage"))
            members.insert(1, usage)
        effect_rule = next((cl.rule for cl in decl.clauses if isinstance(cl, S.Effect)), None)
        nodes.append(Node(ok, "success", "success"))
        members.append(ok)
        edges.append(Edge(c, ok, effect_rule or "success"))
        clusters.append(Cluster(f"g{i}", name, tuple(members)))
    for var, nid in written_vars.items():
        t, _ = spec.vars[var]
        nodes.append(Node(nid, f"{var}: {t}", "var"))
    table_ids = {n: f"t_{identifier(n)}" for n in spec.tables}
    inv_members = []
    for j, inv in enumerate(spec.invariants):
        nid = f"inv{j}"
        nodes.append(Node(nid, f"invariant {inv.rule}", "invariant"))
        inv_members.append(nid)
        for t in sorted({b.name for b in spec.reads(inv.expr) if b.kind in ("table", "var")}):
            if t in table_ids:
                edges.append(Edge(nid, table_ids[t], "constrains", "dotted"))
            elif t in written_vars:
                edges.append(Edge(nid, written_vars[t], "constrains", "dotted"))
    if inv_members:
        clusters.append(Cluster("invariants", "invariants", tuple(inv_members)))
    # Rules of other declarations (pinned-memory predictions, and kinds added later): one node each,
    # tied to the table they are about where the declaration names one.
    drawn = " ".join([e.label for e in edges] + [n.label for n in nodes])
    tables_of = {d.rule: d.table for d in getattr(spec, "pinned", ())}
    other = []
    for rule, info in spec.rules.items():
        if re.search(rf"(?<![\w-]){re.escape(rule)}(?![\w-])", drawn):
            continue
        nid = f"r_{identifier(rule)}"
        nodes.append(Node(nid, f"{info.kind} {rule}", "invariant"))
        other.append(nid)
        if tables_of.get(rule) in table_ids:
            edges.append(Edge(nid, table_ids[tables_of[rule]], "about", "dotted"))
    if other:
        clusters.append(Cluster("other_rules", "other rules", tuple(other)))
    return Graph(f"spec {spec.name}: calls and outcomes", tuple(nodes), tuple(edges), tuple(clusters))


def states_graph(spec: CheckedSpec) -> Graph:
    """Enum and bool state variables as state machines, with the API groups of each value."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    clusters: list[Cluster] = []
    initial: list[str] = []
    finite = [(n, t, v) for n, (t, v) in spec.vars.items() if t.kind in ("enum", "bool")]
    assigns: dict[str, list[tuple[str, S.Expr]]] = {n: [] for n, _, _ in finite}
    for name, info in spec.calls.items():
        for clause in info.decl.clauses:
            if isinstance(clause, S.Effect):
                for st in _assignments(clause.body):
                    if st.var in assigns:
                        assigns[st.var].append((name, st.value))
    only_in: dict[str, list[tuple[str, str]]] = {}
    for name, info in spec.calls.items():
        for clause in info.decl.clauses:
            if isinstance(clause, S.OnlyIn):
                for g in clause.groups:
                    only_in.setdefault(g, []).append((name, clause.rule))
    state_ids = _state_ids(spec, finite)
    for var, t, init in finite:
        values = _values(spec, t)
        ids = {v: state_ids[var, v] for v in values}
        members = []
        for v in values:
            label = f"{var} = {str(v).lower() if isinstance(v, bool) else v}"
            groups = [g for g, cond in spec.groups.items() if _group_is(cond, var, v)]
            for g in groups:
                calls = ", ".join(f"{c} [{r}]" for c, r in only_in.get(g, ()))
                label += f"\ngroup {g}" + (f": {calls}" if calls else "")
            nodes.append(Node(ids[v], label, "state"))
            members.append(ids[v])
        initial.append(ids[init])
        for call, value in assigns[var]:
            targets = _assigned_values(spec, value, values)
            for src in values:
                for dst in targets:
                    if targets is values:
                        edges.append(Edge(ids[src], ids[dst], f"{call}({print_expr(value)}={_show(dst)})"))
                    else:
                        edges.append(Edge(ids[src], ids[dst], call))
        clusters.append(Cluster(f"sv_{identifier(var)}", var, tuple(members)))
    if not finite:
        tables = ", ".join(spec.tables) or "none"
        nodes.append(Node("none", f"spec {spec.name} has no enum or bool state variables; its state is its "
                                  f"tables ({tables})", "note"))
    return Graph(f"spec {spec.name}: finite state", tuple(nodes), tuple(edges), tuple(clusters), tuple(initial))


def _values(spec: CheckedSpec, t) -> list:
    return list(spec.enums[t.name]) if t.kind == "enum" else [False, True]


def _state_ids(spec: CheckedSpec, finite: list) -> dict[tuple[str, object], str]:
    """The node id of every (state variable, value).

    `s_{var}_{value}` reads well, but joining with `_` lets two pairs meet (var x_y value P, var x
    value y_P): the second one to meet an id gets a numbered suffix that no other pair's id has.
    """
    base = {(var, v): f"s_{identifier(var)}_{identifier(_show(v))}" for var, t, _ in finite for v in _values(spec, t)}
    taken = set(base.values())
    ids: dict[tuple[str, object], str] = {}
    given: set[str] = set()
    for key, nid in base.items():
        if nid in given:
            n = 2
            while f"{nid}_{n}" in taken:
                n += 1
            nid = f"{nid}_{n}"
            taken.add(nid)
        given.add(nid)
        ids[key] = nid
    return ids


def _show(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _assignments(body: Iterable[S.Stmt]) -> Iterable[S.Assign]:
    for st in body:
        if isinstance(st, S.Assign):
            yield st
        elif isinstance(st, S.If):
            yield from _assignments(st.then)
            yield from _assignments(st.orelse)


def _assigned_values(spec: CheckedSpec, value: S.Expr, values: list) -> list:
    """The values an assignment can give: a literal member or bool, else (a parameter) any value."""
    if isinstance(value, S.BoolLit):
        return [value.value]
    if isinstance(value, S.Name) and value.name in values:
        return [value.name]
    return values


def _group_is(cond: S.Expr, var: str, value) -> bool:
    """Whether a group's condition is `var == value` (the form specs use for phases)."""
    if isinstance(cond, S.Binary) and cond.op == "==":
        sides = (cond.left, cond.right)
        names = [s.name for s in sides if isinstance(s, S.Name)]
        return var in names and (str(value) in names or any(isinstance(s, S.BoolLit) and s.value == value for s in sides))
    if isinstance(cond, S.Name) and isinstance(value, bool):
        return cond.name == var and value
    return False


# ---------------------------------------------------------------- Mermaid

_MERMAID_SHAPES = {
    "call": ('["', '"]'), "event": ('[/"', '"/]'), "usage": ('{{"', '"}}'), "failure": ('(["', '"])'),
    "env-failure": ('(["', '"])'), "open": ('>"', '"]'), "success": ('(["', '"])'), "promise": ('["', '"]'),
    "table": ('[("', '")]'), "var": ('[("', '")]'), "invariant": ('["', '"]'), "note": ('["', '"]'),
}
_MERMAID_CLASSES = {
    "call": "fill:#e8eefc,stroke:#4e79a7", "event": "fill:#f0f0f0,stroke:#888888", "usage": "fill:#fde2e1,stroke:#d62728",
    "failure": "fill:#fff1d6,stroke:#f28e2b", "env-failure": "fill:#fff8e8,stroke:#c9a227",
    "open": "fill:#f3e8f8,stroke:#b07aa1", "success": "fill:#e3f4e1,stroke:#59a14f",
    "promise": "fill:#ffffff,stroke:#59a14f", "table": "fill:#eef7f6,stroke:#76b7b2",
    "var": "fill:#eef7f6,stroke:#76b7b2", "invariant": "fill:#ffffff,stroke:#888888", "note": "fill:#ffffff,stroke:#888888",
    "state": "fill:#e8eefc,stroke:#4e79a7",
}
_MERMAID_ARROWS = {"solid": "-->", "dashed": "-.->", "dotted": "-.->"}


def _mermaid_text(text: str) -> str:
    # Mermaid reads entity codes inside quoted labels: no raw quotes, no raw angle brackets.
    return (text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
            .replace("\n", "<br/>"))


def _yaml_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_mermaid(g: Graph) -> str:
    """A Mermaid flowchart (`flowchart LR`) of either view."""
    lines = ["---", f"title: {_yaml_text(g.title)}", "---", "flowchart LR"]
    in_cluster = {n for c in g.clusters for n in c.nodes}
    by_id = {n.id: n for n in g.nodes}

    def node_line(n: Node, indent: str) -> str:
        a, b = _MERMAID_SHAPES.get(n.kind, ('["', '"]'))
        return f"{indent}{n.id}{a}{_mermaid_text(n.label)}{b}"

    for c in g.clusters:
        lines.append(f'  subgraph {c.id}["{_mermaid_text(c.label)}"]')
        lines.append("    direction TB")
        lines.extend(node_line(by_id[n], "    ") for n in c.nodes)
        lines.append("  end")
    lines.extend(node_line(n, "  ") for n in g.nodes if n.id not in in_cluster)
    for i, s in enumerate(g.initial):
        lines.append(f'  start{i}(("start")) --> {s}')
    for e in g.edges:
        lines.append(f'  {e.src} {_MERMAID_ARROWS[e.style]}|"{_mermaid_text(e.label)}"| {e.dst}')
    kinds = sorted({n.kind for n in g.nodes})
    for k in kinds:
        lines.append(f"  classDef k_{identifier(k)} {_MERMAID_CLASSES.get(k, 'fill:#fff,stroke:#888888')}")
        lines.append(f"  class {','.join(n.id for n in g.nodes if n.kind == k)} k_{identifier(k)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- Graphviz DOT

_DOT_SHAPES = {
    "call": "box", "event": "parallelogram", "usage": "hexagon", "failure": "box", "env-failure": "box",
    "open": "note", "success": "box", "promise": "box", "table": "cylinder", "var": "cylinder",
    "invariant": "box", "note": "note", "state": "box",
}


def _dot_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(g: Graph) -> str:
    """A Graphviz digraph of either view (clusters for calls, state variables and invariants)."""
    lines = [f"digraph {_dot_text(g.title)} {{", "  rankdir=LR;", f"  label={_dot_text(g.title)};", "  labelloc=t;",
             '  node [fontname="Helvetica", fontsize=10];', '  edge [fontname="Helvetica", fontsize=9];']
    by_id = {n.id: n for n in g.nodes}
    in_cluster = {n for c in g.clusters for n in c.nodes}

    def node_line(n: Node, indent: str) -> str:
        fill = _MERMAID_CLASSES.get(n.kind, "fill:#ffffff,stroke:#888888").split(",")
        attrs = {"label": _dot_text(n.label), "shape": _DOT_SHAPES.get(n.kind, "box"), "style": '"filled,rounded"',
                 "fillcolor": _dot_text(fill[0][5:]), "color": _dot_text(fill[1][7:])}
        return f"{indent}{n.id} [" + ", ".join(f"{k}={v}" for k, v in attrs.items()) + "];"

    for c in g.clusters:
        lines.append(f"  subgraph cluster_{c.id} {{")
        lines.append(f"    label={_dot_text(c.label)};")
        lines.extend(node_line(by_id[n], "    ") for n in c.nodes)
        lines.append("  }")
    lines.extend(node_line(n, "  ") for n in g.nodes if n.id not in in_cluster)
    for i, s in enumerate(g.initial):
        lines.append(f'  start{i} [shape=point, width=0.15, label=""];')
        lines.append(f"  start{i} -> {s};")
    for e in g.edges:
        style = "" if e.style == "solid" else f", style={e.style}"
        lines.append(f"  {e.src} -> {e.dst} [label={_dot_text(e.label)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def spec_diagram(spec: CheckedSpec, view: str = "calls") -> Graph:
    if view == "calls":
        return calls_graph(spec)
    if view == "states":
        return states_graph(spec)
    raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")


def to_markdown(spec: CheckedSpec) -> str:
    """Both views as Mermaid blocks in Markdown (GitHub and most wikis render them)."""
    parts = [f"# Spec {spec.name}", "", _markdown_line(spec.title), ""]
    for view in VIEWS:
        parts += [f"## {view}", "", "```mermaid", to_mermaid(spec_diagram(spec, view)).rstrip(), "```", ""]
    return "\n".join(parts)


def _markdown_line(text: str) -> str:
    """A spec's own text (its title) as one line of the document: a string may hold `\\n` (which
    could open a code fence and swallow the diagrams below) and, raw, any control character (which
    `regcheck diagram` would write to the terminal): whitespace runs become one space, controls
    their escapes."""
    return escape_controls(" ".join(text.split()))
