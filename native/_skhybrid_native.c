/*
 * _skhybrid_native: the hybrid mean's fixed-point moment sums, compiled when skhybrid
 * is installed (setup.py).
 *
 * One function, moment_sums, with the arguments and the results of numba's kernel
 * skhybrid.utils._kernels.moment_sums (its docstring is the specification): the rows in
 * is_coded add their clipped value's code and the code of its squared distance to the
 * midpoint to int64 sums, exactly; the other rows add their value and its squared
 * distance to float64 sums. Where numba's kernels cost a process 0.4 s before its first
 * call (importing numba, loading their cached machine code), this module loads in well
 * under a millisecond: a process's first fits, a CLI call's or a joblib worker's, get one
 * compiled pass instead of numpy's several. skhybrid uses it when it is installed, of
 * skhybrid's VERSION and FIXED_POINT_BITS (the tests also check that it was built from
 * the checkout's source, SOURCE_SHA256); else numba's kernel and numpy's passes, which
 * compute the same integers.
 *
 * Exactness: each code is computed by the float64 operations of
 * skhybrid.utils._kernels.fixed_point_code and skhybrid.utils._sums.square_codes_of
 * (clip, subtract, multiply, round half to even; from the code: subtract, square,
 * multiply, round), compiled without contraction into fused multiply-adds
 * (-ffp-contract=off, setup.py; C's default rounding mode, which rint uses). A code is an
 * integer in [0, 2**32]: it is converted exactly, as the low bits of code + 2**52 (an
 * exact float64 sum for integers below 2**52, which vectorizes where a conversion to
 * int64 does not), and added in 64-bit integers, whose sums are exact in any order. Only
 * the other rows' already private reports are added in float64, in eight interleaved
 * sums (an order of additions of their own, as numba's kernel has its own).
 *
 * A NaN is clipped to the lower bound here (numba's kernel and numpy's passes keep it):
 * its code is then an integer, never a conversion of NaN, and the caller, which asked
 * for the count of non-finite values, discards every sum.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The codes' exactness needs IEEE float64 as written: no fused multiply-adds (Clang reads
 * this pragma; GCC takes -ffp-contract=off from setup.py) and no fast-math, which may
 * reorder a product or drop the NaN test. A build with it fails here, and skhybrid then
 * uses its other implementations. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#if defined(__FAST_MATH__) || defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "_skhybrid_native must be compiled without fast-math"
#endif

/* Bumped with any change of moment_sums' arguments or results (skhybrid.utils._sums
 * checks it, as it checks FIXED_POINT_BITS, before using this module). */
#define NATIVE_VERSION 1
#define FIXED_POINT_BITS 32

#ifndef SOURCE_SHA256
#define SOURCE_SHA256 "unknown"
#endif

/* The middle of the codes' grid, and the factor that puts a squared centred code on a
 * grid of 2**FIXED_POINT_BITS steps (skhybrid.utils._sums._HALF_GRID, _SQUARE_STEP). */
static const double HALF_GRID = 2147483648.0; /* 2**31 */
static const double SQUARE_STEP = 0x1p-30;    /* 2**(2 - 32) */
/* code + 2**52 holds the integer code in its low 52 bits (its exponent bits are those of
 * 2**52), for any integer code in [0, 2**52). */
static const double INTEGER_BIAS = 0x1p52;
#define BIAS_BITS UINT64_C(0x4330000000000000)

/* Rows per block: a block's other rows are buffered for their float sums, as numba's
 * kernel does (skhybrid.utils._kernels._BLOCK_ROWS). */
#define BLOCK_ROWS 4096

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
/* One machine code per instruction set, chosen when the module loads (GCC's function
 * multi-versioning): AVX-512 rounds and adds 8 values at a time. */
#define CLONED __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CLONED
#endif

#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

INLINE uint64_t
integer_of(double code)
{
    /* An integer code in [0, 2**52) as an integer: the low bits of code + 2**52. */
    double biased = code + INTEGER_BIAS;
    uint64_t bits;
    memcpy(&bits, &biased, sizeof bits);
    return bits - BIAS_BITS;
}

