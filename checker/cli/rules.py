"""`regcheck rules SPEC` lists rule IDs with citations; `regcheck explain RULE-ID` prints one (from every spec
that has it)."""

from __future__ import annotations

from ..language.checked import RuleInfo
from ..language.diagnostics import RegcheckError, error
from ..language.load import bundled_spec_names, load_spec
from .common import EXIT_OK, add_format


def register(sub) -> None:
    p = sub.add_parser("rules", help="list specs' rule IDs with their citations",
                       description="List the rule IDs of one or more specs, with their kind, call and the "
                                   "document passage each cites. Exit 0, or 2 for a spec that cannot be read.")
    p.add_argument("specs", nargs="+", metavar="SPEC", help="spec file or bundled spec name (acl, cupva, cuda, hip)")
    p.add_argument("--kind", choices=tuple(_KIND_MEANING), metavar="KIND",
                   help=f"only rules of this kind ({', '.join(_KIND_MEANING)})")
    add_format(p)
    p.set_defaults(run=run_rules)
    e = sub.add_parser("explain", help="explain one rule ID: its clause, kind and document citation",
                       description="Explain one rule ID: its clause, its kind and the document it cites, from every "
                                   "spec searched that has it (--format json: one object, or a list when "
                                   "several specs have it). Exit 0, or 2 for an unknown rule ID.")
    e.add_argument("rule", metavar="RULE-ID", help="a rule ID, as replay and check print it")
    e.add_argument("--spec", action="append", metavar="SPEC",
                   help="a spec to search (repeatable; default: all bundled specs)")
    add_format(e)
    e.set_defaults(run=run_explain)


def rule_json(r: RuleInfo, spec_name: str) -> dict:
    return {
        "rule": r.rule, "spec": spec_name, "kind": r.kind, "call": r.call, "clause": r.summary,
        "location": f"{r.span.path}:{r.span.line}",
        "source": r.cite.source if r.cite else None,
        "document": r.source.location if r.source else None,
        "document_title": r.source.title if r.source else None,
        "cites": r.cite.clause if r.cite else None,
    }


def run_rules(args, out) -> int:
    specs = [load_spec(name) for name in args.specs]  # all read first: a bad one is exit 2 before any output
    listed = [(spec, [r for r in spec.rules.values() if not args.kind or r.kind == args.kind]) for spec in specs]
    if args.format == "json":
        docs = [{"spec": spec.name, "rules": [rule_json(r, spec.name) for r in rules]} for spec, rules in listed]
        out.json(docs[0] if len(docs) == 1 else {"specs": docs})
        return EXIT_OK
    for i, (spec, rules) in enumerate(listed):
        if i:
            out.out()
        width = max((len(r.rule) for r in rules), default=0)
        for r in rules:
            where = r.call or f"({r.kind})"
            out.out(f"{out.paint(f'{r.rule:<{width}}', 'rule')}  {r.kind:<11} {where}")
            if r.cite and r.source:
                out.out(f"{'':<{width}}  cites {r.source.location}: {r.cite.clause}")
        out.out(f"{len(rules)} rules in spec {spec.name}")
    return EXIT_OK


def run_explain(args, out) -> int:
    """Every searched spec's entry for the rule: a rule ID such as ENV-MALLOC-FRESH is shared by the
    bundled specs (each restates the environment's rules), and each spec's clause and citation are its own."""
    found = [(spec, spec.rules[args.rule]) for spec in map(load_spec, args.spec or bundled_spec_names())
             if args.rule in spec.rules]
    if not found:
        raise RegcheckError([error("E0601", f"no rule '{args.rule}' in the specs searched")])
    if args.format == "json":
        docs = [rule_json(r, spec.name) for spec, r in found]
        out.json(docs[0] if len(docs) == 1 else docs)
        return EXIT_OK
    if len(found) > 1:
        out.out(f"{args.rule} is in {len(found)} specs: {', '.join(spec.name for spec, _ in found)}")
    for i, (spec, r) in enumerate(found):
        if i or len(found) > 1:
            out.out()
        _print_rule(out, r, spec.name)
    return EXIT_OK


def _print_rule(out, r: RuleInfo, spec_name: str) -> None:
    out.out(f"{r.rule} ({r.kind}, spec {spec_name}{', ' + r.call if r.call else ''})")
    out.out(f"  clause:   {r.summary}")
    out.out(f"  defined:  {r.span.path}:{r.span.line}")
    if r.source and r.cite:
        out.out(f"  document: {r.source.title}")
        out.out(f"            {r.source.location}")
        out.out(f"  says:     {r.cite.clause}")
    out.out(f"  meaning:  {_KIND_MEANING[r.kind]}")


_KIND_MEANING = {
    "requires": "a caller obligation: breaking it is the caller's bug (a `usage` finding)",
    "undefined": "a caller obligation whose breach the documents call undefined: a `usage` finding, and any outcome follows",
    "fails": "a documented error: when its condition holds the call must fail with the named status",
    "may-fail": "an environmental failure the documents allow at any time",
    "unspecified": "a case the documents leave open: any outcome is accepted and reported as informational",
    "ensures": "a promise about a successful call's outputs: breaking it is the driver's bug (a `conformance` finding)",
    "usage": "a usage rule (thread safety or API group): breaking it is the caller's bug",
    "effect": "the success effect: how the state changes when the call succeeds",
    "invariant": "a property every reachable state keeps; `regcheck prove` proves it",
    "pinned": "which memory the documents say is page-locked; `regcheck execute` compares it with the kernel's page locks",
}
