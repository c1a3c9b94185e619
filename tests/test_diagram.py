"""Spec diagrams (checker/emit/diagram.py, `regcheck diagram`): every rule ID drawn, well-formed Mermaid
and DOT (DOT checked by Graphviz where `dot` is installed)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from checker.language import syntax as S
from checker.emit.diagram import calls_graph, spec_diagram, states_graph, to_dot, to_markdown, to_mermaid
from checker.language.load import load_spec
from tests.helpers import run_cli

SPECS = ("acl", "cupva")
DOT = shutil.which("dot")


def diagram(*argv: str) -> tuple[int, str, str]:
    return run_cli("diagram", *argv)


def mermaid_structure(text: str) -> tuple[set[str], list[tuple[str, str, str]]]:
    """Declared node ids and edges (src, label, dst) of our Mermaid flowcharts; asserts the layout."""
    lines = text.splitlines()
    assert lines[0] == "---" and lines[1].startswith('title: "') and lines[2] == "---" and lines[3] == "flowchart LR"
    depth = 0
    declared: set[str] = set()
    edges = []
    for line in lines[4:]:
        s = line.strip()
        if s.startswith("subgraph "):
            depth += 1
            declared.add(re.match(r"subgraph (\w+)\[", s).group(1))
        elif s == "end":
            depth -= 1
            assert depth >= 0
        elif s.startswith(("direction ", "classDef ", "class ")):
            continue
        elif m := re.fullmatch(r'(\w+) (-->|-\.->)\|"([^"]*)"\| (\w+)', s):
            edges.append((m.group(1), m.group(3), m.group(4)))
        elif m := re.fullmatch(r'(\w+)\(\("start"\)\) --> (\w+)', s):
            declared.add(m.group(1))
            edges.append((m.group(1), "", m.group(2)))
        else:
            m = re.fullmatch(r'(\w+)(\[/"|\["|\{\{"|\(\["|>"|\[\(")(.*?)("/\]|"\]|"\}\}|"\]\)|"\)\])', s)
            assert m, f"not a node, edge or subgraph line: {line!r}"
            assert '"' not in m.group(3) and "<" not in m.group(3).replace("<br/>", "")
            declared.add(m.group(1))
    assert depth == 0
    return declared, edges


@pytest.mark.parametrize("name", SPECS)
def test_every_rule_is_drawn(name):
    spec = load_spec(name)
    mermaid = to_mermaid(calls_graph(spec))
    dot = to_dot(calls_graph(spec))
    labels = " ".join(e.label for e in calls_graph(spec).edges) + " " + " ".join(n.label for n in calls_graph(spec).nodes)
    for rule, info in spec.rules.items():
        assert re.search(rf"(?<![\w-]){re.escape(rule)}(?![\w-])", labels), f"{rule} ({info.kind}) is not drawn"
        assert rule in mermaid and rule in dot


@pytest.mark.parametrize("name", SPECS)
def test_outcome_branches(name):
    spec = load_spec(name)
    g = calls_graph(spec)
    by_id = {n.id: n for n in g.nodes}
    for i, (call, info) in enumerate(spec.calls.items()):
        out = [e for e in g.edges if e.src == f"c{i}"]
        kinds = {by_id[e.dst].kind for e in out}
        assert "success" in kinds
        for clause in info.decl.clauses:
            if isinstance(clause, S.Fails):
                (edge,) = [e for e in out if e.label == clause.rule]
                assert by_id[edge.dst].kind == "failure"
            if isinstance(clause, S.Requires):
                assert any(e.label.startswith(clause.rule) and by_id[e.dst].kind == "usage" for e in out)
    # The effect's writes go to the tables: ACL-REG-EFFECT inserts into regs, free deletes from host_allocs.
    if name == "acl":
        reg = next(i for i, c in enumerate(spec.calls) if c == "aclrtHostRegisterV2")
        assert any(e.src == f"c{reg}_ok" and e.dst == "t_regs" and e.label == "insert" for e in g.edges)
        assert any(e.src == f"c{reg}" and e.dst == f"c{reg}_ok" and e.label == "ACL-REG-EFFECT" for e in g.edges)


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("view", ["calls", "states"])
def test_mermaid_is_well_formed(name, view):
    g = spec_diagram(load_spec(name), view)
    declared, edges = mermaid_structure(to_mermaid(g))
    assert declared >= {n.id for n in g.nodes}
    for src, _, dst in edges:
        assert src in declared and dst in declared
    assert len([e for e in edges if e[1]]) == len(g.edges)


def test_states_view_of_cupva():
    g = states_graph(load_spec("cupva"))
    labels = {n.id: n.label for n in g.nodes}
    assert labels["s_vm_Init"].startswith("vm = Init\ngroup Init: cupva::mem::Register [PVA-REG-API-GROUP]")
    assert "group DeInit: cupva::mem::Unregister [PVA-UNREG-API-GROUP]" in labels["s_vm_DeInit"]
    assert set(g.initial) == {"s_vm_Init", "s_cuda_disabled_false", "s_cuda_interop_used_false"}
    # vm_state may move between any two VM states; ForceDisableSupport only ever sets cuda_disabled.
    vm_edges = {(e.src, e.dst) for e in g.edges if e.label.startswith("vm_state(")}
    assert len(vm_edges) == 9
    assert {(e.src, e.dst) for e in g.edges if e.label == "cupva::cuda::ForceDisableSupport"} == \
        {("s_cuda_disabled_false", "s_cuda_disabled_true"), ("s_cuda_disabled_true", "s_cuda_disabled_true")}


def test_states_view_of_a_spec_without_finite_state():
    g = states_graph(load_spec("acl"))
    assert [n.kind for n in g.nodes] == ["note"] and "host_allocs, regs" in g.nodes[0].label and g.edges == ()


COLLIDING_STATES = """spec collide "state ids that meet when joined with _"
source DOC "none" "doc"
enum E { P, Q }
enum F { y_P, Z }
status int success 0
var x_y: E = P
var x: F = Z
call go() {
  effect COL-GO: { x_y = Q }
    cite DOC "go"
}
call stop() {
  effect COL-STOP: { x = y_P }
    cite DOC "stop"
}
"""


def test_states_view_keeps_states_whose_ids_meet_apart(tmp_path):
    # var x_y = P and var x = y_P both read s_x_y_P when joined with `_`: one node drew both.
    path = tmp_path / "collide.spec"
    path.write_text(COLLIDING_STATES)
    g = states_graph(load_spec(str(path)))
    ids = {n.label: n.id for n in g.nodes}
    assert set(ids) == {"x_y = P", "x_y = Q", "x = y_P", "x = Z"}
    assert len(set(ids.values())) == 4 and ids["x_y = P"] == "s_x_y_P"
    assert set(g.initial) == {ids["x_y = P"], ids["x = Z"]}
    assert {(e.src, e.dst) for e in g.edges if e.label == "stop"} == \
        {(ids["x = y_P"], ids["x = y_P"]), (ids["x = Z"], ids["x = y_P"])}
    declared, _ = mermaid_structure(to_mermaid(g))
    assert set(ids.values()) <= declared
    dot_nodes = re.findall(r"^\s+(s_\w+) \[label=", to_dot(g), re.M)
    assert sorted(dot_nodes) == sorted(ids.values())


@pytest.mark.skipif(DOT is None, reason="Graphviz `dot` is not installed (apt-get install graphviz)")
@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("view", ["calls", "states"])
def test_graphviz_accepts_the_dot(name, view):
    g = spec_diagram(load_spec(name), view)
    run = subprocess.run([DOT, "-Tjson"], input=to_dot(g), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    doc = json.loads(run.stdout)
    names = {o["name"] for o in doc.get("objects", []) if "nodes" not in o}
    assert names >= {n.id for n in g.nodes}
    assert len(doc.get("edges", [])) == len(g.edges) + len(g.initial)


def test_dot_quotes_labels():
    dot = to_dot(calls_graph(load_spec("cupva")))
    assert dot.startswith('digraph "spec cupva: calls and outcomes" {')
    assert 'label="cupva::mem::Register(ptr, size, externalAllocType)"' in dot


# ---------------------------------------------------------------- the command


def test_cli_formats(tmp_path):
    code, out, err = diagram("acl")
    assert code == 0 and err == "" and out == to_mermaid(calls_graph(load_spec("acl")))
    code, out, _ = diagram("cupva", "--format", "dot", "--view", "states")
    assert code == 0 and out == to_dot(states_graph(load_spec("cupva")))
    code, out, _ = diagram("cupva", "--format", "markdown")
    assert code == 0 and out == to_markdown(load_spec("cupva")) and out.count("```mermaid") == 2
    target = tmp_path / "acl.mmd"
    assert diagram("acl", "-o", str(target)) == (0, "", "")
    assert target.read_text() == to_mermaid(calls_graph(load_spec("acl")))


TITLED = """spec titled "a\x1b[2J b\u202ec\\n```\\n\\t d"
source DOC "doc.txt" "a document"
status int success 0
var n: int = 0
call poke(a: int) {
  fails T-ONE: 1 when a == 1
    cite DOC "one fails"
  effect T-EFFECT: { n = n + 1 }
    cite DOC "counts"
}
"""


def test_markdown_writes_a_spec_title_as_one_line_with_control_characters_escaped(tmp_path):
    """The title is the spec's own text: a raw ESC or U+202E in it reached the terminal, and `\\n```\\n`
    opened a code fence that swallowed the diagrams below it."""
    spec = tmp_path / "t.spec"
    spec.write_text(TITLED)
    code, out, err = diagram(str(spec), "--format", "markdown")
    assert code == 0 and err == "", err
    assert out.splitlines()[:4] == ["# Spec titled", "", "a\\x1b[2J b\\u202ec ``` d", ""]
    assert out.count("```") == 5 and out.count("```mermaid") == 2  # two fenced blocks and the title's


def test_cli_bad_input(tmp_path):
    code, out, err = diagram("nosuchspec")
    assert code == 2 and "error[E0601]" in err
    bad = tmp_path / "bad.spec"
    bad.write_text("spec x \"t\"\ncall f( {\n")
    code, _, err = diagram(str(bad))
    assert code == 2 and "error[E01" in err and "Traceback" not in err
    code, _, err = diagram("acl", "-o", str(tmp_path / "no" / "dir" / "x.mmd"))
    assert code == 2 and "error[E0603]" in err


@pytest.mark.skipif(not os.environ.get("REGCHECK_MERMAID_JS") or shutil.which("chromium") is None,
                    reason="set REGCHECK_MERMAID_JS to a mermaid.min.js (npm package mermaid) to render with Mermaid")
def test_mermaid_renders_in_a_browser(tmp_path):
    texts = {f"{s}-{v}": to_mermaid(spec_diagram(load_spec(s), v)) for s in SPECS for v in ("calls", "states")}
    page = tmp_path / "m.html"
    page.write_text(f"""<html><body><pre id="out">pending</pre>
<script src="{Path(os.environ['REGCHECK_MERMAID_JS']).resolve().as_uri()}"></script><script>
mermaid.initialize({{startOnLoad: false}});
(async () => {{ const T = {json.dumps(texts)}, res = [];
  for (const [k, t] of Object.entries(T)) {{
    try {{ await mermaid.render("m" + res.length, t); res.push(k + ": ok"); }} catch (e) {{ res.push(k + ": " + e.message); }}
  }}
  document.getElementById("out").textContent = res.join("|"); }})();
</script></body></html>""")
    run = subprocess.run([shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--allow-file-access-from-files",
                          "--virtual-time-budget=20000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    out = re.search(r'<pre id="out">(.*?)</pre>', run.stdout, re.S).group(1)
    assert out.split("|") == [f"{k}: ok" for k in texts]
