"""`regcheck conform SPEC [--driver MODULE:FACTORY] [--suite DIR]`: run a conformance suite against a driver.

Exit codes: 0 every test passed; 1 a test failed or was inconclusive; 2 bad input (unknown spec,
unreadable suite, a driver factory that cannot be loaded).

`--format sarif` writes SARIF 2.1.0 (checker/emit/sarif.py): one run for the spec, each problem of a test
that did not pass as a result under its rule ID (the spec's, the executor's EXEC-..., or
CONFORM-DRIVER-ERROR), located at the test's trace file with `--suite DIR`, else in the spec file;
bad input is a tool notification there (same exit codes).

`--fuzz N` adds a bounded differential fuzz phase after the suite (checker.testgen.fuzz): its figures
and its failure, if any, are in every format (text and json lines, one more JUnit testcase, one more
SARIF result plus run properties), and a failure there makes the exit code 1 as a failed test does.
`--fuzz-output FILE` writes its failing run as a trace file, which the SARIF result and the JUnit
failure then point at; without it the trace travels inside the report.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from ..drivers.executor import load_factory
from ..emit.sarif import conform_log, notifications_of, sarif_log_of_runs, sarif_run
from ..language.diagnostics import RegcheckError, error
from ..language.files import require_writable
from ..language.load import is_spec, load_spec
from ..testgen.conform import FAIL, INCONCLUSIVE, PASS, check_expectations, run_suite
from ..testgen.generate import generate_suite
from ..testgen.model import GenerateOptions
from ..testgen.suite import INDEX, read_suite
from .common import EXIT_FINDINGS, EXIT_INPUT, EXIT_OK, add_env, add_verbosity, nonneg_int, parse_env, positive_int
from .execute import DEFAULT_DRIVER, executor_rules
from .generate import fixed_configs


def register(sub) -> None:
    p = sub.add_parser(
        "conform", help="run a conformance suite against a driver",
        description="Run each conformance test on a fresh driver (FACTORY() from MODULE; the reference driver "
                    "by default): relocate its allocations into the driver's memory, compare each result with "
                    "the test's expectation and the spec's allowed outcomes, and the kernel's page locks with the "
                    "model's after every step. Without --suite the suite is generated first. Exit 0: every test "
                    "passed; 1: a test failed or was inconclusive; 2: bad input.")
    p.add_argument("spec", metavar="SPEC", help="spec file or bundled spec name (acl, cupva, cuda, hip)")
    p.add_argument("--driver", metavar="MODULE:FACTORY", help="a factory returning a Driver "
                   "(default: checker.drivers.executor:ReferenceDriver)")
    p.add_argument("--suite", metavar="DIR", help="a suite written by `regcheck generate -o DIR` (default: generate one)")
    p.add_argument("--depth", type=positive_int, default=3, metavar="N", help="prefix depth when generating (default 3)")
    p.add_argument("--stop-on-failure", action="store_true", help="stop at the first failing test")
    p.add_argument("--fuzz", type=positive_int, metavar="N",
                   help="after the suite, a bounded differential fuzz phase of N random call sequences "
                        "(as `regcheck fuzz`), reported in every --format; a failure there exits 1")
    p.add_argument("--fuzz-steps", type=positive_int, default=30, metavar="N",
                   help="calls per fuzz sequence (default 30)")
    p.add_argument("--fuzz-seed", type=nonneg_int, default=0, metavar="N", help="the fuzz phase's seed (default 0)")
    p.add_argument("--fuzz-output", metavar="FILE",
                   help="write the fuzz phase's failing run (if any) as a trace file; SARIF and JUnit point at it "
                        "(default: the trace is only inside the report)")
    p.add_argument("--no-lock-check", action="store_true",
                   help="do not compare the kernel's page locks with the model (a driver outside this process)")
    add_env(p, "fix a spec parameter: a generated suite uses only configurations with it, a --suite keeps only "
               "the tests recorded with it, and the fuzz phase runs in it")
    p.add_argument("--failures-only", action="store_true",
                   help="text output: print only the tests that did not pass, and the summary")
    add_verbosity(p)
    p.add_argument("--format", choices=("text", "json", "junit", "sarif"), default="text", help="output format (default: text)")
    p.set_defaults(run=run)


def run(args, out) -> int:
    if args.fuzz_output and not args.fuzz:
        out.err("regcheck conform: error: --fuzz-output needs --fuzz N")
        return EXIT_INPUT
    if args.fuzz_output:
        require_writable(args.fuzz_output)  # now, not after the suite and the fuzzing have run
    if args.format == "sarif":
        return _run_sarif(args, out)
    factory, spec, tests, _ = _driver_and_suite(args)
    report = _run(args, factory, spec, tests)
    fuzzed, trace_file = _fuzz_after(args, factory, report)
    code = _exit_code(report, fuzzed)
    if args.format == "json":
        doc = report.to_json()
        if fuzzed is not None:
            doc["fuzz"] = _fuzz_json(fuzzed, trace_file)
        out.json(doc)
        return code
    if args.format == "junit":
        from ..emit.junit import junit_xml

        out.stdout.write(junit_xml(report, fuzzed, trace_file))
        return code
    for r in [] if args.quiet else report.results:
        if r.status == PASS:
            if not args.failures_only:
                detail = f" [{r.rule}] ({r.seconds * 1000:.1f} ms)" if args.verbose else ""
                out.out(f"{out.paint('pass', PASS)}          {r.name}{detail}")
            continue
        out.out(f"{out.paint(f'{r.status:13}', r.status)} {r.name} [{out.paint(r.rule, 'rule')}]")
        for p in r.problems:
            out.out(f"    event {p.event} {p.call}: {p.kind} [{p.rule}]")
            out.out(f"        expected: {p.expected}")
            out.out(f"        actual:   {p.actual}")
            if p.message:
                out.out(f"        {p.message}")
    out.out(f"{report.tests} tests: {report.count(PASS)} passed, {report.count(FAIL)} failed, "
            f"{report.count(INCONCLUSIVE)} inconclusive ({report.seconds:.1f} s; driver {report.driver})"
            + ("; stopped at the first failure" if report.stopped_early else ""))
    if fuzzed is not None:
        for line in _fuzz_text(fuzzed, trace_file)[:1] if args.quiet else _fuzz_text(fuzzed, trace_file):
            out.out(line)
    return code


def _exit_code(report, fuzzed) -> int:
    """1 when a test did not pass or the fuzz phase found a failure, whatever the format."""
    return EXIT_OK if report.ok and (fuzzed is None or fuzzed.passed) else EXIT_FINDINGS


def _fuzz_after(args, factory, report):
    """(the fuzz phase's result or None, the trace file its failure was written to or None). No
    phase without --fuzz, nor after a failed suite under --stop-on-failure."""
    if not args.fuzz or (args.stop_on_failure and not report.ok):
        return None, None
    fuzzed = _fuzz_phase(args, factory)
    if fuzzed.failure is None or not args.fuzz_output:
        return fuzzed, None
    from ..language.files import write_output

    return fuzzed, write_output(args.fuzz_output, fuzzed.failure.trace_text(args.fuzz_output))


def _fuzz_phase(args, factory):
    """The bounded differential fuzz phase after the suite (checker.testgen.fuzz, the reference semantics
    against the driver on random call sequences); its failure, if any, comes back shrunk."""
    from ..testgen.fuzz import FuzzOptions, fuzz

    return fuzz(args.spec, factory, FuzzOptions(max_examples=args.fuzz, steps=args.fuzz_steps, seed=args.fuzz_seed,
                                                env=_env(args) or None))


def _fuzz_json(result, trace_file: str | None = None) -> dict:
    f = result.failure
    return {"max_examples": result.options.max_examples, "seed": result.options.seed, "calls": result.calls,
            "seconds": round(result.seconds, 3), "nondeterministic": result.nondeterministic,
            "failure": None if f is None else {"rule": f.rule, "message": f.message, "env": dict(f.env),
                                               "calls": len(f.events), "repeats": f.repeats, "trace": f.trace_text(),
                                               "trace_file": trace_file}}


def _fuzz_text(result, trace_file: str | None = None) -> list[str]:
    f, o = result.failure, result.options
    if result.nondeterministic is not None:
        return [f"fuzz: DRIVER NOT DETERMINISTIC: {result.nondeterministic}; no failure found before that "
                f"({result.calls} driver calls, {result.seconds:.1f} s, seed {o.seed})"]
    if f is None:
        return [f"fuzz: no failure in {o.max_examples} sequences of up to {o.steps} calls "
                f"({result.calls} driver calls, {result.seconds:.1f} s, seed {o.seed})"]
    lines = [f"fuzz: FAILURE [{f.rule}] after {len(f.events)} calls ({result.calls} driver calls, "
             f"{result.seconds:.1f} s, seed {o.seed})", f"  {f.message}",
             f"  configuration: {', '.join(f'{k}={v}' for k, v in f.env.items())}"]
    if trace_file is not None:
        lines.append(f"  trace written to {trace_file}")
    lines.append("  the run, as a trace:")
    return lines + ["    " + line for line in f.trace_text().splitlines()]


def _driver_and_suite(args):
    """(driver factory, spec, tests, trace files): the suite read from --suite (trace files: test
    name -> its file), or generated (no files)."""
    factory = load_factory(args.driver)
    spec = load_spec(args.spec)
    env = _env(args, spec)
    if not args.suite:
        configs = fixed_configs(spec, env) if env else None
        return factory, spec, generate_suite(args.spec, GenerateOptions(depth=args.depth, configs=configs)).tests, {}
    suite = read_suite(args.suite)
    if not is_spec(suite.spec, spec, args.spec):  # (the pytest plugin checks it too)
        raise RegcheckError([error("T0736", f"the suite in {args.suite} is for spec '{suite.spec}', not "
                                   f"'{args.spec}'")])
    # read_suite built one test per index entry, in order: the entry names the test's file.
    entries = orjson.loads((Path(args.suite) / INDEX).read_bytes())["tests"]
    files = {t.name: os.path.join(args.suite, e["file"]) for t, e in zip(suite.tests, entries)}
    tests = [t for t in suite.tests if all(t.env.get(k) == v for k, v in env.items())] if env else suite.tests
    for t in tests:  # (run_test checks them too, where they come without their files)
        check_expectations(t, spec, files.get(t.name))
    return factory, spec, tests, files


def _env(args, spec=None) -> dict:
    """The --env parameters, checked against the spec (T0720, T0721 are input errors)."""
    if not args.env:
        return {}
    from ..engines.runs import semantics_for

    spec = spec or load_spec(args.spec)
    env = parse_env(args.env, spec)
    semantics_for(spec, env)
    return env


def _run(args, factory, spec, tests):
    return run_suite(tests, factory, spec=spec.name, check_locks=not args.no_lock_check,
                     stop_on_failure=args.stop_on_failure)


def _run_sarif(args, out) -> int:
    """The run as SARIF; bad input becomes a tool notification of an empty run (exit 2), so a CI step
    that uploads the log always has one."""
    try:
        factory, spec, tests, files = _driver_and_suite(args)
        report = _run(args, factory, spec, tests)
        fuzzed, trace_file = _fuzz_after(args, factory, report)
    except RegcheckError as exc:
        out.json(sarif_log_of_runs([sarif_run((), (), category="regcheck/conform/",
                                              notifications=notifications_of(exc.diagnostics),
                                              properties={"driver": args.driver or DEFAULT_DRIVER})]))
        return EXIT_INPUT
    suite = {"suite": args.suite} if args.suite else {"suite": f"generated (depth {args.depth})"}
    out.json(conform_log(report, spec, files, executor_rules(), suite, fuzzed=fuzzed, fuzz_trace=trace_file))
    return _exit_code(report, fuzzed)
