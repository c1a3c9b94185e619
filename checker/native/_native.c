/* checker._native: optional C versions of the replay's hottest Python code. Three parts, each
 * with its Python original kept as the reference and the fallback (the module is built only where
 * pip finds a C compiler, the Python headers and a compiler with __int128, i.e. GCC or Clang):
 * - TableCore: a sized table's put, remove and interval-index probes (below);
 * - remember: checker.replay's note of which line made or removed each entry;
 * - drive: the per-line loop of the replayer's fast path (checker.replay._replay_stream).
 *
 * `TableCore` is the base of `checker.semantics.Table` when this module is built. It holds the
 * table's fields (the Python subclass reads and writes them as ordinary attributes) and
 * implements put, remove and the three whole-`exists` probes (any_overlapping, any_containing,
 * any_containing_addr) for the common case: the sorted keys are a plain list, and keys, sizes
 * and query bounds fit in 64 bits. Any other case (a SortedList index, a huge or non-int key, a
 * record without its size field, a put that would move the index to a SortedList, an unknown
 * largest size) is handed, before anything is changed, to the pure-Python method of the same
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

typedef __int128 wide;

/* checker.semantics uses this module only if it says this number: an old build left in the tree
 * after an interface change is ignored, not half used. Raise it with every such change. */
#define NATIVE_INTERFACE 1

/* The fields of a table, in one list for the struct, the garbage collector's visit and clear. */
#define TABLE_FIELDS(X) X(name) X(rows) X(sized_by) X(keys) X(small) X(size_count) X(size_heap) X(largest) X(journal)
#define DECLARE_FIELD(f) PyObject *f;
#define VISIT_FIELD(f) Py_VISIT(self->f);
#define CLEAR_FIELD(f) Py_CLEAR(self->f);

typedef struct {
    PyObject_HEAD
    TABLE_FIELDS(DECLARE_FIELD)
} TableCore;

static PyObject *s_put, *s_remove, *s_slow_put, *s_slow_remove, *s_slow_overlapping, *s_slow_containing,
    *s_slow_containing_addr;
static PyObject *heappush, *heapify;

