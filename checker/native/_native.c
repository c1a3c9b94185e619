/* checker._native: optional C versions of the replay's hottest Python code. Six parts, each
 * with its Python original kept as the reference and the fallback (the module is built only where
 * pip finds a C compiler, the Python headers and a compiler with __int128, i.e. GCC or Clang):
 * - TableCore: a sized table's put, remove and interval-index probes (below), with a KeyIndex of
 *   its entries by key value beside the rows dict;
 * - remember: checker.replay's note of which line made or removed each entry, into a Made (the
 *   replayer's `created`, a dict's interface) and a Ring (its `removed` and its windows of recent
 *   calls, a deque's);
 * - drive: the per-line loop of the replayer's fast path (checker.replay._replay_stream);
 * - Step: a register machine that runs a call's fast step compiled from the spec
 *   (checker.stepcode; the Python original is the step checker.fastpath generates);
 * - locked_pages, locked_in_segments and buffer_address: the executor's madvise probes of the
 *   kernel's page locks (a range's, or an arena's changed spans' as its locks lie) and the address of
 *   an arena's mapping (checker.drivers.pinning);
 * - sync_locked and predict_pages: the executor's page-lock check's set work after an event
 *   (checker.drivers.lockcheck).
 *
 * `TableCore` is the base of `checker.semantics.Table` when this module is built. It holds the
 * table's fields (the Python subclass reads and writes them as ordinary attributes) and
 * implements put, remove and the three whole-`exists` probes (any_overlapping, any_containing,
 * any_containing_addr) for the common case: the sorted keys are a plain list (a small table) or
 * this module's SortedKeys (a large one), and keys, sizes and query bounds fit in 64 bits. Any
 * other case (a SortedList index, a huge or non-int key, a record without its size field, a put or
 * remove that moves the index between a list and a SortedKeys, an unknown largest size) is handed, before anything is changed, to the pure-Python method of the same
 * name (`_slow_<name>`), which is the reference: the C code answers exactly what it would,
 * tests/test_table_index.py checks both against brute force, and the only code a failure can
 * reach is that Python method, which then raises what it raises.
 *
 * Bounds such as `base - largest + 1` and `k + size` are computed in 128 bits, so no 64-bit
 * value can overflow them: the Python semantics' ints are exact, and so are these.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <sys/mman.h>

typedef __int128 wide;

/* checker.semantics uses this module only if it says this number: an old build left in the tree
 * after an interface change is ignored, not half used. Raise it with every such change. */
#define NATIVE_INTERFACE 10

/* The fields of a table, in one list for the struct, the garbage collector's visit and clear. */
#define TABLE_FIELDS(X) X(name) X(rows) X(sized_by) X(keys) X(small) X(size_count) X(size_heap) X(largest) X(separated) X(journal)
#define DECLARE_FIELD(f) PyObject *f;
#define VISIT_FIELD(f) Py_VISIT(self->f);
#define CLEAR_FIELD(f) Py_CLEAR(self->f);

/* A table's entries by 64-bit key, beside its rows dict (see KeyIndex below). */
typedef struct {
    long long k, size;
    PyObject *kobj; /* the rows' key object (borrowed); NULL: a free slot */
    PyObject *rec;  /* the rows' record (borrowed) */
} KeySlot;

typedef struct {
    KeySlot *slots;
    Py_ssize_t cap, len;         /* cap: a power of two, or 0 */
    PyObject *rows, *field;      /* the dict and size field it was built for (compared, never dereferenced) */
    unsigned long long version;  /* the rows' version tag when it last matched them */
    int valid;
    Py_ssize_t stale_uses;       /* uses that found it out of date since its last rebuild */
} KeyIndex;

typedef struct {
    PyObject_HEAD
    TABLE_FIELDS(DECLARE_FIELD)
    KeyIndex ki;
} TableCore;

static PyObject *s_put, *s_remove, *s_slow_put, *s_slow_remove, *s_slow_set_field, *s_slow_overlapping, *s_slow_containing,
    *s_slow_containing_addr;
static PyObject *heappush, *heapify;

/* 1 and *out set when `o` is an exact int within 64 bits; 0 otherwise (no error left set). */
static inline int as_i64(PyObject *o, long long *out)
{
    if (o == NULL || !PyLong_CheckExact(o))
        return 0;
#if PY_VERSION_HEX < 0x030C0000 && PyLong_SHIFT == 30
    /* The common case read straight from the digits (CPython 3.11's layout, as Cython does): at
     * most two 30-bit digits. Everything else takes the API call below. */
    Py_ssize_t n = Py_SIZE(o);
    const digit *d = ((PyLongObject *)o)->ob_digit;
    if (n >= -2 && n <= 2) {
        long long v = n == 0 ? 0 : (long long)d[0] | (n == 2 || n == -2 ? (long long)d[1] << PyLong_SHIFT : 0);
        *out = n < 0 ? -v : v;
        return 1;
    }
#endif
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow)
        return 0;
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

/* The size of a record: 1 when `record` is an exact dict whose sized-by field is a 64-bit int. */
static inline int record_size(PyObject *record, PyObject *field, long long *size)
{
    if (!PyDict_CheckExact(record))
        return 0;
    PyObject *v = PyDict_GetItemWithError(record, field);
    if (v == NULL) {
        PyErr_Clear();
        return 0;
    }
    return as_i64(v, size);
}

/* Zeroed memory for the slots of an open-addressing table (KeyIndex, Made), freed by slots_free with
 * the same count and size. Tables of 2 MiB or more are mapped and, on Linux, asked for in huge pages:
 * their accesses are random, so with 4 KiB pages nearly each would also miss the TLB. */
#define HUGE_SLOTS ((size_t)2 << 20)

static void *slots_calloc(size_t n, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (n * size >= HUGE_SLOTS) {
        void *p = mmap(NULL, n * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        madvise(p, n * size, MADV_HUGEPAGE); /* (a hint: without it, ordinary pages) */
        return p;
    }
#endif
    return PyMem_Calloc(n, size);
}

static void slots_free(void *p, size_t n, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p != NULL && n * size >= HUGE_SLOTS) {
        munmap(p, n * size);
        return;
    }
#endif
    PyMem_Free(p);
}

/* ---------------------------------------------------------------- KeyIndex
 *
 * A table's entries by key value: an open-addressing table of (key, size, key object, record)
 * beside the rows dict, for tables whose keys are ints within 64 bits (and, when sized, whose
 * records are dicts with a 64-bit size). Why: a dict finds an int key by probing from its low bits,
 * and page-aligned addresses share them, so each lookup walks a chain of other entries (one cache
 * miss each once the tables outgrow the cache: about 12 probes per insertion into a dict of 100,000
 * keys 16 KiB apart, against 1.3 for random keys); an event's key is another int object than the
 * rows' own, so the last probe also reads the stored key object; and the record's size is one more
 * dict lookup. A slot here is usually one miss.
 *
 * It holds borrowed pointers only, and is believed only while the rows are the very dict it was
 * made for and unchanged since it last matched them: CPython's dict version tag (PEP 509: every
 * change to a dict gives it a new number, never reused by any dict) says so. The C put, remove and
 * set_field change it with the rows (ki_follow); any other change to the rows (Python code, the
 * Python methods) leaves it out of date, and it is then rebuilt from the rows once it has been
 * found out of date len(rows) / 8 times, so that rebuilding costs O(1) per use, amortized. Where
 * the version tag is not there to read (CPython 3.12 deprecated it) it is never used. */

#if PY_VERSION_HEX < 0x030C0000
#define KI_AVAILABLE 1
#define DICT_VERSION(d) (((PyDictObject *)(d))->ma_version_tag)
#else
#define KI_AVAILABLE 0
#define DICT_VERSION(d) 0ull
#endif
#define KI_MIN_CAP 64

