/*
 * regcheck_preload.c: the LD_PRELOAD interposer behind `regcheck record`.
 *
 * It intercepts the host-registration calls of three runtimes and the host memory calls their
 * specs' rules need (the malloc family, free, mmap, munmap, mremap, mprotect), forwards each call to the
 * real function found with dlsym(RTLD_NEXT), and appends trace format v1 events
 * (docs/trace-format.md) to the file named by REGCHECK_TRACE:
 *  - Ascend CANN (libascendcl.so): aclrtHostRegisterV2, aclrtHostUnregister,
 *    aclrtHostGetDevicePointer, aclrtMallocHost, aclrtFreeHost;
 *  - the CUDA runtime (libcudart.so): cudaHostRegister, cudaHostUnregister,
 *    cudaHostGetDevicePointer, cudaHostGetFlags, cudaMallocHost, cudaHostAlloc, cudaFreeHost,
 *    cudaMalloc, cudaFree, cudaSetDeviceFlags; and the driver API's cuMemHostRegister_v2 and
 *    cuMemHostUnregister (libcuda.so), written as the runtime's register and unregister events;
 *  - HIP (libamdhip64.so): hipHostRegister, hipHostUnregister, hipHostGetDevicePointer,
 *    hipHostMalloc, hipHostFree, hipMalloc, hipFree.
 * REGCHECK_FAMILY (acl, cuda or hip; acl when unset) says which family the trace's spec declares:
 * only that family's calls are written, the others are forwarded unrecorded. `regcheck record`
 * writes the header line first; this file only appends events, one write(2) per line, so a crash
 * never leaves half a line behind.
 *
 * Trace size follows registration activity, not allocation activity: every live heap block and
 * mapping is kept in a compact in-memory table (address -> size), and an allocation event is
 * written for a block only when a registration first touches it, just before the registration
 * event (`malloc` for a heap block; for a mapping `mmap` in cuda and hip traces, `malloc` in acl
 * ones, whose spec has no mapping events). A `free` or `munmap` event is written only for blocks
 * that had their allocation event. So the trace keeps the format's promise (every registered
 * block has its allocation event) without one line per malloc.
 *
 * Constraints that shape the code:
 *  - Nothing here may call malloc (we are malloc). The tables live in memory from the real mmap,
 *    lines are formatted by hand on the stack, and dlsym's own allocations during start-up are
 *    served from a static bootstrap buffer.
 *  - Calls the vendor library makes itself (its internal mallocs, or one aclrt function calling
 *    another through the PLT) are forwarded untouched: a thread-local depth counter marks "inside
 *    a vendor call". The trace records what the program asked for. A program's signal handler
 *    runs through a trampoline that sets depth to 0 while it runs, since its calls are the
 *    program's, except when the signal interrupted our own bookkeeping (the thread-local `busy`):
 *    then its calls are forwarded unrecorded, which cannot deadlock on a table lock.
 *  - Event order must be the order the calls took effect where memory can be reused. One mutex
 *    (`wlock`) serialises writing; it is also held across the real free, munmap and pinned-memory
 *    release (aclrtFreeHost, cudaFreeHost, hipHostFree) of a block whose allocation is in the
 *    trace, so its release line is written before any other thread can be handed the same
 *    address and write its allocation line. Registration calls
 *    themselves run unlocked, so the program's own concurrency is not changed.
 *  - Lock order: wlock, then a table lock. Never the other way round.
 *  - One trace holds one address space. The first process to write an event claims the trace
 *    (O_EXCL on the file named by REGCHECK_CLAIM); any other process that makes registration
 *    calls (a sibling, a fork of the owner) is not recorded and says so on stderr.
 *
 * 64-bit Linux with glibc or a compatible libc only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(void *) == 8, "regcheck's interposer supports 64-bit targets only");

#define TLS static __thread __attribute__((tls_model("initial-exec")))
#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

typedef int aclError;
enum {
    ACL_HOST_REG_MAPPED = 0x2,
    ACL_ERROR_RT_INTERNAL_ERROR = 507000,
};

/* ------------------------------------------------------------------ the real functions */

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static int (*real_mprotect)(void *, size_t, int);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);

typedef void (*sig_fn)(int);
typedef void (*siginfo_fn)(int, siginfo_t *, void *);
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static sig_fn (*real_signal)(int, sig_fn);
static sig_fn (*real_sysv_signal)(int, sig_fn);

/* ------------------------------------------------------------------ process state */

enum { INIT_NONE, INIT_RUNNING, INIT_DONE };
static int init_state;          /* atomic: the real allocation functions are resolved */
TLS int in_init;                /* this thread is resolving them: serve from the bootstrap buffer */
TLS int depth;                  /* > 0 inside a vendor call: forward without recording */
TLS uint32_t cached_tid;

static int recording;           /* atomic: REGCHECK_TRACE is open and this process may record */
/* The call family this trace records, from REGCHECK_FAMILY at start-up (acl when unset): only its
   calls are written, and it decides how a mapping is written (below, "writing events"). */
enum { FAM_ACL, FAM_CUDA, FAM_HIP };
static int family = FAM_ACL;
/* Whether `mmap` lines carry `prot` and `mprotect` lines are written (cuda, hip): REGCHECK_PROTECTIONS
   is 0 for a spec that declares neither (checker/engines/record.py). The protections are kept either
   way; only their lines are left out. */
static int protections = 1;
enum { CLAIM_UNDECIDED, CLAIM_OWNER, CLAIM_DENIED };
static int claim = CLAIM_UNDECIDED; /* under wlock */
enum { OFF_NO_TRACE, OFF_DENIED, OFF_FORKED, OFF_EXECED, OFF_WRITE_FAILED };
static int off_reason = OFF_NO_TRACE;
static int told_off;            /* the "not recorded" note was printed */
static int trace_fd = -1;
static char claim_path[4096];
static size_t page_size = 4096;
static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
TLS int wlock_depth; /* wlock is re-entrant per thread: a nested take must not deadlock */
/* > 0 while this thread holds wlock or a table lock, or is between the steps of one piece of
   bookkeeping: a signal handler that interrupts it must not be recorded (see "signal handlers"). */
TLS int busy;

/* A compiler barrier: a signal handler on this thread must see busy set before the lock is
   taken and still set until it is released. */
#define SIGNAL_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

static void busy_enter(void) {
    busy++;
    SIGNAL_FENCE();
}

static void busy_leave(void) {
    SIGNAL_FENCE();
    busy--;
}

static void wlock_take(void) {
    busy_enter();
    if (wlock_depth++ == 0)
        pthread_mutex_lock(&wlock);
}

static void wlock_drop(void) {
    if (wlock_depth == 1) /* unlock before the count drops: a handler sees it held until then */
        pthread_mutex_unlock(&wlock);
    wlock_depth--;
    busy_leave();
}

/* ------------------------------------------------------------------ small helpers */

