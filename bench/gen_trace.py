"""Write a large, realistic, conforming Ascend trace for the replay benchmarks.

The mix: host allocations (malloc / aclrtMallocHost), registrations (MAPPED, PINNED or both),
device-pointer lookups, unregistrations and frees, with a few hundred live ranges at any time.

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
    allocs: list[tuple[int, int, bool]] = []  # (base, size, from MallocHost)
    regs: dict[int, tuple[int, int]] = {}  # base -> (size, flag)
    dev = {}
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

        while n < events:
            r = rng.random()
            unregistered = [a for a in allocs if a[0] not in regs] if r < 0.15 else None
            if len(allocs) < live and r < 0.3:
                size = PAGE * rng.randint(1, 16)
                base = next_addr
                next_addr += size + PAGE * rng.randint(0, 4)
                host = rng.random() < 0.3
                if host:
                    emit({"call": "aclrtMallocHost", "args": {"size": size}, "ret": 0, "out": {"hostPtr": base}})
                else:
                    emit({"call": "malloc", "args": {"size": size}, "out": {"ptr": base}})
                allocs.append((base, size, host))
            elif unregistered and len(allocs) >= live // 2:
                a = rng.choice(unregistered)
                allocs.remove(a)
                if a[2]:
                    emit({"call": "aclrtFreeHost", "args": {"hostPtr": a[0]}, "ret": 0})
                else:
                    emit({"call": "free", "args": {"ptr": a[0]}})
            elif r < 0.55:
                cands = [a for a in allocs if a[0] not in regs]
                if not cands:
                    continue
                base, size, host = rng.choice(cands)
                flag = MAPPED if host else rng.choice([MAPPED, PINNED, MAPPED | PINNED])
                emit({"call": "aclrtHostRegisterV2", "args": {"ptr": base, "size": size, "flag": flag}, "ret": 0})
                regs[base] = (size, flag)
            elif r < 0.85 and regs:
                base = rng.choice(list(regs)) if len(regs) < 64 else next(iter(regs))
                size, flag = regs[base]
                if flag & MAPPED:
                    d = dev.setdefault(base, 0x10_0000_0000 + base)
                    emit({"call": "aclrtHostGetDevicePointer", "args": {"pHost": base, "flag": 0}, "ret": 0,
                          "out": {"pDevice": d}})
                else:
                    emit({"call": "aclrtHostGetDevicePointer", "args": {"pHost": base, "flag": 0}, "ret": 107000})
            elif regs:
                base = rng.choice(list(regs)) if len(regs) < 64 else next(iter(regs))
                emit({"call": "aclrtHostUnregister", "args": {"ptr": base}, "ret": 0})
                del regs[base]
                dev.pop(base, None)
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