static inline size_t key_hash(long long key)
{
    unsigned long long x = (unsigned long long)key; /* spread page-aligned keys (murmur3's finalizer) */
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

/* The slot of key k: its index, or ~index of the free slot where it would go (ki->cap > 0). */
static inline Py_ssize_t ki_slot(const KeyIndex *ki, long long k)
{
    size_t mask = (size_t)ki->cap - 1, i = key_hash(k) & mask;
    while (ki->slots[i].kobj != NULL) {
        if (ki->slots[i].k == k)
            return (Py_ssize_t)i;
        i = (i + 1) & mask;
    }
    return ~(Py_ssize_t)i;
}

/* The slots moved into a table of `cap` slots. 0, or -1 when out of memory (no exception set: the
 * index is then only dropped). */
static int ki_resize(KeyIndex *ki, Py_ssize_t cap)
{
    KeySlot *old = ki->slots, *slots = slots_calloc((size_t)cap, sizeof(KeySlot));
    if (slots == NULL)
        return -1;
    Py_ssize_t old_cap = ki->cap;
    ki->slots = slots;
    ki->cap = cap;
    for (Py_ssize_t i = 0; i < old_cap; i++)
        if (old[i].kobj != NULL)
            ki->slots[~ki_slot(ki, old[i].k)] = old[i];
    slots_free(old, (size_t)old_cap, sizeof(KeySlot));
    return 0;
}

/* Entry k is (kobj, rec, size) now, added or replaced. 0, or -1 when out of memory. */
static int ki_set(KeyIndex *ki, long long k, PyObject *kobj, PyObject *rec, long long size)
{
    if ((ki->len + 1) * 2 > ki->cap && ki_resize(ki, ki->cap ? 2 * ki->cap : KI_MIN_CAP) < 0)
        return -1;
    Py_ssize_t i = ki_slot(ki, k);
    if (i < 0) {
        i = ~i;
        ki->len++;
    }
    ki->slots[i] = (KeySlot){k, size, kobj, rec};
    return 0;
}

/* Entry k gone (linear probing's deletion: later slots of the run move up); the table shrinks
 * when under an eighth full. 0, or -1 when out of memory. */
static int ki_del(KeyIndex *ki, long long k)
{
    Py_ssize_t i = ki->cap ? ki_slot(ki, k) : -1;
    if (i < 0)
        return 0;
    size_t mask = (size_t)ki->cap - 1, hole = (size_t)i, j = (size_t)i;
    for (;;) {
        j = (j + 1) & mask;
        if (ki->slots[j].kobj == NULL)
            break;
        size_t home = key_hash(ki->slots[j].k) & mask;
        /* the slot at j may fill the hole unless its home lies cyclically in (hole, j] */
        if (hole <= j ? (home <= hole || home > j) : (home <= hole && home > j)) {
            ki->slots[hole] = ki->slots[j];
            hole = j;
        }
    }
    ki->slots[hole].kobj = NULL;
    ki->len--;
    if (ki->cap > KI_MIN_CAP && ki->len * 8 < ki->cap)
        return ki_resize(ki, ki->cap / 2);
    return 0;
}

/* Whether the index matches the table's rows now. */
static inline int ki_matches(const KeyIndex *ki, PyObject *rows, PyObject *field)
{
    return KI_AVAILABLE && ki->valid && ki->rows == rows && ki->field == field && rows != NULL
        && ki->version == DICT_VERSION(rows);
}

/* Rebuilt from the rows: 1, or 0 when some row cannot be held (or memory is short). */
static int ki_rebuild(KeyIndex *ki, PyObject *rows, PyObject *field)
{
    PyObject *key, *rec;
    Py_ssize_t pos = 0, cap = KI_MIN_CAP;
    ki->valid = 0;
    ki->stale_uses = 0;
    if (field == NULL || rows == NULL || !PyDict_CheckExact(rows))
        return 0;
    while (cap < 2 * PyDict_GET_SIZE(rows) + 2)
        cap *= 2;
    slots_free(ki->slots, (size_t)ki->cap, sizeof(KeySlot));
    ki->slots = NULL;
    ki->cap = ki->len = 0;
    if (ki_resize(ki, cap) < 0)
        return 0;
    while (PyDict_Next(rows, &pos, &key, &rec)) {
        long long k, size = 0;
        if (!as_i64(key, &k) || (field != Py_None && !record_size(rec, field, &size)))
            return 0;
        Py_ssize_t i = ki_slot(ki, k);
        if (i >= 0)
            return 0; /* (two keys of one value: not ints, which as_i64 would have refused) */
        ki->slots[~i] = (KeySlot){k, size, key, rec};
        ki->len++;
    }
    ki->rows = rows;
    ki->field = field;
    ki->version = DICT_VERSION(rows);
    ki->valid = 1;
    return 1;
}

/* The table's index when it matches its rows (rebuilt first if it has been found out of date often
 * enough), else NULL: then the caller asks the rows. */
static KeyIndex *ki_current(KeyIndex *ki, PyObject *rows, PyObject *field)
{
    if (ki_matches(ki, rows, field))
        return ki;
    if (!KI_AVAILABLE || rows == NULL || !PyDict_CheckExact(rows) || ki->stale_uses++ < PyDict_GET_SIZE(rows) / 8)
        return NULL;
    return ki_rebuild(ki, rows, field) ? ki : NULL;
}

/* After the C code changed entry k of the rows (rec: its record now; NULL: removed) with `ok`
 * (the change done, and the entry one the index can hold): the index changes with it when it
 * matched the rows just before (`follow`), and is dropped if it cannot. */
static void ki_follow(KeyIndex *ki, PyObject *rows, int follow, int ok, long long k, PyObject *kobj, PyObject *rec,
                      long long size)
{
    if (!follow)
        return;
    if (!ok || (rec != NULL ? ki_set(ki, k, kobj, rec, size) : ki_del(ki, k)) < 0) {
        ki->valid = 0;
        return;
    }
    ki->version = DICT_VERSION(rows);
}

/* The record of key k in a matching index (borrowed), or NULL; *slot: its slot, or -1. */
static inline PyObject *ki_record(const KeyIndex *ki, long long k, Py_ssize_t *slot)
{
    Py_ssize_t i = ki_slot(ki, k);
    *slot = i >= 0 ? i : -1;
    return i >= 0 ? ki->slots[i].rec : NULL;
}

/* First index in the int64 list `keys` whose key is >= x (right: > x), searching [lo, n).
 * -1 when some key in the way is not a 64-bit int. The last key is asked first: allocators mostly
 * hand out ever higher addresses, so a new key and a probe's window usually lie past every key (and
 * when not, the last key is out of the search). */
static Py_ssize_t bisect(PyObject *keys, wide x, Py_ssize_t lo, int right)
{
    Py_ssize_t hi = PyList_GET_SIZE(keys);
    long long last;
    if (lo < hi && as_i64(PyList_GET_ITEM(keys, hi - 1), &last)) {
        if (right ? (wide)last <= x : (wide)last < x)
            return hi;
        hi--;
    }
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        long long k;
        if (!as_i64(PyList_GET_ITEM(keys, mid), &k))
            return -1;
        if (right ? (wide)k <= x : (wide)k < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* bisect(keys, x, 0, 0) for a key being removed, asking the first key first: frees often come in
 * the order of the allocations (a round's buffers, freed oldest first). */
static Py_ssize_t bisect_oldest_first(PyObject *keys, wide x)
{
    long long first;
    if (PyList_GET_SIZE(keys) == 0 || !as_i64(PyList_GET_ITEM(keys, 0), &first))
        return bisect(keys, x, 0, 0);
    return (wide)first >= x ? 0 : bisect(keys, x, 1, 0);
}

/* ---------------------------------------------------------------- SortedKeys
 *
 * The ordered key index of a large sized table (checker.model.state uses it past SMALL keys, where
 * the pure-Python tables use a SortedList): the keys, exact ints within 64 bits, in chunks of at
 * most CHUNK_MAX, each chunk holding the keys' values and their objects; with the largest key of
 * each chunk for the bisection. Search is O(log n); insertion and deletion are O(log n) plus a
 * move of at most CHUNK_MAX entries (and, on a split or an emptied chunk, of the chunk table). A
 * key the index cannot hold (not an int, beyond 64 bits) makes `add` raise OverflowError; the
 * Python table then takes a SortedList instead. `version` changes with every change, so that a
 * walk that ran Python code in between can tell its place may be gone. */

#define CHUNK_MAX 64

typedef struct {
    Py_ssize_t n;
    long long k[CHUNK_MAX];
    PyObject *o[CHUNK_MAX];
    /* The size of each key's entry, where known (sized[i]): the table's put notes it, and a probe
     * that reads it from the record (a key added by `add`, or after a put that Python did) keeps
     * it, so that window walks test ranges here and look a record up only for a predicate. */
    long long s[CHUNK_MAX];
    unsigned char sized[CHUNK_MAX];
} KeyChunk;

/* Copy n entries of a chunk (keys, objects, sizes) from index `from` of `src` to index `to` of `dst`
 * (overlapping ranges allowed). */
static inline void chunk_move(KeyChunk *dst, Py_ssize_t to, KeyChunk *src, Py_ssize_t from, Py_ssize_t n)
{
    memmove(dst->k + to, src->k + from, (size_t)n * sizeof(long long));
    memmove(dst->o + to, src->o + from, (size_t)n * sizeof(PyObject *));
    memmove(dst->s + to, src->s + from, (size_t)n * sizeof(long long));
    memmove(dst->sized + to, src->sized + from, (size_t)n);
}

typedef struct SortedKeys {
    PyObject_HEAD
    KeyChunk **chunks;
    long long *maxes;
    Py_ssize_t nchunks, cap, len;
    unsigned long long version;
} SortedKeys;

static PyTypeObject SortedKeysType;

/* The first index of the sorted a[0, n) whose value is >= x (right: > x), without branches in the
 * loop (the search of Khuong and Morin's "Array layouts for comparison-based searching"). */
static inline Py_ssize_t lower_bound(const long long *a, Py_ssize_t n, wide x, int right)
{
    if (right)
        x += 1; /* > x is >= x + 1 for integers (128 bits: no overflow) */
    if (x <= (wide)LLONG_MIN || n == 0)
        return 0;
    if (x > (wide)LLONG_MAX)
        return n;
    long long v = (long long)x;
    const long long *base = a;
    while (n > 1) {
        Py_ssize_t half = n / 2;
        base = base[half] < v ? base + half : base;
        n -= half;
    }
    return (base - a) + (*base < v);
}

/* The first chunk whose largest key is >= x (right: > x); nchunks when none is. */
static inline Py_ssize_t sk_chunk(SortedKeys *sk, wide x, int right)
{
    return lower_bound(sk->maxes, sk->nchunks, x, right);
}

static inline Py_ssize_t chunk_bisect(KeyChunk *c, wide x, int right)
{
    /* A chunk's keys are 8 cache lines, most often not in the cache (a large table's chunks are
     * megabytes): asking for all of them at once lets their misses overlap, where the bisection's
     * dependent loads would take them one after another. */
    for (Py_ssize_t i = 0; i < c->n; i += 64 / (Py_ssize_t)sizeof(long long))
        __builtin_prefetch(c->k + i);
    return lower_bound(c->k, c->n, x, right);
}

/* The place of the first key >= x: chunk *c, index *i (*c == nchunks at the end). */
static void sk_seek(SortedKeys *sk, wide x, Py_ssize_t *c, Py_ssize_t *i)
{
    *c = sk_chunk(sk, x, 0);
    *i = *c < sk->nchunks ? chunk_bisect(sk->chunks[*c], x, 0) : 0;
}

static int sk_grow_table(SortedKeys *sk)
{
    if (sk->nchunks < sk->cap)
        return 0;
    Py_ssize_t cap = sk->cap ? 2 * sk->cap : 4;
    KeyChunk **chunks = PyMem_Realloc(sk->chunks, (size_t)cap * sizeof(KeyChunk *));
    if (chunks == NULL)
        return PyErr_NoMemory(), -1;
    sk->chunks = chunks;
    long long *maxes = PyMem_Realloc(sk->maxes, (size_t)cap * sizeof(long long));
    if (maxes == NULL)
        return PyErr_NoMemory(), -1;
    sk->maxes = maxes;
    sk->cap = cap;
    return 0;
}

/* A new empty chunk at table position c. */
static KeyChunk *sk_new_chunk(SortedKeys *sk, Py_ssize_t c)
{
    if (sk_grow_table(sk) < 0)
        return NULL;
    KeyChunk *chunk = PyMem_Malloc(sizeof(KeyChunk));
    if (chunk == NULL)
        return PyErr_NoMemory(), NULL;
    chunk->n = 0;
    memmove(sk->chunks + c + 1, sk->chunks + c, (size_t)(sk->nchunks - c) * sizeof(KeyChunk *));
    memmove(sk->maxes + c + 1, sk->maxes + c, (size_t)(sk->nchunks - c) * sizeof(long long));
    sk->chunks[c] = chunk;
    sk->nchunks++;
    return chunk;
}

/* Where a key absent from index `sk` would go, as sk_find found it (c == -1: not known), and the
 * index's version then: the table's put looks first, and its insertion then needs no second search. */
typedef struct {
    struct SortedKeys *sk;
    Py_ssize_t c, i;
    unsigned long long version;
} SkPlace;

/* Insert key `o` (value k) after any equal keys (insort's order), with the size of its entry
 * when `sized`; `hint` (or NULL): where sk_find said k would go; *added (unless NULL): where it went
 * and the index's version then, for the put's separation check. 0, or -1 with an exception. */
static int sk_insert(SortedKeys *sk, PyObject *o, long long k, long long size, int sized, const SkPlace *hint,
                     SkPlace *added)
{
    if (sk->nchunks == 0 && sk_new_chunk(sk, 0) == NULL)
        return -1;
    Py_ssize_t c, i;
    KeyChunk *chunk;
    if (hint != NULL && hint->sk == sk && hint->c >= 0 && hint->c < sk->nchunks && hint->version == sk->version
        && sk->chunks[hint->c]->n < CHUNK_MAX) {
        /* k is absent, so the first key > k (insort's place) is the first key >= k, where sk_find looked */
        c = hint->c;
        i = hint->i;
        chunk = sk->chunks[c];
        goto insert;
    }
    c = sk_chunk(sk, k, 1);
    if (c == sk->nchunks)
        c--;
    chunk = sk->chunks[c];
    if (chunk->n == CHUNK_MAX && c == sk->nchunks - 1 && k >= chunk->k[CHUNK_MAX - 1]) {
        /* past the last key of a full last chunk (keys that come in order): a new chunk of its own,
         * so that such a table's chunks stay full instead of half full */
        if ((chunk = sk_new_chunk(sk, ++c)) == NULL)
            return -1;
    } else if (chunk->n == CHUNK_MAX) { /* split: the upper half moves to a new chunk after this one */
        KeyChunk *upper = sk_new_chunk(sk, c + 1);
        if (upper == NULL)
            return -1;
        Py_ssize_t half = CHUNK_MAX / 2;
        upper->n = CHUNK_MAX - half;
        chunk_move(upper, 0, chunk, half, upper->n);
        chunk->n = half;
        sk->maxes[c] = chunk->k[half - 1];
        sk->maxes[c + 1] = upper->k[upper->n - 1];
        if ((wide)k >= (wide)upper->k[0])
            chunk = upper, c++;
    }
    i = chunk_bisect(chunk, k, 1);
insert:
    chunk_move(chunk, i + 1, chunk, i, chunk->n - i);
    chunk->k[i] = k;
    chunk->o[i] = Py_NewRef(o);
    chunk->s[i] = size;
    chunk->sized[i] = (unsigned char)sized;
    chunk->n++;
    sk->maxes[c] = chunk->k[chunk->n - 1];
    sk->len++;
    sk->version++;
    if (added != NULL)
        *added = (SkPlace){sk, c, i, sk->version};
    return 0;
}

/* Chunk c + 1's keys appended to chunk c (the caller checked they fit), and chunk c + 1 freed. */
static void sk_merge(SortedKeys *sk, Py_ssize_t c)
{
    KeyChunk *into = sk->chunks[c], *from = sk->chunks[c + 1];
    chunk_move(into, into->n, from, 0, from->n);
    into->n += from->n;
    sk->maxes[c] = sk->maxes[c + 1];
    PyMem_Free(from);
    memmove(sk->chunks + c + 1, sk->chunks + c + 2, (size_t)(sk->nchunks - c - 2) * sizeof(KeyChunk *));
    memmove(sk->maxes + c + 1, sk->maxes + c + 2, (size_t)(sk->nchunks - c - 2) * sizeof(long long));
    sk->nchunks--;
}

/* Remove the key at (c, i). A chunk left with under an eighth of CHUNK_MAX keys joins a neighbour
 * when the two fit in half a chunk, so the chunks stay dense (memory follows the live keys, however
 * many were ever inserted). */
static void sk_delete_at(SortedKeys *sk, Py_ssize_t c, Py_ssize_t i)
{
    KeyChunk *chunk = sk->chunks[c];
    PyObject *o = chunk->o[i];
    chunk_move(chunk, i, chunk, i + 1, chunk->n - i - 1);
    chunk->n--;
    if (chunk->n == 0) {
        PyMem_Free(chunk);
        memmove(sk->chunks + c, sk->chunks + c + 1, (size_t)(sk->nchunks - c - 1) * sizeof(KeyChunk *));
        memmove(sk->maxes + c, sk->maxes + c + 1, (size_t)(sk->nchunks - c - 1) * sizeof(long long));
        sk->nchunks--;
    } else {
        sk->maxes[c] = chunk->k[chunk->n - 1];
        if (chunk->n < CHUNK_MAX / 8) {
            if (c + 1 < sk->nchunks && chunk->n + sk->chunks[c + 1]->n <= CHUNK_MAX / 2)
                sk_merge(sk, c);
            else if (c > 0 && chunk->n + sk->chunks[c - 1]->n <= CHUNK_MAX / 2)
                sk_merge(sk, c - 1);
        }
    }
    sk->len--;
    sk->version++;
    Py_DECREF(o); /* last: the index is consistent before anything can run */
}

/* Where key k is: 1 and (c, i), or 0 when absent. */
static int sk_find(SortedKeys *sk, long long k, Py_ssize_t *c, Py_ssize_t *i)
{
    sk_seek(sk, k, c, i);
    return *c < sk->nchunks && sk->chunks[*c]->k[*i] == k;
}

/* The size of key `o`'s entry, as `sized` says: known or not (nothing when the key is not there). */
static void sk_set_size(SortedKeys *sk, PyObject *o, long long size, int sized)
{
    long long k;
    Py_ssize_t c, i;
    if (as_i64(o, &k) && sk_find(sk, k, &c, &i)) {
        sk->chunks[c]->s[i] = size;
        sk->chunks[c]->sized[i] = (unsigned char)sized;
    }
}

static void sk_clear_all(SortedKeys *sk)
{
    for (Py_ssize_t c = 0; c < sk->nchunks; c++) {
        KeyChunk *chunk = sk->chunks[c];
        for (Py_ssize_t i = 0; i < chunk->n; i++)
            Py_DECREF(chunk->o[i]);
        PyMem_Free(chunk);
    }
    sk->nchunks = sk->len = 0;
    sk->version++;
}

/* A key argument as the index holds it: 1, 0 with OverflowError (not an int within 64 bits). */
static int sk_key(PyObject *o, long long *k)
{
    if (as_i64(o, k))
        return 1;
    PyErr_Format(PyExc_OverflowError, "SortedKeys holds ints within 64 bits, not %R", o);
    return 0;
}

static PyObject *sk_add(SortedKeys *sk, PyObject *o)
{
    long long k;
    if (!sk_key(o, &k) || sk_insert(sk, o, k, 0, 0, NULL, NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *sk_remove(SortedKeys *sk, PyObject *o)
{
    long long k;
    Py_ssize_t c, i;
    if (!as_i64(o, &k) || !sk_find(sk, k, &c, &i)) {
        PyErr_Format(PyExc_ValueError, "%R not in SortedKeys", o);
        return NULL;
    }
    sk_delete_at(sk, c, i);
    Py_RETURN_NONE;
}

/* An irange bound: an int, clamped to what 64-bit keys can be compared with. */
static int sk_bound(PyObject *o, wide *out)
{
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "SortedKeys.irange bounds must be ints");
        return 0;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return 0;
    *out = overflow > 0 ? (wide)LLONG_MAX + 1 : overflow < 0 ? (wide)LLONG_MIN - 1 : (wide)v;
    return 1;
}

/* irange(lo, hi): the keys k with lo <= k < hi, in order, as a list. */
static PyObject *sk_irange(SortedKeys *sk, PyObject *const *args, Py_ssize_t nargs)
{
    wide lo, hi;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "irange expects 2 arguments");
        return NULL;
    }
    if (!sk_bound(args[0], &lo) || !sk_bound(args[1], &hi))
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t c, i;
    sk_seek(sk, lo, &c, &i);
    for (; c < sk->nchunks; c++, i = 0) {
        KeyChunk *chunk = sk->chunks[c];
        for (; i < chunk->n; i++) {
            if ((wide)chunk->k[i] >= hi)
                return out;
            if (PyList_Append(out, chunk->o[i]) < 0)
                return Py_DECREF(out), NULL;
        }
    }
    return out;
}

static PyObject *sk_neighbours(SortedKeys *sk, PyObject *arg); /* (below, beside the tables' neighbours) */

static PyObject *sk_tolist(SortedKeys *sk, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyList_New(sk->len);
    if (out == NULL)
        return NULL;
    Py_ssize_t at = 0;
    for (Py_ssize_t c = 0; c < sk->nchunks; c++)
        for (Py_ssize_t i = 0; i < sk->chunks[c]->n; i++)
            PyList_SET_ITEM(out, at++, Py_NewRef(sk->chunks[c]->o[i]));
    return out;
}

/* Fill from a sequence of keys (any order): sorted, then laid out in half-full chunks. */
static int sk_fill(SortedKeys *sk, PyObject *iterable)
{
    PyObject *items = PySequence_List(iterable);
    if (items == NULL || PyList_Sort(items) < 0)
        return Py_XDECREF(items), -1;
    Py_ssize_t n = PyList_GET_SIZE(items);
    long long k;
    for (Py_ssize_t at = 0; at < n; at++) {
        PyObject *o = PyList_GET_ITEM(items, at);
        if (!sk_key(o, &k))
            return Py_DECREF(items), -1;
        KeyChunk *chunk = sk->nchunks ? sk->chunks[sk->nchunks - 1] : NULL;
        if ((chunk == NULL || chunk->n == CHUNK_MAX / 2) && (chunk = sk_new_chunk(sk, sk->nchunks)) == NULL)
            return Py_DECREF(items), -1;
        chunk->k[chunk->n] = k;
        chunk->sized[chunk->n] = 0;
        chunk->o[chunk->n++] = Py_NewRef(o);
        sk->maxes[sk->nchunks - 1] = k;
        sk->len++;
    }
    sk->version++;
    Py_DECREF(items);
    return 0;
}

static int sk_init(SortedKeys *sk, PyObject *args, PyObject *kwargs)
{
    PyObject *iterable = NULL;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "SortedKeys takes no keywords");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "|O:SortedKeys", &iterable))
        return -1;
    sk_clear_all(sk);
    return iterable == NULL ? 0 : sk_fill(sk, iterable);
}

/* An independent index of the same keys (and known sizes), chunk by chunk. */
static PyObject *sk_copy(SortedKeys *sk, PyObject *Py_UNUSED(ignored))
{
    SortedKeys *copy = (SortedKeys *)PyObject_CallNoArgs((PyObject *)Py_TYPE(sk));
    if (copy == NULL)
        return NULL;
    for (Py_ssize_t c = 0; c < sk->nchunks; c++) {
        KeyChunk *from = sk->chunks[c], *into = sk_new_chunk(copy, c);
        if (into == NULL)
            return Py_DECREF(copy), NULL;
        chunk_move(into, 0, from, 0, from->n);
        into->n = from->n;
        for (Py_ssize_t i = 0; i < into->n; i++)
            Py_INCREF(into->o[i]);
        copy->maxes[c] = sk->maxes[c];
        copy->len += into->n;
    }
    copy->version++;
    return (PyObject *)copy;
}

static PyObject *sk_reduce(SortedKeys *sk, PyObject *Py_UNUSED(ignored))
{
    PyObject *keys = sk_tolist(sk, NULL);
    return keys == NULL ? NULL : Py_BuildValue("(O(N))", (PyObject *)Py_TYPE(sk), keys);
}

static PyObject *sk_iter(SortedKeys *sk)
{
    PyObject *keys = sk_tolist(sk, NULL);
    if (keys == NULL)
        return NULL;
    PyObject *it = PyObject_GetIter(keys);
    Py_DECREF(keys);
    return it;
}

static Py_ssize_t sk_length(SortedKeys *sk)
{
    return sk->len;
}

static int sk_contains(SortedKeys *sk, PyObject *o)
{
    long long k;
    Py_ssize_t c, i;
    return as_i64(o, &k) && sk_find(sk, k, &c, &i);
}

static void sk_dealloc(SortedKeys *sk)
{
    sk_clear_all(sk);
    PyMem_Free(sk->chunks);
    PyMem_Free(sk->maxes);
    Py_TYPE(sk)->tp_free((PyObject *)sk);
}

static PyMethodDef sk_methods[] = {
    {"add", (PyCFunction)sk_add, METH_O, "add(key): insert a key (an int within 64 bits, else OverflowError)"},
    {"remove", (PyCFunction)sk_remove, METH_O, "remove(key): delete a key (ValueError when absent)"},
    {"irange", (PyCFunction)(void (*)(void))sk_irange, METH_FASTCALL, "irange(lo, hi): the keys in [lo, hi), as a list"},
    {"neighbours", (PyCFunction)sk_neighbours, METH_O, "neighbours(x): (the largest key < x, the smallest key > x), None where none"},
    {"copy", (PyCFunction)sk_copy, METH_NOARGS, "copy(): an independent index of the same keys"},
    {"__reduce__", (PyCFunction)sk_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PySequenceMethods sk_as_sequence = {.sq_length = (lenfunc)sk_length, .sq_contains = (objobjproc)sk_contains};

static PyTypeObject SortedKeysType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "checker._native.SortedKeys",
    .tp_basicsize = sizeof(SortedKeys),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SortedKeys(keys=()): the ordered index of a large table's int keys (see checker.model.state).",
    .tp_dealloc = (destructor)sk_dealloc,
    .tp_as_sequence = &sk_as_sequence,
    .tp_iter = (getiterfunc)sk_iter,
    .tp_methods = sk_methods,
    .tp_init = (initproc)sk_init,
    .tp_new = PyType_GenericNew,
};

/* A probe's predicate on the (key, record) of a candidate: a Python callable (None: always true),
 * or C code of the step machine (`fn`, below). */
typedef struct Pred {
    PyObject *py;
    int (*fn)(struct Pred *pred, PyObject *key, PyObject *record);
    void *ctx;
    PyObject *rows; /* where `fn` looks a candidate's record up when it is given none (NULL) */
} Pred;

/* pred((key, record)) as 1/0, or -1 with an exception set. */
static int holds(Pred *pred, PyObject *key, PyObject *record)
{
    if (pred->fn != NULL)
        return pred->fn(pred, key, record);
    if (pred->py == Py_None)
        return 1;
    PyObject *entry = PyTuple_Pack(2, key, record);
    if (entry == NULL)
        return -1;
    PyObject *r = PyObject_CallOneArg(pred->py, entry);
    Py_DECREF(entry);
    if (r == NULL)
        return -1;
    int b = PyObject_IsTrue(r);
    Py_DECREF(r);
    return b;
}

static PyObject *slow(TableCore *self, PyObject *method, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *call[4] = {(PyObject *)self, NULL, NULL, NULL};
    for (Py_ssize_t i = 0; i < nargs; i++)
        call[i + 1] = args[i];
    return PyObject_VectorcallMethod(method, call, (size_t)nargs + 1, NULL);
}

/* What a probe's body returns to say "hand this call to the Python method" (never a real object). */
static PyObject slow_marker;
#define SLOW (&slow_marker)

/* One candidate of a window walk: its record, size and `TEST`, then the predicate. The exact key
 * (`EXACT`) is skipped: its test here is the exact-key test's, which came first with the same
 * answer (the predicates are pure), so asking it again would only repeat the predicate. */
#define WINDOW_CANDIDATE(WKEY, KVAL, EXACT, TEST)                                                                \
    do {                                                                                                         \
        long long k = (KVAL), size;                                                                              \
        if (k == (EXACT))                                                                                        \
            break;                                                                                               \
        PyObject *record = PyDict_GetItemWithError(rows, (WKEY));                                                \
        if (record == NULL) {                                                                                    \
            PyErr_Clear();                                                                                       \
            return SLOW;                                                                                         \
        }                                                                                                        \
        if (!record_size(record, field, &size))                                                                  \
            return SLOW;                                                                                         \
        if (TEST) {                                                                                              \
            int h = holds(pred, (WKEY), record);                                                                 \
            if (h < 0)                                                                                           \
                return NULL;                                                                                     \
            if (h)                                                                                               \
                Py_RETURN_TRUE;                                                                                  \
        }                                                                                                        \
    } while (0)

/* Walk the keys of a list in [lo, hi) and ask `test` of each; the window bound k < hi is the caller's.
 * The three windows below are checker/model/state.py's overlap_window and containment_window,
 * written in C (a SortedKeys index has its own walk, SK_WINDOW). The list's size is re-read each
 * turn, because a predicate runs Python code (the spec's predicates do not change tables, but a
 * walk must never read a place that is gone if one did). */
#define WINDOW_LOOP(LO, HI, EXACT, TEST)                                                                         \
    do {                                                                                                         \
        Py_ssize_t i = bisect(keys, (LO), 0, 0), j;                                                              \
        long long first_ = 0, next_ = 0;                                                                         \
        if (i < 0)                                                                                               \
            return SLOW;                                                                                         \
        if (i == PyList_GET_SIZE(keys))                                                                          \
            break; /* no key in the window */                                                                    \
        int known_ = as_i64(PyList_GET_ITEM(keys, i), &first_);                                                  \
        if (known_ && (wide)first_ >= (wide)(HI))                                                                \
            break; /* no key in the window */                                                                    \
        if (known_ && first_ == (EXACT)                                                                          \
            && (i + 1 == PyList_GET_SIZE(keys)                                                                   \
                || (as_i64(PyList_GET_ITEM(keys, i + 1), &next_) && (wide)next_ >= (wide)(HI))))                 \
            break; /* only the exact key, which is skipped */                                                    \
        j = bisect(keys, (HI), i, 0);                                                                            \
        if (j < 0)                                                                                               \
            return SLOW;                                                                                         \
        for (; i < j && i < PyList_GET_SIZE(keys); i++) {                                                        \
            PyObject *wkey = PyList_GET_ITEM(keys, i);                                                           \
            long long kv;                                                                                        \
            if (!as_i64(wkey, &kv))                                                                              \
                return SLOW;                                                                                     \
            WINDOW_CANDIDATE(wkey, kv, EXACT, TEST);                                                             \
        }                                                                                                        \
    } while (0)

/* The exact-key test that comes first in every probe (the usual case: the range asked about is
 * an entry's own). 1 true, 0 not this way, -1 error, 2 hand to Python. */
static int exact_hit(const KeyIndex *ki, PyObject *rows, PyObject *field, PyObject *kobj, long long k, wide end, int mode,
                     Pred *pred)
{
    long long size;
    Py_ssize_t slot;
    PyObject *record = ki != NULL ? ki_record(ki, k, &slot) : PyDict_GetItemWithError(rows, kobj);
    if (record == NULL) {
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return 2;
        }
        return 0;
    }
    if (ki != NULL)
        size = ki->slots[slot].size;
    else if (!record_size(record, field, &size))
        return 2;
    int hit = mode == 1 ? end <= (wide)k + size : size > 0; /* 1: containing; else overlapping / addr */
    if (!hit)
        return 0;
    return holds(pred, kobj, record);
}

#define EXACT_HIT(KEY, K, END, MODE)                                                                             \
    do {                                                                                                         \
        int h = exact_hit(ki, rows, field, (KEY), (K), (END), (MODE), pred);                                     \
        if (h == 2)                                                                                              \
            return SLOW;                                                                                         \
        if (h < 0)                                                                                               \
            return NULL;                                                                                         \
        if (h)                                                                                                   \
            Py_RETURN_TRUE;                                                                                      \
    } while (0)

/* ---- the probes of a SortedKeys index: sizes from the index, records only for a predicate */

enum { PROBE_OVERLAPPING, PROBE_CONTAINING, PROBE_CONTAINING_ADDR };

/* The size of the entry at (chunk, i): the index's, or read from its record (and kept). 1, or 0
 * when only the Python method can answer. */
static inline int slot_size(KeyChunk *chunk, Py_ssize_t i, PyObject *rows, PyObject *field, long long *size)
{
    if (chunk->sized[i]) {
        *size = chunk->s[i];
        return 1;
    }
    PyObject *record = PyDict_GetItemWithError(rows, chunk->o[i]);
    if (record == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (!record_size(record, field, size))
        return 0;
    chunk->s[i] = *size;
    chunk->sized[i] = 1;
    return 1;
}

/* The predicate on the entry of `key`, its record not looked up yet: 1/0, -1 on error, 2 when only
 * the Python method can answer. The step machine's predicates look the record up themselves
 * if they read it (`rows`); a Python one is given it. */
static int holds_key(Pred *pred, PyObject *rows, PyObject *key)
{
    if (pred->fn == NULL && pred->py == Py_None)
        return 1;
    if (pred->fn != NULL) {
        pred->rows = rows;
        int h = pred->fn(pred, key, NULL);
        pred->rows = NULL;
        return h;
    }
    PyObject *record = PyDict_GetItemWithError(rows, key);
    if (record == NULL) {
        PyErr_Clear();
        return 2;
    }
    Py_INCREF(record);
    int h = holds(pred, key, record);
    Py_DECREF(record);
    return h;
}

#define HOLDS_KEY(KEY)                                                                                           \
    do {                                                                                                         \
        int h = holds_key(pred, rows, (KEY));                                                                    \
        if (h == 2)                                                                                              \
            return SLOW;                                                                                         \
        if (h < 0)                                                                                               \
            return NULL;                                                                                         \
        if (h)                                                                                                   \
            Py_RETURN_TRUE;                                                                                      \
    } while (0)

/* The place of the first key >= lo, given (*c, *i), the place of the first key >= some x >= lo (the
 * exact-key test's): a window's lower bound is usually within a few keys of it, so a walk back is
 * cheaper than a second bisection; past a few steps, the bisection. */
static void sk_seek_from(SortedKeys *sk, wide lo, Py_ssize_t *c, Py_ssize_t *i)
{
    Py_ssize_t cc = *c, ii = *i;
    for (int steps = 0;; steps++) {
        if (ii == 0) {
            if (cc == 0 || (wide)sk->maxes[cc - 1] < lo)
                break;
            cc--;
            ii = sk->chunks[cc]->n; /* chunks are never empty */
        }
        if ((wide)sk->chunks[cc]->k[ii - 1] < lo)
            break;
        if (steps == 8) {
            sk_seek(sk, lo, c, i);
            return;
        }
        ii--;
    }
    *c = cc;
    *i = ii;
}

/* WINDOW_LOOP on a SortedKeys, with the sizes of the index; then the answer is false. It starts
 * from the exact-key test's place (at_c, at_i) when the index has not changed since (at_version). */
#define SK_WINDOW(LO, HI, TEST)                                                                                  \
    do {                                                                                                         \
        wide hi_ = (HI), lo_ = (LO);                                                                             \
        unsigned long long version = sk->version;                                                                \
        Py_ssize_t c = at_c, i = at_i;                                                                           \
        if (at_c >= 0 && version == at_version && lo_ <= (wide)base)                                             \
            sk_seek_from(sk, lo_, &c, &i);                                                                       \
        else                                                                                                     \
            sk_seek(sk, lo_, &c, &i);                                                                            \
        for (; c < sk->nchunks; c++, i = 0) {                                                                    \
            for (; i < sk->chunks[c]->n; i++) {                                                                  \
                KeyChunk *chunk = sk->chunks[c];                                                                 \
                long long k = chunk->k[i], size;                                                                 \
                if ((wide)k >= hi_)                                                                              \
                    Py_RETURN_FALSE;                                                                             \
                if (k == base)                                                                                   \
                    continue; /* the exact key: as WINDOW_CANDIDATE */                                           \
                if (!slot_size(chunk, i, rows, field, &size))                                                    \
                    return SLOW;                                                                                 \
                if (TEST) {                                                                                      \
                    HOLDS_KEY(chunk->o[i]);                                                                      \
                    if (sk->version != version)                                                                  \
                        return SLOW;                                                                             \
                }                                                                                                \
            }                                                                                                    \
        }                                                                                                        \
        Py_RETURN_FALSE;                                                                                         \
    } while (0)

/* The exact-key test on a SortedKeys: the entry of key `base`, if any, and `TEST` on its size;
 * (at_c, at_i): the place of the first key >= base, for the window (SK_WINDOW). */
#define SK_EXACT_HIT(TEST)                                                                                       \
    do {                                                                                                         \
        long long size;                                                                                          \
        at_version = sk->version;                                                                                \
        if (ki != NULL) { /* the key index: no search of the sorted keys unless the window is walked */          \
            Py_ssize_t slot_;                                                                                    \
            PyObject *record_ = ki_record(ki, base, &slot_);                                                     \
            at_c = -1;                                                                                           \
            at_i = 0;                                                                                            \
            if (record_ != NULL) {                                                                               \
                size = ki->slots[slot_].size;                                                                    \
                if (TEST) {                                                                                      \
                    Py_INCREF(record_); /* (as holds_key: held while a predicate runs) */                       \
                    int h = holds(pred, kobj, record_);                                                          \
                    Py_DECREF(record_);                                                                          \
                    if (h < 0)                                                                                   \
                        return NULL;                                                                             \
                    if (h)                                                                                       \
                        Py_RETURN_TRUE;                                                                          \
                }                                                                                                \
            }                                                                                                    \
        } else if (sk_find(sk, base, &at_c, &at_i)) {                                                            \
            if (!slot_size(sk->chunks[at_c], at_i, rows, field, &size))                                          \
                return SLOW;                                                                                     \
            if (TEST)                                                                                            \
                HOLDS_KEY(kobj);                                                                                 \
        }                                                                                                        \
    } while (0)

/* The probe bodies below (overlapping_body and the others) on a SortedKeys index. */
static PyObject *sk_probe(const KeyIndex *ki, PyObject *rows, SortedKeys *sk, PyObject *field, long long largest,
                          PyObject *kobj, long long base, long long end, int mode, Pred *pred)
{
    if (sk->len != PyDict_GET_SIZE(rows))
        return SLOW; /* not the index of these rows */
    Py_ssize_t at_c, at_i;
    unsigned long long at_version;
    if (mode == PROBE_OVERLAPPING) {
        if (end <= base)
            Py_RETURN_FALSE;
        SK_EXACT_HIT(size > 0);
        if (largest <= 0)
            Py_RETURN_FALSE;
        SK_WINDOW((wide)base - largest + 1, (wide)end, size > 0 && (wide)base < (wide)k + size);
    } else if (mode == PROBE_CONTAINING) {
        SK_EXACT_HIT((wide)end <= (wide)base + size);
        wide lo = (wide)(base < end ? base : end) - largest;
        SK_WINDOW(lo, (wide)base + 1, k <= base && (wide)end <= (wide)k + size);
    } else {
        SK_EXACT_HIT(size > 0);
        SK_WINDOW((wide)base - largest, (wide)base + 1, k <= base && (wide)base < (wide)k + size);
    }
    Py_RETURN_FALSE;
}

/* The bodies of the probes, on a non-empty table's rows, sorted keys (a list or a SortedKeys) and size field;
 * `kobj` is the int object of `base` (the key the exact-key test looks up). */
typedef PyObject *(*probe_body)(const KeyIndex *ki, PyObject *rows, PyObject *keys, PyObject *field, long long largest,
                                PyObject *kobj, long long base, long long end, Pred *pred);

static PyObject *overlapping_body(const KeyIndex *ki, PyObject *rows, PyObject *keys, PyObject *field, long long largest,
                                  PyObject *kobj, long long base, long long end, Pred *pred)
{
    if (end <= base)
        Py_RETURN_FALSE;
    EXACT_HIT(kobj, base, end, 0);
    if (largest <= 0)
        Py_RETURN_FALSE;
    WINDOW_LOOP((wide)base - largest + 1, (wide)end, base, size > 0 && (wide)base < (wide)k + size);
    Py_RETURN_FALSE;
}

static PyObject *containing_body(const KeyIndex *ki, PyObject *rows, PyObject *keys, PyObject *field, long long largest,
                                 PyObject *kobj, long long base, long long end, Pred *pred)
{
    EXACT_HIT(kobj, base, end, 1);
    wide lo = (wide)(base < end ? base : end) - largest;
    WINDOW_LOOP(lo, (wide)base + 1, base, k <= base && (wide)end <= (wide)k + size);
    Py_RETURN_FALSE;
}

static PyObject *containing_addr_body(const KeyIndex *ki, PyObject *rows, PyObject *keys, PyObject *field, long long largest,
                                      PyObject *kobj, long long x, long long Py_UNUSED(end), Pred *pred)
{
    EXACT_HIT(kobj, x, 0, 0);
    WINDOW_LOOP((wide)x - largest, (wide)x + 1, x, k <= x && (wide)x < (wide)k + size);
    Py_RETURN_FALSE;
}

static probe_body probe_bodies[3] = {overlapping_body, containing_body, containing_addr_body};

/* ---- separated tables: the entry before an address is the only one that can hold it */

/* An entry next to an address in a sized table's index: its key object (borrowed; NULL: none) and
 * key, and where its size is: a SortedKeys chunk's place, or (chunk NULL) its record in the rows. */
typedef struct {
    PyObject *o;
    long long k;
    KeyChunk *chunk;
    Py_ssize_t c, i; /* its place: chunk c, index i of a SortedKeys, or index i of a list */
} Neighbour;

/* A neighbour's size: 1, or 0 where C cannot read it. Read only when its range could reach far
 * enough to matter: in a large table the record is seldom in the cache. */
static int neighbour_size(PyObject *rows, PyObject *field, Neighbour *nb, long long *size)
{
    if (nb->chunk != NULL)
        return slot_size(nb->chunk, nb->i, rows, field, size);
    PyObject *record = PyDict_GetItemWithError(rows, nb->o);
    if (record == NULL) {
        PyErr_Clear();
        return 0;
    }
    return record_size(record, field, size);
}

/* The entries of `sk` next to x (strictly before and after it), (c, i) being the place of its first
 * key >= x, as sk_seek finds it. */
static void sk_around(SortedKeys *sk, wide x, Py_ssize_t c, Py_ssize_t i, Neighbour *before, Neighbour *after)
{
    Py_ssize_t bc = c, bi = i;
    before->o = after->o = NULL;
    before->chunk = after->chunk = NULL;
    if (bi == 0 && bc > 0)
        bi = sk->chunks[--bc]->n; /* chunks are never empty */
    if (bi > 0) {
        KeyChunk *chunk = sk->chunks[bc];
        *before = (Neighbour){chunk->o[bi - 1], chunk->k[bi - 1], chunk, bc, bi - 1};
    }
    if (c < sk->nchunks && (wide)sk->chunks[c]->k[i] == x && ++i == sk->chunks[c]->n) {
        c++;
        i = 0;
    }
    if (c < sk->nchunks) {
        KeyChunk *chunk = sk->chunks[c];
        *after = (Neighbour){chunk->o[i], chunk->k[i], chunk, c, i};
    }
}

/* The entries next to x (strictly before and after it) in the sorted index `keys`, as
 * checker/model/state.py's _neighbours finds them: 1, or 0 where C cannot read a key. */
static int neighbours(PyObject *keys, wide x, Neighbour *before, Neighbour *after)
{
    before->o = after->o = NULL;
    before->chunk = after->chunk = NULL;
    if (Py_IS_TYPE(keys, &SortedKeysType)) {
        SortedKeys *sk = (SortedKeys *)keys;
        Py_ssize_t c, i;
        sk_seek(sk, x, &c, &i);
        sk_around(sk, x, c, i, before, after);
        return 1;
    }
    if (!PyList_CheckExact(keys))
        return 0;
    Py_ssize_t n = PyList_GET_SIZE(keys), i = bisect(keys, x, 0, 0), j;
    long long v;
    if (i < 0)
        return 0;
    j = i;
    if (j < n) {
        if (!as_i64(PyList_GET_ITEM(keys, j), &v))
            return 0;
        if ((wide)v == x)
            j++;
    }
    if (i > 0) {
        before->o = PyList_GET_ITEM(keys, i - 1);
        if (!as_i64(before->o, &before->k))
            return 0;
    }
    if (j < n) {
        after->o = PyList_GET_ITEM(keys, j);
        after->i = j;
        if (!as_i64(after->o, &after->k))
            return 0;
    }
    return 1;
}

/* neighbours(x): (the largest key < x, the smallest key > x), each None where there is none. */
static PyObject *sk_neighbours(SortedKeys *sk, PyObject *arg)
{
    wide x;
    Neighbour before, after;
    if (!sk_bound(arg, &x))
        return NULL;
    neighbours((PyObject *)sk, x, &before, &after); /* (a SortedKeys' keys are all readable) */
    return PyTuple_Pack(2, before.o != NULL ? before.o : Py_None, after.o != NULL ? after.o : Py_None);
}

/* Whether a separated table stays separated with the entry (k, size), in its index already (the
 * Python put's _keeps_separated): 0 also where C cannot tell, which is always safe. `added`: where
 * sk_insert put k (c < 0: not known); while the index is as it left it, and no equal key precedes
 * k there, that is the place a search would find, which is then not needed. */
static int keeps_separated(TableCore *self, long long k, long long size, const SkPlace *added)
{
    Neighbour before, after;
    long long largest, before_size;
    SortedKeys *sk = added->sk;
    if (sk != NULL && added->c >= 0 && (PyObject *)sk == self->keys && added->version == sk->version
        && added->c < sk->nchunks && added->i < sk->chunks[added->c]->n && sk->chunks[added->c]->k[added->i] == k) {
        sk_around(sk, k, added->c, added->i, &before, &after);
        if (before.o != NULL && before.k == k && !neighbours(self->keys, (wide)k, &before, &after))
            return 0;
    } else if (!neighbours(self->keys, (wide)k, &before, &after))
        return 0;
    if (after.o != NULL && size > 0 && (wide)after.k < (wide)k + size)
        return 0;
    if (before.o == NULL || (as_i64(self->largest, &largest) && (wide)k - before.k >= (wide)largest))
        return 1; /* (the cached largest size: no entry before this put is larger) */
    if (!neighbour_size(self->rows, self->sized_by, &before, &before_size))
        return 0;
    return !(before_size > 0 && (wide)k < (wide)before.k + before_size);
}

/* A probe of a separated table, as the Python methods' `_separated` branches: the exact key, then
 * only the entry before base, and for an overlap the entries from base on below end. These are the
 * entries the window's walk would find true, met in its order, so the predicate is asked the same
 * questions in the same order. (A containment of an empty or inverted range walks the window.) */
static PyObject *separated_probe(const KeyIndex *ki, PyObject *rows, PyObject *keys, PyObject *field, long long largest,
                                 PyObject *kobj, long long base, long long end, int mode, Pred *pred)
{
    if ((Py_IS_TYPE(keys, &SortedKeysType) ? ((SortedKeys *)keys)->len : PyList_GET_SIZE(keys)) != PyDict_GET_SIZE(rows))
        return SLOW; /* not the index of these rows */
    if (mode == PROBE_OVERLAPPING) {
        if (end <= base)
            Py_RETURN_FALSE;
        EXACT_HIT(kobj, base, end, 0);
        if (largest <= 0)
            Py_RETURN_FALSE;
    } else
        EXACT_HIT(kobj, base, end, mode == PROBE_CONTAINING ? 1 : 0);
    Neighbour before, after;
    long long before_size;
    if (!neighbours(keys, (wide)base, &before, &after))
        return SLOW;
    /* (its size is read only where it can reach: base for an overlap or an address, end for a containment) */
    wide reach = mode == PROBE_CONTAINING ? (wide)end : (wide)base + 1;
    int asked_before = before.o != NULL && reach - before.k <= (wide)largest; /* (then a predicate may have run) */
    if (asked_before) {
        if (!neighbour_size(rows, field, &before, &before_size))
            return SLOW;
        wide upto = (wide)before.k + before_size;
        int hit = mode == PROBE_OVERLAPPING ? before_size > 0 && (wide)base < upto
                  : mode == PROBE_CONTAINING ? (wide)end <= upto : (wide)base < upto;
        if (hit)
            HOLDS_KEY(before.o);
    }
    if (mode != PROBE_OVERLAPPING || after.o == NULL || (wide)after.k >= (wide)end)
        Py_RETURN_FALSE;
    /* the entries from base on, below end: from the one after base (no predicate has run since it was found,
     * or the walk checks the index's version) */
    if (Py_IS_TYPE(keys, &SortedKeysType)) {
        SortedKeys *sk = (SortedKeys *)keys;
        unsigned long long version = sk->version;
        Py_ssize_t c = after.c, i = after.i;
        if (asked_before)
            sk_seek(sk, (wide)base + 1, &c, &i); /* (find the place again) */
        for (; c < sk->nchunks; c++, i = 0) {
            for (; i < sk->chunks[c]->n; i++) {
                KeyChunk *chunk = sk->chunks[c];
                long long size;
                if ((wide)chunk->k[i] >= (wide)end)
                    Py_RETURN_FALSE;
                if (!slot_size(chunk, i, rows, field, &size))
                    return SLOW;
                if (size > 0) {
                    HOLDS_KEY(chunk->o[i]);
                    if (sk->version != version)
                        return SLOW;
                }
            }
        }
        Py_RETURN_FALSE;
    }
    Py_ssize_t i = after.i;
    if (asked_before && (i = bisect(keys, (wide)base + 1, 0, 0)) < 0)
        return SLOW; /* (find the place again) */
    for (; i < PyList_GET_SIZE(keys); i++) { /* (its size re-read: a predicate runs Python code) */
        PyObject *wkey = PyList_GET_ITEM(keys, i);
        long long kv;
        if (!as_i64(wkey, &kv))
            return SLOW;
        if ((wide)kv >= (wide)end)
            break;
        WINDOW_CANDIDATE(wkey, kv, base, size > 0);
    }
    Py_RETURN_FALSE;
}

/* A probe's answer (a new reference to True or False), NULL on error, or SLOW when it is the
 * Python method's to answer. `kobj` is the int object of `base`; `end` is unused by
 * PROBE_CONTAINING_ADDR. The body runs on references of its own to the table's fields (a
 * predicate may run Python code). */
static PyObject *probe_core(TableCore *self, int mode, PyObject *kobj, wide base, wide end, Pred *pred)
{
    long long largest;
    PyObject *rows = self->rows, *keys = self->keys, *field = self->sized_by;
    if (rows != NULL && PyDict_CheckExact(rows) && PyDict_GET_SIZE(rows) == 0)
        Py_RETURN_FALSE; /* as the Python method: an empty table has nothing, whatever is asked */
    if (rows == NULL || !PyDict_CheckExact(rows) || keys == NULL
        || !(PyList_CheckExact(keys) || Py_IS_TYPE(keys, &SortedKeysType)) || field == NULL
        || field == Py_None || !as_i64(self->largest, &largest))
        return SLOW;
    if (base < LLONG_MIN || base > LLONG_MAX || end < LLONG_MIN || end > LLONG_MAX)
        return SLOW;
    /* (the exact-key test, the only user of the key index here, comes before any predicate runs) */
    const KeyIndex *ki = ki_current(&self->ki, rows, field);
    Py_INCREF(rows);
    Py_INCREF(keys);
    Py_INCREF(field);
    PyObject *r = self->separated == Py_True && !(mode == PROBE_CONTAINING && end <= base)
                      ? separated_probe(ki, rows, keys, field, largest, kobj, (long long)base, (long long)end, mode, pred)
                  : Py_IS_TYPE(keys, &SortedKeysType)
                      ? sk_probe(ki, rows, (SortedKeys *)keys, field, largest, kobj, (long long)base, (long long)end, mode, pred)
                      : probe_bodies[mode](ki, rows, keys, field, largest, kobj, (long long)base, (long long)end, pred);
    Py_DECREF(rows);
    Py_DECREF(keys);
    Py_DECREF(field);
    return r;
}

/* The Python entry of a probe: (base, end[, pred]) or (x[, pred]). */
static PyObject *probe(TableCore *self, PyObject *const *args, Py_ssize_t nargs, int mode, const char *name,
                       PyObject *slow_name)
{
    Py_ssize_t want = mode == PROBE_CONTAINING_ADDR ? 1 : 2;
    if (nargs != want && nargs != want + 1) {
        PyErr_Format(PyExc_TypeError, "%s expects %zd or %zd arguments", name, want, want + 1);
        return NULL;
    }
    Pred pred = {nargs > want ? args[want] : Py_None, NULL, NULL};
    long long base, end = 0;
    PyObject *r = SLOW;
    if (as_i64(args[0], &base) && (want == 1 || as_i64(args[1], &end)))
        r = probe_core(self, mode, args[0], base, end, &pred);
    else if (self->rows != NULL && PyDict_CheckExact(self->rows) && PyDict_GET_SIZE(self->rows) == 0)
        Py_RETURN_FALSE;
    return r == SLOW ? slow(self, slow_name, args, nargs) : r;
}

static PyObject *any_overlapping(TableCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    return probe(self, args, nargs, PROBE_OVERLAPPING, "any_overlapping", s_slow_overlapping);
}

static PyObject *any_containing(TableCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    return probe(self, args, nargs, PROBE_CONTAINING, "any_containing", s_slow_containing);
}

static PyObject *any_containing_addr(TableCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    return probe(self, args, nargs, PROBE_CONTAINING_ADDR, "any_containing_addr", s_slow_containing_addr);
}

static int journal_append(TableCore *self, PyObject *key, const char *op, PyObject *old)
{
    if (self->journal == Py_None)
        return 0;
    PyObject *items[4] = {self->name, key, op[0] == 'p' ? s_put : s_remove, old ? old : Py_None};
    PyObject *entry = PyTuple_New(4); /* filled here: PyTuple_Pack's variadic arguments cost more */
    if (entry == NULL)
        return -1;
    for (int i = 0; i < 4; i++)
        PyTuple_SET_ITEM(entry, i, Py_NewRef(items[i]));
    int r = PyList_Append(self->journal, entry);
    Py_DECREF(entry);
    return r;
}

/* The count of `size` in the small dict `counts` (borrowed; NULL when none, an error set if one
 * occurred) and, in *key, the dict's own key for it (a new reference; `size` when absent): a
 * record's size is another int object than the count's key, and one scan of the few sizes finds
 * both by value, where a lookup would hash and compare int objects (a larger dict is looked up). */
static PyObject *count_entry(PyObject *counts, PyObject *size, PyObject **key)
{
    long long v, kv;
    Py_ssize_t pos = 0;
    PyObject *k, *c;
    int ints = 1; /* every key seen an exact int: then a scan that finds none proves absence */
    *key = Py_NewRef(size);
    if (PyDict_GET_SIZE(counts) <= 4 && PyLong_CheckExact(size) && as_i64(size, &v)) {
        while (PyDict_Next(counts, &pos, &k, &c)) {
            if (k == size || (PyLong_CheckExact(k) && as_i64(k, &kv) && kv == v)) {
                Py_SETREF(*key, Py_NewRef(k));
                return c;
            }
            ints = ints && PyLong_CheckExact(k);
        }
        if (ints)
            return NULL;
    }
    return PyDict_GetItemWithError(counts, size); /* (a key equal to an int need not be one) */
}

/* Whether `size` has a count in `counts`: 1, 0 (no error set), or -1 with an error set. */
static int size_counted(PyObject *counts, PyObject *size)
{
    PyObject *key, *c = count_entry(counts, size, &key);
    Py_DECREF(key);
    return c != NULL ? 1 : PyErr_Occurred() ? -1 : 0;
}

/* Whether the count `c` (borrowed from the counts) now says n, changed in place: a count held by
 * the dict alone, and neither it nor n one of the shared small ints, is seen by no one else, and a
 * new int plus a dict store cost most of a put's bookkeeping in a large table (one size, a big count). */
static inline int count_in_place(PyObject *c, long n)
{
#if PY_VERSION_HEX < 0x030C0000 && PyLong_SHIFT == 30
    if (PyLong_CheckExact(c) && Py_REFCNT(c) == 1 && Py_SIZE(c) == 1 && ((PyLongObject *)c)->ob_digit[0] > 256
        && n > 256 && n <= (long)PyLong_MASK) {
        ((PyLongObject *)c)->ob_digit[0] = (digit)n;
        return 1;
    }
#endif
    return 0;
}

/* counts[size] += delta (deleting it at 0); *was: the count before. -1 on error. */
static int count_size(PyObject *counts, PyObject *size, long delta, long *was)
{
    PyObject *key, *v = NULL;
    PyObject *c = count_entry(counts, size, &key);
    long n = c == NULL ? 0 : PyLong_AsLong(c);
    int r = -1;
    if ((c == NULL || n == -1) && PyErr_Occurred())
        goto done;
    *was = n;
    n += delta;
    if (n == 0)
        r = PyDict_DelItem(counts, key);
    else if (c != NULL && count_in_place(c, n))
        r = 0;
    else if ((v = PyLong_FromLong(n)) != NULL)
        r = PyDict_SetItem(counts, key, v);
done:
    Py_XDECREF(v);
    Py_DECREF(key);
    return r;
}

/* The Python put's bookkeeping of a size leaving: the count drops; the cached largest is
 * forgotten when its last entry goes. */
static int forget_size(TableCore *self, PyObject *size)
{
    long was;
    if (count_size(self->size_count, size, -1, &was) < 0)
        return -1;
    if (was == 1 && self->largest != Py_None) {
        long long a, b;
        int eq = as_i64(size, &a) && as_i64(self->largest, &b) ? a == b : PyObject_RichCompareBool(size, self->largest, Py_EQ);
        if (eq < 0)
            return -1;
        if (eq)
            Py_SETREF(self->largest, Py_NewRef(Py_None));
    }
    return 0;
}

static int note_size(TableCore *self, PyObject *size)
{
    long was;
    if (count_size(self->size_count, size, 1, &was) < 0)
        return -1;
    if (self->largest != Py_None) {
        long long a, b;
        int gt = as_i64(size, &a) && as_i64(self->largest, &b) ? a > b : PyObject_RichCompareBool(size, self->largest, Py_GT);
        if (gt < 0)
            return -1;
        if (gt)
            Py_SETREF(self->largest, Py_NewRef(size));
    }
    if (was != 0)
        return 0;
    PyObject *heap = self->size_heap, *r;
    if (PyList_GET_SIZE(heap) > 2 * PyDict_GET_SIZE(self->size_count) + 16) { /* mostly stale: rebuild */
        PyObject *fresh = PyList_New(0), *s;
        Py_ssize_t pos = 0;
        if (fresh == NULL)
            return -1;
        while (PyDict_Next(self->size_count, &pos, &s, NULL)) {
            PyObject *neg = PyNumber_Negative(s);
            if (neg == NULL || PyList_Append(fresh, neg) < 0) {
                Py_XDECREF(neg);
                Py_DECREF(fresh);
                return -1;
            }
            Py_DECREF(neg);
        }
        int set = PyList_SetSlice(heap, 0, PyList_GET_SIZE(heap), fresh);
        Py_DECREF(fresh);
        if (set < 0)
            return -1;
        r = PyObject_CallOneArg(heapify, heap);
    } else {
        PyObject *neg = PyNumber_Negative(size);
        if (neg == NULL)
            return -1;
        PyObject *pair[2] = {heap, neg};
        r = PyObject_Vectorcall(heappush, pair, 2, NULL);
        Py_DECREF(neg);
    }
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

static int index_ready(TableCore *self);

/* del keys[at] (0 <= at < len), as list.__delitem__ does it without the slice machinery. 0. */
static int list_delete(PyObject *keys, Py_ssize_t at)
{
    PyListObject *list = (PyListObject *)keys;
    Py_ssize_t n = Py_SIZE(list);
    PyObject *gone = list->ob_item[at];
    memmove(list->ob_item + at, list->ob_item + at + 1, (size_t)(n - at - 1) * sizeof(PyObject *));
    Py_SET_SIZE(list, n - 1); /* the list keeps its memory, as a deletion that need not shrink it */
    Py_DECREF(gone); /* last: the list is consistent before anything can run */
    return 0;
}

/* Whether the index of a sized table says `key` has no entry, so that no lookup in the rows is
 * needed (it holds the keys of the rows: the same number of them, and a key not there is not a
 * key of the rows). For a list index, *at: where the key would go (insort's place), else -1.
 * *own: the key object that a SortedKeys index holds for `key` (borrowed: the rows' own, put
 * there with it), else `key`: a lookup in the rows by it compares pointers, not ints. */
static int index_says_absent(TableCore *self, PyObject *key, Py_ssize_t *at, SkPlace *place, PyObject **own)
{
    long long k, before;
    PyObject *keys = self->keys, *rows = self->rows;
    *at = -1;
    *own = key;
    if (place != NULL)
        place->c = -1;
    if (self->sized_by == NULL || self->sized_by == Py_None || rows == NULL || !PyDict_CheckExact(rows)
        || !index_ready(self) || !as_i64(key, &k))
        return 0;
    if (Py_IS_TYPE(keys, &SortedKeysType)) {
        SortedKeys *sk = (SortedKeys *)keys;
        Py_ssize_t c, i;
        if (sk->len != PyDict_GET_SIZE(rows))
            return 0;
        if (sk_find(sk, k, &c, &i)) {
            *own = sk->chunks[c]->o[i];
            return 0;
        }
        if (place != NULL)
            *place = (SkPlace){sk, c, i, sk->version};
        return 1;
    }
    if (PyList_GET_SIZE(keys) != PyDict_GET_SIZE(rows) || (*at = bisect(keys, k, 0, 1)) < 0)
        return *at = -1, 0;
    return *at == 0 || (as_i64(PyList_GET_ITEM(keys, *at - 1), &before) && before != k);
}

static int bookkeeping_ready(TableCore *self)
{
    return self->rows != NULL && PyDict_CheckExact(self->rows) && self->journal != NULL
        && (self->journal == Py_None || PyList_CheckExact(self->journal)) && self->sized_by != NULL && self->name != NULL;
}

static int index_ready(TableCore *self)
{
    return self->keys != NULL && (PyList_CheckExact(self->keys) || Py_IS_TYPE(self->keys, &SortedKeysType))
        && self->size_count != NULL
        && PyDict_CheckExact(self->size_count) && self->size_heap != NULL && PyList_CheckExact(self->size_heap)
        && self->largest != NULL && self->small != NULL;
}

static PyObject *put(TableCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "put expects 2 arguments");
        return NULL;
    }
    PyObject *key = args[0], *record = args[1];
    if (!bookkeeping_ready(self))
        goto slow_path;
    Py_ssize_t list_at = -1; /* where the key goes in a list index, when known */
    SkPlace place;           /* where it goes in a SortedKeys, when known */
    SkPlace added = {NULL, -1, 0, 0}; /* where sk_insert put the key */
    PyObject *own, *old;
    long long kv = 0;
    int key_held = as_i64(key, &kv); /* a key the KeyIndex can hold */
    KeyIndex *ki = key_held ? ki_current(&self->ki, self->rows, self->sized_by) : NULL;
    Py_ssize_t slot;
    if (ki != NULL) {
        old = ki_record(ki, kv, &slot);
        own = old != NULL ? ki->slots[slot].kobj : key;
        place = (SkPlace){NULL, -1, 0, 0}; /* (sk_insert searches) */
    } else
        old = index_says_absent(self, key, &list_at, &place, &own) ? NULL : PyDict_GetItemWithError(self->rows, own);
    if (old == NULL && PyErr_Occurred()) {
        PyErr_Clear();
        goto slow_path;
    }
    PyObject *field = self->sized_by, *size = NULL, *old_size = NULL;
    Py_ssize_t at = -1;
    long long size_value = 0, k = 0;
    int sized = 0;
    if (field != Py_None) {
        long long small;
        if (!index_ready(self) || !PyDict_CheckExact(record) || !as_i64(self->small, &small))
            goto slow_path;
        size = PyDict_GetItemWithError(record, field);
        if (size == NULL) {
            PyErr_Clear();
            goto slow_path;
        }
        sized = as_i64(size, &size_value);
        if (old == NULL) {
            if (!as_i64(key, &k))
                goto slow_path; /* a huge key */
            if (!PyList_CheckExact(self->keys))
                at = -2; /* a SortedKeys: inserted below */
            else if (PyList_GET_SIZE(self->keys) + 1 > small)
                goto slow_path; /* the index moves to a SortedKeys */
            else if ((at = list_at >= 0 ? list_at : bisect(self->keys, k, 0, 1)) < 0)
                goto slow_path;
        } else {
            if (!PyDict_CheckExact(old) || (old_size = PyDict_GetItemWithError(old, field)) == NULL
                || size_counted(self->size_count, old_size) != 1) {
                PyErr_Clear();
                goto slow_path;
            }
        }
    }
    /* Everything checked: from here on it changes the table, in the Python put's order. */
    Py_XINCREF(old);
    Py_XINCREF(old_size);
    Py_XINCREF(size);
    Py_INCREF(own); /* an update keeps the rows' key object: setting by it compares no ints */
    int failed = journal_append(self, key, "put", old) < 0;
    if (!failed && field != Py_None) {
        if (old == NULL)
            failed = (at == -2 ? sk_insert((SortedKeys *)self->keys, key, k, size_value, sized, &place, &added)
                               : PyList_Insert(self->keys, at, key)) < 0;
        else
            failed = forget_size(self, old_size) < 0;
        failed = failed || note_size(self, size) < 0;
    }
    if (!failed) {
        int follow = ki_matches(&self->ki, self->rows, field);
        failed = PyDict_SetItem(self->rows, old != NULL ? own : key, record) < 0;
        ki_follow(&self->ki, self->rows, follow, !failed && key_held && (field == Py_None || sized), kv,
                  old != NULL ? own : key, record, field == Py_None ? 0 : size_value);
    }
    if (field != Py_None && old != NULL && Py_IS_TYPE(self->keys, &SortedKeysType))
        sk_set_size((SortedKeys *)self->keys, key, size_value, sized && !failed); /* the index's size follows */
    if (!failed && field != Py_None && self->separated == Py_True
        && !(key_held && sized && keeps_separated(self, kv, size_value, &added)))
        Py_SETREF(self->separated, Py_NewRef(Py_False)); /* (the Python put's check; False where C cannot tell) */
    Py_DECREF(own);
    Py_XDECREF(old);
    Py_XDECREF(old_size);
    Py_XDECREF(size);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
slow_path:;
    PyObject *r = slow(self, s_slow_put, args, nargs);
    if (self->keys != NULL && Py_IS_TYPE(self->keys, &SortedKeysType)) { /* a size Python put: read it again */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        sk_set_size((SortedKeys *)self->keys, key, 0, 0);
        PyErr_Restore(type, value, tb);
    }
    return r;
}

/* The SortedKeys index of a sized table ready for the C paths, else NULL. */
static SortedKeys *big_index_of(TableCore *self)
{
    return self->sized_by != NULL && self->sized_by != Py_None && index_ready(self)
        && Py_IS_TYPE(self->keys, &SortedKeysType) ? (SortedKeys *)self->keys : NULL;
}

static PyObject *remove_(TableCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "remove expects 1 argument");
        return NULL;
    }
    PyObject *key = args[0];
    if (!bookkeeping_ready(self))
        goto slow_path;
    /* The rows' own key object, where a SortedKeys index holds the key: the dict lookup and the
     * deletion below then find it by its pointer (the key of an event is another int object, and
     * a lookup by it compares ints); its place in the index is the deletion's, found once. */
    SortedKeys *sk = big_index_of(self), *seen = sk;
    PyObject *found = key, *old;
    Py_ssize_t sk_at_chunk = -1, sk_at = 0, slot = -1;
    long long k, kv = 0;
    unsigned long long version = 0;
    int key_held = as_i64(key, &kv);
    KeyIndex *ki = key_held ? ki_current(&self->ki, self->rows, self->sized_by) : NULL;
    if (ki != NULL) { /* the key index has the rows' own key object: then the deletion compares pointers */
        old = ki_record(ki, kv, &slot);
        found = old != NULL ? ki->slots[slot].kobj : key;
        Py_INCREF(found);
    } else {
        if (sk != NULL && key_held && sk_find(sk, kv, &sk_at_chunk, &sk_at)) {
            found = sk->chunks[sk_at_chunk]->o[sk_at];
            version = sk->version;
        } else
            sk_at_chunk = -1;
        Py_INCREF(found);
        old = PyDict_GetItemWithError(self->rows, found);
    }
    if (old == NULL) {
        Py_DECREF(found);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            goto slow_path;
        }
        Py_RETURN_NONE;
    }
    PyObject *field = self->sized_by, *size = NULL;
    Py_ssize_t at = -1;
    if (field != Py_None) {
        long long small;
        if (!index_ready(self) || !as_i64(key, &k) || !as_i64(self->small, &small) || (slot < 0 && !PyDict_CheckExact(old)))
            goto slow_found;
        /* Its size (a new reference): the key index's where it has the entry (an equal int, which the
         * counts are kept by; the record, seldom in the cache in a large table, is then not read),
         * else the record's. (A record the key index holds is a dict.) */
        size = slot >= 0 ? PyLong_FromLongLong(ki->slots[slot].size) : Py_XNewRef(PyDict_GetItemWithError(old, field));
        if (size == NULL || size_counted(self->size_count, size) != 1) {
            PyErr_Clear();
            goto slow_found;
        }
        if (Py_IS_TYPE(self->keys, &SortedKeysType)) {
            sk = (SortedKeys *)self->keys; /* (the same, unless the lookups ran code that changed it) */
            if (sk_at_chunk < 0 || sk != seen || sk->version != version)
                sk_at_chunk = sk_find(sk, k, &sk_at_chunk, &sk_at) ? sk_at_chunk : -1;
            if (sk->len - 1 < small / 2 || sk_at_chunk < 0)
                goto slow_found; /* the index moves back to a list (or the key is not where it must be) */
            at = -2;
        } else {
            at = bisect_oldest_first(self->keys, k);
            if (at < 0 || at >= PyList_GET_SIZE(self->keys))
                goto slow_found;
        }
    }
    Py_INCREF(old);
    int follow = ki_matches(&self->ki, self->rows, self->sized_by);
    int failed = PyDict_DelItem(self->rows, found) < 0;
    ki_follow(&self->ki, self->rows, follow, !failed && key_held, kv, NULL, NULL, 0);
    failed = failed || journal_append(self, key, "remove", old) < 0;
    if (!failed && field != Py_None) {
        if (at == -2)
            sk_delete_at((SortedKeys *)self->keys, sk_at_chunk, sk_at);
        else
            failed = list_delete(self->keys, at) < 0;
        failed = failed || forget_size(self, size) < 0;
    }
    Py_DECREF(old);
    Py_XDECREF(size);
    Py_DECREF(found);
    if (failed)
        return NULL;
    if (field != Py_None && PyDict_GET_SIZE(self->rows) == 0 && self->separated != NULL)
        Py_SETREF(self->separated, Py_NewRef(Py_True)); /* (as the Python remove) */
    Py_RETURN_NONE;
