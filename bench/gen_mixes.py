"""The legal traces besides bench/gen_trace.py's mix that users bring, for bench/bench_replay.py.

Each generator writes a conforming trace of about `events` events (issue 14's four workloads):
- `register_heavy`: Ascend, registration churn on about 4,000 live allocations, most of them
  registered (the C tables past their small-table size);
- `cupva_timed`: cuPVA with `tid`, `t0` and `t1` on every event: Init-phase cudaMalloc + Register,
  DeInit-phase Unregister + cudaFree, in rounds (every Register/Unregister has a thread-safety rule;
  cudaMalloc and cudaFree carry their C status 0, as the project's recorder writes them; before
  stop 35 they carried no `ret`);
- `hex_and_names`: gen_trace's Ascend mix written as recorders write it: `"0x..."` addresses and
  sizes, flag-name lists, and from stop 35 every second `ret` in hex;
- `live_100k`: Ascend, 100,000 live registrations made first, then lookups and churn among them.

and one that violates its spec on purpose, for bench/bench_findings.py: `double_unregister`,
register-heavy with every Nth unregister made twice (a finding at each).

    python bench/gen_mixes.py MIX OUT.jsonl --events 1000000
"""

from __future__ import annotations

import argparse
import random

import orjson

from gen_trace import generate as gen_trace_mix

PAGE = 4096
MAPPED, PINNED = 0x2, 0x10000000
ACL_HEADER = {"regcheck": 1, "spec": "acl", "env": {"os_kernel": "6.6", "product": "AtlasA2"}}
BASE = 0x7F00_0000_0000


class _Writer:
    def __init__(self, f, timed: bool = False):
        self.w, self.n, self.t, self.timed = f.write, 0, 0, timed

    def __call__(self, obj: dict) -> None:
        if self.timed:
            self.t += 1000
            obj["tid"], obj["t0"], obj["t1"] = 1, self.t, self.t + 500
        self.w(orjson.dumps(obj) + b"\n")
        self.n += 1


def _acl_trace(path: str, events: int, live: int, churn_lookups: float, seed: int, unregister_twice: int = 0,
               large: int = 0) -> int:
    """`live` allocations, each registered once made; then churn: unregister one, register another,
    look up MAPPED ones (a share `churn_lookups` of the steps), until `events`. From the end of the
    set-up on, `live` or `live - 1` allocations are registered at every event. `unregister_twice`
    N > 0: every Nth unregister is made twice, the second answered 507911 (not registered), a bug
    the replay finds (ACL-UNREG-REGISTERED); 0 draws the same trace as before it existed. `large`
    > 0: first one allocation of that many bytes below all the others, registered for the whole
    trace (a staging pool beside many small buffers), so the largest entry of both tables is that
    large; 0 draws the same trace as before it existed."""
    rng = random.Random(seed)
    with open(path, "wb") as f:
        f.write(orjson.dumps(ACL_HEADER) + b"\n")
        emit = _Writer(f, timed=True)
        bases = [BASE + i * 4 * PAGE for i in range(live)]
        flags: dict[int, int] = {}
        idle: list[int] = []
        if large:
            pool = BASE - large - 64 * PAGE
            emit({"call": "malloc", "args": {"size": large}, "out": {"ptr": pool}})
            emit({"call": "aclrtHostRegisterV2", "args": {"ptr": pool, "size": large, "flag": MAPPED}, "ret": 0})
        for b in bases:
            if emit.n >= events:
                break
            emit({"call": "malloc", "args": {"size": 2 * PAGE}, "out": {"ptr": b}})
            flag = rng.choice([MAPPED, MAPPED, PINNED, MAPPED | PINNED])
            emit({"call": "aclrtHostRegisterV2", "args": {"ptr": b, "size": 2 * PAGE, "flag": flag}, "ret": 0})
            flags[b] = flag
        registered = list(flags)
        unregisters = 0
        while emit.n < events:
            r = rng.random()
            if r < churn_lookups and registered:
                b = registered[rng.randrange(len(registered))]
                if flags[b] & MAPPED:
                    emit({"call": "aclrtHostGetDevicePointer", "args": {"pHost": b, "flag": 0}, "ret": 0,
                          "out": {"pDevice": 0x10_0000_0000 + b}})
                    continue
            # Every other churn step gives back what the one before took: the live count stays at
            # `live` or one under it for the whole trace. (Choosing register or unregister by a
            # random draw, as this did before stop 23, let unregistering win, since a lookup that
            # drew an unMAPPED entry fell through to it: the live count drained to a few dozen
            # within the first 100,000-600,000 churn events.)
            if idle and len(registered) < live:
                b = idle.pop(rng.randrange(len(idle)))
                flag = rng.choice([MAPPED, PINNED, MAPPED | PINNED])
                emit({"call": "aclrtHostRegisterV2", "args": {"ptr": b, "size": 2 * PAGE, "flag": flag}, "ret": 0})
                flags[b] = flag
                registered.append(b)
            else:
                i = rng.randrange(len(registered))
                registered[i], registered[-1] = registered[-1], registered[i]
                b = registered.pop()
                del flags[b]
                emit({"call": "aclrtHostUnregister", "args": {"ptr": b}, "ret": 0})
                idle.append(b)
                unregisters += 1
                if unregister_twice and unregisters % unregister_twice == 0 and emit.n < events:
                    emit({"call": "aclrtHostUnregister", "args": {"ptr": b}, "ret": 507911})
        return emit.n