static uint32_t tid(void) {
    if (UNLIKELY(cached_tid == 0))
        cached_tid = (uint32_t)syscall(SYS_gettid);
    return cached_tid;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int tracking(void) {
    return depth == 0 && __atomic_load_n(&recording, __ATOMIC_RELAXED);
}

/* A line built on the stack: no printf (it may allocate), no allocation at all. */
struct line {
    size_t n;
    char buf[768];
};

static void put_s(struct line *l, const char *s) {
    while (*s && l->n < sizeof l->buf)
        l->buf[l->n++] = *s++;
}

static void put_u(struct line *l, uint64_t v) {
    char tmp[24];
    int i = 0;
    do {
        tmp[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (i && l->n < sizeof l->buf)
        l->buf[l->n++] = tmp[--i];
}

static void put_i(struct line *l, int64_t v) {
    if (v < 0) {
        put_s(l, "-");
        put_u(l, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u(l, (uint64_t)v);
    }
}

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        p += k;
        n -= (size_t)k;
    }
}

static void say(const char *a, uint64_t num, const char *b) {
    struct line l = {0};
    put_s(&l, "regcheck: ");
    put_s(&l, a);
    if (b) {
        put_u(&l, num);
        put_s(&l, b);
    }
    put_s(&l, "\n");
    int saved = errno;
    write_all(2, l.buf, l.n);
    errno = saved;
}

/* ------------------------------------------------------------------ bootstrap allocator */

/* dlsym may allocate before the real malloc is known; those few blocks come from here and are
   never freed. Each block is preceded by its size, so realloc can copy it. */
#define BOOT_SIZE (256 * 1024)
static _Alignas(4096) unsigned char boot_buf[BOOT_SIZE];
static size_t boot_used;

static int is_boot(const void *p) {
    return (const unsigned char *)p >= boot_buf && (const unsigned char *)p < boot_buf + BOOT_SIZE;
}

static void *boot_alloc(size_t n, size_t align) {
    if (align < 16)
        align = 16;
    size_t start = __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
    for (;;) {
        size_t data = (start + 16 + align - 1) & ~(align - 1);
        size_t end = data + ((n + 15) & ~(size_t)15);
        if (end > BOOT_SIZE || end < data)
            return NULL;
        if (__atomic_compare_exchange_n(&boot_used, &start, end, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            memcpy(boot_buf + data - sizeof(size_t), &n, sizeof n);
            return boot_buf + data; /* static storage: already zero, good for calloc */
        }
    }
}

static size_t boot_size(const void *p) {
    size_t n;
    memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
    return n;
}

/* ------------------------------------------------------------------ start-up */

static void resolve_allocators(void) {
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    real_valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
    real_pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
    real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    real_munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
    real_mprotect = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "mprotect");
    real_mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
    real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
    real_signal = (sig_fn(*)(int, sig_fn))dlsym(RTLD_NEXT, "signal");
    real_sysv_signal = (sig_fn(*)(int, sig_fn))dlsym(RTLD_NEXT, "sysv_signal");
    if (!real_malloc || !real_calloc || !real_realloc || !real_free || !real_posix_memalign || !real_mmap ||
        !real_munmap || !real_mprotect) {
        say("cannot find the C library's allocator with dlsym(RTLD_NEXT); giving up", 0, NULL);
        abort();
    }
}

/* Resolves the allocators once; any thread may get here first (even before our constructor). */
static void ensure_init(void) {
    if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == INIT_DONE || in_init)
        return;
    int expected = INIT_NONE;
    if (__atomic_compare_exchange_n(&init_state, &expected, INIT_RUNNING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        in_init = 1;
        resolve_allocators();
        in_init = 0;
        __atomic_store_n(&init_state, INIT_DONE, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != INIT_DONE)
        sched_yield();
}

#define BOOTING() (UNLIKELY(__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != INIT_DONE) && (ensure_init(), in_init))

/* ------------------------------------------------------------------ block tables */

/* Open addressing with linear probing; storage from the real mmap; address 0 marks a free slot.
   The heap table is split in shards so that threads allocating at once rarely share a lock. */
#define EMITTED 1u /* its `malloc` event is in the trace */

struct entry {
    uintptr_t addr;
    uint64_t size;
    uint32_t tid;
    uint32_t flags;
};

/* A mapping's protection (PROT_READ, PROT_WRITE, PROT_EXEC) lives in its entry's flags as its
   difference from read-write, so that an entry made without one (a heap block) reads as
   read-write, which is also what an `mmap` line without `prot` means. */
#define PROT_BITS 7u
#define PROT_SHIFT 8
#define PROT_MASK (PROT_BITS << PROT_SHIFT)
#define PROT_RW (PROT_READ | PROT_WRITE)

static uint32_t prot_flags(int prot) {
    return (((uint32_t)prot ^ PROT_RW) & PROT_BITS) << PROT_SHIFT;
}

static int entry_prot(const struct entry *e) {
    return (int)(((e->flags >> PROT_SHIFT) & PROT_BITS) ^ PROT_RW);
}

struct table {
    pthread_mutex_t lock;
    struct entry *slots;
    size_t cap; /* a power of two, or 0 before the first insert */
    size_t count;
};

#define HEAP_SHARDS 64
#define TABLE_INIT { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0 }
static struct table heap[HEAP_SHARDS] = {[0 ... HEAP_SHARDS - 1] = TABLE_INIT};
static struct table maps = TABLE_INIT;    /* mmap'd regions */
static struct table hostmem = TABLE_INIT; /* pinned host memory: aclrtMallocHost, cudaMallocHost,
                                             cudaHostAlloc, hipHostMalloc (their events are always written) */
static int hostmem_live;                  /* atomic: entries in hostmem, so free() can skip the lookup */
static int table_full_told;

static void tab_lock(struct table *t) {
    busy_enter();
    pthread_mutex_lock(&t->lock);
}

static void tab_unlock(struct table *t) {
    pthread_mutex_unlock(&t->lock);
    busy_leave();
}

static uint64_t mix(uintptr_t a) {
    uint64_t h = (uint64_t)a;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static struct table *heap_shard(uintptr_t a) {
    return &heap[mix(a) & (HEAP_SHARDS - 1)];
}

static size_t home(const struct table *t, uintptr_t a) {
    return (size_t)(mix(a) >> 6) & (t->cap - 1);
}

static struct entry *tab_find(struct table *t, uintptr_t a) {
    if (!t->cap)
        return NULL;
    for (size_t i = home(t, a);; i = (i + 1) & (t->cap - 1)) {
        if (t->slots[i].addr == a)
            return &t->slots[i];
        if (t->slots[i].addr == 0)
            return NULL;
    }
}

/* The entry whose block [addr, addr + size) holds p (a zero-size block holds only its address). */
static struct entry *tab_containing(struct table *t, uintptr_t p) {
    struct entry *e = tab_find(t, p);
    if (e)
        return e;
    for (size_t i = 0; i < t->cap; i++) {
        struct entry *s = &t->slots[i];
        if (s->addr && s->addr < p && p - s->addr < s->size)
            return s;
    }
    return NULL;
}

static void tab_place(struct table *t, struct entry e) {
    size_t i = home(t, e.addr);
    while (t->slots[i].addr != 0 && t->slots[i].addr != e.addr)
        i = (i + 1) & (t->cap - 1);
    if (t->slots[i].addr == 0)
        t->count++;
    t->slots[i] = e;
}

static int tab_grow(struct table *t) {
    size_t cap = t->cap ? t->cap * 2 : 1024;
    void *mem = real_mmap(NULL, cap * sizeof(struct entry), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return -1;
    struct entry *old = t->slots;
    size_t old_cap = t->cap;
    t->slots = mem;
    t->cap = cap;
    t->count = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].addr)
            tab_place(t, old[i]);
    if (old)
        real_munmap(old, old_cap * sizeof(struct entry));
    return 0;
}

/* Inserts or replaces; the load stays at most one half so probes stay short. */
static void tab_put(struct table *t, uintptr_t a, uint64_t size, uint32_t owner, uint32_t flags) {
    if ((t->count + 1) * 2 > t->cap && tab_grow(t) != 0 && t->count + 1 >= t->cap) {
        if (!__atomic_exchange_n(&table_full_told, 1, __ATOMIC_RELAXED))
            say("out of memory for the block table; some allocations are not tracked", 0, NULL);
        return;
    }
    struct entry e = {a, size, owner, flags};
    tab_place(t, e);
}

/* Deletes a slot, shifting later members of its probe run back (no tombstones). */
static void tab_del(struct table *t, struct entry *e) {
    size_t mask = t->cap - 1, i = (size_t)(e - t->slots), j = i;
    for (;;) {
        t->slots[i].addr = 0;
        for (;;) {
            j = (j + 1) & mask;
            if (t->slots[j].addr == 0) {
                t->count--;
                return;
            }
            size_t k = home(t, t->slots[j].addr);
            int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
            if (!stays)
                break;
        }
        t->slots[i] = t->slots[j];
        i = j;
    }
}

/* ------------------------------------------------------------------ writing events */

/* Says once why a process that calls the registration API is not in the trace. */
static void tell_off(void) {
    int known = off_reason == OFF_DENIED || off_reason == OFF_FORKED || off_reason == OFF_EXECED;
    if (!known || __atomic_exchange_n(&told_off, 1, __ATOMIC_RELAXED))
        return;
    if (off_reason == OFF_DENIED || off_reason == OFF_FORKED)
        say(off_reason == OFF_DENIED ? "process " : "forked process ", (uint64_t)getpid(),
            " calls the registration API but is not recorded: a trace holds one process, and another one owns it");
    else if (off_reason == OFF_EXECED)
        say("process ", (uint64_t)getpid(), " calls the registration API after an exec, which is not recorded: "
            "the trace holds the address space before the exec (a new program is a new address space)");
}

/* Whether the trace's claim names this process id: then this process owned the trace before an
 * exec replaced its program (a fork's child has another id). */
static int claimed_by_this_pid(void) {
    char buf[32] = {0};
    int fd = open(claim_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 && strtoull(buf, NULL, 10) == (unsigned long long)getpid();
}

/* Decides, at the first event, whether this process owns the trace (caller holds wlock). */
static int may_write(void) {
    if (claim == CLAIM_UNDECIDED) {
        claim = CLAIM_OWNER;
        if (claim_path[0]) {
            int fd = open(claim_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (fd >= 0) {
                struct line l = {0};
                put_u(&l, (uint64_t)getpid());
                put_s(&l, "\n");
                write_all(fd, l.buf, l.n);
                close(fd);
            } else {
                claim = CLAIM_DENIED;
                off_reason = claimed_by_this_pid() ? OFF_EXECED : OFF_DENIED;
                __atomic_store_n(&recording, 0, __ATOMIC_RELAXED);
                tell_off();
            }
        }
    }
    return claim == CLAIM_OWNER && trace_fd >= 0;
}

static void emit(struct line *l) { /* caller holds wlock */
    if (!may_write())
        return;
    if (l->n >= sizeof l->buf) { /* cannot happen with these fields; never write a cut line */
        say("internal error: trace line too long; event dropped", 0, NULL);
        return;
    }
    int saved = errno;
    const char *p = l->buf;
    size_t n = l->n;
    while (n) {
        ssize_t k = write(trace_fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            say("cannot write the trace; recording stops here (errno ", (uint64_t)errno, ")");
            off_reason = OFF_WRITE_FAILED;
            told_off = 1;
            __atomic_store_n(&recording, 0, __ATOMIC_RELAXED);
            trace_fd = -1;
            break;
        }
        p += k;
        n -= (size_t)k;
    }
    errno = saved;
}

static void ev_begin(struct line *l, const char *call) {
    l->n = 0;
    put_s(l, "{\"call\":\"");
    put_s(l, call);
    put_s(l, "\",\"args\":{");
}

static void ev_arg(struct line *l, const char *name, uint64_t v, int first) {
    put_s(l, first ? "\"" : ",\"");
    put_s(l, name);
    put_s(l, "\":");
    put_u(l, v);
}

static void ev_ret(struct line *l, aclError ret) {
    put_s(l, "},\"ret\":");
    put_i(l, ret);
}

static void ev_out(struct line *l, const char *name, uint64_t v) {
    put_s(l, ",\"out\":{\"");
    put_s(l, name);
    put_s(l, "\":");
    put_u(l, v);
    put_s(l, "}");
}

static void ev_end(struct line *l, uint32_t who, int timed, uint64_t t0, uint64_t t1) {
    put_s(l, ",\"tid\":");
    put_u(l, who);
    if (timed) {
        put_s(l, ",\"t0\":");
        put_u(l, t0);
        put_s(l, ",\"t1\":");
        put_u(l, t1);
    }
    put_s(l, "}\n");
}

/* The allocation event of a block first touched by a registration: `malloc` {size} -> {ptr} for
   a heap block; for a mapping, `mmap` {length} -> {addr} where the spec has mapping events (cuda,
   hip) and `malloc` where it has not (acl). The allocation happened earlier and its time was not
   kept (keeping it would double the table), so the line has the allocating thread but no
   timestamps; no rule compares an environment event's time. */
static void emit_alloc(const struct entry *e, int mapping) {
    int as_mmap = mapping && family != FAM_ACL;
    struct line l;
    ev_begin(&l, as_mmap ? "mmap" : "malloc");
    ev_arg(&l, as_mmap ? "length" : "size", e->size, 1);
    if (as_mmap && protections && entry_prot(e) != PROT_RW)
        ev_arg(&l, "prot", (uint64_t)entry_prot(e), 0); /* left out: read-write, as the format says */
    put_s(&l, as_mmap ? "},\"out\":{\"addr\":" : "},\"out\":{\"ptr\":");
    put_u(&l, e->addr);
    put_s(&l, "}");
    ev_end(&l, e->tid, 0, 0, 0);
    emit(&l);
}

/* `mprotect` {addr, length, prot} of pages of a mapping whose `mmap` is in the trace (cuda, hip). */
static void emit_mprotect(uintptr_t a, uint64_t len, int prot, uint64_t t0, uint64_t t1) {
    struct line l;
    ev_begin(&l, "mprotect");
    ev_arg(&l, "addr", a, 1);
    ev_arg(&l, "length", len, 0);
    ev_arg(&l, "prot", (uint64_t)(prot & PROT_BITS), 0);
    put_s(&l, "}");
    ev_end(&l, tid(), 1, t0, t1);
    emit(&l);
}

/* `munmap` {addr, length} of pages of a mapping whose `mmap` is in the trace (cuda, hip). */
static void emit_munmap(uintptr_t a, uint64_t len, uint64_t t0, uint64_t t1) {
    struct line l;
    ev_begin(&l, "munmap");
    ev_arg(&l, "addr", a, 1);
    ev_arg(&l, "length", len, 0);
    put_s(&l, "}");
    ev_end(&l, tid(), 1, t0, t1);
    emit(&l);
}

static void emit_free(uintptr_t p, uint64_t t0, uint64_t t1) {
    struct line l;
    ev_begin(&l, "free");
    ev_arg(&l, "ptr", p, 1);
    put_s(&l, "}");
    ev_end(&l, tid(), 1, t0, t1);
    emit(&l);
}

/* The mapping holding p (caller holds maps.lock). One whose `mmap` is in the trace comes first:
   in cuda and hip traces a mapping cut in its middle stays whole, as the spec models it, and a
   new mapping placed in the hole lies inside it (see maps_cut). */
static struct entry *maps_containing(uintptr_t p) {
    struct entry *any = NULL;
    for (size_t i = 0; i < maps.cap; i++) {
        struct entry *s = &maps.slots[i];
        if (s->addr && (s->addr == p || (s->addr < p && p - s->addr < s->size))) {
            if (s->flags & EMITTED)
                return s;
            if (!any)
                any = s;
        }
    }
    return any;
}

/* Marks the block holding p as emitted and writes its allocation line, unless it already has one
   (caller holds wlock). Pinned host memory (aclrtMallocHost, ...) has its own event and is looked up first. */
static void emit_block_for(uintptr_t p) {
    struct entry copy;
    struct entry *e;
    int write_it = 0;
    if (p == 0)
        return;
    if (__atomic_load_n(&hostmem_live, __ATOMIC_RELAXED)) {
        tab_lock(&hostmem);
        e = tab_containing(&hostmem, p);
        tab_unlock(&hostmem);
        if (e)
            return;
    }
    /* The heap before the mappings: an allocator that gets its chunks from mmap through the PLT
       has those chunks in the mapping table, around the blocks it hands out. */
    struct table *candidates[HEAP_SHARDS + 2];
    size_t n = 0;
    candidates[n++] = heap_shard(p); /* exact match: the usual case, one probe */
    for (size_t i = 0; i < HEAP_SHARDS; i++) /* an interior pointer: scan every shard */
        candidates[n++] = &heap[i];
    candidates[n++] = &maps;
    for (size_t i = 0; i < n; i++) {
        struct table *t = candidates[i];
        tab_lock(t);
        e = i == 0 ? tab_find(t, p) : t == &maps ? maps_containing(p) : tab_containing(t, p);
        if (e && !(e->flags & EMITTED)) {
            e->flags |= EMITTED;
            copy = *e;
            write_it = 1;
        }
        tab_unlock(t);
        if (e) {
            if (write_it)
                emit_alloc(&copy, t == &maps);
            return;
        }
    }
}

/* ------------------------------------------------------------------ heap tracking */

static void heap_add(void *p, uint64_t size) {
    if (!p || is_boot(p))
        return;
    struct table *t = heap_shard((uintptr_t)p);
    tab_lock(t);
    tab_put(t, (uintptr_t)p, size, tid(), 0);
    tab_unlock(t);
}

/* Removes p's entry before the memory goes back to the allocator. Returns 1 when p's `malloc` is
   in the trace: the caller then holds wlock (taken here) until it has written the `free`. */
static int heap_remove(void *p, struct entry *removed) {
    uintptr_t a = (uintptr_t)p;
    struct table *t = heap_shard(a);
    tab_lock(t);
    struct entry *e = tab_find(t, a);
    if (e && !(e->flags & EMITTED)) {
        *removed = *e;
        tab_del(t, e);
        tab_unlock(t);
        return 0;
    }
    tab_unlock(t);
    removed->addr = 0;
    if (!e)
        return 0;
    /* Flags are only ever set under wlock, so the entry is still emitted when we get back. */
    wlock_take();
    tab_lock(t);
    e = tab_find(t, a);
    if (e) {
        *removed = *e;
        tab_del(t, e);
    }
    tab_unlock(t);
    return 1;
}

/* free() of something that is not a heap block: if it is pinned host memory, record the
   misuse (the spec reports it) before the C library most likely aborts. */
static void note_foreign_free(void *p) {
    if (!__atomic_load_n(&hostmem_live, __ATOMIC_RELAXED))
        return;
    wlock_take();
    tab_lock(&hostmem);
    int found = tab_find(&hostmem, (uintptr_t)p) != NULL;
    tab_unlock(&hostmem);
    if (found) {
        uint64_t t = now_ns();
        emit_free((uintptr_t)p, t, t);
    }
    wlock_drop();
}

EXPORT void *malloc(size_t n) {
    if (BOOTING())
        return boot_alloc(n, 16);
    void *p = real_malloc(n);
    if (p && tracking())
        heap_add(p, n);
    return p;
}

EXPORT void *calloc(size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (BOOTING())
        return boot_alloc(total, 16);
    void *p = real_calloc(count, size);
    if (p && tracking())
        heap_add(p, total);
    return p;
}

EXPORT void free(void *p) {
    if (!p || is_boot(p))
        return;
    if (BOOTING())
        return; /* cannot happen: nothing but the bootstrap buffer exists yet */
    if (!tracking()) {
        real_free(p);
        return;
    }
    struct entry removed;
    if (heap_remove(p, &removed)) {
        uint64_t t0 = now_ns();
        real_free(p);
        uint64_t t1 = now_ns();
        if (removed.addr)
            emit_free(removed.addr, t0, t1);
        wlock_drop();
        return;
    }
    if (!removed.addr)
        note_foreign_free(p);
    real_free(p);
}

EXPORT void *realloc(void *p, size_t n) {
    if (p && is_boot(p)) {
        void *q = malloc(n);
        if (q) {
            size_t old = boot_size(p);
            memcpy(q, p, old < n ? old : n);
        }
        return q;
    }
    if (BOOTING())
        return boot_alloc(n, 16);
    if (!p || !tracking()) {
        void *q = real_realloc(p, n);
        if (q && tracking())
            heap_add(q, n);
        return q;
    }
    /* C's realloc ends the old object's life even when the address stays the same, so a traced
       block gets its `free`; a failed realloc leaves it alive, so its entry goes back. */
    struct entry removed;
    int traced = heap_remove(p, &removed);
    uint64_t t0 = now_ns();
    void *q = real_realloc(p, n);
    uint64_t t1 = now_ns();
    int old_freed = q != NULL || n == 0; /* glibc: realloc(p, 0) frees p and returns NULL */
    if (removed.addr && !old_freed) {
        struct table *t = heap_shard(removed.addr);
        tab_lock(t);
        tab_put(t, removed.addr, removed.size, removed.tid, removed.flags);
        tab_unlock(t);
    }
    if (traced) {
        if (removed.addr && old_freed)
            emit_free(removed.addr, t0, t1);
        wlock_drop();
    }
    if (q)
        heap_add(q, n);
    return q;
}

EXPORT void *reallocarray(void *p, size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
    if (BOOTING()) {
        void *p = boot_alloc(n, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    int rc = real_posix_memalign(out, align, n);
    if (rc == 0 && tracking())
        heap_add(*out, n);
    return rc;
}

static void *aligned(void *(*fn)(size_t, size_t), size_t align, size_t n) {
    if (BOOTING())
        return boot_alloc(n, align);
    void *p;
    if (fn) {
        p = fn(align, n);
    } else if (real_posix_memalign(&p, align, n) != 0) {
        p = NULL;
    }
    if (p && tracking())
        heap_add(p, n);
    return p;
}

EXPORT void *aligned_alloc(size_t align, size_t n) { return aligned(real_aligned_alloc, align, n); }
EXPORT void *memalign(size_t align, size_t n) { return aligned(real_memalign, align, n); }

EXPORT void *valloc(size_t n) {
    if (BOOTING())
        return boot_alloc(n, 4096);
    void *p = real_valloc ? real_valloc(n) : aligned(NULL, page_size, n);
    if (p && real_valloc && tracking())
        heap_add(p, n);
    return p;
}

EXPORT void *pvalloc(size_t n) {
    size_t rounded = (n + page_size - 1) & ~(page_size - 1);
    if (BOOTING())
        return boot_alloc(rounded, 4096);
    void *p = real_pvalloc ? real_pvalloc(n) : aligned(NULL, page_size, rounded);
    if (p && real_pvalloc && tracking())
        heap_add(p, rounded);
    return p;
}

/* ------------------------------------------------------------------ mapping tracking */

static int maps_overlap_emitted(uintptr_t a, uintptr_t end) {
    int hit = 0;
    tab_lock(&maps);
    for (size_t i = 0; i < maps.cap && !hit; i++) {
        struct entry *s = &maps.slots[i];
        hit = s->addr && (s->flags & EMITTED) && s->addr < end && a < s->addr + s->size;
    }
    tab_unlock(&maps);
    return hit;
}

#define CUT_KEPT 2u /* during one maps_cut: a traced mapping cut inside, kept whole */

/* Forgets [a, end) (caller holds maps.lock, and wlock if an emitted mapping may be cut; only a
   program racing a registration against an unmap of the same range can make us write without
   it, and each line is still one write(2)). What is written depends on the family:
    - acl (no mapping events; a mapping's allocation is a `malloc`): each mapping the range
      overlaps is freed as a whole (a `free` line if its `malloc` was written); the parts outside
      the range stay mapped and are tracked again as new, untraced blocks.
    - cuda, hip (`mmap`/`munmap` events): a traced mapping gets a `munmap` of exactly the pages
      it loses, so the spec's rule on unmapping registered memory sees the true range. The spec
      follows a mapping exactly when an unmap starts at its base, so a cut from the base drops
      those pages and keeps the rest traced at its new base, as the spec's effect does; a cut
      that starts inside leaves the entry whole, as the spec's record of it stays (the hole is
      then host memory to both, docs/recording.md). Untraced mappings are handled as for acl. */
static void maps_cut(uintptr_t a, uintptr_t end, uint64_t t0, uint64_t t1) {
    int kept = 0;
    for (;;) {
        struct entry *s = NULL;
        for (size_t i = 0; i < maps.cap; i++) {
            struct entry *c = &maps.slots[i];
            if (c->addr && !(c->flags & CUT_KEPT) && c->addr < end && a < c->addr + c->size) {
                s = c;
                break;
            }
        }
        if (!s)
            break;
        struct entry gone = *s;
        if ((gone.flags & EMITTED) && family != FAM_ACL) {
            uintptr_t gone_end = gone.addr + gone.size, cut_end = end < gone_end ? end : gone_end;
            if (a <= gone.addr) {
                tab_del(&maps, s);
                emit_munmap(gone.addr, cut_end - gone.addr, t0, t1);
                if (cut_end < gone_end)
                    tab_put(&maps, cut_end, gone_end - cut_end, gone.tid, EMITTED | (gone.flags & PROT_MASK));
            } else {
                emit_munmap(a, cut_end - a, t0, t1);
                s->flags |= CUT_KEPT;
                kept = 1;
            }
            continue;
        }
        tab_del(&maps, s);
        if (gone.addr < a)
            tab_put(&maps, gone.addr, a - gone.addr, gone.tid, gone.flags & PROT_MASK);
        if (gone.addr + gone.size > end)
            tab_put(&maps, end, gone.addr + gone.size - end, gone.tid, gone.flags & PROT_MASK);
        if (gone.flags & EMITTED)
            emit_free(gone.addr, t0, t1);
    }
    for (size_t i = 0; kept && i < maps.cap; i++)
        maps.slots[i].flags &= ~CUT_KEPT;
}

/* A mapping covers whole pages, so its block is the length rounded up to the page size. */
static size_t page_len(size_t len) {
    size_t n = (len + page_size - 1) & ~(page_size - 1);
    return n < len ? len : n;
}

static uintptr_t page_end(uintptr_t a, size_t len) {
    uintptr_t end = a + page_len(len);
    return end < a ? UINTPTR_MAX : end;
}

/* The real call runs with maps.lock held (and wlock when a traced mapping is involved), so no
   other thread can be handed the same range and track it before we have forgotten the old one. */
static void *tracked_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (BOOTING() || !real_mmap)
        return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    if (!tracking())
        return real_mmap(addr, len, prot, flags, fd, off);
    if (!(flags & MAP_FIXED)) {
        void *p = real_mmap(addr, len, prot, flags, fd, off);
        if (p != MAP_FAILED) {
            tab_lock(&maps);
            tab_put(&maps, (uintptr_t)p, page_len(len), tid(), prot_flags(prot));
            tab_unlock(&maps);
        }
        return p;
    }
    uintptr_t a = (uintptr_t)addr, end = page_end(a, len);
    int locked = maps_overlap_emitted(a, end);
    if (locked)
        wlock_take();
    tab_lock(&maps);
    uint64_t t0 = now_ns();
    void *p = real_mmap(addr, len, prot, flags, fd, off);
    uint64_t t1 = now_ns();
    if (p != MAP_FAILED) {
        maps_cut(a, end, t0, t1);
        tab_put(&maps, (uintptr_t)p, page_len(len), tid(), prot_flags(prot));
    }
    tab_unlock(&maps);
    if (locked)
        wlock_drop();
    return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return tracked_mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return tracked_mmap(addr, len, prot, flags, fd, off);
}

/* An unmap (protecting 0) or a protection change (protecting 1) of a valid, page-aligned range,
   made under the mapping table's lock, and under wlock where a mapping in the trace is touched (its
   line is written before another thread can be handed the same pages), then recorded in the table. */
static void maps_protect(uintptr_t a, uintptr_t end, int prot, uint64_t t0, uint64_t t1);
static int maps_change(void *addr, size_t len, int prot, int protecting) {
    uintptr_t a = (uintptr_t)addr, end = page_end(a, len);
    int locked = maps_overlap_emitted(a, end);
    if (locked)
        wlock_take();
    tab_lock(&maps);
    uint64_t t0 = now_ns();
    int rc = protecting ? real_mprotect(addr, len, prot) : real_munmap(addr, len);
    uint64_t t1 = now_ns();
    if (rc == 0 && protecting)
        maps_protect(a, end, prot, t0, t1);
    else if (rc == 0)
        maps_cut(a, end, t0, t1);
    tab_unlock(&maps);
    if (locked)
        wlock_drop();
    return rc;
}

EXPORT int munmap(void *addr, size_t len) {
    if (BOOTING() || !real_munmap)
        return (int)syscall(SYS_munmap, addr, len);
    uintptr_t a = (uintptr_t)addr;
    if (!tracking() || len == 0 || (a & (page_size - 1)))
        return real_munmap(addr, len); /* an invalid call changes nothing */
    return maps_change(addr, len, 0, 0);
}

/* Records a protection change of [a, end) (caller holds maps.lock, and wlock if an emitted mapping
   is touched). A mapping whose `mmap` is in the trace (cuda, hip) gets an `mprotect` line of the
   call's range, which the spec follows; one not yet written keeps the protection the spec would
   compute from that line, which its `mmap` line carries when a registration writes it: set when
   the range starts at the mapping's base and covers it all, made writable when it starts at the
   base and makes a prefix writable, else unchanged (docs/recording.md). */
static void maps_protect(uintptr_t a, uintptr_t end, int prot, uint64_t t0, uint64_t t1) {
    int written = 0;
    for (size_t i = 0; i < maps.cap; i++) {
        struct entry *s = &maps.slots[i];
        if (!s->addr || s->addr >= end || a >= s->addr + s->size)
            continue;
        if ((s->flags & EMITTED) && family != FAM_ACL && protections && !written) {
            emit_mprotect(a, end - a, prot, t0, t1);
            written = 1;
        }
        if (s->addr == a && (end >= s->addr + s->size || (prot & PROT_WRITE)))
            s->flags = (s->flags & ~PROT_MASK) | prot_flags(prot);
    }
}

EXPORT int mprotect(void *addr, size_t len, int prot) {
    if (BOOTING() || !real_mprotect)
        return (int)syscall(SYS_mprotect, addr, len, prot);
    uintptr_t a = (uintptr_t)addr;
    if (!tracking() || len == 0 || (a & (page_size - 1)))
        return real_mprotect(addr, len, prot); /* an invalid call changes nothing */
    return maps_change(addr, len, prot, 1);
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    if (BOOTING() || !real_mremap)
        return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, want);
    if (!tracking())
        return real_mremap(old, old_len, new_len, flags, want);
    uintptr_t a = (uintptr_t)old, end = page_end(a, old_len);
    uintptr_t wa = (uintptr_t)want, wend = page_end(wa, new_len);
    int locked = maps_overlap_emitted(a, end) || ((flags & MREMAP_FIXED) && maps_overlap_emitted(wa, wend));
    if (locked)
        wlock_take();
    tab_lock(&maps);
    struct entry *moved = tab_find(&maps, a);
    uint32_t prot = moved ? moved->flags & PROT_MASK : 0; /* the pages keep their protection */
    uint64_t t0 = now_ns();
    void *p = real_mremap(old, old_len, new_len, flags, want);
    uint64_t t1 = now_ns();
    if (p != MAP_FAILED) {
        maps_cut(a, end, t0, t1);
        if (flags & MREMAP_FIXED)
            maps_cut(wa, wend, t0, t1);
        tab_put(&maps, (uintptr_t)p, page_len(new_len), tid(), prot);
    }
    tab_unlock(&maps);
    if (locked)
        wlock_drop();
    return p;
}

/* ------------------------------------------------------------------ the vendor calls */

/* What a wrapper returns when the real function cannot be found, by family: ACL's internal error,
   cudaErrorUnknown, hipErrorUnknown. */
static const int missing_code[] = {[FAM_ACL] = ACL_ERROR_RT_INTERNAL_ERROR, [FAM_CUDA] = 999, [FAM_HIP] = 999};

/* The real vendor function, looked up at the first call (the library may be loaded late). */
static void *vendor(void **slot, const char *name) {
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        if (!f) {
            struct line l = {0};
            put_s(&l, "the real vendor function ");
            put_s(&l, name);
            put_s(&l, " is missing (dlsym RTLD_NEXT failed); the call fails");
            say(l.buf, 0, NULL);
        }
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}

#define VENDOR(slot, name) ((__typeof__(slot))vendor((void **)&(slot), (name)))

/* Whether to record this call of family `fam`: the program's own call (not one the vendor library
   makes itself) of the family this trace records, in a process that records. On 1 the caller is
   inside the call (depth > 0) until record_end. */
static int record_call(int fam) {
    if (depth > 0 || fam != family)
        return 0;
    if (__atomic_load_n(&recording, __ATOMIC_RELAXED)) {
        depth++;
        return 1;
    }
    tell_off();
    return 0;
}

/* Writes a recorded call's line and leaves the call. */
static void record_end(struct line *l) {
    wlock_take();
    emit(l);
    wlock_drop();
    depth--;
}

/* A registration's first touch of a block writes the block's allocation event first. */
static void before_register(const void *p) {
    wlock_take();
    emit_block_for((uintptr_t)p);
    wlock_drop();
}

/* The end of a line: `ret`, the one output when the call succeeded, the thread and the times. */
static void end_line(struct line *l, int ret, const char *out, const void *outp, int out_is_u32, uint64_t t0,
                     uint64_t t1) {
    ev_ret(l, ret);
    if (ret == 0 && out && outp)
        ev_out(l, out, out_is_u32 ? *(const uint32_t *)outp : (uintptr_t)*(void *const *)outp);
    ev_end(l, tid(), 1, t0, t1);
}

typedef int (*ptr_fn)(void *);

/* A call whose one argument is a pointer (unregistering, freeing device memory). */
static int record_ptr_call(ptr_fn real, void *p, const char *call, const char *arg) {
    uint64_t t0 = now_ns();
    int ret = real(p);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, call);
    ev_arg(&l, arg, (uintptr_t)p, 1);
    end_line(&l, ret, NULL, NULL, 0, t0, t1);
    record_end(&l);
    return ret;
}

typedef int (*register_fn)(void *, size_t, unsigned int);

/* A registration: (ptr, size, flags) under the family's parameter names. */
static int record_register(register_fn real, void *p, size_t size, unsigned int flags, const char *call,
                           const char *pname, const char *sname, const char *fname) {
    before_register(p);
    uint64_t t0 = now_ns();
    int ret = real(p, size, flags);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, call);
    ev_arg(&l, pname, (uintptr_t)p, 1);
    ev_arg(&l, sname, size, 0);
    ev_arg(&l, fname, flags, 0);
    end_line(&l, ret, NULL, NULL, 0, t0, t1);
    record_end(&l);
    return ret;
}

/* The end of an allocating call (its line is begun, its arguments written): pinned host memory
   joins the hostmem table, under wlock and before the line, so that a free() of it is seen. */
static void record_alloc_end(struct line *l, int ret, void **out, const char *outname, size_t size, int pinned,
                             uint64_t t0, uint64_t t1) {
    uintptr_t p = ret == 0 && out ? (uintptr_t)*out : 0;
    end_line(l, ret, outname, out, 0, t0, t1);
    wlock_take();
    if (p && pinned) {
        tab_lock(&hostmem);
        if (!tab_find(&hostmem, p))
            __atomic_add_fetch(&hostmem_live, 1, __ATOMIC_RELAXED);
        tab_put(&hostmem, p, size, tid(), EMITTED);
        tab_unlock(&hostmem);
    }
    emit(l);
    wlock_drop();
    depth--;
}

/* The release of pinned host memory (aclrtFreeHost, cudaFreeHost, hipHostFree). wlock is held
   across the real call: the line must precede any reuse of the memory (see the top). */
static int record_pinned_free(ptr_fn real, void *p, const char *call, const char *arg) {
    wlock_take();
    /* Only wlock is held here (re-entrant, tables consistent), so a signal handler that runs
       during the vendor call may be recorded: it is not in the interposer's bookkeeping. */
    busy_leave();
    uint64_t t0 = now_ns();
    int ret = real(p);
    uint64_t t1 = now_ns();
    busy_enter();
    if (ret == 0 && p) {
        tab_lock(&hostmem);
        struct entry *e = tab_find(&hostmem, (uintptr_t)p);
        if (e) {
            tab_del(&hostmem, e);
            __atomic_sub_fetch(&hostmem_live, 1, __ATOMIC_RELAXED);
        }
        tab_unlock(&hostmem);
    }
    struct line l;
    ev_begin(&l, call);
    ev_arg(&l, arg, (uintptr_t)p, 1);
    end_line(&l, ret, NULL, NULL, 0, t0, t1);
    emit(&l);
    wlock_drop();
    depth--;
    return ret;
}

/* ---- Ascend CANN (libascendcl.so) */

static aclError (*real_register)(void *, uint64_t, uint32_t);
static aclError (*real_unregister)(void *);
static aclError (*real_get_dev)(void *, void **, uint32_t);
static aclError (*real_malloc_host)(void **, size_t);
static aclError (*real_free_host)(void *);

EXPORT aclError aclrtHostRegisterV2(void *ptr, uint64_t size, uint32_t flag) {
    aclError (*real)(void *, uint64_t, uint32_t) = VENDOR(real_register, "aclrtHostRegisterV2");
    if (!real)
        return missing_code[FAM_ACL];
    if (!record_call(FAM_ACL))
        return real(ptr, size, flag);
    return record_register((register_fn)real, ptr, size, flag, "aclrtHostRegisterV2", "ptr", "size", "flag");
}

EXPORT aclError aclrtHostUnregister(void *ptr) {
    aclError (*real)(void *) = VENDOR(real_unregister, "aclrtHostUnregister");
    if (!real)
        return missing_code[FAM_ACL];
    if (!record_call(FAM_ACL))
        return real(ptr);
    return record_ptr_call(real, ptr, "aclrtHostUnregister", "ptr");
}

EXPORT aclError aclrtHostGetDevicePointer(void *pHost, void **pDevice, uint32_t flag) {
    aclError (*real)(void *, void **, uint32_t) = VENDOR(real_get_dev, "aclrtHostGetDevicePointer");
    if (!real)
        return missing_code[FAM_ACL];
    if (!record_call(FAM_ACL))
        return real(pHost, pDevice, flag);
    uint64_t t0 = now_ns();
    aclError ret = real(pHost, pDevice, flag);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "aclrtHostGetDevicePointer");
    ev_arg(&l, "pHost", (uintptr_t)pHost, 1);
    ev_arg(&l, "flag", flag, 0);
    end_line(&l, ret, "pDevice", pDevice, 0, t0, t1);
    record_end(&l);
    return ret;
}

EXPORT aclError aclrtMallocHost(void **hostPtr, size_t size) {
    aclError (*real)(void **, size_t) = VENDOR(real_malloc_host, "aclrtMallocHost");
    if (!real)
        return missing_code[FAM_ACL];
    if (!record_call(FAM_ACL))
        return real(hostPtr, size);
    uint64_t t0 = now_ns();
    aclError ret = real(hostPtr, size);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "aclrtMallocHost");
    ev_arg(&l, "size", size, 1);
    record_alloc_end(&l, ret, hostPtr, "hostPtr", size, 1, t0, t1);
    return ret;
}

EXPORT aclError aclrtFreeHost(void *hostPtr) {
    aclError (*real)(void *) = VENDOR(real_free_host, "aclrtFreeHost");
    if (!real)
        return missing_code[FAM_ACL];
    if (!record_call(FAM_ACL))
        return real(hostPtr);
    return record_pinned_free(real, hostPtr, "aclrtFreeHost", "hostPtr");
}

/* ---- CUDA runtime (libcudart.so), and the driver API's registration pair (libcuda.so) */

/* cudaError_t and CUresult are C enums, ints on every ABI this builds for. The driver API calls
   are written as the runtime events they back: cuMemHostRegister_v2 (what cuda.h's
   cuMemHostRegister names) as cudaHostRegister, its CU_MEMHOSTREGISTER_* flags having the values
   of the cudaHostRegister* ones, and cuMemHostUnregister as cudaHostUnregister; the CUresult codes
   the cuda spec names (1, 2, 712, 713, 800, 801) are the cudaError_t codes of the same meaning.
   The runtime reaches the driver through pointers it looks up itself, not through these symbols,
   so a cudaHostRegister is never written twice. */
typedef int cudaError_t;
static cudaError_t (*real_cuda_register)(void *, size_t, unsigned int);
static cudaError_t (*real_cuda_unregister)(void *);
static cudaError_t (*real_cuda_get_dev)(void **, void *, unsigned int);
static cudaError_t (*real_cuda_get_flags)(unsigned int *, void *);
static cudaError_t (*real_cuda_malloc_host)(void **, size_t);
static cudaError_t (*real_cuda_host_alloc)(void **, size_t, unsigned int);
static cudaError_t (*real_cuda_free_host)(void *);
static cudaError_t (*real_cuda_malloc)(void **, size_t);
static cudaError_t (*real_cuda_free)(void *);
static cudaError_t (*real_cuda_set_device_flags)(unsigned int);
static int (*real_cu_register)(void *, size_t, unsigned int);
static int (*real_cu_unregister)(void *);

EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    cudaError_t (*real)(void *, size_t, unsigned int) = VENDOR(real_cuda_register, "cudaHostRegister");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(ptr, size, flags);
    return record_register(real, ptr, size, flags, "cudaHostRegister", "ptr", "size", "flags");
}

