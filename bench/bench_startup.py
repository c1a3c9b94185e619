"""Benchmark start-up: wall and CPU time of short `regcheck` runs, each in a fresh process.

Baseline measured in the same run: a bare `python -c pass` (the interpreter's own start-up, which
every run pays). Each figure is the median of N runs; the ratio is that median over the baseline's.
Figures only: it asserts nothing.

Where this environment writes no bytecode (PYTHONDONTWRITEBYTECODE, as on some CI machines), every
process compiles each module it imports from source, which a user's installation does once; the
commands are then measured twice: as this environment runs them, and with bytecode written to a
private cache folder (PYTHONPYCACHEPREFIX, so the checkout is not touched).

    python bench/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIVE_EVENTS = ROOT / "traces" / "acl" / "bad_double_free.jsonl"  # a header and 5 events


def regcheck() -> list[str]:
    """The installed `regcheck` script beside this interpreter, else the package run as a module."""
    script = Path(sys.executable).with_name("regcheck")
    if script.exists():
        return [str(script)]
    found = shutil.which("regcheck")
    return [found] if found else [sys.executable, "-m", "checker.cli"]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process (its exit code is not checked: replay may find a violation)."""
    cpu0, t0 = children_cpu(), time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0, children_cpu() - cpu0


def medians(argv: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    one_run(argv, env)  # warm the file cache (the grammar cache, and the bytecode where it is written) first
    samples = [one_run(argv, env) for _ in range(runs)]
    return statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples)


def environments(private_cache: str) -> dict[str, dict[str, str]]:
    """The environments to measure in: this one, and, where it writes no bytecode, one that does."""
    here = os.environ.copy()
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return {"": here}
    writes = {k: v for k, v in here.items() if k != "PYTHONDONTWRITEBYTECODE"}
    writes["PYTHONPYCACHEPREFIX"] = private_cache
    return {"this environment (PYTHONDONTWRITEBYTECODE: every module compiled from source)": here,
            "bytecode written once, as an installation does (PYTHONPYCACHEPREFIX, private)": writes}


def table(commands: dict[str, list[str]], runs: int, env: dict[str, str]) -> None:
    results = {name: medians(argv, runs, env) for name, argv in commands.items()}
    base_wall, base_cpu = results["python -c pass (baseline)"]
    print(f"{'command':52} {'wall ms':>8} {'x base':>7} {'cpu ms':>8} {'x base':>7}")
    for name, (wall, cpu) in results.items():
        print(f"{name:52} {wall * 1000:8.1f} {wall / base_wall:7.2f} {cpu * 1000:8.1f} {cpu / base_cpu:7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11, help="fresh processes per command (default 11)")
    args = ap.parse_args()
    base = regcheck()
    commands = {
        "python -c pass (baseline)": [sys.executable, "-c", "pass"],
        "regcheck --version": [*base, "--version"],
        "regcheck check spec/acl.spec": [*base, "check", "spec/acl.spec"],
        f"regcheck replay {FIVE_EVENTS.relative_to(ROOT)}": [*base, "replay", str(FIVE_EVENTS)],
    }
    print(f"median of {args.runs} fresh processes each")
    with tempfile.TemporaryDirectory(prefix="regcheck-bench-pycache-") as private_cache:
        for title, env in environments(private_cache).items():
            if title:
                print(f"-- {title}")
            table(commands, args.runs, env)


if __name__ == "__main__":
    main()