slow_found:
    Py_XDECREF(size);
    Py_DECREF(found);
slow_path:
    return slow(self, s_slow_remove, args, nargs);
}

/* set_field(key, name, value): the Python method's copy-on-write of one field, journaled as a
 * put of the old record; a change of the size field (the index follows it) goes to Python. */
static PyObject *set_field(TableCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "set_field expects 3 arguments");
        return NULL;
    }
    PyObject *key = args[0], *name = args[1], *value = args[2];
    if (!bookkeeping_ready(self) || !PyUnicode_CheckExact(name))
        return slow(self, s_slow_set_field, args, nargs);
    if (self->sized_by != Py_None) {
        int same = PyObject_RichCompareBool(name, self->sized_by, Py_EQ);
        if (same != 0)
            return same < 0 ? NULL : slow(self, s_slow_set_field, args, nargs);
    }
    long long kv = 0;
    int key_held = as_i64(key, &kv);
    KeyIndex *ki = key_held ? ki_current(&self->ki, self->rows, self->sized_by) : NULL;
    Py_ssize_t slot = -1;
    PyObject *own = key; /* the rows' own key object when the index has it: setting by it compares pointers */
    PyObject *old = ki != NULL ? ki_record(ki, kv, &slot) : PyDict_GetItemWithError(self->rows, key);
    long long size = slot >= 0 ? ki->slots[slot].size : 0;
    if (slot >= 0)
        own = ki->slots[slot].kobj;
    if (old == NULL || !PyDict_CheckExact(old)) {
        if (PyErr_Occurred() || old != NULL)
            return PyErr_Occurred() ? NULL : slow(self, s_slow_set_field, args, nargs);
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    Py_INCREF(old);
    Py_INCREF(own); /* (the index's is borrowed: held while the allocations below may run code) */
    PyObject *record = journal_append(self, key, "put", old) < 0 ? NULL : PyDict_Copy(old);
    int failed = record == NULL || PyDict_SetItem(record, name, value) < 0;
    if (!failed) {
        int follow = ki_matches(&self->ki, self->rows, self->sized_by);
        failed = PyDict_SetItem(self->rows, own, record) < 0;
        /* (the size field is not `name`: the record's size is the old one's) */
        ki_follow(&self->ki, self->rows, follow, !failed && slot >= 0, kv, own, record, size);
    }
    Py_DECREF(own);
    Py_DECREF(old);
    Py_XDECREF(record);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

/* _key_index(): the KeyIndex's entries as (key object, record, size) in slot order, or None while it
 * does not match the rows (for tests: they check it against the rows themselves). */
static PyObject *key_index(TableCore *self, PyObject *Py_UNUSED(ignored))
{
    KeyIndex *ki = &self->ki;
    if (!ki_matches(ki, self->rows, self->sized_by))
        Py_RETURN_NONE;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < ki->cap; i++) {
        KeySlot *e = &ki->slots[i];
        if (e->kobj == NULL)
            continue;
        PyObject *item = Py_BuildValue("(OOL)", e->kobj, e->rec, e->size);
        if (item == NULL || PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

static int traverse(TableCore *self, visitproc visit, void *arg)
{
    TABLE_FIELDS(VISIT_FIELD)
    return 0;
}

static int clear(TableCore *self)
{
    TABLE_FIELDS(CLEAR_FIELD)
    return 0;
}

/* A static type's dealloc: the heap subclass's own dealloc (subtype_dealloc) drops its type. */
static void dealloc(TableCore *self)
{
    PyObject_GC_UnTrack(self);
    clear(self);
    slots_free(self->ki.slots, (size_t)self->ki.cap, sizeof(KeySlot));
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define MEMBER(NAME, FIELD) {NAME, T_OBJECT_EX, offsetof(TableCore, FIELD), 0, NULL}

static PyMemberDef members[] = {
    MEMBER("name", name), MEMBER("rows", rows), MEMBER("sized_by", sized_by), MEMBER("keys", keys),
    MEMBER("small", small), MEMBER("_size_count", size_count), MEMBER("_size_heap", size_heap),
    MEMBER("_largest", largest), MEMBER("_separated", separated), MEMBER("journal", journal), {NULL},
};

static PyMethodDef methods[] = {
    {"put", (PyCFunction)(void (*)(void))put, METH_FASTCALL, "put(key, record): add or replace an entry"},
    {"remove", (PyCFunction)(void (*)(void))remove_, METH_FASTCALL, "remove(key): drop an entry if present"},
    {"set_field", (PyCFunction)(void (*)(void))set_field, METH_FASTCALL,
     "set_field(key, name, value): change one field of an entry"},
    {"any_overlapping", (PyCFunction)(void (*)(void))any_overlapping, METH_FASTCALL,
     "any_overlapping(base, end, pred=None): does an entry's range overlap [base, end)?"},
    {"any_containing", (PyCFunction)(void (*)(void))any_containing, METH_FASTCALL,
     "any_containing(base, end, pred=None): does an entry's range contain [base, end)?"},
    {"any_containing_addr", (PyCFunction)(void (*)(void))any_containing_addr, METH_FASTCALL,
     "any_containing_addr(x, pred=None): does an entry's range contain the address x?"},
    {"_key_index", (PyCFunction)key_index, METH_NOARGS,
     "_key_index(): the key index's (key, record, size) entries, or None while it does not match the rows"},
    {NULL},
};

static PyTypeObject TableCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "checker._native.TableCore",
    .tp_basicsize = sizeof(TableCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The fields and hot operations of a table (see checker.semantics.Table).",
    .tp_traverse = (traverseproc)traverse,
    .tp_clear = (inquiry)clear,
    .tp_dealloc = (destructor)dealloc,
    .tp_members = members,
    .tp_methods = methods,
    .tp_new = PyType_GenericNew,
};

/* ---------------------------------------------------------------- Ring
 *
 * A bounded window of 4-tuples, oldest first, as collections.deque(maxlen=n) keeps them (append,
 * len, indexing, iteration, reversed()), stored as a flat array of objects instead of one tuple
 * each: the replayer's removals (`Replayer.removed`, filled by `remember` below) and a
 * non-thread-safe call's recent calls (the windows of `Replayer.recent`, scanned and filled by the
 * steps). Items 1 to 3 that are exact ints within 64 bits are kept as C ints only, and made into
 * ints again when read (equal ints, not the same objects): a ring then holds no reference to an
 * event's times and line numbers, which go back to the allocator with their event instead of 64 or
 * 4096 pushes later; the steps' overlap scan reads items 1 and 2 as C ints. */

typedef struct {
    PyObject_HEAD
    Py_ssize_t maxlen, start, n;
    Py_ssize_t run;       /* how many of the newest items have the newest one's item 0 (the same object) */
    long long pushed;      /* items ever appended (clear keeps it): the replayer's index of removals
                            * reads how many came since it last looked */
    PyObject **items;      /* 4 per slot; NULL where the item is held in `vals` */
    long long *vals;       /* 4 per slot: items 1 to 3 where they are exact 64-bit ints */
    unsigned char *packed; /* per slot: bit j set when item j is held in `vals` only */
} Ring;

#define RING_TIMED(RG, SLOT) (((RG)->packed[SLOT] & 6) == 6) /* items 1 and 2 are C ints */

static PyTypeObject RingType;

static inline Py_ssize_t ring_slot(Ring *rg, Py_ssize_t i)
{
    Py_ssize_t slot = rg->start + i;
    return slot >= rg->maxlen ? slot - rg->maxlen : slot;
}

/* Keep item o of a slot: in *v, and 1, when it is an exact 64-bit int; else in *it (a new reference), and 0. */
static inline int ring_hold(PyObject *o, PyObject **it, long long *v)
{
    int packed = as_i64(o, v);
    *it = packed ? NULL : Py_NewRef(o);
    return packed;
}

/* Append (a, b, c, d) (new references taken here); the oldest goes when the ring is full. 0 or -1. */
static int ring_push(Ring *rg, PyObject *a, PyObject *b, PyObject *c, PyObject *d)
{
    rg->pushed++;
    if (rg->maxlen == 0)
        return 0;
    Py_ssize_t slot;
    PyObject *gone[4] = {NULL, NULL, NULL, NULL};
    PyObject *newest = rg->n ? rg->items[4 * ring_slot(rg, rg->n - 1)] : NULL;
    rg->run = newest == a ? (rg->run < rg->maxlen ? rg->run + 1 : rg->maxlen) : 1;
    if (rg->n == rg->maxlen) {
        slot = rg->start;
        memcpy(gone, rg->items + 4 * slot, sizeof gone);
        rg->start = rg->start + 1 == rg->maxlen ? 0 : rg->start + 1;
    } else {
        slot = rg->start + rg->n;
        if (slot >= rg->maxlen)
            slot -= rg->maxlen;
        rg->n++;
    }
    PyObject **it = rg->items + 4 * slot;
    long long *v = rg->vals + 4 * slot;
    it[0] = Py_NewRef(a);
    rg->packed[slot] = (unsigned char)(ring_hold(b, &it[1], &v[1]) << 1 | ring_hold(c, &it[2], &v[2]) << 2
                                       | ring_hold(d, &it[3], &v[3]) << 3);
    for (int i = 0; i < 4; i++) /* last: the ring is consistent before anything can run */
        Py_XDECREF(gone[i]);
    return 0;
}


static PyObject *ring_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t maxlen;
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs)) || !PyArg_ParseTuple(args, "n:Ring", &maxlen))
        return kwargs != NULL && PyDict_GET_SIZE(kwargs) ? PyErr_Format(PyExc_TypeError, "Ring takes no keywords")
                                                         : NULL;
    if (maxlen < 0)
        return PyErr_Format(PyExc_ValueError, "maxlen must be non-negative");
    Ring *rg = (Ring *)type->tp_alloc(type, 0);
    if (rg == NULL)
        return NULL;
    rg->maxlen = maxlen;
    rg->items = PyMem_Calloc((size_t)maxlen * 4 + 1, sizeof(PyObject *));
    rg->vals = PyMem_Calloc((size_t)maxlen * 4 + 1, sizeof(long long));
    rg->packed = PyMem_Calloc((size_t)maxlen + 1, 1);
    if (rg->items == NULL || rg->vals == NULL || rg->packed == NULL) {
        Py_DECREF(rg);
        return PyErr_NoMemory();
    }
    return (PyObject *)rg;
}