EXPORT int cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
    int (*real)(void *, size_t, unsigned int) = VENDOR(real_cu_register, "cuMemHostRegister_v2");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(p, bytesize, Flags);
    return record_register(real, p, bytesize, Flags, "cudaHostRegister", "ptr", "size", "flags");
}

EXPORT cudaError_t cudaHostUnregister(void *ptr) {
    cudaError_t (*real)(void *) = VENDOR(real_cuda_unregister, "cudaHostUnregister");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(ptr);
    return record_ptr_call(real, ptr, "cudaHostUnregister", "ptr");
}

EXPORT int cuMemHostUnregister(void *p) {
    int (*real)(void *) = VENDOR(real_cu_unregister, "cuMemHostUnregister");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(p);
    return record_ptr_call(real, p, "cudaHostUnregister", "ptr");
}

EXPORT cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
    cudaError_t (*real)(void **, void *, unsigned int) = VENDOR(real_cuda_get_dev, "cudaHostGetDevicePointer");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(pDevice, pHost, flags);
    uint64_t t0 = now_ns();
    cudaError_t ret = real(pDevice, pHost, flags);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "cudaHostGetDevicePointer");
    ev_arg(&l, "pHost", (uintptr_t)pHost, 1);
    ev_arg(&l, "flags", flags, 0);
    end_line(&l, ret, "pDevice", pDevice, 0, t0, t1);
    record_end(&l);
    return ret;
}