/* 1 and *out set when `o` is an exact int within 64 bits; 0 otherwise (no error left set). */
static inline int as_i64(PyObject *o, long long *out)
{
    if (o == NULL || !PyLong_CheckExact(o))
        return 0;
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

/* First index in the int64 list `keys` whose key is >= x (right: > x), searching [lo, n).
 * -1 when some key in the way is not a 64-bit int. */
static Py_ssize_t bisect(PyObject *keys, wide x, Py_ssize_t lo, int right)
{
    Py_ssize_t hi = PyList_GET_SIZE(keys);
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

/* pred((key, record)) as 1/0, or -1 with an exception set. */
static int holds(PyObject *pred, PyObject *key, PyObject *record)
{
    if (pred == Py_None)
        return 1;
    PyObject *entry = PyTuple_Pack(2, key, record);
    if (entry == NULL)
        return -1;
    PyObject *r = PyObject_CallOneArg(pred, entry);
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

/* Walk the keys in [lo, hi) and ask `test` of each; the window bound k < hi is the caller's.
 * The size is re-read each turn because a predicate runs Python code (the spec's predicates do
 * not change tables, but the loop must not read past the list if one did). */
#define WINDOW_LOOP(LO, HI, TEST)                                                                                \
    do {                                                                                                         \
        Py_ssize_t i = bisect(keys, (LO), 0, 0), j;                                                              \
        if (i < 0)                                                                                               \
            return SLOW;                                                                                         \
        j = bisect(keys, (HI), i, 0);                                                                            \
        if (j < 0)                                                                                               \
            return SLOW;                                                                                         \
        for (; i < j && i < PyList_GET_SIZE(keys); i++) {                                                        \
            PyObject *kobj = PyList_GET_ITEM(keys, i);                                                           \
            long long k, size;                                                                                   \
            PyObject *record = PyDict_GetItemWithError(rows, kobj);                                              \
            if (record == NULL) {                                                                                \
                PyErr_Clear();                                                                                   \
                return SLOW;                                                                                     \
            }                                                                                                    \
            if (!as_i64(kobj, &k) || !record_size(record, field, &size))                                         \
                return SLOW;                                                                                     \
            if (TEST) {                                                                                          \
                int h = holds(pred, kobj, record);                                                               \
                if (h < 0)                                                                                       \
                    return NULL;                                                                                 \
                if (h)                                                                                           \
                    Py_RETURN_TRUE;                                                                              \
            }                                                                                                    \
        }                                                                                                        \
    } while (0)

/* The exact-key test that comes first in every probe (the usual case: the range asked about is
 * an entry's own). 1 true, 0 not this way, -1 error, 2 hand to Python. */
static int exact_hit(PyObject *rows, PyObject *field, PyObject *kobj, long long k, wide end, int mode, PyObject *pred)
{
    PyObject *record = PyDict_GetItemWithError(rows, kobj);
    if (record == NULL) {
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return 2;
        }
        return 0;
    }
    long long size;
    if (!record_size(record, field, &size))
        return 2;
    int hit = mode == 1 ? end <= (wide)k + size : size > 0; /* 1: containing; else overlapping / addr */
    if (!hit)
        return 0;
    return holds(pred, kobj, record);
}

#define EXACT_HIT(KEY, K, END, MODE)                                                                             \
    do {                                                                                                         \
        int h = exact_hit(rows, field, (KEY), (K), (END), (MODE), pred);                                         \
        if (h == 2)                                                                                              \
            return SLOW;                                                                                         \
        if (h < 0)                                                                                               \
            return NULL;                                                                                         \
        if (h)                                                                                                   \
            Py_RETURN_TRUE;                                                                                      \
    } while (0)

/* The bodies of the probes, on a non-empty table's rows, sorted keys (a list) and size field. */
typedef PyObject *(*probe_body)(PyObject *rows, PyObject *keys, PyObject *field, long long largest,
                                PyObject *const *args, PyObject *pred);

static PyObject *overlapping_body(PyObject *rows, PyObject *keys, PyObject *field, long long largest,
                                  PyObject *const *args, PyObject *pred)
{
    long long base, end;
    if (!as_i64(args[0], &base) || !as_i64(args[1], &end))
        return SLOW;
    if (end <= base)
        Py_RETURN_FALSE;
    EXACT_HIT(args[0], base, end, 0);
    if (largest <= 0)
        Py_RETURN_FALSE;
    WINDOW_LOOP((wide)base - largest + 1, (wide)end, size > 0 && (wide)base < (wide)k + size);
    Py_RETURN_FALSE;
}

static PyObject *containing_body(PyObject *rows, PyObject *keys, PyObject *field, long long largest,
                                 PyObject *const *args, PyObject *pred)
{
    long long base, end;
    if (!as_i64(args[0], &base) || !as_i64(args[1], &end))
        return SLOW;
    EXACT_HIT(args[0], base, end, 1);
    wide lo = (wide)(base < end ? base : end) - largest;
    WINDOW_LOOP(lo, (wide)base + 1, k <= base && (wide)end <= (wide)k + size);
    Py_RETURN_FALSE;
}

static PyObject *containing_addr_body(PyObject *rows, PyObject *keys, PyObject *field, long long largest,
                                      PyObject *const *args, PyObject *pred)
{
    long long x;
    if (!as_i64(args[0], &x))
        return SLOW;
    EXACT_HIT(args[0], x, 0, 0);
    WINDOW_LOOP((wide)x - largest, (wide)x + 1, k <= x && (wide)x < (wide)k + size);
    Py_RETURN_FALSE;
}

/* A probe: check the arguments, answer an empty table, run the body on references of its own to
 * the table's fields (a predicate runs Python code), hand what it cannot answer to Python. */
static PyObject *probe(TableCore *self, PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *name,
                       PyObject *slow_name, probe_body body)
{
    long long largest;
    if (nargs != want && nargs != want + 1) {
        PyErr_Format(PyExc_TypeError, "%s expects %zd or %zd arguments", name, want, want + 1);
        return NULL;
    }
    PyObject *pred = nargs > want ? args[want] : Py_None;
    PyObject *rows = self->rows, *keys = self->keys, *field = self->sized_by;
    if (rows != NULL && PyDict_CheckExact(rows) && PyDict_GET_SIZE(rows) == 0)
        Py_RETURN_FALSE; /* as the Python method: an empty table has nothing, whatever is asked */
    if (rows == NULL || !PyDict_CheckExact(rows) || keys == NULL || !PyList_CheckExact(keys) || field == NULL
        || field == Py_None || !as_i64(self->largest, &largest))
        return slow(self, slow_name, args, nargs);
    Py_INCREF(rows);
    Py_INCREF(keys);
    Py_INCREF(field);
    PyObject *r = body(rows, keys, field, largest, args, pred);
    Py_DECREF(rows);
    Py_DECREF(keys);
    Py_DECREF(field);
    return r == SLOW ? slow(self, slow_name, args, nargs) : r;
}

static PyObject *any_overlapping(TableCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    return probe(self, args, nargs, 2, "any_overlapping", s_slow_overlapping, overlapping_body);
}

static PyObject *any_containing(TableCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    return probe(self, args, nargs, 2, "any_containing", s_slow_containing, containing_body);
}

static PyObject *any_containing_addr(TableCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    return probe(self, args, nargs, 1, "any_containing_addr", s_slow_containing_addr, containing_addr_body);
}

static int journal_append(TableCore *self, PyObject *key, const char *op, PyObject *old)
{
    if (self->journal == Py_None)
        return 0;
    PyObject *opname = op[0] == 'p' ? s_put : s_remove;
    PyObject *entry = PyTuple_Pack(4, self->name, key, opname, old ? old : Py_None);
    if (entry == NULL)
        return -1;
    int r = PyList_Append(self->journal, entry);
    Py_DECREF(entry);
    return r;
}

/* counts[size] += delta (deleting it at 0); *was: the count before. -1 on error. */
static int count_size(PyObject *counts, PyObject *size, long delta, long *was)
{
    PyObject *c = PyDict_GetItemWithError(counts, size);
    if (c == NULL && PyErr_Occurred())
        return -1;
    long n = c == NULL ? 0 : PyLong_AsLong(c);
    if (n == -1 && PyErr_Occurred())
        return -1;
    *was = n;
    n += delta;
    if (n == 0)
        return PyDict_DelItem(counts, size);
    PyObject *v = PyLong_FromLong(n);
    if (v == NULL)
        return -1;
    int r = PyDict_SetItem(counts, size, v);
    Py_DECREF(v);
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
        int eq = PyObject_RichCompareBool(size, self->largest, Py_EQ);
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
        int gt = PyObject_RichCompareBool(size, self->largest, Py_GT);
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

static int bookkeeping_ready(TableCore *self)
{
    return self->rows != NULL && PyDict_CheckExact(self->rows) && self->journal != NULL
        && (self->journal == Py_None || PyList_CheckExact(self->journal)) && self->sized_by != NULL && self->name != NULL;
}

static int index_ready(TableCore *self)
{
    return self->keys != NULL && PyList_CheckExact(self->keys) && self->size_count != NULL
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
    PyObject *old = PyDict_GetItemWithError(self->rows, key);
    if (old == NULL && PyErr_Occurred()) {
        PyErr_Clear();
        goto slow_path;
    }
    PyObject *field = self->sized_by, *size = NULL, *old_size = NULL;
    Py_ssize_t at = -1;
    if (field != Py_None) {
        long long k, small;
        if (!index_ready(self) || !PyDict_CheckExact(record) || !as_i64(self->small, &small))
            goto slow_path;
        size = PyDict_GetItemWithError(record, field);
        if (size == NULL) {
            PyErr_Clear();
            goto slow_path;
        }
        if (old == NULL) {
            if (!as_i64(key, &k) || PyList_GET_SIZE(self->keys) + 1 > small)
                goto slow_path; /* a huge key, or the index moves to a SortedList */
            at = bisect(self->keys, k, 0, 1);
            if (at < 0)
                goto slow_path;
        } else {
            if (!PyDict_CheckExact(old) || (old_size = PyDict_GetItemWithError(old, field)) == NULL
                || PyDict_GetItemWithError(self->size_count, old_size) == NULL) {
                PyErr_Clear();
                goto slow_path;
            }
        }
    }
    /* Everything checked: from here on it changes the table, in the Python put's order. */
    Py_XINCREF(old);
    Py_XINCREF(old_size);
    Py_XINCREF(size);
    int failed = journal_append(self, key, "put", old) < 0;
    if (!failed && field != Py_None) {
        if (old == NULL)
            failed = PyList_Insert(self->keys, at, key) < 0;
        else
            failed = forget_size(self, old_size) < 0;
        failed = failed || note_size(self, size) < 0;
    }
    failed = failed || PyDict_SetItem(self->rows, key, record) < 0;
    Py_XDECREF(old);
    Py_XDECREF(old_size);
    Py_XDECREF(size);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
slow_path:
    return slow(self, s_slow_put, args, nargs);
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
    PyObject *old = PyDict_GetItemWithError(self->rows, key);
    if (old == NULL) {
        if (PyErr_Occurred()) {
            PyErr_Clear();
            goto slow_path;
        }
        Py_RETURN_NONE;
    }
    PyObject *field = self->sized_by, *size = NULL;
    Py_ssize_t at = -1;
    if (field != Py_None) {
        long long k, small;
        if (!index_ready(self) || !as_i64(key, &k) || !as_i64(self->small, &small) || !PyDict_CheckExact(old))
            goto slow_path;
        size = PyDict_GetItemWithError(old, field);
        if (size == NULL || PyDict_GetItemWithError(self->size_count, size) == NULL) {
            PyErr_Clear();
            goto slow_path;
        }
        at = bisect(self->keys, k, 0, 0);
        if (at < 0 || at >= PyList_GET_SIZE(self->keys))
            goto slow_path;
    }
    Py_INCREF(old);
    Py_XINCREF(size);
    int failed = PyDict_DelItem(self->rows, key) < 0 || journal_append(self, key, "remove", old) < 0;
    if (!failed && field != Py_None)
        failed = PyList_SetSlice(self->keys, at, at + 1, NULL) < 0 || forget_size(self, size) < 0;
    Py_DECREF(old);
    Py_XDECREF(size);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
slow_path:
    return slow(self, s_slow_remove, args, nargs);
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
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define MEMBER(NAME, FIELD) {NAME, T_OBJECT_EX, offsetof(TableCore, FIELD), 0, NULL}

static PyMemberDef members[] = {
    MEMBER("name", name), MEMBER("rows", rows), MEMBER("sized_by", sized_by), MEMBER("keys", keys),
    MEMBER("small", small), MEMBER("_size_count", size_count), MEMBER("_size_heap", size_heap),
    MEMBER("_largest", largest), MEMBER("journal", journal), {NULL},
};

static PyMethodDef methods[] = {
    {"put", (PyCFunction)(void (*)(void))put, METH_FASTCALL, "put(key, record): add or replace an entry"},
    {"remove", (PyCFunction)(void (*)(void))remove_, METH_FASTCALL, "remove(key): drop an entry if present"},
    {"any_overlapping", (PyCFunction)(void (*)(void))any_overlapping, METH_FASTCALL,
     "any_overlapping(base, end, pred=None): does an entry's range overlap [base, end)?"},
    {"any_containing", (PyCFunction)(void (*)(void))any_containing, METH_FASTCALL,
     "any_containing(base, end, pred=None): does an entry's range contain [base, end)?"},
    {"any_containing_addr", (PyCFunction)(void (*)(void))any_containing_addr, METH_FASTCALL,
     "any_containing_addr(x, pred=None): does an entry's range contain the address x?"},
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

/* remember(created, removed_append, journal, line, call): checker.replay's pure `remember` (see
 * `_remembering` there): each put of the journal not yet in `created` is noted as made by
 * (line, call); each removal leaves `created` and is appended as (table, key, line, call). */
static PyObject *remember(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "remember expects 5 arguments");
        return NULL;
    }
    PyObject *created = args[0], *removed_append = args[1], *journal = args[2], *line = args[3], *call = args[4];
    if (!PyDict_Check(created) || !PyList_Check(journal)) {
        PyErr_SetString(PyExc_TypeError, "remember expects a dict and a list");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(journal); i++) {
        PyObject *change = PyList_GET_ITEM(journal, i);
        if (!PyTuple_Check(change) || PyTuple_GET_SIZE(change) != 4) {
            PyErr_SetString(PyExc_ValueError, "a journal entry is (table, key, op, old)");
            return NULL;
        }
        PyObject *table = PyTuple_GET_ITEM(change, 0), *key = PyTuple_GET_ITEM(change, 1),
                 *op = PyTuple_GET_ITEM(change, 2);
        if (table == Py_None)
            continue;
        int is_put = op == s_put ? 1 : PyObject_RichCompareBool(op, s_put, Py_EQ);
        if (is_put < 0)
            return NULL;
        PyObject *where = PyTuple_Pack(2, table, key);
        if (where == NULL)
            return NULL;
        int known = PyDict_Contains(created, where), failed = known < 0;
        if (!failed && is_put && !known) { /* an update keeps the creating line */
            PyObject *made = PyTuple_Pack(2, line, call);
            failed = made == NULL || PyDict_SetItem(created, where, made) < 0;
            Py_XDECREF(made);
        } else if (!failed && !is_put) {
            failed = known && PyDict_DelItem(created, where) < 0;
            PyObject *gone = failed ? NULL : PyTuple_Pack(4, table, key, line, call);
            PyObject *r = gone == NULL ? NULL : PyObject_CallOneArg(removed_append, gone);
            failed = r == NULL;
            Py_XDECREF(gone);
            Py_XDECREF(r);
        }
        Py_DECREF(where);
        if (failed)
            return NULL;
    }
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
            PyObject *line = step == NULL ? NULL : PyLong_FromSsize_t(lineno);
            PyObject *r = line == NULL ? NULL : PyObject_CallFunctionObjArgs(step, o, line, NULL);
            Py_XDECREF(line);
            Py_DECREF(o);
            took = r == NULL ? -1 : PyObject_IsTrue(r);
            Py_XDECREF(r);
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

static PyMethodDef functions[] = {
    {"drive", (PyCFunction)(void (*)(void))drive, METH_FASTCALL,
     "drive(lines, decode, steps, errors, lineno, budget): run the fast steps until a line needs the general path"},
    {"remember", (PyCFunction)(void (*)(void))remember, METH_FASTCALL,
     "remember(created, removed_append, journal, line, call): note which line made or removed each entry"},
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
        || !(s_slow_overlapping = PyUnicode_InternFromString("_slow_any_overlapping"))
        || !(s_slow_containing = PyUnicode_InternFromString("_slow_any_containing"))
        || !(s_slow_containing_addr = PyUnicode_InternFromString("_slow_any_containing_addr")))
        return NULL;
    if (PyType_Ready(&TableCoreType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "TableCore", (PyObject *)&TableCoreType) < 0
        || PyModule_AddIntConstant(m, "INTERFACE", NATIVE_INTERFACE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