static PyObject *ring_append(Ring *rg, PyObject *item)
{
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 4)
        return PyErr_Format(PyExc_TypeError, "a Ring holds 4-tuples, not %R", item);
    if (ring_push(rg, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 2),
                  PyTuple_GET_ITEM(item, 3)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static Py_ssize_t ring_length(Ring *rg)
{
    return rg->n;
}

static PyObject *ring_item(Ring *rg, Py_ssize_t i)
{
    if (i < 0 || i >= rg->n) {
        PyErr_SetString(PyExc_IndexError, "Ring index out of range");
        return NULL;
    }
    Py_ssize_t slot = ring_slot(rg, i);
    PyObject **it = rg->items + 4 * slot, *out = PyTuple_New(4);
    for (int j = 0; out != NULL && j < 4; j++) {
        PyObject *item = it[j] != NULL ? Py_NewRef(it[j]) : PyLong_FromLongLong(rg->vals[4 * slot + j]);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, j, item);
    }
    return out;
}

static PyObject *ring_tolist(Ring *rg)
{
    PyObject *out = PyList_New(rg->n);
    for (Py_ssize_t i = 0; out != NULL && i < rg->n; i++) {
        PyObject *item = ring_item(rg, i);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *ring_reduce(Ring *rg, PyObject *Py_UNUSED(ignored))
{
    PyObject *items = ring_tolist(rg), *it = items == NULL ? NULL : PyObject_GetIter(items);
    Py_XDECREF(items);
    return it == NULL ? NULL : Py_BuildValue("(O(n)ON)", (PyObject *)Py_TYPE(rg), rg->maxlen, Py_None, it);
}

static int ring_traverse(Ring *rg, visitproc visit, void *arg)
{
    for (Py_ssize_t i = 0; i < rg->n; i++) {
        PyObject **it = rg->items + 4 * ring_slot(rg, i);
        for (int j = 0; j < 4; j++)
            Py_VISIT(it[j]);
    }
    return 0;
}

static int ring_clear(Ring *rg)
{
    Py_ssize_t n = rg->n, start = rg->start;
    rg->n = rg->start = rg->run = 0; /* empty before the items go */
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t slot = start + i >= rg->maxlen ? start + i - rg->maxlen : start + i;
        for (int j = 0; j < 4; j++)
            Py_CLEAR(rg->items[4 * slot + j]);
    }
    return 0;
}

static PyObject *ring_clear_method(Ring *rg, PyObject *Py_UNUSED(ignored))
{
    ring_clear(rg);
    Py_RETURN_NONE;
}

static void ring_dealloc(Ring *rg)
{
    PyObject_GC_UnTrack(rg);
    if (rg->items != NULL)
        ring_clear(rg);
    PyMem_Free(rg->items);
    PyMem_Free(rg->vals);
    PyMem_Free(rg->packed);
    Py_TYPE(rg)->tp_free((PyObject *)rg);
}

static PyObject *ring_maxlen(Ring *rg, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(rg->maxlen);
}

static PyMethodDef ring_methods[] = {
    {"append", (PyCFunction)ring_append, METH_O, "append(item): add a 4-tuple (the oldest goes when full)"},
    {"clear", (PyCFunction)ring_clear_method, METH_NOARGS, "clear(): empty the ring"},
    {"__reduce__", (PyCFunction)ring_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyObject *ring_pushed(Ring *rg, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(rg->pushed);
}

static PyGetSetDef ring_getset[] = {{"maxlen", (getter)ring_maxlen, NULL, "the most items kept", NULL},
                                    {"pushed", (getter)ring_pushed, NULL, "items ever appended (clear keeps the count)", NULL},
                                    {NULL}};

static PySequenceMethods ring_as_sequence = {.sq_length = (lenfunc)ring_length, .sq_item = (ssizeargfunc)ring_item};

static PyTypeObject RingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "checker._native.Ring",
    .tp_basicsize = sizeof(Ring),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Ring(maxlen): the last maxlen 4-tuples appended, oldest first (a deque(maxlen=...) of 4-tuples).",
    .tp_traverse = (traverseproc)ring_traverse,
    .tp_clear = (inquiry)ring_clear,
    .tp_dealloc = (destructor)ring_dealloc,
    .tp_as_sequence = &ring_as_sequence,
    .tp_methods = ring_methods,
    .tp_getset = ring_getset,
    .tp_new = ring_new,
};

/* ---------------------------------------------------------------- Lines
 *
 * checker/trace/reader.py's _bounded_lines in C: the iterator iter(next_line, b"") it builds there,
 * where next_line is readline(cap), handed to `check` when longer than `limit` bytes (the Python
 * function that tells a line's end from an overlong line and raises LineTooLong). The Python
 * function call per line was 7-9% of a fast-path replay; here it is one C call of readline. Same
 * order and answers as the Python iterator: the length test first, then the end test (an empty
 * line, or StopIteration from readline), after which the iterator stays exhausted. */

typedef struct {
    PyObject_HEAD
    PyObject *readline; /* NULL: exhausted */
    PyObject *cap, *check;
    Py_ssize_t limit;
} Lines;

static PyObject *lines_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *readline, *cap, *check;
    Py_ssize_t limit;
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs)) || !PyArg_ParseTuple(args, "OOnO:Lines", &readline, &cap, &limit, &check))
        return kwargs != NULL && PyDict_GET_SIZE(kwargs) ? PyErr_Format(PyExc_TypeError, "Lines takes no keywords")
                                                         : NULL;
    Lines *ln = (Lines *)type->tp_alloc(type, 0);
    if (ln == NULL)
        return NULL;
    ln->readline = Py_NewRef(readline);
    ln->cap = Py_NewRef(cap);
    ln->check = Py_NewRef(check);
    ln->limit = limit;
    return (PyObject *)ln;
}

/* 1 when `raw` is the end of the file (b"", as calliter compares with its sentinel), 0 if not, -1 on error. */
static int lines_at_end(PyObject *raw)
{
    if (PyBytes_CheckExact(raw))
        return PyBytes_GET_SIZE(raw) == 0;
    PyObject *empty = PyBytes_FromStringAndSize(NULL, 0);
    if (empty == NULL)
        return -1;
    int end = PyObject_RichCompareBool(raw, empty, Py_EQ);
    Py_DECREF(empty);
    return end;
}

static PyObject *lines_next(Lines *ln)
{
    if (ln->readline == NULL)
        return NULL;
    PyObject *raw = PyObject_CallOneArg(ln->readline, ln->cap);
    if (raw == NULL) {
        if (PyErr_ExceptionMatches(PyExc_StopIteration)) { /* as calliter: the end */
            PyErr_Clear();
            Py_CLEAR(ln->readline);
        }
        return NULL;
    }
    Py_ssize_t n = PyBytes_CheckExact(raw) ? PyBytes_GET_SIZE(raw) : PyObject_Size(raw);
    if (n < 0) {
        Py_DECREF(raw);
        return NULL;
    }
    if (n > ln->limit) { /* rare: an overlong line, or one that fits only without its end */
        Py_SETREF(raw, PyObject_CallOneArg(ln->check, raw));
        if (raw == NULL)
            return NULL;
    }
    int end = lines_at_end(raw);
    if (end != 0) {
        Py_DECREF(raw);
        if (end > 0)
            Py_CLEAR(ln->readline);
        return NULL;
    }
    return raw;
}

static int lines_traverse(Lines *ln, visitproc visit, void *arg)
{
    Py_VISIT(ln->readline);
    Py_VISIT(ln->cap);
    Py_VISIT(ln->check);
    return 0;
}

static int lines_clear(Lines *ln)
{
    Py_CLEAR(ln->readline);
    Py_CLEAR(ln->cap);
    Py_CLEAR(ln->check);
    return 0;
}

static void lines_dealloc(Lines *ln)
{
    PyObject_GC_UnTrack(ln);
    lines_clear(ln);
    Py_TYPE(ln)->tp_free((PyObject *)ln);
}

static PyTypeObject LinesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "checker._native.Lines",
    .tp_basicsize = sizeof(Lines),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Lines(readline, cap, limit, check): readline(cap) until b\"\", a line longer than limit through check "
              "(checker.trace.reader._bounded_lines).",
    .tp_traverse = (traverseproc)lines_traverse,
    .tp_clear = (inquiry)lines_clear,
    .tp_dealloc = (destructor)lines_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)lines_next,
    .tp_new = lines_new,
};

/* ---------------------------------------------------------------- Made
 *
 * Replayer.created where this module is built: (table, key) -> (line, call) of the event that made
 * each live entry, as the dict it stands for (get, in, [], len, keys, items, iteration, setdefault,
 * pop, assignment), but held in an open-addressing table of plain C entries when the table is a
 * string, the key an int within 64 bits and the line one too: no tuple per key or per value, and a
 * hash that spreads page-aligned addresses (an int's own hash, which a dict uses, keeps their
 * zero low bits). Anything else is kept in a dict beside it (`other`). `remember` below fills it. */

typedef struct {
    long long key, line;
    PyObject *call;         /* a strong reference; NULL: the slot is free */
    unsigned long long tag; /* the entry's number (the order they came in, as a dict's) << 16 | its table */
} MadeEntry;

#define MADE_TABLES 0x10000 /* table indices the tags hold (more tables: `other`) */
#define ENTRY_TABLE(E) ((Py_ssize_t)((E)->tag & (MADE_TABLES - 1)))

typedef struct {
    PyObject_HEAD
    MadeEntry *slots;
    Py_ssize_t cap, len; /* cap: a power of two, or 0 */
    PyObject *tables;    /* the table names seen, a list: an entry's table is its index */
    PyObject *other;     /* a dict: (table, key) -> value, for what the slots cannot hold */
    unsigned long long count; /* entries ever added: the next one's number */
} Made;

static PyTypeObject MadeType;

static inline size_t made_hash(Py_ssize_t table, long long key)
{
    unsigned long long x = (unsigned long long)key + (unsigned long long)table * 0x9E3779B97F4A7C15ull;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

/* The index of table name `name` in m->tables (added when `add`), -1 when absent, -2 on error. */
static Py_ssize_t made_table(Made *m, PyObject *name, int add)
{
    Py_ssize_t n = PyList_GET_SIZE(m->tables);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_GET_ITEM(m->tables, i) == name)
            return i;
    for (Py_ssize_t i = 0; i < n; i++) {
        int eq = PyUnicode_Compare(PyList_GET_ITEM(m->tables, i), name);
        if (eq == -1 && PyErr_Occurred())
            return -2;
        if (eq == 0)
            return i;
    }
    if (!add || n >= MADE_TABLES)
        return -1;
    return PyList_Append(m->tables, name) < 0 ? -2 : n;
}

/* The slot of (table, key): its index, or ~index of the free slot where it would go. */
static inline Py_ssize_t made_slot(Made *m, Py_ssize_t table, long long key)
{
    size_t mask = (size_t)m->cap - 1, i = made_hash(table, key) & mask;
    while (m->slots[i].call != NULL) {
        if (m->slots[i].key == key && ENTRY_TABLE(&m->slots[i]) == table)
            return (Py_ssize_t)i;
        i = (i + 1) & mask;
    }
    return ~(Py_ssize_t)i;
}

static int made_grow(Made *m)
{
    Py_ssize_t cap = m->cap ? 2 * m->cap : 64;
    MadeEntry *old = m->slots, *slots = slots_calloc((size_t)cap, sizeof(MadeEntry));
    if (slots == NULL)
        return PyErr_NoMemory(), -1;
    Py_ssize_t old_cap = m->cap;
    m->slots = slots;
    m->cap = cap;
    for (Py_ssize_t i = 0; i < old_cap; i++)
        if (old[i].call != NULL)
            m->slots[~made_slot(m, ENTRY_TABLE(&old[i]), old[i].key)] = old[i];
    slots_free(old, (size_t)old_cap, sizeof(MadeEntry));
    return 0;
}

#define MADE_NEW (~0ull) /* an entry's number when it is a new one */

/* (table, key) := (line, call) unless it is there (`keep`) or always; a new entry's number is
 * `number`, or the next one (MADE_NEW). 0, or -1 on error. */
static int made_put(Made *m, Py_ssize_t table, long long key, long long line, PyObject *call, int keep,
                    unsigned long long number)
{
    if ((m->len + 1) * 2 > m->cap && made_grow(m) < 0)
        return -1;
    Py_ssize_t i = made_slot(m, table, key);
    if (i >= 0) {
        if (!keep) {
            m->slots[i].line = line;
            Py_SETREF(m->slots[i].call, Py_NewRef(call));
        }
        return 0;
    }
    MadeEntry *e = &m->slots[~i];
    e->key = key;
    e->line = line;
    e->tag = (number == MADE_NEW ? m->count++ : number) << 16 | (unsigned long long)table;
    e->call = Py_NewRef(call);
    m->len++;
    return 0;
}

/* Drop (table, key) if there (linear probing's deletion: later entries of the run move up). 1 when
 * it was there, else 0. */
static int made_drop(Made *m, Py_ssize_t table, long long key)
{
    if (m->cap == 0)
        return 0;
    Py_ssize_t i = made_slot(m, table, key);
    if (i < 0)
        return 0;
    PyObject *call = m->slots[i].call;
    size_t mask = (size_t)m->cap - 1, hole = (size_t)i, j = (size_t)i;
    for (;;) {
        j = (j + 1) & mask;
        if (m->slots[j].call == NULL)
            break;
        size_t home = made_hash(ENTRY_TABLE(&m->slots[j]), m->slots[j].key) & mask;
        /* the entry at j may fill the hole unless its home lies cyclically in (hole, j] */
        if (hole <= j ? (home <= hole || home > j) : (home <= hole && home > j)) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].call = NULL;
    m->len--;
    Py_DECREF(call); /* last: the table is consistent before anything can run */
    return 1;
}

/* A Python key (table, key) as the slots hold it: 1 with *table and *key, 0 when they cannot
 * (no error), -1 on error. `add`: a new table name gets an index. */
static int made_where(Made *m, PyObject *where, int add, Py_ssize_t *table, long long *key)
{
    if (!PyTuple_CheckExact(where) || PyTuple_GET_SIZE(where) != 2 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(where, 0))
        || !as_i64(PyTuple_GET_ITEM(where, 1), key))
        return 0;
    *table = made_table(m, PyTuple_GET_ITEM(where, 0), add);
    return *table == -2 ? -1 : *table >= 0;
}

/* A value (line, call) as the slots hold it: 1 with *line and *call (borrowed), else 0. */
static int made_value(PyObject *value, long long *line, PyObject **call)
{
    if (!PyTuple_CheckExact(value) || PyTuple_GET_SIZE(value) != 2 || !as_i64(PyTuple_GET_ITEM(value, 0), line))
        return 0;
    *call = PyTuple_GET_ITEM(value, 1);
    return 1;
}

/* Where `where` is: its slot (>= 0) or -1; and *item, its (number, value) in `other` (borrowed) or
 * NULL. -2 on error. */
static Py_ssize_t made_find(Made *m, PyObject *where, int add, Py_ssize_t *table, long long *key, PyObject **item)
{
    *item = NULL;
    int holdable = made_where(m, where, add, table, key);
    if (holdable < 0)
        return -2;
    if (!holdable)
        *table = -1;
    if (holdable && m->cap) {
        Py_ssize_t i = made_slot(m, *table, *key);
        if (i >= 0)
            return i;
    }
    if (PyDict_GET_SIZE(m->other) && (*item = PyDict_GetItemWithError(m->other, where)) == NULL && PyErr_Occurred())
        return -2;
    return -1;
}

/* The value of `where` (a new reference), NULL with no error when absent, NULL with one on error. */
static PyObject *made_get(Made *m, PyObject *where)
{
    Py_ssize_t table;
    long long key;
    PyObject *item;
    Py_ssize_t i = made_find(m, where, 0, &table, &key, &item);
    if (i == -2)
        return NULL;
    if (i >= 0) {
        PyObject *line = PyLong_FromLongLong(m->slots[i].line);
        return line == NULL ? NULL : Py_BuildValue("(NO)", line, m->slots[i].call);
    }
    return item == NULL ? NULL : Py_NewRef(PyTuple_GET_ITEM(item, 1));
}

/* where := value, unless it is there and `keep`; a value that was there keeps its place in the
 * order. 0 or -1. */
static int made_set(Made *m, PyObject *where, PyObject *value, int keep)
{
    Py_ssize_t table;
    long long key, line;
    PyObject *call, *item;
    Py_ssize_t i = made_find(m, where, 1, &table, &key, &item);
    if (i == -2)
        return -1;
    if ((i >= 0 || item != NULL) && keep)
        return 0;
    unsigned long long number = i >= 0 ? m->slots[i].tag >> 16 : MADE_NEW;
    if (item != NULL && (number = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 0))) == (unsigned long long)-1
        && PyErr_Occurred())
        return -1;
    if (table >= 0 && made_value(value, &line, &call)) { /* into the slots */
        if (item != NULL && PyDict_DelItem(m->other, where) < 0)
            return -1;
        return made_put(m, table, key, line, call, 0, number);
    }
    if (i >= 0) /* into `other`, from the slots */
        made_drop(m, table, key);
    PyObject *n = PyLong_FromUnsignedLongLong(number == MADE_NEW ? m->count++ : number);
    PyObject *entry = n == NULL ? NULL : PyTuple_Pack(2, n, value);
    int r = entry == NULL ? -1 : PyDict_SetItem(m->other, where, entry);
    Py_XDECREF(n);
    Py_XDECREF(entry);
    return r;
}

/* Drop `where`: 1 when it was there, 0 when not, -1 on error. */
static int made_del(Made *m, PyObject *where)
{
    Py_ssize_t table;
    long long key;
    PyObject *item;
    Py_ssize_t i = made_find(m, where, 0, &table, &key, &item);
    if (i == -2)
        return -1;
    if (i >= 0)
        return made_drop(m, table, key);
    if (item == NULL)
        return 0;
    return PyDict_DelItem(m->other, where) < 0 ? -1 : 1;
}

static PyObject *made_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if ((args != NULL && PyTuple_GET_SIZE(args)) || (kwargs != NULL && PyDict_GET_SIZE(kwargs)))
        return PyErr_Format(PyExc_TypeError, "Made takes no arguments");
    Made *m = (Made *)type->tp_alloc(type, 0);
    if (m == NULL)
        return NULL;
    m->tables = PyList_New(0);
    m->other = PyDict_New();
    if (m->tables == NULL || m->other == NULL)
        return Py_DECREF(m), NULL;
    return (PyObject *)m;
}

static Py_ssize_t made_length(Made *m)
{
    return m->len + PyDict_GET_SIZE(m->other);
}

static PyObject *made_subscript(Made *m, PyObject *where)
{
    PyObject *v = made_get(m, where);
    if (v == NULL && !PyErr_Occurred())
        PyErr_SetObject(PyExc_KeyError, where);
    return v;
}

static int made_ass_subscript(Made *m, PyObject *where, PyObject *value)
{
    if (value != NULL)
        return made_set(m, where, value, 0);
    int was = made_del(m, where);
    if (was == 0)
        PyErr_SetObject(PyExc_KeyError, where);
    return was > 0 ? 0 : -1;
}