EXPORT cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost) {
    cudaError_t (*real)(unsigned int *, void *) = VENDOR(real_cuda_get_flags, "cudaHostGetFlags");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(pFlags, pHost);
    uint64_t t0 = now_ns();
    cudaError_t ret = real(pFlags, pHost);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "cudaHostGetFlags");
    ev_arg(&l, "pHost", (uintptr_t)pHost, 1);
    end_line(&l, ret, "pFlags", pFlags, 1, t0, t1);
    record_end(&l);
    return ret;
}

EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size) {
    cudaError_t (*real)(void **, size_t) = VENDOR(real_cuda_malloc_host, "cudaMallocHost");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(ptr, size);
    uint64_t t0 = now_ns();
    cudaError_t ret = real(ptr, size);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "cudaMallocHost");
    ev_arg(&l, "size", size, 1);
    record_alloc_end(&l, ret, ptr, "ptr", size, 1, t0, t1);
    return ret;
}

EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    cudaError_t (*real)(void **, size_t, unsigned int) = VENDOR(real_cuda_host_alloc, "cudaHostAlloc");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(pHost, size, flags);
    uint64_t t0 = now_ns();
    cudaError_t ret = real(pHost, size, flags);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "cudaHostAlloc");
    ev_arg(&l, "size", size, 1);
    ev_arg(&l, "flags", flags, 0);
    record_alloc_end(&l, ret, pHost, "pHost", size, 1, t0, t1);
    return ret;
}

