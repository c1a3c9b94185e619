"""`regcheck check SPEC...`: parse, type-check and lint; every error at once."""

from __future__ import annotations

from ..language.diagnostics import RegcheckError, Severity
from ..language.load import check_source, read_spec_source
from .common import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, add_format, render_all


def register(sub) -> None:
    p = sub.add_parser("check", help="parse, type-check and lint specs",
                       description="Parse, type-check and lint spec files (or bundled specs by name). "
                                   "Exit 0: no errors; 1: errors in a spec; 2: a spec cannot be read.")
    p.add_argument("specs", nargs="+", metavar="SPEC", help="spec file or bundled spec name (acl, cupva, cuda, hip)")
    p.add_argument("--werror", action="store_true", help="treat warnings as errors")
    add_format(p)
    p.set_defaults(run=run)


def run(args, out) -> int:
    results = []
    worst = EXIT_OK
    for name in args.specs:
        try:
            src = read_spec_source(name)
        except RegcheckError as exc:
            results.append((name, None, list(exc.diagnostics), None))
            worst = max(worst, EXIT_INPUT)
            continue
        try:
            spec = check_source(src)
            diags = list(spec.warnings)
        except RegcheckError as exc:
            spec, diags = None, list(exc.diagnostics)
        failed = spec is None or (args.werror and diags)
        if failed:
            worst = max(worst, EXIT_FINDINGS)
        results.append((name, src, diags, spec))
    if args.format == "json":
        out.json({
            "specs": [
                {"spec": name, "path": src.path if src else name, "ok": spec is not None and not (args.werror and diags),
                 "rules": len(spec.rules) if spec else 0,
                 "diagnostics": [d.to_json() for d in diags]}
                for name, src, diags, spec in results
            ],
            "exit": worst,
        })
        return worst
    warned = 0
    for name, src, diags, spec in results:
        if diags:
            out.err(render_all(diags, {src.path: src} if src else None))
        if spec is not None:
            n_warn = sum(d.severity is Severity.WARNING for d in diags)
            warned += n_warn
            out.out(f"{src.path}: {out.paint('ok', 'ok')}: spec {spec.name}, {len(spec.calls)} calls, "
                    f"{len(spec.rules)} rules, {len(spec.invariants)} invariants"
                    + (f", {n_warn} warnings" if n_warn else ""))
        else:
            n_err = sum(d.severity is Severity.ERROR for d in diags)
            errors = f"{n_err} error{'s' if n_err != 1 else ''}"
            out.out(f"{src.path if src else name}: {out.paint(errors, 'error')}")
    if args.werror and warned and not any(spec is None for _, _, _, spec in results):
        out.err(f"exit 1: {warned} warning{'s' if warned != 1 else ''} and --werror")
    return worst