static int made_contains(Made *m, PyObject *where)
{
    PyObject *v = made_get(m, where);
    Py_XDECREF(v);
    return v != NULL ? 1 : PyErr_Occurred() ? -1 : 0;
}

/* [(where, value)] (items) or [where] (keys), in the order they came in (a dict's). */
static PyObject *made_list(Made *m, int items)
{
    PyObject *all = PyList_New(0), *where, *entry; /* (number, where, value) */
    Py_ssize_t pos = 0;
    for (Py_ssize_t i = 0; all != NULL && i < m->cap; i++) {
        MadeEntry *e = &m->slots[i];
        if (e->call == NULL)
            continue;
        PyObject *row = Py_BuildValue("(K(OL)(LO))", e->tag >> 16, PyList_GET_ITEM(m->tables, ENTRY_TABLE(e)), e->key,
                                      e->line, e->call);
        if (row == NULL || PyList_Append(all, row) < 0)
            Py_CLEAR(all);
        Py_XDECREF(row);
    }
    while (all != NULL && PyDict_Next(m->other, &pos, &where, &entry)) {
        PyObject *row = PyTuple_Pack(3, PyTuple_GET_ITEM(entry, 0), where, PyTuple_GET_ITEM(entry, 1));
        if (row == NULL || PyList_Append(all, row) < 0)
            Py_CLEAR(all);
        Py_XDECREF(row);
    }
    if (all == NULL || PyList_Sort(all) < 0) /* the numbers differ: only they are compared */
        return Py_XDECREF(all), NULL;
    Py_ssize_t n = PyList_GET_SIZE(all);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *row = PyList_GET_ITEM(all, i);
        PyObject *item = items ? PyTuple_Pack(2, PyTuple_GET_ITEM(row, 1), PyTuple_GET_ITEM(row, 2))
                               : Py_NewRef(PyTuple_GET_ITEM(row, 1));
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, item);
    }
    Py_DECREF(all);
    return out;
}

static PyObject *made_keys(Made *m, PyObject *Py_UNUSED(ignored))
{
    return made_list(m, 0);
}

static PyObject *made_items(Made *m, PyObject *Py_UNUSED(ignored))
{
    return made_list(m, 1);
}

static PyObject *made_iter(Made *m)
{
    PyObject *keys = made_list(m, 0), *it = keys ? PyObject_GetIter(keys) : NULL;
    Py_XDECREF(keys);
    return it;
}

static PyObject *made_get_method(Made *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2)
        return PyErr_Format(PyExc_TypeError, "get expects 1 or 2 arguments");
    PyObject *v = made_get(m, args[0]);
    if (v != NULL || PyErr_Occurred())
        return v;
    return Py_NewRef(nargs == 2 ? args[1] : Py_None);
}

static PyObject *made_setdefault(Made *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "setdefault expects 2 arguments");
    if (made_set(m, args[0], args[1], 1) < 0)
        return NULL;
    return made_subscript(m, args[0]);
}

static PyObject *made_pop(Made *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2)
        return PyErr_Format(PyExc_TypeError, "pop expects 1 or 2 arguments");
    PyObject *v = made_get(m, args[0]);
    if (v == NULL) {
        if (PyErr_Occurred())
            return NULL;
        if (nargs == 2)
            return Py_NewRef(args[1]);
        PyErr_SetObject(PyExc_KeyError, args[0]);
        return NULL;
    }
    if (made_del(m, args[0]) < 0)
        return Py_DECREF(v), NULL;
    return v;
}

static int made_clear(Made *m)
{
    MadeEntry *slots = m->slots;
    Py_ssize_t cap = m->cap;
    m->slots = NULL;
    m->cap = m->len = 0;
    for (Py_ssize_t i = 0; i < cap; i++)
        Py_XDECREF(slots[i].call);
    slots_free(slots, (size_t)cap, sizeof(MadeEntry));
    if (m->other != NULL)
        PyDict_Clear(m->other);
    return 0;
}

static PyObject *made_clear_method(Made *m, PyObject *Py_UNUSED(ignored))
{
    made_clear(m);
    Py_RETURN_NONE;
}

static PyObject *made_reduce(Made *m, PyObject *Py_UNUSED(ignored))
{
    PyObject *items = made_list(m, 1), *it = items ? PyObject_GetIter(items) : NULL;
    Py_XDECREF(items);
    return it == NULL ? NULL : Py_BuildValue("(O()OON)", (PyObject *)Py_TYPE(m), Py_None, Py_None, it);
}

static int made_traverse(Made *m, visitproc visit, void *arg)
{
    for (Py_ssize_t i = 0; i < m->cap; i++)
        Py_VISIT(m->slots[i].call);
    Py_VISIT(m->tables);
    Py_VISIT(m->other);
    return 0;
}

static int made_tp_clear(Made *m)
{
    made_clear(m);
    Py_CLEAR(m->tables);
    Py_CLEAR(m->other);
    return 0;
}

static void made_dealloc(Made *m)
{
    PyObject_GC_UnTrack(m);
    made_tp_clear(m);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyMethodDef made_methods[] = {
    {"get", (PyCFunction)(void (*)(void))made_get_method, METH_FASTCALL, "get(where, default=None)"},
    {"setdefault", (PyCFunction)(void (*)(void))made_setdefault, METH_FASTCALL, "setdefault(where, value)"},
    {"pop", (PyCFunction)(void (*)(void))made_pop, METH_FASTCALL, "pop(where[, default])"},
    {"keys", (PyCFunction)made_keys, METH_NOARGS, "keys(): a list of the (table, key) pairs"},
    {"items", (PyCFunction)made_items, METH_NOARGS, "items(): a list of ((table, key), (line, call))"},
    {"clear", (PyCFunction)made_clear_method, METH_NOARGS, "clear(): empty it"},
    {"__reduce__", (PyCFunction)made_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyMappingMethods made_as_mapping = {
    .mp_length = (lenfunc)made_length,
    .mp_subscript = (binaryfunc)made_subscript,
    .mp_ass_subscript = (objobjargproc)made_ass_subscript,
};

static PySequenceMethods made_as_sequence = {.sq_contains = (objobjproc)made_contains};

static PyTypeObject MadeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "checker._native.Made",
    .tp_basicsize = sizeof(Made),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Made(): (table, key) -> (line, call) of the event that made each live entry (a dict's interface).",
    .tp_traverse = (traverseproc)made_traverse,
    .tp_clear = (inquiry)made_tp_clear,
    .tp_dealloc = (destructor)made_dealloc,
    .tp_as_mapping = &made_as_mapping,
    .tp_as_sequence = &made_as_sequence,
    .tp_iter = (getiterfunc)made_iter,
    .tp_methods = made_methods,
    .tp_new = made_new,
};

/* ---------------------------------------------------------------- the step machine
 *
 * Step: one call's fast step (checker.fastpath) as code for a small register machine, compiled
 * from the spec by checker.stepcode. The generated Python step stays the reference and the
 * fallback: this one runs the same clauses in the same order on the same state, and gives up
 * (returns False, having changed nothing, so that the general path takes the line) wherever the
 * Python step would return False or raise EvalError / KeyError, and also wherever a value leaves
 * the range it computes in (128 bits). A probe that only the Python table can answer (a SortedList
 * index, bounds beyond 64 bits) is asked of it, with the machine's predicate as a callable.
 * tests/test_fastpath.py replays traces with both kinds of step against the general path;
 * tests/test_stepcode.py compares the machine's masks with the Python semantics'.
 *
 * Registers hold integers (booleans 0/1, enum members by code); each may also hold the Python
 * object of its value (a strong reference), so that a value read from the trace or a table goes
 * back into a table as the same object. The parameters come first, then the outputs, then the
 * constants (copied in at the start of each run), then the temporaries. */

enum { K_INT, K_BOOL, K_ENUM };
#define OPS(X)                                                                                                   \
    X(END, 0) X(GIVEUP, 0) X(MOV, 2) X(ADD, 3) X(SUB, 3) X(MUL, 3) X(AND, 3) X(OR, 3) X(MOD, 3)           \
    X(NEG, 2) X(INV, 2) X(NOT, 2) X(EQ, 3) X(NE, 3) X(LT, 3) X(LE, 3) X(GT, 3) X(GE, 3) X(MIN, 3) X(MAX, 3)   \
    X(JZ, 2) X(JNZ, 2) X(JMP, 1) X(JEQ, 3) X(JNE, 3) X(JLT, 3) X(JLE, 3) X(JGT, 3) X(JGE, 3) X(INTAB, 3)      \
    X(HASKEY, 2) X(ROWF, 5) X(VAR, 3) X(INSET, 3) X(PROBE, 6) X(EKEY, 1) X(EROWF, 3) X(RET, 1) X(MASK, 1)      \
    X(PUT, 3) X(DEL, 2) X(UPD, 5) X(SET, 3)
#define OP_ENUM(NAME, N) OP_##NAME,
#define OP_ARITY(NAME, N) N,
#define OP_ARITY_NAME(NAME, N) ARITY_##NAME = N,
#define OP_NAME(NAME, N) #NAME,
#define OP_LABEL(NAME, N) &&do_##NAME,
enum { OPS(OP_ENUM) NOPS };
enum { OPS(OP_ARITY_NAME) };
static const int op_arity[] = {OPS(OP_ARITY)};
static const char *op_names[] = {OPS(OP_NAME)};
#define MAX_REGS 250
#define MAX_MASK_BITS 16
#define FAIL_SLOTS 8192 /* the failures' verdict cache: at most half full, as VERDICT_CACHE_LIMIT */

typedef struct {
    PyObject_HEAD
    int *code;
    Py_ssize_t ncode;
    wide *consts;
    Py_ssize_t nconsts;
    wide **sets;
    Py_ssize_t *set_sizes, nsets;
    vectorcallfunc vectorcall;
    int nregs, mask_pc, ensures_pc, effect_pc, nparams, noutputs, status_kind, is_event, mask0, mask_bits;
    int *param_kinds, *output_kinds;
    Py_ssize_t *param_offs, *output_offs, off_args, off_ret, off_out, off_t0, off_t1, off_tid;
    PyTypeObject *event_type, *args_type, *out_type;
    wide success_code;
    unsigned char *oks; /* 1: the success verdict of this mask is "no finding" */
    struct { long long m; wide s; unsigned char used; } *fails;
    Py_ssize_t nfails;
    /* objects (strong references) */
    PyObject *names, *tables, *vars, *journal, *state, *remember, *decide, *oks_dict, *fails_dict, *call, *success,
        *unset, *enum_codes, *enum_names, *structs, *errors;
    PyObject *spellings; /* per loaded register, then the status: (flag names or None, lo, hi), or None; NULL: none spelt */
    PyObject *window; /* a non-thread-safe call's recent calls, a deque of (tid, t0, t1, line); else NULL */
    PyObject *remember_args; /* (created, removed, journal) when `remember` is this module's, else NULL */
    /* enum members read lately (strong references) and their codes: the decoder gives a literal's
     * member as the same string object each time, so most reads need no lookup */
    PyObject *enum_seen[4];
    long long enum_seen_code[4];
    /* The entries the code looks up or changes by a key read from the line (a parameter's or an
     * output's register), collected from the code: their slots (the table's KeyIndex, and for a change
     * the replayer's Made, whose index of the table is `made`, -1 until found) are prefetched when a run
     * has read the line, so that their cache misses overlap the run's other work. */
    struct { int table, reg, change; Py_ssize_t made; } sites[8];
    int nsites;
} Step;

static PyObject *remember(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
static PyObject *s_rollback, *s_set, *s_max_size, *s_append, *s_slow_probe[3];

/* The state of one run of a step. */
typedef struct {
    Step *st;
    wide *r;
    PyObject **ob;
    PyObject *ekey, *erecord; /* the candidate entry, in a predicate */
    PyObject *erows;          /* where its record is when erecord is not looked up yet (else NULL) */
    int mask;
    int gave_up; /* set by a predicate that gave up (it answers false; the step then gives up) */
    /* The entries looked up so far in this run, by table and key object (a clause and the next
     * often ask for the same one); emptied by every change to a table. */
    struct { int table; PyObject *key, *record; } seen[4];
    int nseen;
    int mask_only; /* Step.mask_of: stop after the mask */
    /* The probes answered so far in this run (run_probe_again); emptied with `seen`, and by SET. */
    struct { int table, mode, pred_pc; wide base, end; int truth; } probed[4];
    int nprobed;
    PyObject *line; /* the line number as an int once made (a strong reference; see run_line) */
} Run;

/* The run's line number as an int (borrowed: the run holds it; NULL on error), made once: the
 * replayer's memory of the changes and the window of recent calls both keep one. */
static PyObject *run_line(Run *x, Py_ssize_t lineno)
{
    if (x->line == NULL)
        x->line = PyLong_FromSsize_t(lineno);
    return x->line;
}

#define FIELD(O, OFF) (*(PyObject **)((char *)(O) + (OFF)))

static inline void set_reg(Run *x, int d, wide v)
{
    Py_CLEAR(x->ob[d]);
    x->r[d] = v;
}

/* The value of `o` for a register of kind `kind`: 1 and *out, or 0 when the machine cannot hold it
 * (no error left set). */
static int unbox(Step *st, PyObject *o, int kind, wide *out)
{
    long long v;
    if (kind == K_BOOL) {
        if (o != Py_True && o != Py_False)
            return 0;
        *out = o == Py_True;
        return 1;
    }
    if (kind == K_ENUM) {
        if (!PyUnicode_CheckExact(o))
            return 0;
        size_t slot = ((size_t)o >> 4) & 3;
        if (st->enum_seen[slot] == o) {
            *out = st->enum_seen_code[slot];
            return 1;
        }
        PyObject *code = PyDict_GetItemWithError(st->enum_codes, o);
        if (code == NULL) {
            PyErr_Clear();
            return 0;
        }
        if (!as_i64(code, &v))
            return 0;
        Py_XSETREF(st->enum_seen[slot], Py_NewRef(o));
        st->enum_seen_code[slot] = v;
        *out = v;
        return 1;
    }
    if (!as_i64(o, &v))
        return 0;
    *out = v;
    return 1;
}

static inline int load(Run *x, int d, PyObject *o, int kind)
{
    wide v;
    if (!unbox(x->st, o, kind, &v))
        return 0;
    set_reg(x, d, v);
    Py_INCREF(o);
    x->ob[d] = o;
    return 1;
}

/* A "0x..." string: 1 and *out for at most 16 significant ASCII hex digits (the trace format's
 * limit, trace.events.HEX_UINT) whose value fits an int64; 0 otherwise. */
static int parse_hex(PyObject *o, long long *out)
{
    if (!PyUnicode_IS_ASCII(o))
        return 0;
    const unsigned char *p = PyUnicode_1BYTE_DATA(o);
    Py_ssize_t n = PyUnicode_GET_LENGTH(o), i = 2;
    if (n < 3 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X'))
        return 0;
    while (i < n - 1 && p[i] == '0')
        i++;
    if (n - i > 16)
        return 0;
    unsigned long long v = 0;
    for (; i < n; i++) {
        int c = p[i], h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (h < 0)
            return 0;
        v = v << 4 | (unsigned long long)h;
    }
    if (v > (unsigned long long)LLONG_MAX)
        return 0;
    *out = (long long)v;
    return 1;
}

/* The value of flag name `o` in `names` (a dict), as fastpath.spelt_value reads it. */
static int flag_value(PyObject *names, PyObject *o, long long *out)
{
    if (!PyUnicode_CheckExact(o))
        return 0;
    PyObject *v = PyDict_GetItemWithError(names, o);
    if (v == NULL) {
        PyErr_Clear();
        return 0;
    }
    return as_i64(v, out);
}

/* A field of register d written as the trace format allows besides a JSON integer, by the rule of
 * fastpath.spelt_value: a "0x..." string, one flag's name, or a list of the flags type's names;
 * 1 and *out when its value lies in the field's [lo, hi], else 0 (the line goes to the general path). */
static int unspell(Step *st, int d, PyObject *o, wide *out)
{
    if (st->spellings == NULL || d >= PyTuple_GET_SIZE(st->spellings))
        return 0;
    PyObject *sp = PyTuple_GET_ITEM(st->spellings, d);
    if (!PyTuple_CheckExact(sp) || PyTuple_GET_SIZE(sp) != 3)
        return 0;
    PyObject *names = PyTuple_GET_ITEM(sp, 0);
    long long lo, hi, n = 0, bit;
    if (!as_i64(PyTuple_GET_ITEM(sp, 1), &lo) || !as_i64(PyTuple_GET_ITEM(sp, 2), &hi))
        return 0;
    int has_names = PyDict_CheckExact(names);
    if (PyUnicode_CheckExact(o)) {
        Py_ssize_t len = PyUnicode_GET_LENGTH(o);
        int hex = len >= 2 && PyUnicode_READ_CHAR(o, 0) == '0'
                  && (PyUnicode_READ_CHAR(o, 1) == 'x' || PyUnicode_READ_CHAR(o, 1) == 'X');
        if (hex ? !parse_hex(o, &n) : !has_names || !flag_value(names, o, &n))
            return 0;
    } else if (PyList_CheckExact(o) && has_names) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); i++) {
            if (!flag_value(names, PyList_GET_ITEM(o, i), &bit))
                return 0;
            n |= bit;
        }
    } else
        return 0;
    if (n < lo || n > hi)
        return 0;
    *out = n;
    return 1;
}

/* A parameter or output of the line into register d: a JSON value as `load` takes it, or an
 * integer spelt otherwise (`unspell`), whose register then has no object (box makes the int). */
static inline int load_field(Run *x, int d, PyObject *o, int kind)
{
    wide v;
    if (kind != K_INT || PyLong_CheckExact(o))
        return load(x, d, o, kind);
    if (!unspell(x->st, d, o, &v))
        return 0;
    set_reg(x, d, v);
    return 1;
}

/* Register d := dict[names[name]] as a value of `kind`: 1, 0 when it is absent or not such a
 * value (the step gives up), -1 on error. */
static int load_item(Run *x, int d, PyObject *dict, int name, int kind)
{
    PyObject *v = PyDict_GetItemWithError(dict, PyTuple_GET_ITEM(x->st->names, name));
    if (v == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return load(x, d, v, kind);
}

static PyObject *wide_to_int(wide v)
{
    if (v >= LLONG_MIN && v <= LLONG_MAX)
        return PyLong_FromLongLong((long long)v);
    PyObject *hi = PyLong_FromLongLong((long long)(v >> 64)), *lo = PyLong_FromUnsignedLongLong((unsigned long long)v);
    PyObject *sixty_four = PyLong_FromLong(64), *shifted = NULL, *r = NULL;
    if (hi != NULL && lo != NULL && sixty_four != NULL && (shifted = PyNumber_Lshift(hi, sixty_four)) != NULL)
        r = PyNumber_Add(shifted, lo);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(sixty_four);
    Py_XDECREF(shifted);
    return r;
}

static PyObject *box_new(Run *x, int d, int kind);

/* The object of register d (borrowed; it stays in the register), NULL on error. Most registers
 * asked hold one already: that test is inlined at each use, the making of one is not. */
static inline PyObject *box(Run *x, int d, int kind)
{
    return x->ob[d] != NULL ? x->ob[d] : box_new(x, d, kind);
}

static PyObject *box_new(Run *x, int d, int kind)
{
    PyObject *o;
    wide v = x->r[d];
    if (kind == K_BOOL)
        o = Py_NewRef(v ? Py_True : Py_False);
    else if (kind == K_ENUM) {
        if (v < 0 || v >= PyTuple_GET_SIZE(x->st->enum_names)) {
            PyErr_SetString(PyExc_SystemError, "step machine: enum code out of range");
            return NULL;
        }
        o = Py_NewRef(PyTuple_GET_ITEM(x->st->enum_names, (Py_ssize_t)v));
    } else
        o = wide_to_int(v);
    x->ob[d] = o;
    return o;
}

static void forget_seen(Run *x)
{
    for (int i = 0; i < x->nseen; i++)
        Py_DECREF(x->seen[i].key);
    x->nseen = 0;
    x->nprobed = 0; /* a change to a table: the probes' answers may change too */
}

/* The record of `key` in `table` (borrowed), NULL with no error set when there is none, NULL with
 * an error set on failure: from its KeyIndex, else from its rows (by the index's key object). */
static PyObject *table_get(TableCore *table, PyObject *key)
{
    long long k;
    Py_ssize_t slot;
    KeyIndex *ki = as_i64(key, &k) ? ki_current(&table->ki, table->rows, table->sized_by) : NULL;
    if (ki != NULL)
        return ki_record(ki, k, &slot);
    PyObject *own = key;
    return table->keys != NULL && Py_IS_TYPE(table->keys, &SortedKeysType) && index_says_absent(table, key, &slot, NULL, &own)
               ? NULL : PyDict_GetItemWithError(table->rows, own);
}

/* The record of `key` in table t (borrowed), NULL with no error set when there is none, NULL
 * with an error set on failure. */
static PyObject *lookup(Run *x, int t, PyObject *key)
{
    for (int i = 0; i < x->nseen; i++)
        if (x->seen[i].table == t && x->seen[i].key == key)
            return x->seen[i].record;
    PyObject *record = table_get((TableCore *)PyTuple_GET_ITEM(x->st->tables, t), key);
    if (record == NULL && PyErr_Occurred())
        return NULL;
    if (x->nseen < 4) {
        x->seen[x->nseen].table = t;
        x->seen[x->nseen].key = Py_NewRef(key); /* held: a later key object must not reuse its address */
        x->seen[x->nseen].record = record;
        x->nseen++;
    }
    return record;
}

/* Python's floor remainder. */
static inline wide floor_mod(wide a, wide b)
{
    wide m = a % b;
    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

static int run_code(Run *x, int pc, wide *ret);

static int predicate_fn(Pred *pred, PyObject *key, PyObject *record)
{
    Run *x = (Run *)pred->ctx;
    PyObject *k = x->ekey, *rec = x->erecord, *rows = x->erows;
    x->ekey = key;
    x->erecord = record;
    x->erows = record == NULL ? pred->rows : NULL; /* no record: EROWF looks it up there */
    wide v = 0;
    int r = run_code(x, (int)(Py_ssize_t)pred->py, &v);
    x->ekey = k;
    x->erecord = rec;
    x->erows = rows;
    if (r < 0)
        return -1;
    if (r == 0) {
        x->gave_up = 1;
        return 0;
    }
    return v != 0;
}

/* A predicate of the step machine as a Python callable on (key, record), for a probe that the
 * Python table answers (a SortedList index, bounds beyond 64 bits). It lives only during that
 * probe: afterwards `run` is NULL and a call raises. */
typedef struct {
    PyObject_HEAD
    Run *run;
    int pc;
} PredObject;

static PyObject *pred_call(PredObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *entry;
    if (self->run == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a step-machine predicate used after its probe");
        return NULL;
    }
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs)) || !PyArg_ParseTuple(args, "O!", &PyTuple_Type, &entry)
        || PyTuple_GET_SIZE(entry) != 2) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "a predicate takes one (key, record) entry");
        return NULL;
    }
    Pred pred = {(PyObject *)(Py_ssize_t)self->pc, predicate_fn, self->run};
    int h = predicate_fn(&pred, PyTuple_GET_ITEM(entry, 0), PyTuple_GET_ITEM(entry, 1));
    if (h < 0)
        return NULL;
    return Py_NewRef(h ? Py_True : Py_False);
}

static PyTypeObject PredType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "checker._native.Predicate",
    .tp_basicsize = sizeof(PredObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A step-machine predicate, for the duration of one probe.",
    .tp_call = (ternaryfunc)pred_call,
};

/* A probe of table t; 1 and *out, 0 to give up, -1 on error. */
/* The answer of a probe this run has made already with the same table, mode, bounds and predicate
 * code: 1 and *out, or 0. A spec may ask one `exists` in two clauses (acl's PINNED rules do), and
 * stepcode gives equal quantifiers one predicate; the answer cannot differ, since nothing changed the
 * tables or variables in between (PUT, DEL, UPD and SET empty the list) and predicates are pure. */
static int run_probe_once(Run *x, int t, int mode, int a, int b, int pred_pc, wide *out);

static int run_probe_again(Run *x, int t, int mode, wide base, wide end, int pred_pc, wide *out)
{
    for (int i = 0; i < x->nprobed; i++)
        if (x->probed[i].table == t && x->probed[i].mode == mode && x->probed[i].pred_pc == pred_pc
            && x->probed[i].base == base && x->probed[i].end == end) {
            *out = x->probed[i].truth;
            return 1;
        }
    return 0;
}

static int run_probe(Run *x, int t, int mode, int a, int b, int pred_pc, wide *out)
{
    wide end = mode == PROBE_CONTAINING_ADDR ? 0 : x->r[b];
    if (run_probe_again(x, t, mode, x->r[a], end, pred_pc, out))
        return 1;
    int got = run_probe_once(x, t, mode, a, b, pred_pc, out);
    if (got == 1 && x->nprobed < 4) {
        x->probed[x->nprobed].table = t;
        x->probed[x->nprobed].mode = mode;
        x->probed[x->nprobed].pred_pc = pred_pc;
        x->probed[x->nprobed].base = x->r[a];
        x->probed[x->nprobed].end = end;
        x->probed[x->nprobed].truth = *out != 0;
        x->nprobed++;
    }
    return got;
}

static int run_probe_once(Run *x, int t, int mode, int a, int b, int pred_pc, wide *out)
{
    TableCore *table = (TableCore *)PyTuple_GET_ITEM(x->st->tables, t);
    PyObject *kobj = box(x, a, K_INT);
    if (kobj == NULL)
        return -1;
    wide end = mode == PROBE_CONTAINING_ADDR ? 0 : x->r[b];
    Pred pred = {pred_pc < 0 ? Py_None : (PyObject *)(Py_ssize_t)pred_pc, pred_pc < 0 ? NULL : predicate_fn, x};
    PyObject *r = probe_core(table, mode, kobj, x->r[a], end, &pred);
    if (r == SLOW && table->largest == Py_None) { /* ask the Python table for its largest size, once */
        PyObject *largest = PyObject_CallMethodNoArgs((PyObject *)table, s_max_size);
        if (largest == NULL)
            return -1;
        Py_DECREF(largest);
        r = probe_core(table, mode, kobj, x->r[a], end, &pred);
    }
    if (r == SLOW) { /* the Python table's method, with the predicate as a callable */
        PyObject *eobj = mode == PROBE_CONTAINING_ADDR ? NULL : box(x, b, K_INT);
        if (mode != PROBE_CONTAINING_ADDR && eobj == NULL)
            return -1;
        PredObject *py_pred = NULL;
        if (pred_pc >= 0) {
            if ((py_pred = PyObject_New(PredObject, &PredType)) == NULL)
                return -1;
            py_pred->run = x;
            py_pred->pc = pred_pc;
        }
        PyObject *args[4] = {(PyObject *)table, kobj, NULL, NULL};
        size_t nargs = 2;
        if (mode != PROBE_CONTAINING_ADDR)
            args[nargs++] = eobj;
        if (py_pred != NULL)
            args[nargs++] = (PyObject *)py_pred;
        r = PyObject_VectorcallMethod(s_slow_probe[mode], args, nargs, NULL);
        if (py_pred != NULL) {
            py_pred->run = NULL;
            Py_DECREF(py_pred);
        }
    }
    if (r == NULL)
        return -1;
    int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (truth < 0)
        return -1;
    if (x->gave_up)
        return 0;
    *out = truth;
    return 1;
}

