"""Instructions of `regcheck execute` by part, under callgrind: one execution of a trace after a
warm-up, with the part to count run inside functools.reduce (called nowhere else on that path).

    valgrind --tool=callgrind --toggle-collect=functools_reduce \\
        python bench/callgrind_execute.py MODE TRACE

MODE all: the whole `execute_trace`; events-mem / events-other: each event (`CheckedLines.step`)
whose driver memory changed (the arena reported changed spans in the warm-up) / did not; lock-mem /
lock-other: `LockCheck.after_event` alone, on those events / the others. Run from the checkout to
measure (its `checker` is imported); make TRACE with bench/gen_trace.py, and run with
PYTHONHASHSEED=0 for the same count twice. Prints the events of each kind; callgrind prints the
instructions ("Collected").
"""

from __future__ import annotations

import functools
import os
import sys

sys.path.insert(0, os.getcwd())

from checker.drivers import execute as execute_module  # noqa: E402
from checker.drivers import lockcheck, pinning  # noqa: E402


def counted(fn, args: tuple, kw: dict):
    return functools.reduce(lambda _, f: f(*args, **kw), [fn], None)


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    step, take, after = execute_module.CheckedLines.step, pinning.PinnedArena.take_changed_spans, \
        lockcheck.LockCheck.after_event
    at = [0]  # the event being stepped
    changed: set[int] = set()  # the events whose driver memory changed

    def counting_step(self, *args, **kw):
        at[0] += 1
        kind = "mem" if at[0] in changed else "other"
        return counted(step, (self, *args), kw) if mode == f"events-{kind}" else step(self, *args, **kw)

    def noting_take(self):
        spans = take(self)
        if spans:
            changed.add(at[0])
        return spans

    def counting_after(self, *args, **kw):
        kind = "mem" if at[0] in changed else "other"
        return counted(after, (self, *args), kw) if mode == f"lock-{kind}" else after(self, *args, **kw)

    execute_module.CheckedLines.step = counting_step
    pinning.PinnedArena.take_changed_spans = noting_take
    execute_module.execute_trace(path)  # warm-up: imports and caches, and which events change memory
    pinning.PinnedArena.take_changed_spans = take
    at[0] = 0
    if mode == "all":  # (no wrapper counted with it)
        execute_module.CheckedLines.step = step
        report = counted(execute_module.execute_trace, (path,), {})
    else:
        lockcheck.LockCheck.after_event = counting_after
        report = execute_module.execute_trace(path)
    print(f"{mode}: {at[0] or '(not counted)'} events, {len(changed)} changing driver memory; {report.verdict}, {len(report.findings)} findings")


if __name__ == "__main__":
    main()
