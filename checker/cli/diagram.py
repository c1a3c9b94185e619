"""`regcheck diagram SPEC`: the spec's calls, outcome branches and rule IDs as Mermaid or Graphviz DOT."""

from __future__ import annotations

from ..emit.diagram import VIEWS, spec_diagram, to_dot, to_markdown, to_mermaid
from ..language.files import write_output
from ..language.load import load_spec
from .common import EXIT_OK

FORMATS = ("mermaid", "dot", "markdown")


def register(sub) -> None:
    p = sub.add_parser(
        "diagram", help="draw a spec's state machine as Mermaid or Graphviz DOT",
        description="Write a picture of a spec as text: the 'calls' view shows every call with its outcome "
                    "branches labelled by rule ID and the tables its effect writes; the 'states' view shows "
                    "the enum and bool state variables as state machines with their API groups. "
                    "--format markdown writes both views as Mermaid blocks. Exit 0, or 2 for a bad spec.")
    p.add_argument("spec", metavar="SPEC", help="a bundled spec name (acl, cupva, cuda, hip) or a .spec file")
    p.add_argument("--format", choices=FORMATS, default="mermaid", help="output format (default: mermaid)")
    p.add_argument("--view", choices=VIEWS, default="calls", help="which picture (default: calls)")
    p.add_argument("-o", "--output", metavar="OUT", help="write here (default: standard output)")
    p.set_defaults(run=run)


def run(args, out) -> int:
    spec = load_spec(args.spec)
    if args.format == "markdown":
        text = to_markdown(spec)
    else:
        graph = spec_diagram(spec, args.view)
        text = to_mermaid(graph) if args.format == "mermaid" else to_dot(graph)
    if args.output is None:
        out.stdout.write(text)
        return EXIT_OK
    write_output(args.output, text)
    return EXIT_OK