EXPORT cudaError_t cudaFreeHost(void *ptr) {
    cudaError_t (*real)(void *) = VENDOR(real_cuda_free_host, "cudaFreeHost");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(ptr);
    return record_pinned_free(real, ptr, "cudaFreeHost", "ptr");
}

EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size) {
    cudaError_t (*real)(void **, size_t) = VENDOR(real_cuda_malloc, "cudaMalloc");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(devPtr, size);
    uint64_t t0 = now_ns();
    cudaError_t ret = real(devPtr, size);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "cudaMalloc");
    ev_arg(&l, "size", size, 1);
    record_alloc_end(&l, ret, devPtr, "devPtr", size, 0, t0, t1);
    return ret;
}

EXPORT cudaError_t cudaFree(void *devPtr) {
    cudaError_t (*real)(void *) = VENDOR(real_cuda_free, "cudaFree");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(devPtr);
    return record_ptr_call(real, devPtr, "cudaFree", "devPtr");
}

EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags) {
    cudaError_t (*real)(unsigned int) = VENDOR(real_cuda_set_device_flags, "cudaSetDeviceFlags");
    if (!real)
        return missing_code[FAM_CUDA];
    if (!record_call(FAM_CUDA))
        return real(flags);
    uint64_t t0 = now_ns();
    cudaError_t ret = real(flags);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "cudaSetDeviceFlags");
    ev_arg(&l, "flags", flags, 1);
    end_line(&l, ret, NULL, NULL, 0, t0, t1);
    record_end(&l);
    return ret;
}