def register_heavy(path: str, events: int, seed: int = 1) -> int:
    return _acl_trace(path, events, live=4000, churn_lookups=0.1, seed=seed)


def double_unregister(path: str, events: int, every: int = 10, seed: int = 1) -> int:
    """register-heavy with a bug: every `every`th unregister is made again (bench_findings.py)."""
    return _acl_trace(path, events, live=4000, churn_lookups=0.1, seed=seed, unregister_twice=every)


def live_churn(path: str, events: int, live: int, seed: int = 1, large: int = 0) -> int:
    """live-100k's churn on `live` live registrations (bench_live_sweep.py varies it), with one
    registration of `large` bytes below them where `large` > 0."""
    return _acl_trace(path, events, live=live, churn_lookups=0.6, seed=seed, large=large)


def live_100k(path: str, events: int, seed: int = 1) -> int:
    return live_churn(path, events, live=100_000, seed=seed)


def cupva_timed(path: str, events: int, per_round: int = 200, seed: int = 1) -> int:
    rng = random.Random(seed)
    with open(path, "wb") as f:
        f.write(orjson.dumps({"regcheck": 1, "spec": "cupva", "env": {"driver_version": 2005}}) + b"\n")
        emit = _Writer(f, timed=True)
        next_dev = 0x7000_0000_0000
        while emit.n < events:
            emit({"call": "vm_state", "args": {"state": "Init"}})
            ptrs = []
            for _ in range(per_round):
                size = PAGE * rng.randint(1, 64)
                # cudaMalloc and cudaFree with their C status, as the project's recorder writes them
                emit({"call": "cudaMalloc", "args": {"size": size}, "out": {"devPtr": next_dev}, "ret": 0})
                emit({"call": "cupva::mem::Register", "args": {"ptr": next_dev, "size": size, "externalAllocType": "CUDA"},
                      "ret": "ok"})
                ptrs.append(next_dev)
                next_dev += size + PAGE
            emit({"call": "vm_state", "args": {"state": "Operational"}})
            emit({"call": "vm_state", "args": {"state": "DeInit"}})
            for p in ptrs:
                emit({"call": "cupva::mem::Unregister", "args": {"ptr": p}, "ret": "ok"})
                emit({"call": "cudaFree", "args": {"devPtr": p}, "ret": 0})
        return emit.n


_NAMES = {MAPPED: ["ACL_HOST_REG_MAPPED"], PINNED: ["ACL_HOST_REG_PINNED"],
          MAPPED | PINNED: ["ACL_HOST_REG_MAPPED", "ACL_HOST_REG_PINNED"]}
_HEX_FIELDS = ("ptr", "pHost", "hostPtr", "pDevice", "size")


def hex_and_names(path: str, events: int, seed: int = 1) -> int:
    """gen_trace's mix, then every address and size as a "0x..." string, every flag as names, and
    every second line's `ret` as a "0x..." string (as a recorder that writes its integers in hex would)."""
    plain = path + ".plain"
    n = gen_trace_mix(plain, events, seed=seed)
    with open(plain, "rb") as src, open(path, "wb") as f:
        f.write(next(src))
        for i, raw in enumerate(src):
            ev = orjson.loads(raw)
            if i % 2 and "ret" in ev:
                ev["ret"] = hex(ev["ret"])
            for part in ("args", "out"):
                values = ev.get(part)
                for k in _HEX_FIELDS:
                    if values is not None and k in values:
                        values[k] = hex(values[k])
                if values is not None and "flag" in values and values["flag"] in _NAMES:
                    values["flag"] = _NAMES[values["flag"]]
            f.write(orjson.dumps(ev) + b"\n")
    import os
    os.remove(plain)
    return n


MIXES = {"register-heavy": register_heavy, "cupva-timed": cupva_timed, "hex-and-names": hex_and_names,
         "live-100k": live_100k}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mix", choices=sorted(MIXES))
    p.add_argument("out")
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    print(f"wrote {MIXES[a.mix](a.out, a.events, seed=a.seed)} events to {a.out}")


if __name__ == "__main__":
    main()