static int run_update(Run *x, int t, int k, int f, int v, int kind)
{
    PyObject *key = box(x, k, K_INT), *value = box(x, v, kind);
    if (key == NULL || value == NULL)
        return -1;
    PyObject *record = table_get((TableCore *)PyTuple_GET_ITEM(x->st->tables, t), key);
    if (record == NULL || !PyDict_CheckExact(record))
        return PyErr_Occurred() ? -1 : 0;
    PyObject *name = PyTuple_GET_ITEM(x->st->names, f);
    PyObject *old = PyDict_GetItemWithError(record, name);
    if (old == NULL && PyErr_Occurred())
        return -1;
    if (old != NULL && Py_TYPE(old) == Py_TYPE(value)) {
        int same = PyObject_RichCompareBool(old, value, Py_EQ);
        if (same < 0)
            return -1;
        if (same)
            return 1;
    }
    PyObject *args[3] = {key, name, value};
    PyObject *r = set_field((TableCore *)PyTuple_GET_ITEM(x->st->tables, t), args, 3);
    Py_XDECREF(r);
    return r == NULL ? -1 : 1;
}

static int run_put(Run *x, const int *c)
{
    int t = c[0], k = c[1], n = c[2];
    PyObject *key = box(x, k, K_INT), *record = key == NULL ? NULL : PyDict_New();
    if (record == NULL)
        return -1;
    for (int i = 0; i < n; i++) {
        const int *f = c + 3 + 3 * i;
        PyObject *v = box(x, f[1], f[2]);
        if (v == NULL || PyDict_SetItem(record, PyTuple_GET_ITEM(x->st->names, f[0]), v) < 0) {
            Py_DECREF(record);
            return -1;
        }
    }
    PyObject *args[2] = {key, record};
    PyObject *r = put((TableCore *)PyTuple_GET_ITEM(x->st->tables, t), args, 2);
    Py_DECREF(record);
    Py_XDECREF(r);
    return r == NULL ? -1 : 1;
}

static int run_set(Run *x, int name_index, int v, int kind)
{
    PyObject *name = PyTuple_GET_ITEM(x->st->names, name_index), *value = box(x, v, kind);
    if (value == NULL)
        return -1;
    PyObject *old = PyDict_GetItemWithError(x->st->vars, name);
    if (old == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *entry = PyTuple_Pack(4, Py_None, name, s_set, old);
    int failed = entry == NULL || PyList_Append(x->st->journal, entry) < 0
                 || PyDict_SetItem(x->st->vars, name, value) < 0;
    Py_XDECREF(entry);
    return failed ? -1 : 1;
}

/* Run the code from pc to END (1) or RET (1, *ret set); 0 to give up; -1 on error. Dispatch is
 * threaded (a computed goto after each instruction: GCC and Clang, which the module needs anyway). */
static int run_code(Run *x, int pc, wide *ret)
{
    static void *targets[] = {OPS(OP_LABEL)};
    Step *st = x->st;
    const int *code = st->code, *c;
    wide *r = x->r;
    int got;
#define NEXT goto *targets[code[pc]]
#define OP(NAME)                                                                                                 \
    do_##NAME:                                                                                                   \
    c = code + pc + 1;                                                                                           \
    pc += 1 + ARITY_##NAME;
#define PURE(NAME, EXPR)                                                                                         \
    OP(NAME)                                                                                                     \
    {                                                                                                            \
        wide a = r[c[1]], b = ARITY_##NAME > 2 ? r[c[ARITY_##NAME - 1]] : 0;                                     \
        (void)b;                                                                                                 \
        set_reg(x, c[0], (EXPR));                                                                                \
    }                                                                                                            \
    NEXT;
#define ARITH(NAME, BUILTIN)                                                                                     \
    OP(NAME)                                                                                                     \
    {                                                                                                            \
        wide v;                                                                                                  \
        if (BUILTIN(r[c[1]], r[c[2]], &v))                                                                       \
            return 0; /* beyond 128 bits: the general path computes it exactly */                               \
        set_reg(x, c[0], v);                                                                                     \
    }                                                                                                            \
    NEXT;
#define BRANCH(NAME, REL)                                                                                        \
    OP(NAME)                                                                                                     \
    if (r[c[0]] REL r[c[1]])                                                                                     \
        pc = c[2];                                                                                               \
    NEXT;
    NEXT;
    OP(END)
    return 1;
    OP(GIVEUP)
    return 0;
    OP(RET)
    *ret = r[c[0]];
    return 1;
    OP(MOV)
    if (c[0] != c[1]) {
        set_reg(x, c[0], r[c[1]]);
        x->ob[c[0]] = Py_XNewRef(x->ob[c[1]]);
    }
    NEXT;
    ARITH(ADD, __builtin_add_overflow)
    ARITH(SUB, __builtin_sub_overflow)
    ARITH(MUL, __builtin_mul_overflow)
    PURE(AND, a & b)
    PURE(OR, a | b)
    PURE(NOT, !a)
    PURE(INV, ~a)
    PURE(EQ, a == b)
    PURE(NE, a != b)
    PURE(LT, a < b)
    PURE(LE, a <= b)
    PURE(GT, a > b)
    PURE(GE, a >= b)
    PURE(MIN, a < b ? a : b)
    PURE(MAX, a > b ? a : b)
    OP(NEG)
    {
        wide v;
        if (__builtin_sub_overflow((wide)0, r[c[1]], &v))
            return 0;
        set_reg(x, c[0], v);
    }
    NEXT;
    OP(MOD)
    if (r[c[2]] == 0)
        return 0; /* EvalError in Python */
    set_reg(x, c[0], r[c[2]] == -1 ? 0 : floor_mod(r[c[1]], r[c[2]]));
    NEXT;
    OP(JZ)
    if (!r[c[0]])
        pc = c[1];
    NEXT;
    OP(JNZ)
    if (r[c[0]])
        pc = c[1];
    NEXT;
    OP(JMP)
    pc = c[0];
    NEXT;
    BRANCH(JEQ, ==)
    BRANCH(JNE, !=)
    BRANCH(JLT, <)
    BRANCH(JLE, <=)
    BRANCH(JGT, >)
    BRANCH(JGE, >=)
    OP(INTAB)
    {
        PyObject *key = box(x, c[1], K_INT);
        if (key == NULL)
            return -1;
        PyObject *record = lookup(x, c[2], key);
        if (record == NULL && PyErr_Occurred())
            return -1;
        set_reg(x, c[0], record != NULL);
    }
    NEXT;
    OP(HASKEY)
    {
        PyObject *key = box(x, c[1], K_INT);
        if (key == NULL)
            return -1;
        PyObject *record = lookup(x, c[0], key);
        if (record == NULL)
            return PyErr_Occurred() ? -1 : 0; /* a missing entry: KeyError in Python */
    }
    NEXT;
    OP(ROWF) /* d, table, key, field name, kind */
    {
        PyObject *key = box(x, c[2], K_INT);
        if (key == NULL)
            return -1;
        PyObject *record = lookup(x, c[1], key);
        if (record == NULL || !PyDict_CheckExact(record))
            return PyErr_Occurred() ? -1 : 0;
        if ((got = load_item(x, c[0], record, c[3], c[4])) <= 0)
            return got;
    }
    NEXT;
    OP(EROWF) /* d, field name, kind */
    if (x->erecord == NULL && x->erows != NULL && x->ekey != NULL) { /* the candidate's record, now */
        x->erecord = PyDict_GetItemWithError(x->erows, x->ekey);
        x->erows = NULL;
        if (x->erecord == NULL && PyErr_Occurred())
            return -1;
    }
    if (x->erecord == NULL || !PyDict_CheckExact(x->erecord))
        return 0;
    if ((got = load_item(x, c[0], x->erecord, c[1], c[2])) <= 0)
        return got;
    NEXT;
    OP(EKEY)
    if (x->ekey == NULL || !load(x, c[0], x->ekey, K_INT))
        return 0;
    NEXT;
    OP(VAR) /* d, name, kind */
    if ((got = load_item(x, c[0], st->vars, c[1], c[2])) <= 0)
        return got;
    NEXT;
    OP(INSET) /* d, a, set */
    {
        wide a = r[c[1]], *items = st->sets[c[2]];
        Py_ssize_t lo = 0, hi = st->set_sizes[c[2]];
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (items[mid] < a)
                lo = mid + 1;
            else
                hi = mid;
        }
        set_reg(x, c[0], lo < st->set_sizes[c[2]] && items[lo] == a);
    }
    NEXT;
    OP(PROBE) /* d, table, mode, a, b, predicate pc (-1: none) */
    {
        wide v;
        if ((got = run_probe(x, c[1], c[2], c[3], c[4], c[5], &v)) <= 0)
            return got;
        set_reg(x, c[0], v);
    }
    NEXT;
    OP(MASK)
    x->mask |= c[0];
    NEXT;
    OP(PUT)
    forget_seen(x);
    if ((got = run_put(x, c)) <= 0)
        return got;
    pc += 3 * c[2];
    NEXT;
    OP(DEL)
    {
        forget_seen(x);
        PyObject *key = box(x, c[1], K_INT);
        if (key == NULL)
            return -1;
        PyObject *res = remove_((TableCore *)PyTuple_GET_ITEM(st->tables, c[0]), &key, 1);
        if (res == NULL)
            return -1;
        Py_DECREF(res);
    }
    NEXT;
    OP(UPD)
    forget_seen(x);
    if ((got = run_update(x, c[0], c[1], c[2], c[3], c[4])) <= 0)
        return got;
    NEXT;
    OP(SET)
    x->nprobed = 0; /* a predicate may read the variable */
    if ((got = run_set(x, c[0], c[1], c[2])) <= 0)
        return got;
    NEXT;
#undef NEXT
#undef OP
#undef PURE
#undef ARITH
#undef BRANCH
}


/* The verdict caches: success verdicts by mask, failure verdicts by (mask, status); only "no
 * finding" is remembered (as the Python step, which decides a cached False again). */
static inline Py_ssize_t fail_slot(Step *st, long long m, wide s)
{
    unsigned long long h = (unsigned long long)m * 0x9E3779B97F4A7C15ull ^ (unsigned long long)s
                           ^ (unsigned long long)(s >> 64) * 0xC2B2AE3D27D4EB4Full;
    Py_ssize_t i = (Py_ssize_t)(h >> 40) & (FAIL_SLOTS - 1);
    while (st->fails[i].used && (st->fails[i].m != m || st->fails[i].s != s))
        i = (i + 1) & (FAIL_SLOTS - 1);
    return i;
}

/* decide(cache, key, m, status) of checker.fastpath, as 1/0, or -1 on error. */
static int ask_decide(Step *st, PyObject *cache, PyObject *key, PyObject *m, PyObject *status)
{
    PyObject *args[4] = {cache, key, m, status};
    PyObject *r = PyObject_Vectorcall(st->decide, args, 4, NULL);
    if (r == NULL)
        return -1;
    int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    return truth;
}

static int failure_verdict(Step *st, int mask, wide scode, PyObject *status)
{
    if (st->fails == NULL && (st->fails = PyMem_Calloc(FAIL_SLOTS, sizeof(*st->fails))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t i = fail_slot(st, mask, scode);
    if (st->fails[i].used)
        return 1;
    PyObject *m = PyLong_FromLong(mask), *key = m == NULL ? NULL : PyTuple_Pack(2, m, status);
    int ok = key == NULL ? -1 : ask_decide(st, st->fails_dict, key, m, status);
    Py_XDECREF(m);
    Py_XDECREF(key);
    if (ok > 0 && st->nfails < FAIL_SLOTS / 2) {
        st->fails[i].m = mask;
        st->fails[i].s = scode;
        st->fails[i].used = 1;
        st->nfails++;
    }
    return ok;
}

static int success_verdict(Step *st, int mask, PyObject *status)
{
    if (st->oks[mask])
        return 1;
    PyObject *m = PyLong_FromLong(mask);
    int ok = m == NULL ? -1 : ask_decide(st, st->oks_dict, m, m, status);
    Py_XDECREF(m);
    if (ok > 0)
        st->oks[mask] = 1;
    return ok;
}

/* list.clear(), without the generic slice assignment for the usual short journal. */
static int clear_list(PyObject *list)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n == 0)
        return 0;
    if (n > 8)
        return PyList_SetSlice(list, 0, n, NULL);
    PyObject *items[8];
    memcpy(items, ((PyListObject *)list)->ob_item, sizeof(PyObject *) * (size_t)n);
    Py_SET_SIZE(list, 0); /* empty before the items go: their deallocation may run code */
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(items[i]);
    return 0;
}

static int rollback(Step *st)
{
    PyObject *r = PyObject_CallMethodNoArgs(st->state, s_rollback);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* Prefetch the slots of the step's sites (Step.sites) for this line's keys, read into the first
 * `loaded` registers: only a hint to the processor, which changes nothing. */
static void prefetch_sites(Run *x, int loaded)
{
    Step *st = x->st;
    Made *m = st->remember_args != NULL && Py_IS_TYPE(PyTuple_GET_ITEM(st->remember_args, 0), &MadeType)
                  ? (Made *)PyTuple_GET_ITEM(st->remember_args, 0) : NULL;
    for (int i = 0; i < st->nsites; i++) {
        if (st->sites[i].reg >= loaded)
            continue; /* (an output of a failure: not read) */
        wide v = x->r[st->sites[i].reg];
        if (v < LLONG_MIN || v > LLONG_MAX)
            continue;
        long long k = (long long)v;
        TableCore *t = (TableCore *)PyTuple_GET_ITEM(st->tables, st->sites[i].table);
        if (t->ki.cap > 0 && ki_matches(&t->ki, t->rows, t->sized_by))
            __builtin_prefetch(&t->ki.slots[key_hash(k) & (size_t)(t->ki.cap - 1)]);
        if (t->keys != NULL && Py_IS_TYPE(t->keys, &SortedKeysType)) { /* the chunk a probe or change searches */
            SortedKeys *sk = (SortedKeys *)t->keys;
            Py_ssize_t c = sk_chunk(sk, k, 0);
            if (c < sk->nchunks) /* (its count and keys, without waiting to read the count) */
                for (size_t at = 0; at < offsetof(KeyChunk, o); at += 64)
                    __builtin_prefetch((char *)sk->chunks[c] + at);
        }
        if (!st->sites[i].change || m == NULL || m->cap == 0)
            continue;
        if (st->sites[i].made < 0) { /* the table's index in the Made, once it has one */
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(m->tables); j++)
                if (PyList_GET_ITEM(m->tables, j) == t->name)
                    st->sites[i].made = j;
            if (st->sites[i].made < 0)
                continue;
        }
        __builtin_prefetch(&m->slots[made_hash(st->sites[i].made, k) & (size_t)(m->cap - 1)], 1);
    }
}

static int step_with_status(Run *x, PyObject *o, Py_ssize_t lineno, PyObject *status, wide scode);

/* The step of line `lineno`, decoded into `o`: 1 handled, 0 for the general path (nothing
 * changed), -1 on error. The checks before the clauses are the Python step's, in its order. */
static int step_body(Run *x, PyObject *o, Py_ssize_t lineno)
{
    Step *st = x->st;
    if (Py_TYPE(o) != st->event_type)
        return 0;
    if (st->nparams) {
        PyObject *a = FIELD(o, st->off_args);
        if (a == NULL || Py_TYPE(a) != st->args_type)
            return 0;
        for (int i = 0; i < st->nparams; i++) {
            PyObject *v = FIELD(a, st->param_offs[i]);
            if (v == NULL || !load_field(x, i, v, st->param_kinds[i]))
                return 0;
        }
    }
    PyObject *status = FIELD(o, st->off_ret);
    wide scode;
    if (status == st->unset && st->is_event)
        status = st->success;
    else if (status != NULL && st->is_event && st->status_kind == K_ENUM) {
        /* An environment event of a spec whose statuses are names may carry its C function's
         * status 0, which means success: the JSON integer 0 or "0x0" (fastpath.event_status). */
        if (PyLong_CheckExact(status)) {
            long long v;
            if (!as_i64(status, &v) || v != 0)
                return 0;
            status = st->success;
        } else if (PyUnicode_CheckExact(status) && PyUnicode_GET_LENGTH(status) > 0
                   && PyUnicode_READ_CHAR(status, 0) == '0') {
            /* No member name starts with a digit (else the call has no fast step): a "0x..." string
             * must be zero; a name is read by `unbox` below, as any status name. */
            long long v;
            if (!parse_hex(status, &v) || v != 0)
                return 0;
            status = st->success;
        }
    }
    if (status != NULL && st->status_kind == K_INT && PyUnicode_CheckExact(status)) {
        /* An integer status spelt "0x...": read by the status's spelling (the last of `spellings`),
         * and judged as the int it stands for, which the verdicts and the caches see. */
        if (!unspell(st, st->nparams + st->noutputs, status, &scode))
            return 0;
        PyObject *value = PyLong_FromLongLong((long long)scode);
        if (value == NULL)
            return -1;
        int got = step_with_status(x, o, lineno, value, scode);
        Py_DECREF(value);
        return got;
    }
    if (status == NULL || !unbox(st, status, st->status_kind, &scode))
        return 0;
    return step_with_status(x, o, lineno, status, scode);
}

/* `step_body` after the status: `status` its value as an object (the recorded one, or the int a
 * spelt one stands for), `scode` as the machine's number. */
static int step_with_status(Run *x, PyObject *o, Py_ssize_t lineno, PyObject *status, wide scode)
{
    Step *st = x->st;
    int success = scode == st->success_code;
    if (st->noutputs && success) { /* all outputs on success */
        PyObject *out = FIELD(o, st->off_out);
        if (out == NULL || Py_TYPE(out) != st->out_type)
            return 0;
        for (int i = 0; i < st->noutputs; i++) {
            PyObject *v = FIELD(out, st->output_offs[i]);
            if (v == NULL || v == st->unset || !load_field(x, st->nparams + i, v, st->output_kinds[i]))
                return 0;
        }
    } else if (st->noutputs) { /* a failure's outputs are not used, but a spelt one must read (as the Python step) */
        PyObject *out = FIELD(o, st->off_out);
        wide unused;
        if (out != NULL && out != st->unset && Py_TYPE(out) == st->out_type)
            for (int i = 0; i < st->noutputs; i++) {
                PyObject *v = FIELD(out, st->output_offs[i]);
                if (v != NULL && v != st->unset && st->output_kinds[i] == K_INT && !PyLong_CheckExact(v)
                    && !unspell(st, st->nparams + i, v, &unused))
                    return 0;
            }
    }
    PyObject *t0 = FIELD(o, st->off_t0), *t1 = FIELD(o, st->off_t1);
    if (t0 == NULL || t1 == NULL)
        return 0;
    if (t0 == st->unset || t1 == st->unset) {
        if (t0 != t1)
            return 0;
    } else {
        long long a, b;
        if (!as_i64(t0, &a) || !as_i64(t1, &b) || a > b)
            return 0;
    }
    if (!x->mask_only)
        prefetch_sites(x, st->nparams + (success ? st->noutputs : 0));
    wide unused;
    int got = run_code(x, st->mask_pc, &unused);
    if (got <= 0 || x->mask_only)
        return got;
    if (!success)
        return failure_verdict(st, x->mask, scode, status);
    got = success_verdict(st, x->mask, status);
    if (got <= 0)
        return got;
    if (clear_list(st->journal) < 0)
        return -1;
    if (st->ensures_pc >= 0 && (got = run_code(x, st->ensures_pc, &unused)) <= 0)
        return got;
    if (st->effect_pc < 0)
        return 1;
    got = run_code(x, st->effect_pc, &unused);
    if (got < 0 && PyErr_ExceptionMatches(st->errors)) { /* (EvalError, KeyError), as the Python step */
        PyErr_Clear();
        got = 0;
    }
    if (got == 0)
        return rollback(st);
    if (got < 0)
        return -1;
    if (PyList_GET_SIZE(st->journal)) {
        PyObject *line = run_line(x, lineno), *r = NULL;
        if (line != NULL && st->remember_args != NULL) { /* the C remember, without the partial */
            PyObject *args[5] = {PyTuple_GET_ITEM(st->remember_args, 0), PyTuple_GET_ITEM(st->remember_args, 1),
                                 PyTuple_GET_ITEM(st->remember_args, 2), line, st->call};
            r = remember(NULL, args, 5);
        } else if (line != NULL)
            r = PyObject_CallFunctionObjArgs(st->remember, line, st->call, NULL);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 1;
}

/* A non-thread-safe call's check, as Replayer._thread_clash and the Python step do it: 1 when a call
 * of another thread in the window overlaps this line's [t0, t1] (the general path reports it), 0
 * when none does, -1 on error. *seen: this line's window entry (a new reference), to be added once
 * the line is handled; NULL when the line has no tid or times (the line's own checks judge those). */
/* Whether [w0, w1] and [t0, t1] share an instant, compared as Python ints: 1, 0, or -1 on error.
 * For times that are not C ints (from 2**63 on: the format allows times up to 2**64 - 1). */
static int spans_meet(PyObject *w0, PyObject *w1, PyObject *t0, PyObject *t1)
{
    int le = PyObject_RichCompareBool(w0, t1, Py_LE);
    return le <= 0 ? le : PyObject_RichCompareBool(t0, w1, Py_LE);
}

/* Item j (1 or 2) of a ring's slot as an object (a new reference), wherever the ring holds it. */
static PyObject *ring_time(Ring *rg, Py_ssize_t slot, int j)
{
    PyObject *o = rg->items[4 * slot + j];
    return o != NULL ? Py_NewRef(o) : PyLong_FromLongLong(rg->vals[4 * slot + j]);
}

/* Whether the window's entry in `slot` overlaps [t0, t1] (a, b: the same as C ints, where `small`). */
static int ring_entry_meets(Ring *rg, Py_ssize_t slot, int small, long long a, long long b, PyObject *t0,
                            PyObject *t1)
{
    if (small && RING_TIMED(rg, slot)) {
        const long long *w = rg->vals + 4 * slot + 1;
        return w[0] <= b && a <= w[1];
    }
    PyObject *w0 = ring_time(rg, slot, 1), *w1 = ring_time(rg, slot, 2);
    int meets = w0 != NULL && w1 != NULL ? spans_meet(w0, w1, t0, t1) : -1;
    Py_XDECREF(w0);
    Py_XDECREF(w1);
    return meets;
}

static int thread_clash(Step *st, PyObject *o, Py_ssize_t lineno, PyObject **seen)
{
    *seen = NULL;
    if (Py_TYPE(o) != st->event_type)
        return 0;
    PyObject *t0 = FIELD(o, st->off_t0), *t1 = FIELD(o, st->off_t1), *tid = FIELD(o, st->off_tid);
    long long a = 0, b = 0;
    if (t0 == NULL || t1 == NULL || tid == NULL || t0 == st->unset || t1 == st->unset || tid == st->unset
        || !PyLong_CheckExact(t0) || !PyLong_CheckExact(t1))
        return 0;
    /* Times past int64 (allowed up to 2**64 - 1) are compared as Python ints, never skipped. */
    int small = as_i64(t0, &a) && as_i64(t1, &b);
    if (Py_IS_TYPE(st->window, &RingType)) { /* the usual window: its times are C ints */
        Ring *rg = (Ring *)st->window;
        /* every call in the window from this tid object (one thread's calls, the usual case): no clash */
        int one_thread = rg->n == 0 || (rg->run >= rg->n && rg->items[4 * ring_slot(rg, rg->n - 1)] == tid);
        for (Py_ssize_t i = 0; !one_thread && i < rg->n; i++) {
            Py_ssize_t slot = ring_slot(rg, i);
            int meets = ring_entry_meets(rg, slot, small, a, b, t0, t1);
            if (meets < 0)
                return -1;
            if (!meets)
                continue;
            PyObject *wt = rg->items[4 * slot];
            if (wt == tid)
                continue; /* the same tid object: equal (tids are ints or strings) */
            int clash = PyObject_RichCompareBool(wt, tid, Py_NE);
            if (clash != 0)
                return clash;
        }
        *seen = Py_NewRef(Py_None); /* the caller appends (tid, t0, t1, line) itself */
        return 0;
    }
    PyObject *it = PyObject_GetIter(st->window), *item;
    if (it == NULL)
        return -1;
    int clash = 0;
    while (!clash && (item = PyIter_Next(it)) != NULL) {
        if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 4) {
            clash = spans_meet(PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 2), t0, t1);
            if (clash > 0)
                clash = PyObject_RichCompareBool(PyTuple_GET_ITEM(item, 0), tid, Py_NE);
        }
        Py_DECREF(item);
    }
    Py_DECREF(it);
    if (clash || PyErr_Occurred())
        return clash < 0 || PyErr_Occurred() ? -1 : 1;
    PyObject *line = PyLong_FromSsize_t(lineno);
    *seen = line == NULL ? NULL : PyTuple_Pack(4, tid, t0, t1, line);
    Py_XDECREF(line);
    return *seen == NULL ? -1 : 0;
}

static int step_run_mode(Step *st, PyObject *o, Py_ssize_t lineno, int mask_only, int *mask)
{
    wide r[MAX_REGS];
    PyObject *ob[MAX_REGS];
    memset(ob, 0, sizeof(PyObject *) * (size_t)st->nregs);
    /* the constants' registers follow the parameters' and outputs' */
    memcpy(r + st->nparams + st->noutputs, st->consts, sizeof(wide) * (size_t)st->nconsts);
    Run x = {st, r, ob, NULL, NULL, NULL, st->mask0, 0, {{0}}, 0, mask_only};
    Py_INCREF(st); /* the step's code and caches must outlive a run that calls Python code */
    PyObject *seen = NULL;
    int got = st->window != NULL && !mask_only ? thread_clash(st, o, lineno, &seen) : 0;
    got = got != 0 ? (got > 0 ? 0 : -1) : step_body(&x, o, lineno);
    if (got == 1 && seen == Py_None) { /* handled: the window (a Ring) has this line now */
        PyObject *line = run_line(&x, lineno);
        got = line == NULL ? -1
              : ring_push((Ring *)st->window, FIELD(o, st->off_tid), FIELD(o, st->off_t0), FIELD(o, st->off_t1), line) < 0
                  ? -1 : 1;
    } else if (got == 1 && seen != NULL) { /* handled: the window has this line now */
        PyObject *r = PyObject_CallMethodOneArg(st->window, s_append, seen);
        got = r == NULL ? -1 : 1;
        Py_XDECREF(r);
    }
    Py_XDECREF(seen);
    Py_XDECREF(x.line);
    *mask = x.mask;
    forget_seen(&x);
    for (int i = 0; i < st->nregs; i++)
        Py_XDECREF(ob[i]);
    Py_DECREF(st);
    return got;
}

static inline int step_run(Step *st, PyObject *o, Py_ssize_t lineno)
{
    int mask;
    return step_run_mode(st, o, lineno, 0, &mask);
}