/* ---- HIP (libamdhip64.so) */

typedef int hipError_t;
static hipError_t (*real_hip_register)(void *, size_t, unsigned int);
static hipError_t (*real_hip_unregister)(void *);
static hipError_t (*real_hip_get_dev)(void **, void *, unsigned int);
static hipError_t (*real_hip_host_malloc)(void **, size_t, unsigned int);
static hipError_t (*real_hip_host_free)(void *);
static hipError_t (*real_hip_malloc)(void **, size_t);
static hipError_t (*real_hip_free)(void *);

EXPORT hipError_t hipHostRegister(void *hostPtr, size_t sizeBytes, unsigned int flags) {
    hipError_t (*real)(void *, size_t, unsigned int) = VENDOR(real_hip_register, "hipHostRegister");
    if (!real)
        return missing_code[FAM_HIP];
    if (!record_call(FAM_HIP))
        return real(hostPtr, sizeBytes, flags);
    return record_register(real, hostPtr, sizeBytes, flags, "hipHostRegister", "hostPtr", "sizeBytes", "flags");
}

EXPORT hipError_t hipHostUnregister(void *hostPtr) {
    hipError_t (*real)(void *) = VENDOR(real_hip_unregister, "hipHostUnregister");
    if (!real)
        return missing_code[FAM_HIP];
    if (!record_call(FAM_HIP))
        return real(hostPtr);
    return record_ptr_call(real, hostPtr, "hipHostUnregister", "hostPtr");
}