INLINE double
buffer_sum(const double *buffer, Py_ssize_t length)
{
    /* Eight interleaved sums, then theirs: only for the other rows' reports. */
    double lanes[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    Py_ssize_t row = 0;
    for (; row + 8 <= length; row += 8) {
        for (int lane = 0; lane < 8; lane++) {
            lanes[lane] += buffer[row + lane];
        }
    }
    double total = 0.0;
    for (; row < length; row++) {
        total += buffer[row];
    }
    for (int lane = 0; lane < 8; lane++) {
        total += lanes[lane];
    }
    return total;
}

typedef struct {
    double low, high, step, middle;
} Constants;

typedef struct {
    uint64_t codes, squares, non_finite;
    double others, other_squares;
} Totals;

/* One block of rows of one feature. The flags are constants in each caller below, so
 * that each combination is a loop of its own, without branches (it vectorizes). */
INLINE void
moment_block(const double *values, const unsigned char *is_coded, Py_ssize_t n_rows,
             const Constants *constants, double *other_buffer, double *other_square_buffer,
             Totals *totals, const int coded_given, const int squares, const int others,
             const int other_squares, const int check)
{
    const double low = constants->low, high = constants->high;
    const double step = constants->step, middle = constants->middle;
    uint64_t code_total = 0, square_total = 0, non_finite = 0;
    for (Py_ssize_t row = 0; row < n_rows; row++) {
        const double value = values[row];
        if (check) {
            non_finite += !(fabs(value) < INFINITY); /* NaN compares False */
        }
        /* fixed_point_code: clip, subtract, multiply, round half to even. */
        double clipped = value > low ? value : low;
        clipped = clipped < high ? clipped : high;
        const double code = rint((clipped - low) * step);
        const uint64_t keep = coded_given ? UINT64_C(0) - (uint64_t)(is_coded[row] != 0)
                                          : ~UINT64_C(0);
        code_total += integer_of(code) & keep;
        if (squares) {
            /* square_codes_of: subtract, square, multiply, round (on the code). */
            const double distance = code - HALF_GRID;
            const double square_code = rint(distance * distance * SQUARE_STEP);
            square_total += integer_of(square_code) & keep;
        }
        if (others) {
            const int coded = coded_given ? is_coded[row] != 0 : 1;
            other_buffer[row] = coded ? 0.0 : value;
            if (other_squares) {
                const double offset = value - middle;
                other_square_buffer[row] = coded ? 0.0 : offset * offset;
            }
        }
    }
    totals->codes += code_total;
    totals->squares += square_total;
    totals->non_finite += non_finite;
    if (others) {
        totals->others += buffer_sum(other_buffer, n_rows);
        if (other_squares) {
            totals->other_squares += buffer_sum(other_square_buffer, n_rows);
        }
    }
}

#define BLOCK_CASE(C, S, O, Q, F)                                                         \
    moment_block(values, is_coded, n_rows, constants, other_buffer, other_square_buffer, \
                 totals, C, S, O, Q, F)

/* The flags' combinations, each its own loop (others only with is_coded given). */
CLONED static void
moment_feature(const double *values, const unsigned char *is_coded, Py_ssize_t n_rows,
               const Constants *constants, double *other_buffer,
               double *other_square_buffer, Totals *totals, int squares, int others,
               int other_squares, int check)
{
    if (is_coded == NULL) {
        if (squares) {
            if (check) BLOCK_CASE(0, 1, 0, 0, 1); else BLOCK_CASE(0, 1, 0, 0, 0);
        } else {
            if (check) BLOCK_CASE(0, 0, 0, 0, 1); else BLOCK_CASE(0, 0, 0, 0, 0);
        }
    } else if (!others) {
        if (squares) {
            if (check) BLOCK_CASE(1, 1, 0, 0, 1); else BLOCK_CASE(1, 1, 0, 0, 0);
        } else {
            if (check) BLOCK_CASE(1, 0, 0, 0, 1); else BLOCK_CASE(1, 0, 0, 0, 0);
        }
    } else if (!other_squares) {
        if (squares) {
            if (check) BLOCK_CASE(1, 1, 1, 0, 1); else BLOCK_CASE(1, 1, 1, 0, 0);
        } else {
            if (check) BLOCK_CASE(1, 0, 1, 0, 1); else BLOCK_CASE(1, 0, 1, 0, 0);
        }
    } else {
        if (squares) {
            if (check) BLOCK_CASE(1, 1, 1, 1, 1); else BLOCK_CASE(1, 1, 1, 1, 0);
        } else {
            if (check) BLOCK_CASE(1, 0, 1, 1, 1); else BLOCK_CASE(1, 0, 1, 1, 0);
        }
    }
}

/* Argument checks: the arrays' buffers, of the expected kind, shape and layout. */

enum kind { FLOAT64, INT64, BOOL };

static int
take_buffer(PyObject *object, Py_buffer *view, enum kind kind, int ndim, int writable,
            const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(object, view, flags) < 0) {
        return -1;
    }
    const char *format = view->format == NULL ? "B" : view->format;
    /* The machine's own byte order only ('<' is it on a little-endian machine). */
    if (format[0] == '@' || format[0] == '=' || (PY_LITTLE_ENDIAN && format[0] == '<')) {
        format++;
    }
    int ok = view->ndim == ndim;
    switch (kind) {
    case FLOAT64:
        ok = ok && view->itemsize == 8 && strcmp(format, "d") == 0;
        break;
    case INT64:
        ok = ok && view->itemsize == 8 && (strcmp(format, "l") == 0 || strcmp(format, "q") == 0);
        break;
    case BOOL:
        ok = ok && view->itemsize == 1 && strcmp(format, "?") == 0;
        break;
    }
    if (!ok) {
        PyErr_Format(PyExc_TypeError,
                     "moment_sums: %s must be a C-contiguous %d-d array of %s; got format "
                     "'%s' with %d dimension(s)",
                     name, ndim, kind == FLOAT64 ? "float64" : kind == INT64 ? "int64" : "bool",
                     view->format == NULL ? "B" : view->format, view->ndim);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

#define N_ARGS 11

PyDoc_STRVAR(moment_sums_doc,
"moment_sums(columns, lower, upper, scale, centre, is_coded, code_sums, square_code_sums,\n"
"            float_sums, float_square_sums, non_finite)\n"
"--\n"
"\n"
"The hybrid mean's sums of one chunk, in one pass over its values: the arguments and\n"
"results of skhybrid.utils._kernels.moment_sums (columns feature-major, float64,\n"
"C-contiguous; is_coded, square_code_sums, float_sums, float_square_sums and\n"
"non_finite may be None). Releases the GIL.");

static PyObject *
moment_sums(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    static const char *names[N_ARGS] = {
        "columns", "lower", "upper", "scale", "centre", "is_coded", "code_sums",
        "square_code_sums", "float_sums", "float_square_sums", "non_finite"};
    static const enum kind kinds[N_ARGS] = {
        FLOAT64, FLOAT64, FLOAT64, FLOAT64, FLOAT64, BOOL, INT64, INT64, FLOAT64, FLOAT64,
        INT64};
    static const int ndims[N_ARGS] = {2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const int writable[N_ARGS] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    static const int optional[N_ARGS] = {0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1};
    if (nargs != N_ARGS) {
        PyErr_Format(PyExc_TypeError, "moment_sums takes %d arguments (%zd given)", N_ARGS,
                     nargs);
        return NULL;
    }
    Py_buffer views[N_ARGS];
    int taken[N_ARGS] = {0};
    PyObject *result = NULL;
    for (int index = 0; index < N_ARGS; index++) {
        if (optional[index] && args[index] == Py_None) {
            continue;
        }
        if (take_buffer(args[index], &views[index], kinds[index], ndims[index],
                        writable[index], names[index]) < 0) {
            goto done;
        }
        taken[index] = 1;
    }
    const Py_ssize_t n_features = views[0].shape[0], n_rows = views[0].shape[1];
    for (int index = 1; index < N_ARGS; index++) {
        if (!taken[index]) {
            continue;
        }
        Py_ssize_t expected = index == 5 ? n_rows : index == 10 ? 1 : n_features;
        int fits = index == 10 ? views[index].shape[0] >= 1
                               : views[index].shape[0] == expected;
        if (!fits) {
            PyErr_Format(PyExc_ValueError,
                         "moment_sums: %s has %zd values; expected %zd", names[index],
                         views[index].shape[0], expected);
            goto done;
        }
    }
    if (taken[9] && !taken[8]) {
        PyErr_SetString(PyExc_ValueError,
                        "moment_sums: float_square_sums needs float_sums");
        goto done;
    }

    const double *columns = views[0].buf;
    const double *lower = views[1].buf, *upper = views[2].buf, *scale = views[3].buf;
    const double *centre = views[4].buf;
    const unsigned char *is_coded = taken[5] ? views[5].buf : NULL;
    int64_t *code_sums = views[6].buf;
    int64_t *square_code_sums = taken[7] ? views[7].buf : NULL;
    double *float_sums = taken[8] ? views[8].buf : NULL;
    double *float_square_sums = taken[9] ? views[9].buf : NULL;
    int64_t *non_finite = taken[10] ? views[10].buf : NULL;
    /* The other rows exist only beside a mask (as in numba's kernel). */
    const int others = float_sums != NULL && is_coded != NULL;
    const int other_squares = others && float_square_sums != NULL;
    double *buffers = NULL;
    if (others) {
        buffers = PyMem_RawMalloc(2 * BLOCK_ROWS * sizeof(double));
        if (buffers == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t feature = 0; feature < n_features; feature++) {
        const Constants constants = {lower[feature], upper[feature], scale[feature],
                                     centre[feature]};
        Totals totals = {0, 0, 0, 0.0, 0.0};
        const double *values = columns + feature * n_rows;
        for (Py_ssize_t start = 0; start < n_rows; start += BLOCK_ROWS) {
            Py_ssize_t block = n_rows - start < BLOCK_ROWS ? n_rows - start : BLOCK_ROWS;
            moment_feature(values + start, is_coded == NULL ? NULL : is_coded + start, block,
                           &constants, buffers, buffers == NULL ? NULL : buffers + BLOCK_ROWS,
                           &totals, square_code_sums != NULL, others, other_squares,
                           non_finite != NULL);
        }
        /* At most n_rows codes of at most 2**32 each: below 2**63 for the callers' at
         * most MAX_USERS rows, so the unsigned totals are the int64 sums. */
        code_sums[feature] += (int64_t)totals.codes;
        if (square_code_sums != NULL) {
            square_code_sums[feature] += (int64_t)totals.squares;
        }
        if (others) {
            float_sums[feature] += totals.others;
            if (other_squares) {
                float_square_sums[feature] += totals.other_squares;
            }
        }
        if (non_finite != NULL) {
            non_finite[0] += (int64_t)totals.non_finite;
        }
    }
    Py_END_ALLOW_THREADS

    PyMem_RawFree(buffers);
    result = Py_NewRef(Py_None);
done:
    for (int index = 0; index < N_ARGS; index++) {
        if (taken[index]) {
            PyBuffer_Release(&views[index]);
        }
    }
    return result;
}

static PyMethodDef methods[] = {
    {"moment_sums", (PyCFunction)(void (*)(void))moment_sums, METH_FASTCALL, moment_sums_doc},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    if (PyModule_AddIntConstant(module, "VERSION", NATIVE_VERSION) < 0 ||
        PyModule_AddIntConstant(module, "FIXED_POINT_BITS", FIXED_POINT_BITS) < 0 ||
        PyModule_AddStringConstant(module, "SOURCE_SHA256", SOURCE_SHA256) < 0) {
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

PyDoc_STRVAR(module_doc,
"skhybrid's fixed-point moment sums, compiled when skhybrid is installed (private: "
"called by skhybrid.utils._sums).");

static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT, "_skhybrid_native", module_doc, 0, methods, slots,
    NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__skhybrid_native(void)
{
    return PyModuleDef_Init(&definition);
}