/* The offset of a struct field (a T_OBJECT_EX member, as msgspec's structs have); -1 if not one. */
static Py_ssize_t member_offset(PyTypeObject *type, const char *name)
{
    PyObject *d = PyDict_GetItemString(type->tp_dict, name);
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type))
        return -1;
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    return m->type == T_OBJECT_EX && ((PyMemberDescrObject *)d)->d_common.d_type == type ? m->offset : -1;
}

static int fail_construct(const char *what)
{
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "Step: %s", what);
    return -1;
}

static int wide_of(PyObject *o, wide *out)
{
    long long v;
    if (as_i64(o, &v)) {
        *out = v;
        return 1;
    }
    /* within 127 bits: the compiler keeps constants there */
    if (!PyLong_CheckExact(o))
        return 0;
    PyObject *sixty_four = PyLong_FromLong(64), *hi = sixty_four ? PyNumber_Rshift(o, sixty_four) : NULL;
    PyObject *mask = PyLong_FromUnsignedLongLong(~0ull), *lo = mask && hi ? PyNumber_And(o, mask) : NULL;
    long long h;
    unsigned long long l = lo ? PyLong_AsUnsignedLongLong(lo) : 0;
    int ok = hi != NULL && lo != NULL && as_i64(hi, &h) && !PyErr_Occurred();
    if (ok)
        *out = (wide)(((unsigned __int128)(unsigned long long)h << 64) | l);
    PyErr_Clear();
    Py_XDECREF(sixty_four);
    Py_XDECREF(hi);
    Py_XDECREF(mask);
    Py_XDECREF(lo);
    return ok;
}

/* Step.sites, from valid code. */
static void collect_sites(Step *st)
{
    st->nsites = 0;
    for (Py_ssize_t pc = 0; pc < st->ncode;) {
        int op = st->code[pc], table = -1, reg = -1, change = 0;
        const int *c = st->code + pc + 1;
        switch (op) {
        case OP_INTAB: table = c[2], reg = c[1]; break;
        case OP_HASKEY: table = c[0], reg = c[1]; break;
        case OP_ROWF: table = c[1], reg = c[2]; break;
        case OP_PROBE: table = c[1], reg = c[3]; break;
        case OP_PUT: case OP_DEL: case OP_UPD: table = c[0], reg = c[1], change = 1; break;
        }
        pc += 1 + op_arity[op] + (op == OP_PUT ? 3 * c[2] : 0);
        if (reg < 0 || reg >= st->nparams + st->noutputs)
            continue;
        int i = 0;
        while (i < st->nsites && !(st->sites[i].table == table && st->sites[i].reg == reg))
            i++;
        if (i == st->nsites) {
            if (i == (int)(sizeof(st->sites) / sizeof(st->sites[0])))
                continue;
            st->sites[i].table = table, st->sites[i].reg = reg, st->sites[i].change = 0, st->sites[i].made = -1;
            st->nsites++;
        }
        st->sites[i].change |= change;
    }
}

/* Each instruction's operands in range, jumps to instruction starts, predicates ending in RET. */
static int check_code(Step *st)
{
    char *starts = PyMem_Calloc((size_t)st->ncode + 1, 1);
    if (starts == NULL)
        return PyErr_NoMemory(), -1;
    int ok = 1;
    for (Py_ssize_t pc = 0; ok && pc < st->ncode;) {
        int op = st->code[pc];
        starts[pc] = 1;
        if (op < 0 || op >= NOPS || pc + 1 + op_arity[op] > st->ncode) {
            ok = 0;
            break;
        }
        const int *c = st->code + pc + 1;
        Py_ssize_t width = 1 + op_arity[op];
        if (op == OP_PUT) {
            width += 3 * (Py_ssize_t)c[2];
            ok = c[2] >= 0 && pc + width <= st->ncode;
        }
        pc += width;
    }
    for (Py_ssize_t pc = 0; ok && pc < st->ncode;) {
        int op = st->code[pc];
        const int *c = st->code + pc + 1;
        int n = op_arity[op];
#define REG(I) (c[I] >= 0 && c[I] < st->nregs)
#define TAB(I) (c[I] >= 0 && c[I] < PyTuple_GET_SIZE(st->tables))
#define NAME(I) (c[I] >= 0 && c[I] < PyTuple_GET_SIZE(st->names))
#define KIND(I) (c[I] >= K_INT && c[I] <= K_ENUM)
#define TARGET(I) (c[I] >= 0 && c[I] < st->ncode && starts[c[I]])
        switch (op) {
        case OP_END: case OP_GIVEUP: break;
        case OP_JZ: case OP_JNZ: ok = REG(0) && TARGET(1); break;
        case OP_JEQ: case OP_JNE: case OP_JLT: case OP_JLE: case OP_JGT: case OP_JGE:
            ok = REG(0) && REG(1) && TARGET(2);
            break;
        case OP_JMP: ok = TARGET(0); break;
        case OP_INTAB: ok = REG(0) && REG(1) && TAB(2); break;
        case OP_HASKEY: case OP_DEL: ok = TAB(0) && REG(1); break;
        case OP_ROWF: ok = REG(0) && TAB(1) && REG(2) && NAME(3) && KIND(4); break;
        case OP_VAR: ok = REG(0) && NAME(1) && KIND(2); break;
        case OP_INSET: ok = REG(0) && REG(1) && c[2] >= 0 && c[2] < st->nsets; break;
        case OP_PROBE:
            ok = REG(0) && TAB(1) && c[2] >= PROBE_OVERLAPPING && c[2] <= PROBE_CONTAINING_ADDR && REG(3) && REG(4)
                 && (c[5] == -1 || TARGET(5));
            break;
        case OP_EKEY: case OP_RET: ok = REG(0); break;
        case OP_EROWF: ok = REG(0) && NAME(1) && KIND(2); break;
        case OP_MASK: ok = c[0] > 0 && c[0] < (1 << st->mask_bits); break;
        case OP_PUT:
            ok = TAB(0) && REG(1);
            for (int i = 0; ok && i < c[2]; i++) {
                const int *f = c + 3 + 3 * i;
                ok = f[0] >= 0 && f[0] < PyTuple_GET_SIZE(st->names) && f[1] >= 0 && f[1] < st->nregs
                     && f[2] >= K_INT && f[2] <= K_ENUM;
            }
            pc += 3 * c[2];
            break;
        case OP_UPD: ok = TAB(0) && REG(1) && NAME(2) && REG(3) && KIND(4); break;
        case OP_SET: ok = NAME(0) && REG(1) && KIND(2); break;
        default:
            for (int i = 0; i < n; i++)
                ok = ok && REG(i);
        }
        pc += 1 + n;
    }
#undef REG
#undef TAB
#undef NAME
#undef KIND
#undef TARGET
    if (ok)
        collect_sites(st);
    int entries_ok = ok && (st->mask_pc >= 0 && st->mask_pc < st->ncode && starts[st->mask_pc])
                     && (st->ensures_pc == -1 || (st->ensures_pc < st->ncode && starts[st->ensures_pc]))
                     && (st->effect_pc == -1 || (st->effect_pc < st->ncode && starts[st->effect_pc]));
    PyMem_Free(starts);
    return entries_ok ? 0 : fail_construct("malformed code");
}

static int int_list(PyObject *seq, int **out, Py_ssize_t *n, int lo, int hi)
{
    PyObject *fast = PySequence_Fast(seq, "Step: a sequence of ints");
    if (fast == NULL)
        return -1;
    *n = PySequence_Fast_GET_SIZE(fast);
    *out = PyMem_Calloc((size_t)*n + 1, sizeof(int));
    int ok = *out != NULL;
    for (Py_ssize_t i = 0; ok && i < *n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        ok = !PyErr_Occurred() && v >= lo && v <= hi;
        if (ok)
            (*out)[i] = (int)v;
    }
    Py_DECREF(fast);
    return ok ? 0 : fail_construct("an int out of range");
}

static int step_offsets(Step *st, PyObject *structs)
{
    if (!PyTuple_Check(structs) || PyTuple_GET_SIZE(structs) != 3)
        return fail_construct("structs is (event, args, out)");
    for (int i = 0; i < 3; i++) {
        PyObject *t = PyTuple_GET_ITEM(structs, i);
        if (t != Py_None && !PyType_Check(t))
            return fail_construct("structs must be types");
    }
    st->event_type = (PyTypeObject *)PyTuple_GET_ITEM(structs, 0);
    st->args_type = (PyTypeObject *)PyTuple_GET_ITEM(structs, 1);
    st->out_type = (PyTypeObject *)PyTuple_GET_ITEM(structs, 2);
    if ((PyObject *)st->event_type == Py_None || (st->nparams && (PyObject *)st->args_type == Py_None)
        || (st->noutputs && (PyObject *)st->out_type == Py_None))
        return fail_construct("a struct is missing");
    st->off_args = member_offset(st->event_type, "args");
    st->off_ret = member_offset(st->event_type, "ret");
    st->off_out = member_offset(st->event_type, "out");
    st->off_t0 = member_offset(st->event_type, "t0");
    st->off_t1 = member_offset(st->event_type, "t1");
    st->off_tid = member_offset(st->event_type, "tid");
    if (st->off_args < 0 || st->off_ret < 0 || st->off_out < 0 || st->off_t0 < 0 || st->off_t1 < 0 || st->off_tid < 0)
        return fail_construct("the event struct's fields are not plain members");
    st->param_offs = PyMem_Calloc((size_t)st->nparams + 1, sizeof(Py_ssize_t));
    st->output_offs = PyMem_Calloc((size_t)st->noutputs + 1, sizeof(Py_ssize_t));
    if (st->param_offs == NULL || st->output_offs == NULL)
        return PyErr_NoMemory(), -1;
    char name[32];
    for (int i = 0; i < st->nparams; i++) {
        snprintf(name, sizeof name, "f%d", i);
        if ((st->param_offs[i] = member_offset(st->args_type, name)) < 0)
            return fail_construct("an argument field is not a plain member");
    }
    for (int i = 0; i < st->noutputs; i++) {
        snprintf(name, sizeof name, "f%d", i);
        if ((st->output_offs[i] = member_offset(st->out_type, name)) < 0)
            return fail_construct("an output field is not a plain member");
    }
    return 0;
}

/* Step(code, consts, sets, names, entries, param_kinds, output_kinds, structs, enums, success, binding)
 *   entries: (mask_pc, ensures_pc, effect_pc, nregs, mask0, mask_bits, is_event, status_kind)
 *   structs: (event struct, args struct or None, out struct or None)
 *   enums: (code of each member name, member name of each code[, spellings: per loaded register
 *          (flag names -> value or None, lo, hi) or None, stepcode.field_spellings, then the status's,
 *          stepcode.status_spelling]); success: (value, code)
 *   binding: (tables, vars, journal, state, remember, decide, oks, fails, call, unset, errors[, window]) */
static int step_init(Step *st, PyObject *args, PyObject *kwargs)
{
    PyObject *code, *consts, *sets, *names, *entries, *pkinds, *okinds, *structs, *enums, *success, *binding;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs))
        return fail_construct("takes no keywords");
    if (st->code != NULL)
        return fail_construct("already made");
    if (!PyArg_ParseTuple(args, "OOOO!O!OOO!O!O!O!:Step", &code, &consts, &sets, &PyTuple_Type, &names, &PyTuple_Type,
                          &entries, &pkinds, &okinds, &PyTuple_Type, &structs, &PyTuple_Type, &enums, &PyTuple_Type,
                          &success, &PyTuple_Type, &binding))
        return -1;
    PyObject *enum_codes, *enum_names, *spellings = NULL, *success_value, *success_code, *tables, *vars, *journal, *state, *py_remember,
        *decide, *oks, *fails, *call, *unset, *errors, *window = NULL;
    if (!PyArg_ParseTuple(entries, "iiiiiipi;entries", &st->mask_pc, &st->ensures_pc, &st->effect_pc, &st->nregs,
                          &st->mask0, &st->mask_bits, &st->is_event, &st->status_kind)
        || !PyArg_ParseTuple(enums, "O!O!|O!;enums", &PyDict_Type, &enum_codes, &PyTuple_Type, &enum_names,
                             &PyTuple_Type, &spellings)
        || !PyArg_ParseTuple(success, "OO;success", &success_value, &success_code)
        || !PyArg_ParseTuple(binding, "O!O!O!OOOO!O!O!OO|O;binding", &PyTuple_Type, &tables, &PyDict_Type, &vars,
                             &PyList_Type, &journal, &state, &py_remember, &decide, &PyDict_Type, &oks, &PyDict_Type,
                             &fails, &PyUnicode_Type, &call, &unset, &errors, &window))
        return -1;
    st->names = Py_NewRef(names);
    st->enum_codes = Py_NewRef(enum_codes);
    st->enum_names = Py_NewRef(enum_names);
    st->spellings = Py_XNewRef(spellings);
    st->window = window == Py_None ? NULL : Py_XNewRef(window);
    st->success = Py_NewRef(success_value);
    st->tables = Py_NewRef(tables);
    st->vars = Py_NewRef(vars);
    st->journal = Py_NewRef(journal);
    st->state = Py_NewRef(state);
    st->remember = Py_NewRef(py_remember);
    st->decide = Py_NewRef(decide);
    st->oks_dict = Py_NewRef(oks);
    st->fails_dict = Py_NewRef(fails);
    st->call = Py_NewRef(call);
    st->unset = Py_NewRef(unset);
    st->structs = Py_NewRef(structs);
    st->errors = Py_NewRef(errors);
    /* checker.replay's remember is partial(remember, created, removed, journal): call it directly */
    PyObject *func = PyObject_GetAttrString(py_remember, "func");
    PyObject *fargs = func ? PyObject_GetAttrString(py_remember, "args") : NULL;
    PyObject *fkw = fargs ? PyObject_GetAttrString(py_remember, "keywords") : NULL;
    PyErr_Clear();
    if (func != NULL && PyCFunction_Check(func) && PyCFunction_GET_FUNCTION(func) == (PyCFunction)(void (*)(void))remember
        && fargs != NULL && PyTuple_Check(fargs) && PyTuple_GET_SIZE(fargs) == 3 && PyTuple_GET_ITEM(fargs, 2) == journal
        && fkw != NULL && PyDict_Check(fkw) && PyDict_GET_SIZE(fkw) == 0)
        st->remember_args = Py_NewRef(fargs);
    Py_XDECREF(func);
    Py_XDECREF(fargs);
    Py_XDECREF(fkw);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tables); i++)
        if (!PyObject_TypeCheck(PyTuple_GET_ITEM(tables, i), &TableCoreType))
            return fail_construct("a table is not a TableCore");
    if (st->mask_bits < 0 || st->mask_bits > MAX_MASK_BITS || st->mask0 < 0 || st->mask0 >= (1 << st->mask_bits)
        || st->status_kind < K_INT || st->status_kind > K_ENUM)
        return fail_construct("bad entries");
    if (!unbox(st, success_value, st->status_kind, &st->success_code) || !wide_of(success_code, &st->success_code))
        return fail_construct("bad success value");
    Py_ssize_t n;
    int *pk = NULL, *ok = NULL;
    if (int_list(pkinds, &pk, &n, K_INT, K_ENUM) < 0)
        return PyMem_Free(pk), -1;
    st->param_kinds = pk;
    st->nparams = (int)n;
    if (int_list(okinds, &ok, &n, K_INT, K_ENUM) < 0)
        return PyMem_Free(ok), -1;
    st->output_kinds = ok;
    st->noutputs = (int)n;
    if (st->nregs < st->nparams + st->noutputs || st->nregs > MAX_REGS)
        return fail_construct("bad register count");
    if (step_offsets(st, structs) < 0)
        return -1;
    /* constants and sets */
    PyObject *fast = PySequence_Fast(consts, "Step: consts is a sequence");
    if (fast == NULL)
        return -1;
    st->nconsts = PySequence_Fast_GET_SIZE(fast);
    st->consts = PyMem_Calloc((size_t)st->nconsts + 1, sizeof(wide));
    int good = st->consts != NULL;
    for (Py_ssize_t i = 0; good && i < st->nconsts; i++)
        good = wide_of(PySequence_Fast_GET_ITEM(fast, i), &st->consts[i]);
    Py_DECREF(fast);
    if (!good)
        return fail_construct("a constant beyond 127 bits");
    if (st->nregs < st->nparams + st->noutputs + st->nconsts)
        return fail_construct("too few registers for the constants");
    fast = PySequence_Fast(sets, "Step: sets is a sequence");
    if (fast == NULL)
        return -1;
    st->nsets = PySequence_Fast_GET_SIZE(fast);
    st->sets = PyMem_Calloc((size_t)st->nsets + 1, sizeof(wide *));
    st->set_sizes = PyMem_Calloc((size_t)st->nsets + 1, sizeof(Py_ssize_t));
    good = st->sets != NULL && st->set_sizes != NULL;
    for (Py_ssize_t i = 0; good && i < st->nsets; i++) {
        PyObject *items = PySequence_Fast(PySequence_Fast_GET_ITEM(fast, i), "Step: a set is a sequence");
        good = items != NULL;
        Py_ssize_t k = good ? PySequence_Fast_GET_SIZE(items) : 0;
        good = good && (st->sets[i] = PyMem_Calloc((size_t)k + 1, sizeof(wide))) != NULL;
        st->set_sizes[i] = k;
        for (Py_ssize_t j = 0; good && j < k; j++)
            good = wide_of(PySequence_Fast_GET_ITEM(items, j), &st->sets[i][j])
                   && (j == 0 || st->sets[i][j - 1] < st->sets[i][j]);
        Py_XDECREF(items);
    }
    Py_DECREF(fast);
    if (!good)
        return fail_construct("a set is not sorted 127-bit integers");
    st->oks = PyMem_Calloc((size_t)1 << st->mask_bits, 1);
    if (st->oks == NULL)
        return PyErr_NoMemory(), -1;
    if (int_list(code, &st->code, &st->ncode, INT_MIN, INT_MAX) < 0)
        return -1;
    if (check_code(st) < 0) {
        PyMem_Free(st->code);
        st->code = NULL;
        return -1;
    }
    return 0;
}

#define STEP_OBJECTS(X)                                                                                          \
    X(names) X(tables) X(vars) X(journal) X(state) X(remember) X(decide) X(oks_dict) X(fails_dict) X(call)      \
    X(success) X(unset) X(enum_codes) X(enum_names) X(structs) X(errors) X(remember_args) X(spellings) X(window)

static int step_traverse(Step *self, visitproc visit, void *arg)
{
    STEP_OBJECTS(VISIT_FIELD)
    return 0;
}

static int step_clear(Step *self)
{
    STEP_OBJECTS(CLEAR_FIELD)
    for (int i = 0; i < 4; i++)
        Py_CLEAR(self->enum_seen[i]);
    return 0;
}

static void step_dealloc(Step *self)
{
    PyObject_GC_UnTrack(self);
    step_clear(self);
    for (Py_ssize_t i = 0; self->sets != NULL && i < self->nsets; i++)
        PyMem_Free(self->sets[i]);
    PyMem_Free(self->sets);
    PyMem_Free(self->set_sizes);
    PyMem_Free(self->code);
    PyMem_Free(self->consts);
    PyMem_Free(self->param_kinds);
    PyMem_Free(self->output_kinds);
    PyMem_Free(self->param_offs);
    PyMem_Free(self->output_offs);
    PyMem_Free(self->oks);
    PyMem_Free(self->fails);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int made(Step *st)
{
    if (st->code == NULL)
        PyErr_SetString(PyExc_TypeError, "a Step that was not made");
    return st->code != NULL;
}

/* step(event, line) -> handled */
static PyObject *step_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (!made((Step *)self))
        return NULL;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a step takes (event, line)");
        return NULL;
    }
    Py_ssize_t lineno = PyLong_AsSsize_t(args[1]);
    if (lineno == -1 && PyErr_Occurred())
        return NULL;
    int got = step_run((Step *)self, args[0], lineno);
    return got < 0 ? NULL : Py_NewRef(got ? Py_True : Py_False);
}

static PyObject *step_new(PyTypeObject *type, PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwargs))
{
    Step *self = (Step *)type->tp_alloc(type, 0);
    if (self != NULL)
        *(vectorcallfunc *)((char *)self + offsetof(Step, vectorcall)) = step_vectorcall;
    return (PyObject *)self;
}

/* The mask of an event (a success with its outputs, or a failure), or None where the step gives up:
 * for tests, and for `regcheck simulate`, which reads its draws' masks so (nothing applied). */
static PyObject *step_mask_of(Step *self, PyObject *o)
{
    if (!made(self))
        return NULL;
    int mask, got = step_run_mode(self, o, 0, 1, &mask);
    if (got < 0)
        return NULL;
    if (got == 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(mask);
}

static PyMethodDef step_methods[] = {
    {"mask_of", (PyCFunction)step_mask_of, METH_O, "mask_of(event): the mask of the call's clauses, or None"},
    {NULL},
};

static PyTypeObject StepType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "checker._native.Step",
    .tp_basicsize = sizeof(Step),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "One call's fast step as step-machine code (see checker.stepcode).",
    .tp_traverse = (traverseproc)step_traverse,
    .tp_clear = (inquiry)step_clear,
    .tp_dealloc = (destructor)step_dealloc,
    .tp_vectorcall_offset = offsetof(Step, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_init = (initproc)step_init,
    .tp_new = step_new,
    .tp_methods = step_methods,
};

/* Append (table, key, line, call) to `removed`: a Ring, or anything with an append. 0 or -1. */
static int removed_push(PyObject *removed, PyObject *table, PyObject *key, PyObject *line, PyObject *call)
{
    if (Py_IS_TYPE(removed, &RingType))
        return ring_push((Ring *)removed, table, key, line, call);
    PyObject *gone = PyTuple_Pack(4, table, key, line, call);
    PyObject *r = gone == NULL ? NULL : PyObject_CallMethodOneArg(removed, s_append, gone);
    Py_XDECREF(gone);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* remember(created, removed, journal, line, call): checker.replay's pure `remember` (see
 * `_remembering` there): each put of the journal not yet in `created` (a Made, or a dict) is noted
 * as made by (line, call), an update (a put with a previous record) skipped without a look-up; each removal leaves `created` and is appended to `removed` (a Ring, or
 * anything with an append) as (table, key, line, call). */
static PyObject *remember(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "remember expects 5 arguments");
        return NULL;
    }
    PyObject *created = args[0], *removed = args[1], *journal = args[2], *line = args[3], *call = args[4];
    int is_made = Py_IS_TYPE(created, &MadeType);
    if (!(is_made || PyDict_Check(created)) || !PyList_Check(journal)) {
        PyErr_SetString(PyExc_TypeError, "remember expects a dict (or a Made) and a list");
        return NULL;
    }
    Made *m = (Made *)created;
    long long line_value = 0;
    /* the slots of a Made directly, while nothing is in its `other` (which may hold any key) */
    int direct = is_made && as_i64(line, &line_value);
    PyObject *made = NULL, *last_table = NULL; /* made: (line, call), made once */
    Py_ssize_t table_index = -1;               /* of last_table in a Made */
    int failed = 0;
    for (Py_ssize_t i = 0; !failed && i < PyList_GET_SIZE(journal); i++) {
        PyObject *change = PyList_GET_ITEM(journal, i);
        if (!PyTuple_Check(change) || PyTuple_GET_SIZE(change) != 4) {
            PyErr_SetString(PyExc_ValueError, "a journal entry is (table, key, op, old)");
            failed = 1;
            break;
        }
        PyObject *table = PyTuple_GET_ITEM(change, 0), *key = PyTuple_GET_ITEM(change, 1),
                 *op = PyTuple_GET_ITEM(change, 2);
        if (table == Py_None)
            continue;
        int is_put = op == s_put ? 1 : op == s_remove ? 0 : PyObject_RichCompareBool(op, s_put, Py_EQ);
        if (is_put < 0) {
            failed = 1;
            break;
        }
        if (is_put && PyTuple_GET_ITEM(change, 3) != Py_None)
            continue; /* an update: its entry is in `created` already (replay.py's `_remembering`) */
        long long k;
        if (direct && PyDict_GET_SIZE(m->other) == 0 && PyUnicode_CheckExact(table) && as_i64(key, &k)) {
            if (table != last_table) {
                table_index = made_table(m, table, 1);
                if (table_index < 0) {
                    failed = 1;
                    break;
                }
                last_table = table;
            }
            if (is_put) /* an update keeps the creating line */
                failed = made_put(m, table_index, k, line_value, call, 1, MADE_NEW) < 0;
            else {
                made_drop(m, table_index, k);
                failed = removed_push(removed, table, key, line, call) < 0;
            }
            continue;
        }
        PyObject *where = PyTuple_Pack(2, table, key);
        if (where == NULL || (is_put && made == NULL && (made = PyTuple_Pack(2, line, call)) == NULL)) {
            Py_XDECREF(where);
            failed = 1;
            break;
        }
        if (is_put && is_made)
            failed = made_set(m, where, made, 1) < 0;
        else if (is_put)
            failed = PyDict_SetDefault(created, where, made) == NULL;
        else {
            if (is_made)
                failed = made_del(m, where) < 0;
            else {
#if PY_VERSION_HEX >= 0x030D0000
                PyObject *was = NULL;
                failed = PyDict_Pop(created, where, &was) < 0;
#else
                PyObject *was = _PyDict_Pop(created, where, Py_None);
                failed = was == NULL;
#endif
                Py_XDECREF(was);
            }
            failed = failed || removed_push(removed, table, key, line, call) < 0;
        }
        Py_DECREF(where);
    }
    Py_XDECREF(made);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

/* The exception being raised, taken out of the error indicator (a new reference). */
static PyObject *raised_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

/* drive(lines, decode, steps, errors, lineno, budget) -> (lineno, handled, raw, done): the fast
 * path's loop of checker.replay._replay_stream. Takes lines from the iterator `lines` (line
 * `lineno + 1` first), decodes each (an exception in `errors` means "not a fast line") and gives
 * the struct and its line number to steps[type(struct)]. It returns when a line is not handled
 * (raw: that line, for the general path), after `budget` handled lines (raw None; the caller
 * reports progress), at the end (done True), or when reading a line fails (done: the exception,
 * which the caller raises). `lineno` is the number of the last line taken. */