EXPORT hipError_t hipHostGetDevicePointer(void **devPtr, void *hstPtr, unsigned int flags) {
    hipError_t (*real)(void **, void *, unsigned int) = VENDOR(real_hip_get_dev, "hipHostGetDevicePointer");
    if (!real)
        return missing_code[FAM_HIP];
    if (!record_call(FAM_HIP))
        return real(devPtr, hstPtr, flags);
    uint64_t t0 = now_ns();
    hipError_t ret = real(devPtr, hstPtr, flags);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "hipHostGetDevicePointer");
    ev_arg(&l, "hstPtr", (uintptr_t)hstPtr, 1);
    ev_arg(&l, "flags", flags, 0);
    end_line(&l, ret, "devPtr", devPtr, 0, t0, t1);
    record_end(&l);
    return ret;
}

EXPORT hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
    hipError_t (*real)(void **, size_t, unsigned int) = VENDOR(real_hip_host_malloc, "hipHostMalloc");
    if (!real)
        return missing_code[FAM_HIP];
    if (!record_call(FAM_HIP))
        return real(ptr, size, flags);
    uint64_t t0 = now_ns();
    hipError_t ret = real(ptr, size, flags);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "hipHostMalloc");
    ev_arg(&l, "size", size, 1);
    ev_arg(&l, "flags", flags, 0);
    record_alloc_end(&l, ret, ptr, "ptr", size, 1, t0, t1);
    return ret;
}

EXPORT hipError_t hipHostFree(void *ptr) {
    hipError_t (*real)(void *) = VENDOR(real_hip_host_free, "hipHostFree");
    if (!real)
        return missing_code[FAM_HIP];
    if (!record_call(FAM_HIP))
        return real(ptr);
    return record_pinned_free(real, ptr, "hipHostFree", "ptr");
}

EXPORT hipError_t hipMalloc(void **ptr, size_t size) {
    hipError_t (*real)(void **, size_t) = VENDOR(real_hip_malloc, "hipMalloc");
    if (!real)
        return missing_code[FAM_HIP];
    if (!record_call(FAM_HIP))
        return real(ptr, size);
    uint64_t t0 = now_ns();
    hipError_t ret = real(ptr, size);
    uint64_t t1 = now_ns();
    struct line l;
    ev_begin(&l, "hipMalloc");
    ev_arg(&l, "size", size, 1);
    record_alloc_end(&l, ret, ptr, "ptr", size, 0, t0, t1);
    return ret;
}

EXPORT hipError_t hipFree(void *ptr) {
    hipError_t (*real)(void *) = VENDOR(real_hip_free, "hipFree");
    if (!real)
        return missing_code[FAM_HIP];
    if (!record_call(FAM_HIP))
        return real(ptr);
    return record_ptr_call(real, ptr, "hipFree", "ptr");
}

/* ------------------------------------------------------------------ signal handlers */

/* A program's signal handler may run on a thread that is inside a vendor call (depth > 0); its
   free() and malloc() are the program's own, and left unrecorded they make the trace show a
   `malloc` of an address that is still live. So every handler the program installs (sigaction,
   signal, bsd_signal, sysv_signal) runs through a trampoline that sets depth to 0 while the
   program's handler runs and restores it after. If the signal interrupted the interposer's own
   bookkeeping (busy > 0: a table lock may be held, a table or a line half-written), the handler's
   calls are forwarded unrecorded instead, which cannot deadlock. The kernel holds the trampoline;
   the program's handler is kept here, per signal, and is what sigaction and signal report back.
   SA_SIGINFO handlers and plain ones have separate trampolines and tables, so a handler is always
   called with the arguments it expects, even while another thread replaces it. */
#define SIG_SLOTS 65 /* signals 1..64 */
static sig_fn plain_fn[SIG_SLOTS];     /* atomic: the program's handler behind tramp_plain */
static siginfo_fn info_fn[SIG_SLOTS];  /* atomic: the program's handler behind tramp_info */
static pthread_mutex_t siglock = PTHREAD_MUTEX_INITIALIZER; /* installers; taken with signals blocked */

static void enter_handler(int *saved) {
    *saved = depth;
    depth = busy > 0 ? *saved + 1 : 0;
    SIGNAL_FENCE();
}

