"""Write a large, realistic, conforming Ascend trace for the replay benchmarks.

The mix: host allocations (malloc / aclrtMallocHost), registrations (MAPPED, PINNED or both),
device-pointer lookups (of MAPPED registrations), unregistrations and frees, with a few hundred live ranges at any time.

    python bench/gen_trace.py OUT.jsonl --events 1000000 [--live 300] [--seed 1]
"""

from __future__ import annotations

import argparse
import random

import orjson

PAGE = 4096
MAPPED, PINNED = 0x2, 0x10000000


def generate(path: str, events: int, live: int = 300, seed: int = 1) -> int:
    rng = random.Random(seed)
    next_addr = 0x7F00_0000_0000
    free_allocs: dict[int, tuple[int, bool]] = {}  # unregistered allocations: base -> (size, from MallocHost)
    regs: dict[int, tuple[int, int, bool]] = {}  # registered: base -> (size, flag, from MallocHost)
    mapped: dict[int, None] = {}  # the registrations made with MAPPED: only those may be queried
    n = 0
    t = 0
    with open(path, "wb") as f:
        w = f.write
        w(orjson.dumps({"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}) + b"\n")

        def emit(obj):
            nonlocal n, t
            t += 1000
            obj["tid"] = 1
            obj["t0"] = t
            obj["t1"] = t + 500
            w(orjson.dumps(obj) + b"\n")
            n += 1

        def pick(d: dict) -> int:
            # The oldest or one of the first few: cheap, and still varied.
            it = iter(d)
            for _ in range(rng.randrange(min(len(d), 8))):
                next(it)
            return next(it)

        while n < events:
            r = rng.random()
            total = len(free_allocs) + len(regs)
            if total < live and r < 0.3:
                size = PAGE * rng.randint(1, 16)
                base = next_addr
                next_addr += size + PAGE * rng.randint(0, 4)
                host = rng.random() < 0.3
                if host:
                    emit({"call": "aclrtMallocHost", "args": {"size": size}, "ret": 0, "out": {"hostPtr": base}})
                else:
                    emit({"call": "malloc", "args": {"size": size}, "out": {"ptr": base}})
                free_allocs[base] = (size, host)
            elif r < 0.15 and free_allocs and total >= live // 2:
                base = pick(free_allocs)
                _, host = free_allocs.pop(base)
                if host:
                    emit({"call": "aclrtFreeHost", "args": {"hostPtr": base}, "ret": 0})
                else:
                    emit({"call": "free", "args": {"ptr": base}})
            elif r < 0.55 and free_allocs:
                base = pick(free_allocs)
                size, host = free_allocs.pop(base)
                flag = MAPPED if host else rng.choice([MAPPED, PINNED, MAPPED | PINNED])
                emit({"call": "aclrtHostRegisterV2", "args": {"ptr": base, "size": size, "flag": flag}, "ret": 0})
                regs[base] = (size, flag, host)
                if flag & MAPPED:
                    mapped[base] = None
            elif r < 0.85 and mapped:
                # A program asks only for the device address of a MAPPED registration (the caller's
                # obligation ACL-GETDEV-MAPPED).
                base = pick(mapped)
                emit({"call": "aclrtHostGetDevicePointer", "args": {"pHost": base, "flag": 0}, "ret": 0,
                      "out": {"pDevice": 0x10_0000_0000 + base}})
            elif regs and r >= 0.85:
                base = pick(regs)
                size, flag, host = regs.pop(base)
                mapped.pop(base, None)
                emit({"call": "aclrtHostUnregister", "args": {"ptr": base}, "ret": 0})
                free_allocs[base] = (size, host)
    return n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--live", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    n = generate(a.out, a.events, a.live, a.seed)
    print(f"wrote {n} events to {a.out}")


if __name__ == "__main__":
    main()
