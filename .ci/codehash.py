"""Hashes of every piece of code regcheck generates for the bundled specs: the Python sources of the
semantics and the fast path, and the step machine's programs. Run it before and after a refactor
that must leave the generated code byte-identical, and diff the two outputs:

    python .ci/codehash.py > before.txt   # on the old commit
    python .ci/codehash.py > after.txt    # on the new one
    diff before.txt after.txt

It replays the four bundled corpora with `compile` and the step compiler wrapped, so it sees
exactly what a replay compiles (constants folded through `<regcheck constant>` are left out)."""

import builtins
import hashlib
import importlib
import io

seen: dict[str, set[str]] = {}
real_compile = builtins.compile


def hashing_compile(source, filename, *args, **kwargs):
    if isinstance(filename, str) and filename.startswith("<regcheck") and filename != "<regcheck constant>":
        data = source.encode() if isinstance(source, str) else source
        seen.setdefault(filename, set()).add(hashlib.sha256(data).hexdigest())
    return real_compile(source, filename, *args, **kwargs)


def main() -> None:
    builtins.compile = hashing_compile
    stepcode = importlib.import_module("checker.fast.stepcode")
    real_step = stepcode.compile_step

    def hashing_step(sem, call, *args):
        program = real_step(sem, call, *args)
        seen.setdefault(f"step {sem.spec.name}.{call}", set()).add(hashlib.sha256(repr(program).encode()).hexdigest())
        return program

    stepcode.compile_step = hashing_step
    from checker.cli import main as regcheck
    for spec in ("acl", "cupva", "cuda", "hip"):
        regcheck(["replay", f"traces/{spec}"], stdout=io.StringIO(), stderr=io.StringIO())
    for name in sorted(seen):
        print(name, *sorted(seen[name]))


if __name__ == "__main__":
    main()
