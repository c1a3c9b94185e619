"""`regcheck simulate SPEC --runs N --steps K --seed S`: random walks with the concrete semantics.

Exit codes: 0 no invariant broken in any run; 1 a violation (written as a trace); 2 bad input.
"""

from __future__ import annotations

from ..engines.runs import format_env, format_state
from ..engines.simulate import SimulationOptions, simulate
from ..language.load import load_spec
from .common import (EXIT_FINDINGS, EXIT_OK, add_env, add_format, add_output, nonneg_int, parse_env, positive_int,
                     run_trace_line, write_run_trace)
from .prove import count_steps, run_json


def register(sub) -> None:
    p = sub.add_parser(
        "simulate", help="random walks of the spec's model, checking every invariant after every step",
        description="Random walks from the initial state with the concrete semantics: calls whose obligations "
                    "hold, inputs from a small address pool so that ranges collide often, every invariant "
                    "checked after every step. A violation is shortened and written as a trace. "
                    "Exit 0: none found; 1: a violation; 2: bad input.")
    p.add_argument("spec", metavar="SPEC", help="spec file or bundled spec name (acl, cupva, cuda, hip)")
    p.add_argument("--runs", type=positive_int, default=100, metavar="N", help="number of walks (default 100)")
    p.add_argument("--steps", type=positive_int, default=50, metavar="K", help="steps per walk (default 50)")
    p.add_argument("--seed", type=nonneg_int, default=0, metavar="S", help="random seed (default 0)")
    add_env(p, "fix a spec parameter (default: drawn per run from the values the spec compares it with)")
    add_output(p, "--out", help="where to write a violating trace (default: <spec>.simulate.jsonl)")
    add_format(p)
    p.set_defaults(run=run_simulate)


def run_simulate(args, out) -> int:
    spec = load_spec(args.spec)
    env = parse_env(args.env, spec) if args.env else None
    if env is not None:
        from ..engines.runs import semantics_for
        semantics_for(spec, env)  # checks names and values: bad ones are input errors (exit 2)
    result = simulate(spec, args.spec, SimulationOptions(args.runs, args.steps, args.seed, env))
    path = unwritten = None
    if result.violation is not None:  # (E0603 when it cannot be written)
        path, unwritten = write_run_trace(result.violation.run, args.output or f"{spec.name}.simulate.jsonl", spec)
    if args.format == "json":
        out.json({"spec": args.spec, "runs": result.runs, "steps": result.steps, "successes": result.successes,
                  "seconds": round(result.seconds, 4), "steps_per_second": round(result.steps_per_second, 1),
                  "violation": None if result.violation is None else {
                      "invariants": list(result.violation.invariants),
                      "run": run_json(result.violation.run, spec, {}), "trace": path,
                      "trace_not_written": unwritten},
                  "rules_seen": dict(sorted(result.rules_seen.items()))})
    else:
        rate = f"{result.steps} steps in {result.seconds:.2f} s ({result.steps_per_second:,.0f} steps/s)"
        if result.violation is None:
            out.out(f"{out.paint('no invariant broken', 'ok')} in {result.runs} runs of up to {args.steps} steps; "
                    f"{rate}")
            silent = sorted(r for r in spec.rules if spec.rules[r].kind in ("fails", "unspecified", "effect")
                            and r not in result.rules_seen)
            if silent:
                out.out(f"clauses never exercised: {', '.join(out.paint(r, 'rule') for r in silent)}")
        else:
            v = result.violation
            broken = ", ".join(out.paint(r, "rule") for r in v.invariants)
            out.out(f"{out.paint('violation', 'violates')} in run {result.runs}: a run of "
                    f"{count_steps(len(v.run.steps))} breaks {broken} (config: {format_env(spec, v.run.env)}):")
            for line in v.run.describe(spec):
                out.out("  " + line)
            out.out(f"  state after: {format_state(spec, v.states[-1])}")
            out.out(f"{run_trace_line(path, unwritten)}; {rate}")
    return EXIT_OK if result.violation is None else EXIT_FINDINGS