static void leave_handler(int saved) {
    SIGNAL_FENCE();
    depth = saved;
}

static void tramp_plain(int sig) {
    sig_fn fn = sig > 0 && sig < SIG_SLOTS ? __atomic_load_n(&plain_fn[sig], __ATOMIC_ACQUIRE) : NULL;
    int saved;
    enter_handler(&saved);
    if (fn)
        fn(sig);
    leave_handler(saved);
}

static void tramp_info(int sig, siginfo_t *info, void *uc) {
    siginfo_fn fn = sig > 0 && sig < SIG_SLOTS ? __atomic_load_n(&info_fn[sig], __ATOMIC_ACQUIRE) : NULL;
    int saved;
    enter_handler(&saved);
    if (fn)
        fn(sig, info, uc);
    leave_handler(saved);
}

/* SIG_DFL, SIG_IGN, SIG_HOLD and SIG_ERR go to the kernel as they are. */
static int is_handler(sig_fn h) {
    return (uintptr_t)h > 2 && h != SIG_ERR;
}

struct sig_saved {
    sigset_t mask;
    sig_fn plain;
    siginfo_fn info;
};

/* Blocks this thread's signals (so no handler on it can want siglock) and takes siglock. */
static void sig_begin(int sig, struct sig_saved *s) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &s->mask);
    pthread_mutex_lock(&siglock);
    s->plain = plain_fn[sig];
    s->info = info_fn[sig];
}

static void sig_end(struct sig_saved *s) {
    pthread_mutex_unlock(&siglock);
    pthread_sigmask(SIG_SETMASK, &s->mask, NULL);
}

/* The program's view of an action the kernel reports: the handler behind a trampoline. */
static void as_program_sees(struct sigaction *a, const struct sig_saved *s) {
    if (!(a->sa_flags & SA_SIGINFO) && a->sa_handler == tramp_plain)
        a->sa_handler = s->plain;
    else if ((a->sa_flags & SA_SIGINFO) && a->sa_sigaction == tramp_info)
        a->sa_sigaction = s->info;
}

static sig_fn as_program_sees_fn(sig_fn h, const struct sig_saved *s) {
    if (h == tramp_plain)
        return s->plain;
    if (h == (sig_fn)(void (*)(void))tramp_info)
        return (sig_fn)(void (*)(void))s->info;
    return h;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact) {
    if (BOOTING() || !real_sigaction) {
        errno = ENOSYS;
        return -1;
    }
    if (sig <= 0 || sig >= SIG_SLOTS)
        return real_sigaction(sig, act, oldact);
    struct sig_saved s;
    struct sigaction mine, old;
    sig_begin(sig, &s);
    const struct sigaction *give = act;
    if (act) {
        mine = *act;
        if ((act->sa_flags & SA_SIGINFO) && is_handler((sig_fn)(void (*)(void))act->sa_sigaction)) {
            __atomic_store_n(&info_fn[sig], act->sa_sigaction, __ATOMIC_RELEASE);
            mine.sa_sigaction = tramp_info;
            give = &mine;
        } else if (!(act->sa_flags & SA_SIGINFO) && is_handler(act->sa_handler)) {
            __atomic_store_n(&plain_fn[sig], act->sa_handler, __ATOMIC_RELEASE);
            mine.sa_handler = tramp_plain;
            give = &mine;
        }
    }
    int rc = real_sigaction(sig, give, &old);
    int saved_errno = errno;
    if (rc != 0) { /* nothing changed: the tables go back */
        __atomic_store_n(&plain_fn[sig], s.plain, __ATOMIC_RELEASE);
        __atomic_store_n(&info_fn[sig], s.info, __ATOMIC_RELEASE);
    } else if (oldact) {
        as_program_sees(&old, &s);
        *oldact = old;
    }
    sig_end(&s);
    errno = saved_errno;
    return rc;
}

/* signal() and its variants: the C library's own (it calls its internal sigaction, which we do
   not see), given the trampoline, so its semantics (SA_RESTART, siginterrupt) stay its own. */
static sig_fn wrap_signal(sig_fn (*real)(int, sig_fn), int sig, sig_fn h) {
    if (BOOTING() || !real) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    if (sig <= 0 || sig >= SIG_SLOTS)
        return real(sig, h);
    struct sig_saved s;
    sig_begin(sig, &s);
    sig_fn give = h;
    if (is_handler(h)) {
        __atomic_store_n(&plain_fn[sig], h, __ATOMIC_RELEASE);
        give = tramp_plain;
    }
    sig_fn old = real(sig, give);
    int saved_errno = errno;
    if (old == SIG_ERR) {
        __atomic_store_n(&plain_fn[sig], s.plain, __ATOMIC_RELEASE);
    } else {
        old = as_program_sees_fn(old, &s);
    }
    sig_end(&s);
    errno = saved_errno;
    return old;
}

EXPORT sig_fn signal(int sig, sig_fn h) { return wrap_signal(real_signal, sig, h); }
EXPORT sig_fn bsd_signal(int sig, sig_fn h) { return wrap_signal(real_signal, sig, h); }
EXPORT sig_fn sysv_signal(int sig, sig_fn h) { return wrap_signal(real_sysv_signal, sig, h); }
EXPORT sig_fn __sysv_signal(int sig, sig_fn h) { return wrap_signal(real_sysv_signal, sig, h); }

/* fork() while another thread installs a handler would leave the child's siglock taken. */
static void sig_before_fork(void) { pthread_mutex_lock(&siglock); }
static void sig_after_fork(void) { pthread_mutex_unlock(&siglock); }

/* ------------------------------------------------------------------ fork and start-up */

static int fork_locked;

static int fork_took_wlock;

static void lock_all(void) {
    busy_enter();
    fork_took_wlock = wlock_depth == 0;
    if (fork_took_wlock)
        pthread_mutex_lock(&wlock);
    for (size_t i = 0; i < HEAP_SHARDS; i++)
        pthread_mutex_lock(&heap[i].lock);
    pthread_mutex_lock(&maps.lock);
    pthread_mutex_lock(&hostmem.lock);
}

static void unlock_all(void) {
    pthread_mutex_unlock(&hostmem.lock);
    pthread_mutex_unlock(&maps.lock);
    for (size_t i = HEAP_SHARDS; i-- > 0;)
        pthread_mutex_unlock(&heap[i].lock);
    if (fork_took_wlock)
        pthread_mutex_unlock(&wlock);
    busy_leave();
}

/* fork() while another thread holds a table lock would leave the child's copy locked forever. */
static void before_fork(void) {
    fork_locked = __atomic_load_n(&recording, __ATOMIC_RELAXED);
    if (fork_locked)
        lock_all();
}

static void after_fork_parent(void) {
    if (fork_locked)
        unlock_all();
}

static void after_fork_child(void) {
    if (fork_locked)
        unlock_all();
    cached_tid = 0;
    if (claim == CLAIM_OWNER) { /* the owner's child is another address space */
        __atomic_store_n(&recording, 0, __ATOMIC_RELAXED);
        off_reason = OFF_FORKED;
    }
}

__attribute__((constructor)) static void regcheck_start(void) {
    ensure_init();
    pthread_atfork(sig_before_fork, sig_after_fork, sig_after_fork);
    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        page_size = (size_t)ps;
    const char *path = getenv("REGCHECK_TRACE");
    if (!path || !*path)
        return;
    const char *fam = getenv("REGCHECK_FAMILY");
    if (fam && *fam) {
        if (!strcmp(fam, "acl")) {
            family = FAM_ACL;
        } else if (!strcmp(fam, "cuda")) {
            family = FAM_CUDA;
        } else if (!strcmp(fam, "hip")) {
            family = FAM_HIP;
        } else {
            say("REGCHECK_FAMILY names no call family the interposer knows (acl, cuda, hip); not recording", 0, NULL);
            return;
        }
    }
    const char *prot_env = getenv("REGCHECK_PROTECTIONS");
    if (prot_env && !strcmp(prot_env, "0"))
        protections = 0;
    const char *claim_env = getenv("REGCHECK_CLAIM");
    if (claim_env && strlen(claim_env) < sizeof claim_path)
        strcpy(claim_path, claim_env);
    trace_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (trace_fd < 0) {
        say("cannot open the trace named by REGCHECK_TRACE; not recording (errno ", (uint64_t)errno, ")");
        return;
    }
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    __atomic_store_n(&recording, 1, __ATOMIC_RELEASE);
}