static PyObject *drive(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "drive expects 6 arguments");
        return NULL;
    }
    PyObject *lines = args[0], *decode = args[1], *steps = args[2], *errors = args[3];
    Py_ssize_t lineno = PyLong_AsSsize_t(args[4]), budget = PyLong_AsSsize_t(args[5]), handled = 0;
    if ((lineno == -1 || budget == -1) && PyErr_Occurred())
        return NULL;
    if (!PyDict_Check(steps) || !PyIter_Check(lines)) {
        PyErr_SetString(PyExc_TypeError, "drive expects a dict of steps and an iterator of lines");
        return NULL;
    }
    PyObject *raw;
    while ((raw = PyIter_Next(lines)) != NULL) {
        lineno++;
        PyObject *o = PyObject_CallOneArg(decode, raw);
        int took = 0;
        if (o == NULL) {
            if (!PyErr_ExceptionMatches(errors)) {
                Py_DECREF(raw);
                return NULL;
            }
            PyErr_Clear();
        } else {
            PyObject *step = PyDict_GetItemWithError(steps, (PyObject *)Py_TYPE(o));
            if (step != NULL && Py_IS_TYPE(step, &StepType) && ((Step *)step)->code != NULL) {
                took = step_run((Step *)step, o, lineno); /* a step-machine step, called directly */
            } else {
                PyObject *line = step == NULL ? NULL : PyLong_FromSsize_t(lineno);
                PyObject *r = line == NULL ? NULL : PyObject_CallFunctionObjArgs(step, o, line, NULL);
                Py_XDECREF(line);
                took = r == NULL ? -1 : PyObject_IsTrue(r);
                Py_XDECREF(r);
            }
            Py_DECREF(o);
            if (took < 0 && (step != NULL || PyErr_Occurred())) {
                Py_DECREF(raw);
                return NULL;
            }
            took = took > 0;
        }
        if (!took)
            return Py_BuildValue("(nnNO)", lineno, handled, raw, Py_False);
        Py_DECREF(raw);
        if (++handled == budget)
            return Py_BuildValue("(nnOO)", lineno, handled, Py_None, Py_False);
    }
    if (PyErr_Occurred()) { /* reading failed: give the error back with the line it was at */
        PyObject *exc = raised_exception();
        return exc == NULL ? NULL : Py_BuildValue("(nnON)", lineno, handled, Py_None, exc);
    }
    return Py_BuildValue("(nnOO)", lineno, handled, Py_None, Py_True);
}

/* ---- the kernel's page locks, read by madvise probes (checker.drivers.pinning)
 *
 * locked_pages(lo, hi, page_size, each): the pages of the page-aligned range [lo, hi) that the
 * kernel holds locked, by madvise(MADV_COLD) probes: EINVAL where the range meets a locked
 * mapping, 0 or ENOMEM (a hole) where it does not. `each` true asks every page alone; false asks the
 * whole range and halves it where the answer is yes. The Python original, and the reference the
 * tests compare this with, is pinning's `_each_locked_page` and `_locked_pages` over its ctypes
 * probe: the same probes in the same order, so the same answer. Returns the pages in address order
 * as a list, or (errno, address, length) of the first probe that answered anything else. */
#ifndef MADV_COLD
#define MADV_COLD 20
#endif

/* 1: locked, 0: not, -1: *err set (another answer) */
static int probe_locked(unsigned long long lo, unsigned long long hi, int *err)
{
    if (madvise((void *)(uintptr_t)lo, (size_t)(hi - lo), MADV_COLD) == 0 || errno == ENOMEM)
        return 0;
    if (errno == EINVAL)
        return 1;
    *err = errno;
    return -1;
}

/* 0, or -1 with *err set (the failing probe's range in *at, *len), or -2 (a Python error) */
static int halve_locked(PyObject *out, unsigned long long lo, unsigned long long hi, unsigned long long page, int *err,
                        unsigned long long *at, unsigned long long *len)
{
    int r = probe_locked(lo, hi, err);
    if (r < 0) {
        *at = lo, *len = hi - lo;
        return -1;
    }
    if (r == 0)
        return 0;
    if (hi - lo == page) {
        PyObject *v = PyLong_FromUnsignedLongLong(lo);
        int bad = v == NULL || PyList_Append(out, v) < 0;
        Py_XDECREF(v);
        return bad ? -2 : 0;
    }
    unsigned long long mid = lo + (hi - lo) / page / 2 * page;
    int left = halve_locked(out, lo, mid, page, err, at, len);
    return left != 0 ? left : halve_locked(out, mid, hi, page, err, at, len);
}

static PyObject *locked_pages(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "locked_pages(lo, hi, page_size, each) takes 4 arguments");
        return NULL;
    }
    unsigned long long lo = PyLong_AsUnsignedLongLong(args[0]), hi = PyLong_AsUnsignedLongLong(args[1]);
    unsigned long long page = PyLong_AsUnsignedLongLong(args[2]);
    int each = PyObject_IsTrue(args[3]);
    if (PyErr_Occurred() || each < 0)
        return NULL;
    if (page == 0 || lo % page || hi % page) {
        PyErr_SetString(PyExc_ValueError, "locked_pages: [lo, hi) must be a range of whole pages");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL || hi <= lo) /* an empty range: nothing is asked, as in Python's halving (a length-0 probe) */
        return out;
    int err = 0, r = 0;
    unsigned long long at = 0, len = 0;
    if (each) {
        for (unsigned long long p = lo; p < hi && r == 0; p += page) {
            int locked = probe_locked(p, p + page, &err);
            if (locked < 0) {
                at = p, len = page, r = -1;
            } else if (locked) {
                PyObject *v = PyLong_FromUnsignedLongLong(p);
                r = v == NULL || PyList_Append(out, v) < 0 ? -2 : 0;
                Py_XDECREF(v);
            }
        }
    } else {
        r = halve_locked(out, lo, hi, page, &err, &at, &len);
    }
    if (r == 0)
        return out;
    Py_DECREF(out);
    return r == -2 ? NULL : Py_BuildValue("(iKK)", err, at, len);
}

/* The pages of the page-aligned range [lo, hi) each asked alone: 0, -1 (*err, *at, *len set) or -2 */
static int each_locked(PyObject *out, unsigned long long lo, unsigned long long hi, unsigned long long page, int *err,
                       unsigned long long *at, unsigned long long *len)
{
    for (unsigned long long p = lo; p < hi; p += page) {
        int locked = probe_locked(p, p + page, err);
        if (locked < 0) {
            *at = p, *len = page;
            return -1;
        }
        if (locked) {
            PyObject *v = PyLong_FromUnsignedLongLong(p);
            int bad = v == NULL || PyList_Append(out, v) < 0;
            Py_XDECREF(v);
            if (bad)
                return -2;
        }
    }
    return 0;
}

/* starts[i] as an address: 0, or -1 with a Python error (not an int of 64 bits) */
static int start_at(PyObject *starts, Py_ssize_t i, unsigned long long *v)
{
    *v = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(starts, i));
    return *v == (unsigned long long)-1 && PyErr_Occurred() ? -1 : 0;
}

/* the first index i with starts[i] > x (right) or >= x (!right), from `from`, as bisect's */
static int bisect_starts(PyObject *starts, Py_ssize_t from, unsigned long long x, int right, Py_ssize_t *found)
{
    Py_ssize_t a = from, b = PyList_GET_SIZE(starts);
    while (a < b) {
        Py_ssize_t mid = a + (b - a) / 2;
        unsigned long long v;
        if (start_at(starts, mid, &v) < 0)
            return -1;
        if (right ? x < v : x <= v)
            b = mid;
        else
            a = mid + 1;
    }
    *found = a;
    return 0;
}

/* a segment's end: segs[start][0] */
static int end_of(PyObject *segs, PyObject *start, unsigned long long *end)
{
    PyObject *seg = PyDict_GetItemWithError(segs, start); /* borrowed */
    if (seg == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, start);
        return -1;
    }
    PyObject *first = PySequence_GetItem(seg, 0);
    if (first == NULL)
        return -1;
    *end = PyLong_AsUnsignedLongLong(first);
    Py_DECREF(first);
    return *end == (unsigned long long)-1 && PyErr_Occurred() ? -1 : 0;
}

/* One part [lo, hi): halving where the arena holds no lock, each page alone where it does. */
static int part_locked(PyObject *out, unsigned long long lo, unsigned long long hi, PyObject *starts, PyObject *segs,
                       unsigned long long page, int *err, unsigned long long *at, unsigned long long *len)
{
    Py_ssize_t i, stop;
    unsigned long long here = lo, start, end;
    if (bisect_starts(starts, 0, lo, 1, &i) < 0 || bisect_starts(starts, i, hi, 0, &stop) < 0)
        return -2;
    for (Py_ssize_t k = i ? i - 1 : 0; k < stop; k++) { /* (from the segment starting at or before lo) */
        if (start_at(starts, k, &start) < 0 || end_of(segs, PyList_GET_ITEM(starts, k), &end) < 0)
            return -2;
        if (k < i && (end <= lo || start >= hi))
            continue; /* the one before lo, not reaching into the part */
        if (start < lo)
            start = lo;
        if (end > hi)
            end = hi;
        int r = here < start ? halve_locked(out, here, start, page, err, at, len) : 0;
        if (r == 0)
            r = each_locked(out, start, end, page, err, at, len);
        if (r != 0)
            return r;
        here = end;
    }
    return here < hi ? halve_locked(out, here, hi, page, err, at, len) : 0;
}

/* locked_in_segments(parts, starts, segs, page_size): the locked pages of the page-aligned ranges
 * `parts` (a list of (lo, hi)), each asked alone inside the arena's lock segments (`starts`, the
 * sorted starts, and `segs`, start -> [end, count]: checker.drivers.lockcounts' layout) and by
 * halving outside them. The Python original, and the reference the tests compare this with, is
 * the loop of pinning's `PinnedArena.kernel_locked_in` over `LockCounts.segments` and the probe
 * loops: the same probes in the same order. Returns the pages as a list, or (errno, address,
 * length) of the first probe that answered neither yes nor no. */
static PyObject *locked_in_segments(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "locked_in_segments(parts, starts, segs, page_size) takes 4 arguments");
        return NULL;
    }
    PyObject *parts = args[0], *starts = args[1], *segs = args[2];
    unsigned long long page = PyLong_AsUnsignedLongLong(args[3]);
    if (page == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (!PyList_Check(parts) || !PyList_Check(starts) || !PyDict_Check(segs) || page == 0) {
        PyErr_SetString(PyExc_TypeError, "locked_in_segments: a list of parts, a list of starts, a dict of segments and a page size");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    int err = 0, r = 0;
    unsigned long long at = 0, len = 0;
    for (Py_ssize_t n = 0; n < PyList_GET_SIZE(parts) && r == 0; n++) {
        PyObject *part = PyList_GET_ITEM(parts, n);
        unsigned long long lo, hi;
        if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) != 2) {
            PyErr_SetString(PyExc_TypeError, "locked_in_segments: a part is a (lo, hi) pair");
            r = -2;
            break;
        }
        lo = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(part, 0));
        hi = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(part, 1));
        if (PyErr_Occurred()) {
            r = -2;
        } else if (lo % page || hi % page) {
            PyErr_SetString(PyExc_ValueError, "locked_in_segments: [lo, hi) must be a range of whole pages");
            r = -2;
        } else if (lo < hi) {
            r = part_locked(out, lo, hi, starts, segs, page, &err, &at, &len);
        }
    }
    if (r == 0)
        return out;
    Py_DECREF(out);
    return r == -2 ? NULL : Py_BuildValue("(iKK)", err, at, len);
}

/* mlock(address, length) and munlock(address, length): 0, or the errno the call failed with, without
 * the GIL (a large range can take long). The Python original, and the reference the tests compare
 * these with, is pinning's ctypes `_ctypes_lock_calls`. */
static PyObject *lock_call(PyObject *const *args, Py_ssize_t nargs, int lock)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "mlock/munlock(address, length) take 2 arguments");
        return NULL;
    }
    unsigned long long address = PyLong_AsUnsignedLongLong(args[0]), length = PyLong_AsUnsignedLongLong(args[1]);
    if (PyErr_Occurred())
        return NULL;
    int r, err = 0;
    Py_BEGIN_ALLOW_THREADS
    r = lock ? mlock((void *)(uintptr_t)address, (size_t)length) : munlock((void *)(uintptr_t)address, (size_t)length);
    if (r != 0)
        err = errno;
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(err);
}

static PyObject *mlock_(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    return lock_call(args, nargs, 1);
}

static PyObject *munlock_(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    return lock_call(args, nargs, 0);
}

/* buffer_address(obj): the address of the first byte of an object's buffer (an mmap's mapping),
 * exported and released at once, so the object can be closed afterwards. The Python original,
 * and the reference the tests compare this with, is pinning's ctypes `_address_of`. */
static PyObject *buffer_address(PyObject *Py_UNUSED(module), PyObject *obj)
{
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_WRITABLE) < 0)
        return NULL;
    PyObject *address = PyLong_FromVoidPtr(view.buf);
    PyBuffer_Release(&view);
    return address;
}

/* ---- the executor's page-lock check, kept event by event (checker.drivers.lockcheck)
 *
 * sync_locked(kernel, cover, missing, extra, dirty, spans, locked, page_size): after an event, the
 * kernel's locked pages (the set `kernel`) read again on the driver's changed `spans`: its pages
 * there dropped, `locked` (the pages the kernel holds locked there now) added, every page either
 * touched going into the set `dirty`; then the sets `missing` (predicted in the dict `cover`, not
 * locked) and `extra` (locked, not predicted) judged again on the pages of `dirty`. The Python
 * original, and the reference the tests compare this with, is lockcheck's `sync_pages`: the same
 * sets afterwards. Returns True, or False having changed nothing where an argument is not of the
 * shape this code handles (a span not a pair of ints in [0, 2**62), a set or dict of another
 * type): the caller then runs the Python original.
 *
 * predict_pages(cover, start, stop, page_size, unit, add, dirty): an entry's prediction of the
 * pages range(start, stop, page_size) added to (`add` true) or taken from its counts in `cover`
 * (page -> counts, a page whose counts reach 0 leaving it), each page going into the set `dirty`
 * (None: nowhere). The Python original is lockcheck's `predict_pages`. Returns True, or False
 * having changed nothing where start or stop is not an int in [0, 2**62) or a dict or set is of
 * another type; a page missing from `cover` when taken raises KeyError, as the original's pop. */
#define SPAN_LIMIT (1LL << 62)

/* 1: *v read, 0: not an int in [0, SPAN_LIMIT), -1: a Python error */
static int small_address(PyObject *obj, long long *v)
{
    if (!PyLong_CheckExact(obj))
        return 0;
    int overflow = 0;
    *v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (*v == -1 && PyErr_Occurred())
        return -1;
    return !overflow && *v >= 0 && *v < SPAN_LIMIT;
}

/* Discard `page` from `kernel`, noting it in `dirty` where it was there: 0, or -1 on an error. */
static int drop_page(PyObject *kernel, PyObject *dirty, PyObject *page)
{
    int had = PySet_Discard(kernel, page);
    return had < 0 ? -1 : had ? PySet_Add(dirty, page) : 0;
}

/* The kernel's pages of one span dropped, as lockcheck's `sync_pages` drops them. */
static int drop_span(PyObject *kernel, PyObject *dirty, long long lo, long long hi, long long page)
{
    if (hi <= lo)
        return 0;
    if ((hi - lo) / page <= PySet_GET_SIZE(kernel)) { /* the span's pages, each looked up */
        for (long long p = lo - lo % page; p < hi; p += page) {
            PyObject *v = PyLong_FromLongLong(p);
            int r = v == NULL ? -1 : drop_page(kernel, dirty, v);
            Py_XDECREF(v);
            if (r < 0)
                return -1;
        }
        return 0;
    }
    /* fewer locked pages than the span has: those inside it, found first (a set changing under its
     * iteration would be an error) */
    PyObject *gone = PyList_New(0), *key = NULL;
    PyObject *it = gone == NULL ? NULL : PyObject_GetIter(kernel); /* (the public protocol, not _PySet_NextEntry) */
    if (it == NULL) {
        Py_XDECREF(gone);
        return -1;
    }
    while ((key = PyIter_Next(it)) != NULL) {
        long long p;
        int small = small_address(key, &p);
        if (small < 0)
            goto fail;
        int inside;
        if (small) {
            inside = lo <= p && p < hi;
        } else { /* (a page the C code cannot read as a small int: asked as Python asks) */
            PyObject *plo = PyLong_FromLongLong(lo), *phi = PyLong_FromLongLong(hi);
            int a = plo == NULL || phi == NULL ? -1 : PyObject_RichCompareBool(plo, key, Py_LE);
            int b = a <= 0 ? a : PyObject_RichCompareBool(key, phi, Py_LT);
            Py_XDECREF(plo);
            Py_XDECREF(phi);
            if (b < 0)
                goto fail;
            inside = b;
        }
        if (inside && PyList_Append(gone, key) < 0)
            goto fail;
        Py_CLEAR(key);
    }
    Py_CLEAR(it);
    if (PyErr_Occurred())
        goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(gone); i++)
        if (drop_page(kernel, dirty, PyList_GET_ITEM(gone, i)) < 0)
            goto fail;
    Py_DECREF(gone);
    return 0;
fail:
    Py_XDECREF(key);
    Py_XDECREF(it);
    Py_DECREF(gone);
    return -1;
}

/* missing and extra judged again on one page */
static int judge_page(PyObject *kernel, PyObject *cover, PyObject *missing, PyObject *extra, PyObject *page)
{
    int predicted = PyDict_Contains(cover, page);
    int locked = predicted < 0 ? -1 : PySet_Contains(kernel, page);
    if (locked < 0)
        return -1;
    if (predicted && !locked) {
        if (PySet_Add(missing, page) < 0 || PySet_Discard(extra, page) < 0)
            return -1;
    } else if (locked && !predicted) {
        if (PySet_Discard(missing, page) < 0 || PySet_Add(extra, page) < 0)
            return -1;
    } else if (PySet_Discard(missing, page) < 0 || PySet_Discard(extra, page) < 0) {
        return -1;
    }
    return 0;
}

static int is_plain_set(PyObject *obj)
{
    return PySet_CheckExact(obj);
}

static PyObject *sync_locked(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError,
                        "sync_locked(kernel, cover, missing, extra, dirty, spans, locked, page_size) takes 8 arguments");
        return NULL;
    }
    PyObject *kernel = args[0], *cover = args[1], *missing = args[2], *extra = args[3], *dirty = args[4];
    PyObject *spans = args[5], *locked = args[6];
    long long page = PyLong_AsLongLong(args[7]);
    if (page == -1 && PyErr_Occurred())
        return NULL;
    if (page <= 0) {
        PyErr_SetString(PyExc_ValueError, "sync_locked: page_size must be positive");
        return NULL;
    }
    if (!is_plain_set(kernel) || !PyDict_CheckExact(cover) || !is_plain_set(missing) || !is_plain_set(extra)
        || !is_plain_set(dirty) || !PyList_CheckExact(spans))
        Py_RETURN_FALSE;
    Py_ssize_t n = PyList_GET_SIZE(spans);
    for (Py_ssize_t i = 0; i < n; i++) { /* every span checked before anything changes */
        PyObject *span = PyList_GET_ITEM(spans, i);
        long long lo, hi;
        int a, b;
        if (!PyTuple_CheckExact(span) || PyTuple_GET_SIZE(span) != 2)
            Py_RETURN_FALSE;
        if ((a = small_address(PyTuple_GET_ITEM(span, 0), &lo)) < 0 || (b = small_address(PyTuple_GET_ITEM(span, 1), &hi)) < 0)
            return NULL;
        if (!a || !b)
            Py_RETURN_FALSE;
    }
    for (Py_ssize_t i = 0; i < n && PySet_GET_SIZE(kernel); i++) {
        PyObject *span = PyList_GET_ITEM(spans, i);
        long long lo = PyLong_AsLongLong(PyTuple_GET_ITEM(span, 0)), hi = PyLong_AsLongLong(PyTuple_GET_ITEM(span, 1));
        if (drop_span(kernel, dirty, lo, hi, page) < 0)
            return NULL;
    }
    if (locked != Py_None) {
        PyObject *it = PyObject_GetIter(locked), *p;
        if (it == NULL)
            return NULL;
        while ((p = PyIter_Next(it)) != NULL) {
            int bad = PySet_Add(kernel, p) < 0 || PySet_Add(dirty, p) < 0;
            Py_DECREF(p);
            if (bad) {
                Py_DECREF(it);
                return NULL;
            }
        }
        Py_DECREF(it);
        if (PyErr_Occurred())
            return NULL;
    }
    PyObject *dirty_pages = PyObject_GetIter(dirty), *key;
    if (dirty_pages == NULL)
        return NULL;
    while ((key = PyIter_Next(dirty_pages)) != NULL) {
        int r = judge_page(kernel, cover, missing, extra, key);
        Py_DECREF(key);
        if (r < 0) {
            Py_DECREF(dirty_pages);
            return NULL;
        }
    }
    Py_DECREF(dirty_pages);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *predict_pages(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "predict_pages(cover, start, stop, page_size, unit, add, dirty) takes 7 arguments");
        return NULL;
    }
    PyObject *cover = args[0], *unit = args[4], *dirty = args[6];
    long long start, stop, page = PyLong_AsLongLong(args[3]);
    int add = PyObject_IsTrue(args[5]), a, b;
    if ((page == -1 || add < 0) && PyErr_Occurred())
        return NULL;
    if (page <= 0) {
        PyErr_SetString(PyExc_ValueError, "predict_pages: page_size must be positive");
        return NULL;
    }
    if ((a = small_address(args[1], &start)) < 0 || (b = small_address(args[2], &stop)) < 0)
        return NULL;
    if (!a || !b || !PyDict_CheckExact(cover) || (dirty != Py_None && !is_plain_set(dirty)))
        Py_RETURN_FALSE;
    for (long long p = start; p < stop; p += page) {
        PyObject *v = PyLong_FromLongLong(p), *counts = NULL;
        if (v == NULL)
            return NULL;
        if (add) {
            PyObject *held = PyDict_GetItemWithError(cover, v); /* borrowed */
            if (held == NULL && PyErr_Occurred())
                goto fail;
            counts = held == NULL ? Py_NewRef(unit) : PyNumber_Add(held, unit);
            if (counts == NULL || PyDict_SetItem(cover, v, counts) < 0)
                goto fail;
        } else {
            PyObject *held = PyDict_GetItemWithError(cover, v);
            if (held == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, v);
                goto fail;
            }
            counts = PyNumber_Subtract(held, unit);
            int nonzero = counts == NULL ? -1 : PyObject_IsTrue(counts);
            /* (out and back in, as the original's pop and store: the same order of keys) */
            if (nonzero < 0 || PyDict_DelItem(cover, v) < 0 || (nonzero && PyDict_SetItem(cover, v, counts) < 0))
                goto fail;
        }
        if (dirty != Py_None && PySet_Add(dirty, v) < 0)
            goto fail;
        Py_DECREF(counts);
        Py_DECREF(v);
        continue;
    fail:
        Py_XDECREF(counts);
        Py_DECREF(v);
        return NULL;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef functions[] = {
    {"buffer_address", (PyCFunction)buffer_address, METH_O,
     "buffer_address(obj): the address of the first byte of a writable buffer"},
    {"locked_pages", (PyCFunction)(void (*)(void))locked_pages, METH_FASTCALL,
     "locked_pages(lo, hi, page_size, each): the locked pages of [lo, hi), by madvise probes"},
    {"locked_in_segments", (PyCFunction)(void (*)(void))locked_in_segments, METH_FASTCALL,
     "locked_in_segments(parts, starts, segs, page_size): the locked pages of parts, asked as the arena's locks lie"},
    {"sync_locked", (PyCFunction)(void (*)(void))sync_locked, METH_FASTCALL,
     "sync_locked(kernel, cover, missing, extra, dirty, spans, locked, page_size): the lock check's sets after an event"},
    {"predict_pages", (PyCFunction)(void (*)(void))predict_pages, METH_FASTCALL,
     "predict_pages(cover, start, stop, page_size, unit, add, dirty): an entry's pages counted in or out"},
    {"mlock", (PyCFunction)(void (*)(void))mlock_, METH_FASTCALL, "mlock(address, length): 0 or the errno"},
    {"munlock", (PyCFunction)(void (*)(void))munlock_, METH_FASTCALL, "munlock(address, length): 0 or the errno"},
    {"drive", (PyCFunction)(void (*)(void))drive, METH_FASTCALL,
     "drive(lines, decode, steps, errors, lineno, budget): run the fast steps until a line needs the general path"},
    {"remember", (PyCFunction)(void (*)(void))remember, METH_FASTCALL,
     "remember(created, removed, journal, line, call): note which line made or removed each entry"},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "checker._native",
                                    .m_doc = "C versions of the replay's hottest operations.", .m_size = -1,
                                    .m_methods = functions};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *heapq = PyImport_ImportModule("heapq");
    if (heapq == NULL)
        return NULL;
    heappush = PyObject_GetAttrString(heapq, "heappush");
    heapify = PyObject_GetAttrString(heapq, "heapify");
    Py_DECREF(heapq);
    if (heappush == NULL || heapify == NULL)
        return NULL;
    if (!(s_put = PyUnicode_InternFromString("put")) || !(s_remove = PyUnicode_InternFromString("remove"))
        || !(s_slow_put = PyUnicode_InternFromString("_slow_put"))
        || !(s_slow_remove = PyUnicode_InternFromString("_slow_remove"))
        || !(s_slow_set_field = PyUnicode_InternFromString("_slow_set_field"))
        || !(s_slow_overlapping = PyUnicode_InternFromString("_slow_any_overlapping"))
        || !(s_slow_containing = PyUnicode_InternFromString("_slow_any_containing"))
        || !(s_slow_containing_addr = PyUnicode_InternFromString("_slow_any_containing_addr")))
        return NULL;
    if (!(s_rollback = PyUnicode_InternFromString("rollback")) || !(s_set = PyUnicode_InternFromString("set")) || !(s_max_size = PyUnicode_InternFromString("max_size"))
        || !(s_append = PyUnicode_InternFromString("append")))
        return NULL;
    s_slow_probe[PROBE_OVERLAPPING] = s_slow_overlapping;
    s_slow_probe[PROBE_CONTAINING] = s_slow_containing;
    s_slow_probe[PROBE_CONTAINING_ADDR] = s_slow_containing_addr;
    if (PyType_Ready(&TableCoreType) < 0 || PyType_Ready(&StepType) < 0 || PyType_Ready(&PredType) < 0
        || PyType_Ready(&SortedKeysType) < 0 || PyType_Ready(&RingType) < 0
        || PyType_Ready(&MadeType) < 0 || PyType_Ready(&LinesType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *opcodes = PyDict_New();
    for (int op = 0; opcodes != NULL && op < NOPS; op++) {
        PyObject *v = Py_BuildValue("(ii)", op, op_arity[op]);
        if (v == NULL || PyDict_SetItemString(opcodes, op_names[op], v) < 0)
            Py_CLEAR(opcodes);
        Py_XDECREF(v);
    }
    if (opcodes == NULL || PyModule_AddObject(m, "OPCODES", opcodes) < 0) {
        Py_XDECREF(opcodes);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "TableCore", (PyObject *)&TableCoreType) < 0
        || PyModule_AddObjectRef(m, "SortedKeys", (PyObject *)&SortedKeysType) < 0
        || PyModule_AddObjectRef(m, "Step", (PyObject *)&StepType) < 0
        || PyModule_AddObjectRef(m, "Ring", (PyObject *)&RingType) < 0
        || PyModule_AddObjectRef(m, "Made", (PyObject *)&MadeType) < 0
        || PyModule_AddObjectRef(m, "Lines", (PyObject *)&LinesType) < 0
        || PyModule_AddIntConstant(m, "MAX_REGS", MAX_REGS) < 0 || PyModule_AddIntConstant(m, "MAX_MASK_BITS", MAX_MASK_BITS) < 0
        || PyModule_AddIntConstant(m, "INTERFACE", NATIVE_INTERFACE) < 0
        || PyModule_AddIntConstant(m, "KEY_INDEX", KI_AVAILABLE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
